package gpu

import "sync"

// pool hands out shared decode resources (nvJPEG lanes, CPU workers) most
// recently used first: the few a lightly loaded GPU needs stay warm (their
// buffers grown, nvJPEG's state initialised for the batch size), instead
// of every one of them taking turns and each growing its buffers anew.
type pool[T any] struct {
	mu    sync.Mutex
	items []T
	free  chan struct{} // one token per item in items
}

func newPool[T any](n int) *pool[T] {
	return &pool[T]{items: make([]T, 0, n), free: make(chan struct{}, n)}
}

// get waits for an item.
func (p *pool[T]) get() T {
	<-p.free
	return p.pop()
}

// tryGet returns an item if one is free now.
func (p *pool[T]) tryGet() (T, bool) {
	select {
	case <-p.free:
		return p.pop(), true
	default:
		var zero T
		return zero, false
	}
}

func (p *pool[T]) pop() T {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.items[len(p.items)-1]
	p.items = p.items[:len(p.items)-1]
	return x
}

// put returns an item.
func (p *pool[T]) put(x T) {
	p.mu.Lock()
	p.items = append(p.items, x)
	p.mu.Unlock()
	p.free <- struct{}{}
}

// each calls fn on every item that is free now, holding them back from
// get until it is done.
func (p *pool[T]) each(fn func(T)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.items {
		fn(x)
	}
}
