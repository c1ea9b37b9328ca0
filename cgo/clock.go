package main

/*
#include "shim.h"
*/
import "C"

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, the clock Triton's
// statistics use. Go's own monotonic clock is not exposed as a raw value,
// hence the C call.
func monotonicNow() uint64 { return uint64(C.sluice_now_ns()) }
