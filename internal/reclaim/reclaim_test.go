package reclaim

import (
	"sync/atomic"
	"testing"
	"time"
)

func newCounting(interval time.Duration) (*Reclaimer, *atomic.Int32) {
	var runs atomic.Int32
	return &Reclaimer{MinBytes: 100, Quiet: 10 * time.Millisecond, Interval: interval, Free: func() { runs.Add(1) }}, &runs
}

func (r *Reclaimer) isArmed() bool {
	armed, _ := r.state()
	return armed
}

func (r *Reclaimer) state() (armed bool, pending int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.timer.Armed(), r.pending
}

// waitRuns waits until Free has run n times (a deadline far beyond the
// timers, for loaded machines).
func waitRuns(t *testing.T, runs *atomic.Int32, n int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); runs.Load() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Free ran %d times, want %d", runs.Load(), n)
		}
	}
}

func TestSmallReleasesAreLeftToTheRuntime(t *testing.T) {
	r, runs := newCounting(time.Millisecond)
	r.Released(60)
	r.Released(0)
	r.Released(-500)
	if r.isArmed() {
		t.Fatal("60 bytes of a 100-byte minimum scheduled a run")
	}
	time.Sleep(50 * time.Millisecond)
	if n := runs.Load(); n != 0 {
		t.Fatalf("Free ran %d times", n)
	}
	r.Released(40) // 100 in all
	waitRuns(t, runs, 1)
	if armed, pending := r.state(); armed || pending != 0 {
		t.Errorf("after the run: armed %v, pending %d", armed, pending)
	}
}

func TestOneRunPerBurst(t *testing.T) {
	r, runs := newCounting(time.Millisecond)
	for range 50 {
		r.Released(1000)
	}
	waitRuns(t, runs, 1)
	time.Sleep(50 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Errorf("a burst of 50 releases ran Free %d times, want 1", n)
	}
}

func TestRateLimited(t *testing.T) {
	r, runs := newCounting(time.Hour)
	r.Released(1000)
	waitRuns(t, runs, 1)
	r.Released(1000)
	time.Sleep(100 * time.Millisecond) // ten times Quiet
	if n := runs.Load(); n != 1 || !r.isArmed() {
		t.Errorf("a second release within the interval: %d runs, armed %v; want 1 run and one scheduled", n, r.isArmed())
	}
}

func TestRunsAgainAfterTheInterval(t *testing.T) {
	r, runs := newCounting(30 * time.Millisecond)
	r.Released(1000)
	waitRuns(t, runs, 1)
	r.Released(1000)
	waitRuns(t, runs, 2)
}

// TestIdleRunsOnce: an idle instance has a run made however little was
// counted, once, within the interval's rate limit.
func TestIdleRunsOnce(t *testing.T) {
	r, runs := newCounting(time.Hour)
	r.Idle()
	waitRuns(t, runs, 1)
	r.Idle() // within the interval: scheduled after it, not now
	time.Sleep(50 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Errorf("Free ran %d times within the interval", n)
	}
}
