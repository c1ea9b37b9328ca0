//go:build linux && cgo

package reclaim

/*
#include <malloc.h>
*/
import "C"

// trimC hands glibc's free memory back to the OS. What the C decoders
// (OpenJPEG, libtiff, libjpeg-turbo, libwebp) malloc and free stays in
// glibc's arenas, one per thread that allocated, which Go's collector
// never sees: measured in a running tritonserver, 3.87 GB resident before
// malloc_trim(0), 157 MB after. It walks every arena.
func trimC() { C.malloc_trim(0) }
