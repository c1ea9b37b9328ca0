package gpu

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/internal/hostile/hostiletest"
	"github.com/sluice-dev/sluice/internal/testimg"
)

// imagenetPair opens the ImageNet pipeline on the CPU executor and on a GPU
// one that sends the engines every JPEG they take; both close with t.
func imagenetPair(t *testing.T) (*executor.CPU, *Executor) {
	t.Helper()
	text := fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", "")
	cpu, err := executor.New(compile(t, text), executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cpu.Close)
	g, err := New(compile(t, text), executor.Options{HWShare: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return cpu, g
}

// TestGPURGBJPEG: a JPEG whose components are R, G and B (an Adobe marker
// with transform 0, as libjpeg writes with JCS_RGB) goes to the CPU
// decoder, which honours the marker, and comes out as the CPU executor's;
// nvJPEG would read it as YCbCr.
func TestGPURGBJPEG(t *testing.T) {
	gputest.Require(t)
	const w, h = 320, 240
	rgb := make([]byte, w*h*3)
	for y := range h {
		for x := range w {
			p := rgb[(y*w+x)*3:]
			p[0], p[1], p[2] = byte(x), byte(y), byte(255-x/2)
		}
	}
	src, err := testimg.LibJPEG(rgb, w, h, testimg.LibJPEGOptions{Quality: 90, RGB: true})
	if err != nil {
		t.Fatal(err)
	}
	cpu, g := imagenetPair(t)
	in := [][][]byte{{src}}
	want, err := cpu.Run(in)
	if err != nil || want.Errs[0] != nil {
		t.Fatalf("CPU: %v %v", err, want.Errs)
	}
	wantPix := values(want.Outputs[0].Data, want.Outputs[0].Spec.DType)
	got, err := g.Run(in)
	if err != nil || got.Errs[0] != nil {
		t.Fatalf("GPU: %v %v", err, got.Errs)
	}
	if p := g.samples[0].path; p != route.CPU {
		t.Errorf("an RGB-coded JPEG went to the %s decoder, want cpu", p)
	}
	mean, mx := compare(values(got.Outputs[0].Data, got.Outputs[0].Spec.DType), wantPix, got.Outputs[0].Spec, cases()[0])
	if mean > 0.5 || mx > 4 {
		t.Errorf("mean |diff| %.3f, max %.2f on the 0..255 scale (bounds 0.5, 4)", mean, mx)
	}
}

// TestGPUGreyFactors: greyscale JPEGs whose one component says 2x2
// sampling go to the engines, in a batch beside the same images saying
// 1x1, and come out as the CPU executor's; the batch's sources are left as
// they came (the engines read a copy saying 1x1).
func TestGPUGreyFactors(t *testing.T) {
	gputest.Require(t)
	var in [][]byte
	for _, sz := range [][2]int{{256, 192}, {333, 250}, {640, 480}} {
		g := image.NewGray(image.Rect(0, 0, sz[0], sz[1]))
		for i := range g.Pix {
			x, y := i%sz[0], i/sz[0]
			g.Pix[i] = byte((x*3 + y*5 + (x*y)%17) % 256)
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, g, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		odd := bytes.Clone(buf.Bytes())
		i := bytes.Index(odd, []byte{0xFF, 0xC0})
		if i < 0 || odd[i+9] != 1 || odd[i+11] != 0x11 {
			t.Fatal("no one-component SOF0 sampled 1x1")
		}
		odd[i+11] = 0x22
		in = append(in, odd, buf.Bytes())
	}
	orig := make([][]byte, len(in))
	for i, b := range in {
		orig[i] = bytes.Clone(b)
	}
	cpu, g := imagenetPair(t)
	if g.hw == nil {
		t.Skip("this GPU has no JPEG engines")
	}
	want, err := cpu.Run([][][]byte{in})
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Run([][][]byte{in})
	if err != nil {
		t.Fatal(err)
	}
	for s := range in {
		if got.Errs[s] != nil || want.Errs[s] != nil {
			t.Fatalf("image %d: GPU %v, CPU %v", s, got.Errs[s], want.Errs[s])
		}
		if !bytes.Equal(in[s], orig[s]) {
			t.Errorf("image %d: the batch's source was changed", s)
		}
		if p := g.samples[s].path; p != route.Hardware {
			t.Errorf("image %d (factors %s): decoded on the %s path, want hardware", s, map[bool]string{true: "2x2", false: "1x1"}[s%2 == 0], p)
		}
	}
	spec := got.Outputs[0].Spec
	per := spec.Elems()
	all, ref := values(got.Outputs[0].Data, spec.DType), values(want.Outputs[0].Data, spec.DType)
	for s := range in {
		mean, mx := compare(all[s*per:(s+1)*per], ref[s*per:(s+1)*per], spec, cases()[0])
		if mean > 0.5 || mx > 4 {
			t.Errorf("image %d: mean |diff| %.3f, max %.2f from the CPU on the 0..255 scale (bounds 0.5, 4)", s, mean, mx)
		}
	}
}

// TestTwoEnds: the engines' first runs are their share of the plan, an
// even run a lane; the CPU workers may not reach into those before they
// are handed out, and take from the back one at a time; the engines' later
// runs are the planned fraction of what is left, in whole units; every
// JPEG goes to exactly one of them, however their takes interleave.
func TestTwoEnds(t *testing.T) {
	list := upTo(100)
	q := newTwoEnds(list, 80, 1, 4)
	// The CPU workers start first: their 20 from the back, no more.
	for i := range 20 {
		if s, ok := q.back(); !ok || s != 99-i {
			t.Fatalf("the CPU workers' JPEG %d: %d %v, want %d", i, s, ok, 99-i)
		}
	}
	if s, ok := q.back(); ok {
		t.Fatalf("the CPU workers took %d of the engines' first runs before they were handed out", s)
	}
	if q.open() != 0 {
		t.Errorf("open %d before the engines started, want 0", q.open())
	}
	q.start(2)
	if a, b := q.next(), q.next(); len(a) != 40 || len(b) != 40 || a[0] != 0 || b[0] != 40 {
		t.Fatalf("the engines' first runs: %v and %v, want 0..39 and 40..79", a, b)
	}
	if q.next() != nil {
		t.Fatal("a later run with nothing left")
	}

	// First runs of three quarters of the plan: the CPU workers may take
	// the rest of it once those are handed out, and the engines come
	// back for the planned fraction of what is left.
	q = newTwoEnds(list, 80, 0.75, 4)
	for range 40 {
		q.back()
	}
	if _, ok := q.back(); ok {
		t.Fatal("the CPU workers reached into the engines' first runs")
	}
	q = newTwoEnds(list, 80, 0.75, 4)
	for range 10 {
		q.back()
	}
	q.start(2)
	if a, b := q.next(), q.next(); len(a) != 30 || len(b) != 30 {
		t.Fatalf("first runs of %d and %d, want 30 each (0.75 of 80 between 2 lanes)", len(a), len(b))
	}
	if s, ok := q.back(); !ok || s != 89 {
		t.Errorf("the CPU workers after the first runs: %d %v, want 89", s, ok)
	}
	if q.open() != 29 {
		t.Errorf("open %d, want 29", q.open())
	}
	if run := q.next(); len(run) != 12 || run[0] != 60 {
		t.Errorf("a later run: %v, want 12 from 60 (0.8 of the 29 left between 2 lanes, in units of 4)", run)
	}
	for q.open() > 0 {
		if q.open()%3 == 0 {
			q.back()
		} else {
			q.next()
		}
	}
	if q.next() != nil {
		t.Error("a run after the ends met")
	}
	if _, ok := q.back(); ok {
		t.Error("a JPEG for the CPU workers after the ends met")
	}
	took, left := q.taken()
	seen := slices.Concat(took, q.list[q.tail:])
	slices.Sort(seen)
	if len(left) != 0 || !slices.Equal(seen, list) {
		t.Errorf("engines %d and CPU workers %d JPEGs, %d left: not each of the 100 once", len(took), len(q.list[q.tail:]), len(left))
	}

	// A plan of none: the CPU workers take everything; an engine lane
	// that comes still gets a unit of what is left.
	q = newTwoEnds(list[:10], 0, 1, 4)
	if s, ok := q.back(); !ok || s != 9 {
		t.Errorf("plan of none: the CPU workers' first JPEG %d %v, want 9", s, ok)
	}
	q.start(1)
	if run := q.next(); len(run) != 4 {
		t.Errorf("plan of none: a run of %d, want one unit (4)", len(run))
	}
	// No lane started: their first runs are left for the caller to
	// decode again.
	q = newTwoEnds(list[:10], 10, 1, 1)
	if took, left := q.taken(); len(took) != 0 || len(left) != 10 {
		t.Errorf("no lane started: took %d, left %d, want 0 and 10", len(took), len(left))
	}
	var nilQ *twoEnds
	if _, ok := nilQ.back(); ok || nilQ.open() != 0 {
		t.Error("a nil queue handed out a JPEG")
	}
}

// TestTwoEndsConcurrent: lanes and CPU workers taking at once (the race
// detector watches) hand out each JPEG once.
func TestTwoEndsConcurrent(t *testing.T) {
	list := upTo(1000)
	q := newTwoEnds(list, 650, 0.75, 8)
	q.start(2)
	var wg sync.WaitGroup
	counts := make([]atomic.Int32, len(list))
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for run := q.next(); run != nil; run = q.next() {
				for _, s := range run {
					counts[s].Add(1)
				}
			}
		}()
	}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s, ok := q.back(); ok; s, ok = q.back() {
				counts[s].Add(1)
			}
		}()
	}
	wg.Wait()
	for s := range counts {
		if n := counts[s].Load(); n != 1 {
			t.Fatalf("JPEG %d handed out %d times", s, n)
		}
	}
}

