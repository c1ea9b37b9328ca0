package backend

import "time"

// BatchStats are one Execute's timestamps, in nanoseconds of the clock
// ModelArgs.Now reads (inside Triton: CLOCK_MONOTONIC, the server's steady
// clock, so that they line up with Triton's own queue timestamps). cgo
// reports them for every request of the call (with that request's
// success) and once for the batch.
//
//	ExecStart    Execute entered
//	ComputeStart the requests' inputs are collected into one batch
//	ComputeEnd   the pipeline has run over the batch
//	ExecEnd      every response is filled in
type BatchStats struct {
	ExecStart, ComputeStart, ComputeEnd, ExecEnd uint64
	// Samples is the number of images in the executed batch: the batch
	// size to report. Requests that failed before it ran are not counted.
	Samples int
}

// clockEpoch anchors the default clock.
var clockEpoch = time.Now()

// monotonicNow is the default ModelArgs.Now: monotonic, but counted from
// this package's start rather than the boot, so it is good for tests and
// tools and wrong for Triton's statistics — cgo passes a CLOCK_MONOTONIC
// reader instead.
func monotonicNow() uint64 { return uint64(time.Since(clockEpoch)) + 1 }
