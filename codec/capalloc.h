// What a C library holds during one call of ours, counted on the calling
// thread and capped (capalloc.c). scripts/pic-libs.sh renames the calls of
// malloc, calloc, realloc, free and posix_memalign in the libraries whose
// allocations are capped (OpenJPEG, libtiff) to the sl_cap_ functions; a
// call between sl_cap_begin and sl_cap_end on one thread is counted. The
// libraries must not allocate on threads of their own meanwhile.
#ifndef SLUICE_CAPALLOC_H
#define SLUICE_CAPALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "hidden.h"

// sl_cap_begin starts counting on this thread: an allocation that would
// bring what is held past limit bytes fails (0: no limit).
SL_HIDDEN void sl_cap_begin(int64_t limit);

// sl_cap_end stops counting and returns the most that was held; *hit
// says whether an allocation failed at the limit.
SL_HIDDEN int64_t sl_cap_end(int *hit);

SL_HIDDEN void *sl_cap_malloc(size_t n);
SL_HIDDEN void *sl_cap_calloc(size_t k, size_t n);
SL_HIDDEN void *sl_cap_realloc(void *p, size_t n);
SL_HIDDEN void sl_cap_free(void *p);
SL_HIDDEN int sl_cap_posix_memalign(void **p, size_t align, size_t n);

#endif