// upTo is 0..n-1: sample indices.
func upTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestEvenRuns: a list in one run a lane, the last one shorter; what no
// lane took is left.
func TestEvenRuns(t *testing.T) {
	r := &evenRuns{list: []int{0, 1, 2, 3, 4, 5, 6}}
	r.start(3)
	if a, b := r.next(), r.next(); !slices.Equal(a, []int{0, 1, 2}) || !slices.Equal(b, []int{3, 4, 5}) {
		t.Errorf("runs %v %v, want two of 3", a, b)
	}
	if took, left := r.taken(); len(took) != 6 || !slices.Equal(left, []int{6}) {
		t.Errorf("taken %v, left %v", took, left)
	}
}

// TestThreads: left to the executor, a batch's threads are the cores
// shared out among the GPU's executors with a batch in flight, rounded up;
// a Workers that was set is kept whatever the others do.
func TestThreads(t *testing.T) {
	svc := &service{}
	e := &Executor{svc: svc, parsers: make([]*parser, 16), shared: true}
	for busy, want := range map[int32]int{0: 16, 1: 16, 2: 8, 3: 6, 16: 1, 40: 1} {
		svc.busy.Store(busy)
		if n := e.threads(); n != want {
			t.Errorf("%d executors busy: %d threads, want %d", busy, n, want)
		}
	}
	e.shared = false
	if n := e.threads(); n != 16 {
		t.Errorf("Workers set to 16 with 40 executors busy: %d threads", n)
	}
}

// TestGPUHostileCases: every hostile file of internal/hostile through the
// GPU executor, as one request each: refused naming its limit, as on the
// CPU, or decoded.
func TestGPUHostileCases(t *testing.T) {
	gputest.Require(t)
	prog := compile(t, fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", ""))
	g, err := New(prog, executor.Options{HWShare: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	hostiletest.Run(t, g, len(prog.Outputs))
}
