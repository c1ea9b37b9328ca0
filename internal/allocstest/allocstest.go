// Package allocstest counts a function's heap allocations for the tests
// that hold a hot path to zero, the way testing.AllocsPerRun does, but
// without what the runtime allocates for itself: a garbage collection in
// the middle empties the runtime's caches (a goroutine parking on a
// channel then allocates its wait record anew), so the collector is off
// while it counts. Under the race detector, whose instrumentation
// allocates, the test is skipped.
package allocstest

import (
	"runtime/debug"
	"testing"
)

// PerRun is the average number of allocations of one call of f, over runs
// calls after a warm-up call.
func PerRun(t testing.TB, runs int, f func()) float64 {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts: the race detector allocates on its own")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	return testing.AllocsPerRun(runs, f)
}
