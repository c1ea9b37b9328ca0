// Package debounce runs a function once a burst of activity has paused:
// the process's memory reclaimer, the buffer pool's idle drain and a GPU's
// idle sweep of its decode workers each wait for quiet this way.
package debounce

import (
	"sync"
	"time"
)

// Timer runs Fn Quiet after the last Note, and no sooner than Interval
// after its previous run: once per burst, however many Notes it has. The
// zero Interval leaves runs unbounded but by Quiet. Set the fields before
// the first Note.
type Timer struct {
	Quiet    time.Duration
	Interval time.Duration
	Fn       func()

	mu      sync.Mutex
	armed   bool // a run is scheduled
	last    time.Time
	lastRun time.Time
}

// Note records activity now, which pushes a scheduled run back; with arm,
// it schedules one if none is.
func (t *Timer) Note(arm bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Now()
	if arm && !t.armed {
		t.armed = true
		time.AfterFunc(t.Quiet, t.run)
	}
}

// Armed reports whether a run is scheduled.
func (t *Timer) Armed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.armed
}

func (t *Timer) run() {
	t.mu.Lock()
	now := time.Now()
	if wait := max(t.last.Add(t.Quiet).Sub(now), t.lastRun.Add(t.Interval).Sub(now)); wait > 0 {
		time.AfterFunc(wait, t.run)
		t.mu.Unlock()
		return
	}
	t.armed, t.lastRun = false, now
	t.mu.Unlock()
	t.Fn() // unlocked: Fn may Note again
}
