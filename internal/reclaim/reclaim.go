// Package reclaim gives memory that Sluice has let go of back to the
// operating system within seconds. Go returns freed heap lazily: an idle
// process collects garbage only every two minutes, and the background
// scavenger hands the pages back over minutes more, so a server that
// decoded a few huge images would stay as large as at its peak long after
// (measured: 3.5 minutes after a model's unload). Whoever drops a large
// buffer calls Released; once enough has been dropped and the drops have
// paused, one debug.FreeOSMemory (a full collection, then every free page
// back to the OS) runs, at most once per interval, and so does
// malloc_trim, for what C libraries freed.
package reclaim

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/internal/debounce"
)

// Reclaimer runs Free once at least MinBytes have been released, Quiet
// after the last release and at least Interval after its previous run.
type Reclaimer struct {
	MinBytes int64
	Quiet    time.Duration // a burst of releases ends first
	Interval time.Duration // bounds the cost of forced collections
	Free     func()

	mu      sync.Mutex
	pending int64
	timer   debounce.Timer // made from Quiet and Interval on first use
}

// Released records that n bytes were dropped (made garbage or freed).
func (r *Reclaimer) Released(n int) {
	if n <= 0 {
		return
	}
	r.mu.Lock()
	if r.timer.Fn == nil {
		r.timer = debounce.Timer{Quiet: r.Quiet, Interval: r.Interval, Fn: r.run}
	}
	r.pending += int64(n)
	enough := r.pending >= r.MinBytes
	r.mu.Unlock()
	r.timer.Note(enough)
}

// Idle records that a user of memory went idle (an instance without
// batches): what the process freed while busy, the C libraries' and
// Triton's own (its request and gRPC buffers) included, is handed back
// once, however little Sluice itself counted.
func (r *Reclaimer) Idle() { r.Released(int(r.MinBytes)) }

func (r *Reclaimer) run() {
	r.mu.Lock()
	r.pending = 0
	r.mu.Unlock()
	r.Free()
}

// The process's reclaimer. A forced collection costs a few milliseconds
// of CPU per hundred megabytes of live heap, malloc_trim about as much;
// one every 10 s at most is noise, and the memory is back within about
// 11 s of the last release.
var std = &Reclaimer{
	MinBytes: 32 << 20,
	Quiet:    time.Second,
	Interval: 10 * time.Second,
	Free:     freeAll,
}

func freeAll() {
	debug.FreeOSMemory()
	trimC()
}

// Released records that n bytes of buffers were dropped, Go's or a C
// library's (freed by it after a decode), for the process's reclaimer.
func Released(n int) { std.Released(n) }

// ReleasedC records the memory a C decoder used for one image and has
// freed (Header.Memory's estimate); small images are not counted, so the
// common case takes no lock.
func ReleasedC(n int64) {
	if n >= 1<<20 {
		std.Released(int(n))
	}
}

// Idle is Reclaimer.Idle for the process's reclaimer.
func Idle() { std.Idle() }
