package debounce

import (
	"sync/atomic"
	"testing"
	"time"
)

// waitRuns waits until fn has run n times (a deadline far beyond the
// timers, for loaded machines).
func waitRuns(t *testing.T, runs *atomic.Int32, n int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); runs.Load() < n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ran %d times, want %d", runs.Load(), n)
		}
	}
}

// TestOncePerBurst: many Notes, one run after they stop; Notes without
// arm schedule nothing.
func TestOncePerBurst(t *testing.T) {
	var runs atomic.Int32
	d := &Timer{Quiet: 20 * time.Millisecond, Fn: func() { runs.Add(1) }}
	d.Note(false)
	if d.Armed() {
		t.Fatal("a Note without arm scheduled a run")
	}
	for range 10 {
		d.Note(true)
		time.Sleep(2 * time.Millisecond)
	}
	waitRuns(t, &runs, 1)
	time.Sleep(50 * time.Millisecond)
	if n := runs.Load(); n != 1 || d.Armed() {
		t.Errorf("%d runs after one burst (armed %v), want 1", n, d.Armed())
	}
}

// TestInterval: a second burst right after a run waits for Interval.
func TestInterval(t *testing.T) {
	var runs atomic.Int32
	var times [2]atomic.Int64
	d := &Timer{Quiet: time.Millisecond, Interval: 100 * time.Millisecond}
	d.Fn = func() { times[min(runs.Add(1)-1, 1)].Store(time.Now().UnixNano()) }
	d.Note(true)
	waitRuns(t, &runs, 1)
	d.Note(true)
	waitRuns(t, &runs, 2)
	if gap := time.Duration(times[1].Load() - times[0].Load()); gap < 100*time.Millisecond {
		t.Errorf("second run %v after the first, want at least the 100ms interval", gap)
	}
}
