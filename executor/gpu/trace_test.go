package gpu

import (
	"testing"
	"time"
)

// TestTrace: spans are kept only between StartTrace and StopTrace, up to
// the cap, with their times since the start.
func TestTrace(t *testing.T) {
	trace(ActorWorker, 0, StepImage, 1, time.Now()) // off: dropped
	StartTrace(2)
	t0 := time.Now()
	trace(ActorEngines, 1, StepCall, 8, t0)
	trace(ActorWorker, 2, StepFlush, 3, t0)
	trace(ActorExecutor, 0, StepWait, 0, t0) // over the cap: dropped
	spans := StopTrace()
	trace(ActorWorker, 0, StepImage, 1, time.Now())
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2: %+v", len(spans), spans)
	}
	s := spans[0]
	if s.Actor != ActorEngines || s.Index != 1 || s.Step != StepCall || s.N != 8 || s.Start < 0 || s.End < s.Start {
		t.Errorf("first span %+v", s)
	}
	if spans[1].Actor.String() != "worker" || spans[1].Step.String() != "flush" {
		t.Errorf("second span names %s %s", spans[1].Actor, spans[1].Step)
	}
	if StopTrace() != nil {
		t.Error("spans after a second StopTrace")
	}
}
