package backend

import (
	"time"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/ops"
)

// BatchStats are one Execute's timestamps, in nanoseconds of the clock
// ModelArgs.Now reads (inside Triton: CLOCK_MONOTONIC, the server's steady
// clock, so that they line up with Triton's own queue timestamps). cgo
// reports them for every request of the call (with that request's
// success) and once for the batch.
//
//	ExecStart    Execute entered
//	ComputeStart the requests' inputs are collected into one batch
//	ComputeEnd   the outputs are placed and the pipeline has run over the batch
//	ExecEnd      every request's outcome is settled
type BatchStats struct {
	ExecStart, ComputeStart, ComputeEnd, ExecEnd uint64
	// Samples is the number of images in the executed batch: the batch
	// size to report. Requests that failed before it ran are not counted.
	Samples int
	// Images counts the batch's images by outcome (the pipeline's
	// successes and failures by cause); zero when the pipeline did not run.
	Images ImageStats
	// Ops is the time each operator call of the pipeline took over the
	// batch (decode, resize+crop, normalize...; on the CPU summed over
	// workers, on the GPU all operators after decode are one kernel).
	// Phases is the time a GPU instance's batch spent parsing headers,
	// decoding and in the kernel, and Decoded its images by decoder
	// (hardware, hybrid, cpu). All are nil when the pipeline did not run
	// (Phases and Decoded on CPU instances too), and the instance's,
	// valid until the next Execute.
	Ops     []Timing
	Phases  []Timing
	Decoded []Count
	// CrossDevice counts the copies a GPU instance made of outputs that
	// Triton placed on another GPU, CrossDeviceBytes their bytes.
	CrossDevice, CrossDeviceBytes int64
}

// Timing is the nanoseconds one operator call or phase took in a batch.
type Timing struct {
	Name string
	Ns   uint64
}

// clockEpoch anchors the default clock.
var clockEpoch = time.Now()

// monotonicNow is the default ModelArgs.Now: monotonic, but counted from
// this package's start rather than the boot, so it is good for tests and
// tools and wrong for Triton's statistics — cgo passes a CLOCK_MONOTONIC
// reader instead.
func monotonicNow() uint64 { return uint64(time.Since(clockEpoch)) + 1 }

// Causes lists the failure causes BatchStats.Failures counts, in its index
// order: every ops.Cause an operator reports. A cause missing from the
// list would count as the last, ops.BadInput.
var Causes = [...]ops.Cause{ops.Truncated, ops.NotImage, ops.Corrupt, ops.Unsupported, ops.TooLarge, ops.Cancelled, ops.BadInput}

// ImageStats counts what one Execute's pipeline run did with its images,
// for Sluice's own metrics. Requests that failed before the batch (an
// unreadable input) have no images in it and are not counted.
type ImageStats struct {
	// Images is the number of samples that went through the pipeline
	// without error, and ImageBytes their encoded size (all inputs).
	Images     int
	ImageBytes int64
	// Failures counts the samples that failed, by cause (index as in
	// Causes).
	Failures [len(Causes)]int
}

// Count is a number of images, named.
type Count struct {
	Name string
	N    int
}

// causeIndex is c's index in Causes.
func causeIndex(c ops.Cause) int {
	for i, k := range Causes {
		if k == c {
			return i
		}
	}
	return len(Causes) - 1
}

// CollectNs, PipelineNs and RespondNs are the durations of Execute's
// stages: gathering the requests' inputs into the batch, placing the
// outputs and the executor's run, and settling each request's outcome.
func (s *BatchStats) CollectNs() uint64  { return since(s.ExecStart, s.ComputeStart) }
func (s *BatchStats) PipelineNs() uint64 { return since(s.ComputeStart, s.ComputeEnd) }
func (s *BatchStats) RespondNs() uint64  { return since(s.ComputeEnd, s.ExecEnd) }

func since(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// countImages fills st from the executor's per-sample results and the
// collected batch. It allocates nothing: a successful sample is a nil
// error, and a failed one's cause is read off the error already made.
func (inst *Instance) countImages(st *ImageStats) {
	for s, err := range inst.sample {
		if err != nil {
			st.Failures[causeIndex(sampleCause(err))]++
			continue
		}
		st.Images++
		for _, in := range inst.col.batch {
			if s < len(in) {
				st.ImageBytes += int64(len(in[s]))
			}
		}
	}
}

// sampleCause is the cause of a sample's error.
func sampleCause(err error) ops.Cause {
	if se, ok := err.(*executor.SampleError); ok {
		return se.Cause()
	}
	return ops.CauseOf(err)
}

// counters turns the executor's cumulative counters into one Execute's
// share, reusing its slices.
type counters struct {
	now, last executor.Stats
	ops       []Timing
	phases    []Timing
	decoded   []Count
}

// start names the counters: an executor reports the same ones, in the
// same order, every time.
func (c *counters) start(x executor.Executor) {
	x.Stats(&c.last)
	for _, st := range x.Steps() {
		c.ops = append(c.ops, Timing{Name: st.Name})
	}
	for _, p := range c.last.Phases {
		c.phases = append(c.phases, Timing{Name: p.Name})
	}
	for _, d := range c.last.Decoded {
		c.decoded = append(c.decoded, Count{Name: d.Name})
	}
}

// update sets st's operator and phase times and decoder counts to what
// the executor did since the last update.
func (c *counters) update(x executor.Executor, st *BatchStats) {
	x.Stats(&c.now)
	for i := range c.ops {
		c.ops[i].Ns = uint64(max(c.now.StepNanos[i]-c.last.StepNanos[i], 0))
	}
	for i := range c.phases {
		c.phases[i].Ns = uint64(max(c.now.Phases[i].N-c.last.Phases[i].N, 0))
	}
	for i := range c.decoded {
		c.decoded[i].N = int(c.now.Decoded[i].N - c.last.Decoded[i].N)
	}
	st.CrossDevice = c.now.CrossDevice - c.last.CrossDevice
	st.CrossDeviceBytes = c.now.CrossDeviceBytes - c.last.CrossDeviceBytes
	c.now, c.last = c.last, c.now
	st.Ops, st.Phases, st.Decoded = c.ops, c.phases, c.decoded
}
