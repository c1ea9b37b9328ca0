// Package allocstest counts a function's heap allocations for the tests
// that hold a hot path to zero, the way testing.AllocsPerRun does, but
// without what the runtime allocates for itself now and then: a
// goroutine's wait record after a collection emptied the runtime's caches,
// a new OS thread when a worker locked to its thread parks. Those come and
// go from one count to the next, while the code's own allocations are in
// every count, so the least of a few counts, with the collector off, is
// the code's. Under the race detector, whose instrumentation allocates,
// the test is skipped.
package allocstest

import (
	"runtime/debug"
	"testing"
)

// attempts is how many counts PerRun takes at most.
const attempts = 5

// PerRun is the average number of allocations of one call of f, over runs
// calls after a warm-up call: the least of up to attempts counts.
func PerRun(t testing.TB, runs int, f func()) float64 {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts: the race detector allocates on its own")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	least := testing.AllocsPerRun(runs, f)
	for i := 1; i < attempts && least > 0; i++ {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}
