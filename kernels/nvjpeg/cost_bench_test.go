package nvjpeg

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// BenchmarkGPUFileCost measures what each JPEG costs the engines and CPU
// threads, alone and beside each other: the engines as the executor calls
// them (two lanes of batched calls, here of 64 copies, to planes), and
// nvJPEG's decoupled decoder on 1 and 16 threads, whole (Huffman decoding
// on the thread, then the upload and the GPU's steps image by image) or
// its Huffman decoding alone (host). One line a file: pixels, bytes, then
// µs an image for the engines (wall time over images) and for one thread
// (its time over images). It is how the executor's CPU workers came to
// gather their images for the GPU (coefficients.go). The JPEGs are the
// files the engines take under the directories of SLUICE_BENCH_JPEGS (a
// path list); run with -test.benchtime 1x.
func BenchmarkGPUFileCost(b *testing.B) {
	dirs := filepath.SplitList(os.Getenv("SLUICE_BENCH_JPEGS"))
	if len(dirs) == 0 {
		b.Skip("SLUICE_BENCH_JPEGS names no directory of JPEGs")
	}
	ctx := gputest.Context(b)
	if err := Init(); err != nil {
		b.Skipf("no nvJPEG: %v", err)
	}
	hw, err := NewHandle(Hardware)
	if err != nil {
		b.Skipf("no hardware JPEG decoder: %v", err)
	}
	b.Cleanup(func() { hw.Close() }) // after the states: cleanups run last first
	files := engineJPEGs(b, hw, dirs)
	maxPx := 0
	for _, f := range files {
		maxPx = max(maxPx, f.px)
	}
	b.Logf("%d JPEGs the engines take, up to %d pixels", len(files), maxPx)

	eng := newEngineLoad(b, ctx, hw, 2, 64, maxPx)
	cpu := newCPULoad(b, ctx, 16, maxPx)
	const span = 80 * time.Millisecond
	b.Logf("file\tpixels\tbytes\tengines\tcpu1\tcpu16\tengines+cpu16\tcpu16+engines\thost1\thost16\tengines+host16\thost16+engines")
	for _, f := range files {
		row := []float64{eng.run(b, f.data, span, nil)}
		for _, host := range []bool{false, true} {
			cpu.hostOnly = host
			var beside float64
			row = append(row, cpu.run(b, f.data, 1, span), cpu.run(b, f.data, 16, span),
				eng.run(b, f.data, span, func() { beside = cpu.run(b, f.data, 16, span) }))
			row = append(row, beside)
		}
		line := fmt.Sprintf("%s\t%d\t%d", f.name, f.px, len(f.data))
		for _, v := range row {
			line += fmt.Sprintf("\t%.1f", v)
		}
		b.Log(line)
	}
}

type costFile struct {
	name string
	data []byte
	px   int
}

// engineJPEGs reads the JPEGs under dirs that the engines take, up to a
// megapixel (the executor sends larger ones elsewhere too).
func engineJPEGs(b *testing.B, hw *Handle, dirs []string) []costFile {
	js, err := hw.NewJpegStream()
	if err != nil {
		b.Fatal(err)
	}
	defer js.Close()
	var files []costFile
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil || len(data) < 4 {
				return nil
			}
			info, err := hw.ImageInfo(data)
			if err != nil || info.Components != 3 || info.Widths[0]*info.Heights[0] > 1<<20 {
				return nil
			}
			if js.Parse(hw, data, true) != nil {
				return nil
			}
			if ok, err := hw.BatchedSupported(js); err != nil || !ok {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			files = append(files, costFile{rel, data, info.Widths[0] * info.Heights[0]})
			return nil
		})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].px < files[j].px })
	if len(files) == 0 {
		b.Skip("no JPEG the engines take under SLUICE_BENCH_JPEGS")
	}
	return files
}

// engineLoad is lanes threads, each calling the engines on batches of n
// copies of one JPEG.
type engineLoad struct {
	ctx   *cuda.Context
	h     *Handle
	lanes []*costLane
	n     int
}

type costLane struct {
	st     *State
	stream cuda.Stream
	pinned []byte
	dev    cuda.DevicePtr
	data   Bitstreams
	imgs   []Image
}

func newEngineLoad(b *testing.B, ctx *cuda.Context, h *Handle, lanes, n, maxPx int) *engineLoad {
	e := &engineLoad{ctx: ctx, h: h, n: n}
	for range lanes {
		l := &costLane{}
		var err error
		if l.st, err = h.NewState(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.st.Close() })
		if l.stream, err = cuda.NewStream(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.stream.Destroy() })
		if l.dev, err = cuda.MemAlloc(n * 3 * maxPx); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			cuda.MemFree(l.dev)
			if l.pinned != nil {
				cuda.MemFreeHost(l.pinned)
			}
		})
		if err := h.BatchedInitialize(l.st, n, 1, OutputYUV); err != nil {
			b.Fatal(err)
		}
		e.lanes = append(e.lanes, l)
	}
	return e
}

