// The counting allocator of capalloc.h.
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "capalloc.h"

static __thread struct {
	int on, hit;
	int64_t limit, held, peak; // bytes; limit 0: none
} sl_cap;

void sl_cap_begin(int64_t limit) {
	sl_cap.on = 1;
	sl_cap.hit = 0;
	sl_cap.limit = limit;
	sl_cap.held = sl_cap.peak = 0;
}

int64_t sl_cap_end(int *hit) {
	sl_cap.on = 0;
	*hit = sl_cap.hit;
	return sl_cap.peak;
}

// sl_cap_take: may the call allocate n more bytes?
static int sl_cap_take(size_t n) {
	if (!sl_cap.on || sl_cap.limit <= 0)
		return 1;
	// Blocks count at their usable size, a little over what was asked:
	// held may pass the limit by that much.
	int64_t room = sl_cap.limit - sl_cap.held;
	if (room > 0 && (uint64_t)n <= (uint64_t)room)
		return 1;
	sl_cap.hit = 1;
	return 0;
}

// sl_cap_charge counts p's block at its usable size, so that its free
// gives back exactly what it took.
static void *sl_cap_charge(void *p) {
	if (sl_cap.on && p != NULL) {
		sl_cap.held += (int64_t)malloc_usable_size(p);
		if (sl_cap.held > sl_cap.peak)
			sl_cap.peak = sl_cap.held;
	}
	return p;
}

void *sl_cap_malloc(size_t n) { return sl_cap_take(n) ? sl_cap_charge(malloc(n)) : NULL; }

void *sl_cap_calloc(size_t k, size_t n) {
	if (n != 0 && k > SIZE_MAX / n)
		return NULL;
	return sl_cap_take(k * n) ? sl_cap_charge(calloc(k, n)) : NULL;
}

int sl_cap_posix_memalign(void **p, size_t align, size_t n) {
	if (!sl_cap_take(n))
		return ENOMEM;
	int rc = posix_memalign(p, align, n);
	if (rc == 0)
		sl_cap_charge(*p);
	return rc;
}

void *sl_cap_realloc(void *p, size_t n) {
	size_t old = p != NULL ? malloc_usable_size(p) : 0;
	if (n > old && !sl_cap_take(n - old))
		return NULL;
	void *r = realloc(p, n);
	if (r != NULL) {
		if (sl_cap.on)
			sl_cap.held -= (int64_t)old;
		sl_cap_charge(r);
	}
	return r;
}

void sl_cap_free(void *p) {
	if (sl_cap.on && p != NULL)
		sl_cap.held -= (int64_t)malloc_usable_size(p);
	free(p);
}
