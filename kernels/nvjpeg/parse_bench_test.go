package nvjpeg

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// BenchmarkGPUHeaderRead times what a parser does per JPEG before routing
// it (a header parse into a stream object, its subsampling, the engines'
// support check) on 1 and 16 threads at once: with every thread on one
// handle, as the executor's parsers share the engines' handle, and with a
// handle per thread. ns/op is wall time per JPEG; a per-handle lock shows
// as 16 threads being no faster than one.
func BenchmarkGPUHeaderRead(b *testing.B) {
	ctx := gputest.Context(b)
	if err := Init(); err != nil {
		b.Skipf("no nvJPEG: %v", err)
	}
	shared, err := NewHandle(Hardware)
	if err != nil {
		b.Skipf("no hardware JPEG decoder: %v", err)
	}
	defer shared.Close()
	// 640x480: the header read stops at the scan, so the size matters little.
	data := colourJPEG(b, 640, 480)
	for _, threads := range []int{1, 16} {
		for _, own := range []bool{false, true} {
			handle := "shared"
			if own {
				handle = "own"
			}
			b.Run(fmt.Sprintf("threads=%d/handle=%s", threads, handle), func(b *testing.B) {
				handles := make([]*Handle, threads)
				for t := range handles {
					handles[t] = shared
					if own {
						h, err := NewHandle(Hardware)
						if err != nil {
							b.Fatal(err)
						}
						defer h.Close()
						handles[t] = h
					}
				}
				readAll(b, ctx, handles, data)
			})
		}
	}
}

// readAll reads data's header b.N times, shared out among one thread per
// handle, each with ctx current and its own stream object.
func readAll(b *testing.B, ctx *cuda.Context, handles []*Handle, data []byte) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(handles))
	b.ResetTimer()
	for _, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := ctx.SetCurrent(); err != nil {
				errs <- err
				return
			}
			js, err := h.NewJpegStream()
			if err != nil {
				errs <- err
				return
			}
			defer js.Close()
			for next.Add(1) <= int64(b.N) {
				if err := js.Parse(h, data, true); err != nil {
					errs <- err
					return
				}
				if _, err := js.Subsampling(); err != nil {
					errs <- err
					return
				}
				if ok, err := h.BatchedSupported(js); err != nil || !ok {
					errs <- fmt.Errorf("BatchedSupported = %v, %v", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
