// Package bufpool shares the large byte buffers of image workers under one
// cap. A worker gives back what a large image needed as soon as the image
// is done, instead of keeping it for good (the largest image each worker
// has seen, times the workers, can be gigabytes held); the next large image,
// on any worker, takes a buffer back, which saves allocating and zeroing
// it again and keeps the garbage of a burst from doubling its peak. After a
// while without use the pool lets everything go, and internal/reclaim
// hands the memory back to the OS.
package bufpool

import (
	"sync"
	"time"

	"github.com/sluice-dev/sluice/internal/debounce"
	"github.com/sluice-dev/sluice/internal/reclaim"
)

// Pool holds up to Cap bytes of buffers, each over Min bytes, and drops
// them all after Idle without a Get or Put.
type Pool struct {
	Min  int
	Cap  int
	Idle time.Duration

	mu   sync.Mutex
	bufs [][]byte
	held int
	idle debounce.Timer // drains after Idle; made on first use
}

// Get returns a buffer of length n: the smallest pooled one that holds n,
// else a new one (with room to grow by a quarter). Its contents are
// whatever its last user left.
func (p *Pool) Get(n int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.bufs {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.bufs[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.bufs[best]
		p.bufs[best] = p.bufs[len(p.bufs)-1]
		p.bufs[len(p.bufs)-1] = nil
		p.bufs = p.bufs[:len(p.bufs)-1]
		p.held -= cap(b)
		p.touch()
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return make([]byte, n, n+n/4)
}

// Put gives b back. A buffer of Min bytes or less, or one that would take
// the pool over Cap, is dropped.
func (p *Pool) Put(b []byte) {
	n := cap(b)
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n <= p.Min || p.held+n > p.Cap {
		reclaim.Released(n)
		return
	}
	p.bufs = append(p.bufs, b[:0])
	p.held += n
	p.touch()
}

// Drain drops every pooled buffer.
func (p *Pool) Drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drain()
}

func (p *Pool) drain() {
	clear(p.bufs)
	p.bufs = p.bufs[:0]
	reclaim.Released(p.held)
	p.held = 0
}

// Held is the bytes the pool holds.
func (p *Pool) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// touch records a use, which pushes the idle drain back; p.mu is held.
func (p *Pool) touch() {
	if p.idle.Fn == nil {
		p.idle = debounce.Timer{Quiet: p.Idle, Fn: p.Drain}
	}
	p.idle.Note(true)
}

// Min is the size from which buffers are pooled: 16 MiB, a 5.6 MP RGB
// image. Workers keep smaller ones for themselves.
const Min = 16 << 20

// The process's pool: 1 GiB is four 64 MP RGB images or 28 of 12 MP; it
// drains 5 s after its last use.
var std = &Pool{Min: Min, Cap: 1 << 30, Idle: 5 * time.Second}

// Get returns a buffer of length n from the process's pool, or a new one.
func Get(n int) []byte { return std.Get(n) }

// Put gives a buffer back to the process's pool.
func Put(b []byte) { std.Put(b) }

// Drain empties the process's pool.
func Drain() { std.Drain() }

// Held is the bytes the process's pool holds.
func Held() int { return std.Held() }
