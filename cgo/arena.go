package main

import (
	"sync"

	"github.com/sluice-dev/sluice/internal/reclaim"
)

// arena hands out byte slices that stay valid until the next reset. It
// backs inputs that Triton holds in several pieces and that must be made
// contiguous; an instance keeps one, so that steady-state batches allocate
// nothing. take is safe for concurrent use: backend may read the requests
// of a batch in parallel.
type arena struct {
	mu  sync.Mutex
	buf []byte
}

// minArenaChunk keeps small first batches from growing the arena one
// input at a time.
const minArenaChunk = 1 << 20

// maxArenaKeep is the largest chunk kept from one batch to the next; a
// larger one (a burst of large uploads) is let go at reset.
const maxArenaKeep = 64 << 20

// take returns n bytes, valid until reset.
func (a *arena) take(n int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	used := len(a.buf)
	if cap(a.buf)-used < n {
		// Slices already handed out keep the old chunk alive; the new one
		// is big enough for this batch again, so after a few batches one
		// chunk holds everything.
		a.buf = make([]byte, 0, max(2*cap(a.buf), n, minArenaChunk))
		used = 0
	}
	a.buf = a.buf[:used+n]
	return a.buf[used : used+n : used+n]
}

// reset makes the whole current chunk available again, or drops it when
// it is over maxArenaKeep. Only call it when no slice from take is in use
// any more (between Execute calls).
func (a *arena) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cap(a.buf) > maxArenaKeep {
		a.drop()
		return
	}
	a.buf = a.buf[:0]
}

// release drops the chunk, when the instance goes.
func (a *arena) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.drop()
}

func (a *arena) drop() {
	reclaim.Released(cap(a.buf))
	a.buf = nil
}
