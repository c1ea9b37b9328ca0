package bufpool

import (
	"testing"
	"time"
)

func TestGetPut(t *testing.T) {
	p := &Pool{Min: 100, Cap: 10000, Idle: time.Hour}
	a := p.Get(1000)
	if len(a) != 1000 || cap(a) != 1250 {
		t.Fatalf("new buffer: len %d cap %d", len(a), cap(a))
	}
	b := p.Get(3000)
	p.Put(a)
	p.Put(b)
	p.Put(make([]byte, 100)) // not over Min: dropped
	if got := p.Held(); got != 1250+3750 {
		t.Fatalf("held %d, want %d", got, 1250+3750)
	}
	// The smallest that holds 900 is a.
	if c := p.Get(900); len(c) != 900 || &c[0] != &a[0] {
		t.Error("Get(900) did not reuse the 1250-byte buffer")
	}
	if c := p.Get(1200); len(c) != 1200 || &c[0] != &b[0] {
		t.Error("Get(1200) did not reuse the 3750-byte buffer")
	}
	if got := p.Held(); got != 0 {
		t.Errorf("held %d after taking both back", got)
	}
	if c := p.Get(1000); cap(c) != 1250 || &c[0] == &a[0] {
		t.Error("an empty pool did not make a new buffer")
	}
}

func TestCap(t *testing.T) {
	p := &Pool{Min: 100, Cap: 5000, Idle: time.Hour}
	for range 5 {
		p.Put(make([]byte, 2000))
	}
	if got := p.Held(); got != 4000 {
		t.Errorf("held %d over a cap of 5000 with 2000-byte buffers, want 4000", got)
	}
	p.Drain()
	if got := p.Held(); got != 0 {
		t.Errorf("held %d after Drain", got)
	}
}

func TestIdleDrain(t *testing.T) {
	p := &Pool{Min: 100, Cap: 5000, Idle: 20 * time.Millisecond}
	p.Put(make([]byte, 2000))
	for deadline := time.Now().Add(10 * time.Second); p.Held() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still %d bytes held long after Idle", p.Held())
		}
	}
}
