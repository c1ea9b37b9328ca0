package gpu

import (
	"sync"
	"sync/atomic"
	"time"
)

// Tracing records what a process's GPU decoders and executors are busy
// with, span by span: each engine or hybrid-decoder lane's calls, each CPU
// worker's images and flushes, each executor's parse, its decode phase, its
// wait for the lanes after its own share, and its kernel. It gives the
// timeline of a steady-state second (sluice bench --trace, bench/timeline.py)
// that shows where the decoders idle. Off, a span costs one atomic load.

// Actor is who a span is of.
type Actor uint8

const (
	ActorEngines  Actor = iota // an engine lane (Span.Index: the lane)
	ActorHybrid                // a lane of the batched GPU hybrid decoder
	ActorWorker                // a CPU worker of the GPU's service
	ActorExecutor              // an executor (a Triton instance)
	ActorSMs                   // an executor's entropy decoding on the SMs (route.SluiceGPUHuffman)
)

func (a Actor) String() string {
	return [...]string{"engines", "hybrid", "worker", "executor", "sms"}[a]
}

// Step is what a span was busy with.
type Step uint8

const (
	StepCall   Step = iota // a lane's batched nvJPEG call, from staging to its stream's end
	StepImage              // a worker's image, gathered or decoded and uploaded
	StepFlush              // a worker's upload and launches of its gathered coefficients, and the wait
	StepParse              // an executor's header parsing and operator size rules of a batch
	StepDecode             // an executor's decode phase of a part, every path together
	StepWait               // an executor waiting for the lanes once its CPU workers' share is done
	StepKernel             // an executor's fused kernel and delivery of a part, to its stream's end
)

func (s Step) String() string {
	return [...]string{"call", "image", "flush", "parse", "decode", "wait", "kernel"}[s]
}

// Span is one stretch of work; Start and End are since StartTrace.
type Span struct {
	Actor      Actor
	Index      int // lane, worker or executor number
	Step       Step
	N          int // images
	Start, End time.Duration
}

var tracer struct {
	on    atomic.Bool
	mu    sync.Mutex
	t0    time.Time
	spans []Span
}

// StartTrace starts recording, up to max spans (later ones are dropped).
func StartTrace(max int) {
	tracer.mu.Lock()
	tracer.t0, tracer.spans = time.Now(), make([]Span, 0, max)
	tracer.mu.Unlock()
	tracer.on.Store(true)
}

// StopTrace stops recording and returns the spans.
func StopTrace() []Span {
	tracer.on.Store(false)
	tracer.mu.Lock()
	defer tracer.mu.Unlock()
	s := tracer.spans
	tracer.spans = nil
	return s
}

// trace records a span from start to now.
func trace(a Actor, index int, s Step, n int, start time.Time) {
	if !tracer.on.Load() {
		return
	}
	end := time.Now()
	tracer.mu.Lock()
	if len(tracer.spans) < cap(tracer.spans) && !start.Before(tracer.t0) {
		tracer.spans = append(tracer.spans, Span{a, index, s, n, start.Sub(tracer.t0), end.Sub(tracer.t0)})
	}
	tracer.mu.Unlock()
}

// executorIDs numbers executors for their spans.
var executorIDs atomic.Int64