// run keeps every lane decoding data for span, with beside running at the
// same time, and returns the engines' wall µs an image.
func (e *engineLoad) run(b *testing.B, data []byte, span time.Duration, beside func()) float64 {
	var images atomic.Int64
	start := time.Now()
	wall := onThreads(b, e.ctx, len(e.lanes), beside, func(i int) error {
		l := e.lanes[i]
		if err := l.fill(e.h, data, e.n); err != nil {
			return err
		}
		for time.Since(start) < span {
			if err := e.h.DecodeBatched(l.st, &l.data, l.imgs, l.stream); err != nil {
				return err
			}
			if err := l.stream.Synchronize(); err != nil {
				return err
			}
			images.Add(int64(e.n))
		}
		return nil
	})
	return float64(wall.Microseconds()) / float64(images.Load())
}

// onThreads runs loop(0..n-1) on goroutines of their own, each locked to
// its OS thread with ctx current, and beside on the caller's; it returns
// the wall time once all have ended, and fails b on any loop's error.
func onThreads(b *testing.B, ctx *cuda.Context, n int, beside func(), loop func(i int) error) time.Duration {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			err := ctx.SetCurrent()
			if err == nil {
				err = loop(i)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	if beside != nil {
		beside()
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return wall
}

// fill lists n copies of data in pinned memory, each decoded to planes of
// its own in l.dev.
func (l *costLane) fill(h *Handle, data []byte, n int) error {
	info, err := h.ImageInfo(data)
	if err != nil {
		return err
	}
	if len(l.pinned) < len(data) {
		if l.pinned != nil {
			cuda.MemFreeHost(l.pinned)
		}
		if l.pinned, err = cuda.MemHostAlloc(len(data)); err != nil {
			return err
		}
	}
	copy(l.pinned, data)
	l.data.Reset()
	l.imgs = l.imgs[:0]
	// Each image's three planes at full size: pitch w fits any chroma.
	plane := info.Widths[0] * info.Heights[0]
	for i := range n {
		l.data.Add(l.pinned[:len(data)])
		at := uintptr(l.dev) + uintptr(i*3*plane)
		w := uint64(info.Widths[0])
		l.imgs = append(l.imgs, Image{Channel: [4]uintptr{at, at + uintptr(plane), at + 2*uintptr(plane)}, Pitch: [4]uint64{w, w, w}})
	}
	return nil
}

// cpuLoad is threads CPU threads, each decoding one JPEG after another
// through the decoupled decoder into planes of its own.
type cpuLoad struct {
	// hostOnly: Huffman decoding alone (the stream's parse and
	// nvjpegDecodeJpegHost), nothing sent to the GPU.
	hostOnly bool
	ctx      *cuda.Context
	h        *Handle
	threads  []*costThread
}

type costThread struct {
	st     *DecoupledState
	stream cuda.Stream
	dev    cuda.DevicePtr
}

func newCPULoad(b *testing.B, ctx *cuda.Context, threads, maxPx int) *cpuLoad {
	h, err := NewHandle(Default)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	dec, err := h.NewDecoder(Hybrid)
	if err != nil {
		b.Skipf("no decoupled decoder: %v", err)
	}
	b.Cleanup(func() { dec.Close() }) // after its states: cleanups run last first
	c := &cpuLoad{ctx: ctx, h: h}
	for range threads {
		t := &costThread{}
		if t.st, err = dec.NewState(OutputYUV); err != nil {
			b.Fatal(err)
		}
		if t.stream, err = cuda.NewStream(); err != nil {
			b.Fatal(err)
		}
		if t.dev, err = cuda.MemAlloc(3 * maxPx); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			t.stream.Destroy()
			cuda.MemFree(t.dev)
			t.st.Close()
		})
		c.threads = append(c.threads, t)
	}
	return c
}

// run keeps n threads decoding data for span and returns a thread's µs an
// image (threads' time over images).
func (c *cpuLoad) run(b *testing.B, data []byte, n int, span time.Duration) float64 {
	info, err := c.h.ImageInfo(data)
	if err != nil {
		b.Fatal(err)
	}
	plane := info.Widths[0] * info.Heights[0]
	var images atomic.Int64
	start := time.Now()
	wall := onThreads(b, c.ctx, n, nil, func(i int) error {
		t := c.threads[i]
		at, w := uintptr(t.dev), uint64(info.Widths[0])
		img := Image{Channel: [4]uintptr{at, at + uintptr(plane), at + 2*uintptr(plane)}, Pitch: [4]uint64{w, w, w}}
		for time.Since(start) < span {
			if c.hostOnly {
				if err := t.st.host(data); err != nil {
					return err
				}
			} else {
				if err := t.st.Decode(data, &img, t.stream); err != nil {
					return err
				}
				if err := t.stream.Synchronize(); err != nil {
					return err
				}
			}
			images.Add(1)
		}
		return nil
	})
	return float64(n) * float64(wall.Microseconds()) / float64(images.Load())
}

// host is Decode's CPU part alone: the stream's parse and Huffman decoding.
func (st *DecoupledState) host(data []byte) error {
	h, d := st.dec.h, st.dec.d
	if err := st.js.Parse(h, data, false); err != nil {
		return err
	}
	return check("nvjpegDecodeJpegHost", nvjpegDecodeJpegHost(h.h, d, st.s, st.params, st.js.j))
}
