package gpu

import (
	"fmt"

	"github.com/sluice-dev/sluice/kernels/cuda"
)

// arena is the executor's device memory: one allocation that grows to
// what the largest batch part needed, never beyond cap, and is carved up
// afresh for every part. nvJPEG's own work buffers are outside it.
type arena struct {
	base cuda.DevicePtr
	size int
	cap  int
}

// chunk is the growth granule, so that slightly larger batches do not
// reallocate each time.
const chunk = 32 << 20

// reserve makes the arena at least n bytes. The caller has synchronised:
// nothing in flight uses the old allocation.
func (a *arena) reserve(n int) error {
	if n <= a.size {
		return nil
	}
	if n > a.cap {
		return fmt.Errorf("a batch part needs %d bytes of GPU memory, over the cap of %d", n, a.cap)
	}
	a.free()
	size := min((n+chunk-1)/chunk*chunk, a.cap)
	p, err := cuda.MemAlloc(size)
	if err != nil {
		return err
	}
	a.base, a.size = p, size
	return nil
}

func (a *arena) free() {
	if a.base != 0 {
		cuda.MemFree(a.base)
	}
	a.base, a.size = 0, 0
}

// devBuf is a device buffer that grows by a quarter beyond what it was
// asked for, so that slightly larger requests do not reallocate each time;
// what it held is lost when it grows.
type devBuf struct {
	ptr cuda.DevicePtr
	n   int
}

// grow makes b hold at least n bytes.
func (b *devBuf) grow(n int) error {
	if b.n >= n {
		return nil
	}
	b.free()
	p, err := cuda.MemAlloc(n + n/4)
	if err != nil {
		return err
	}
	b.ptr, b.n = p, n+n/4
	return nil
}

func (b *devBuf) free() {
	if b.ptr != 0 {
		cuda.MemFree(b.ptr)
	}
	b.ptr, b.n = 0, 0
}
