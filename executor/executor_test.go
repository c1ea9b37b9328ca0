package executor

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/allocstest"
	"github.com/sluice-dev/sluice/internal/bufpool"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// A test-only operator: passes its input through, panics on bytes that
// start with "PANIC", counts its per-worker states, and sleeps probeSleep
// nanoseconds a sample (set by a test that times steps).
var probeStates, probeSleep atomic.Int64

type probe struct{}
type probeState struct{}

func (probeState) Close() { probeStates.Add(-1) }

func (probe) NewState() (ops.State, error)            { probeStates.Add(1); return probeState{}, nil }
func (probe) Infer(in []ops.Spec) ([]ops.Spec, error) { return in, nil }
func (probe) Run(_ *ops.Ctx, in, out []*ops.Tensor) error {
	if bytes.HasPrefix(in[0].Data, []byte("PANIC")) {
		var m map[string]int
		m["boom"]++ // a nil-map write: a real runtime panic
	}
	time.Sleep(time.Duration(probeSleep.Load()))
	d, err := out[0].Reshape(in[0].DType, in[0].Dims...)
	copy(d, in[0].Data)
	return err
}

func init() {
	ops.Register(&ops.Schema{
		Name: "test_probe", Inputs: []ops.Port{{Name: "x"}}, Outputs: []ops.Port{{Name: "y"}},
		New: func(ops.Args) (ops.Op, error) { return probe{}, nil },
	})
}

const testPipeline = `
version: 1
input { name: "IMAGE" }
node { name: "probe" op: "test_probe" }
node { op: "decode" }
node { op: "resize" arg { name: "size" ints { v: [24, 40] } } }
node { op: "normalize" arg { name: "scale" float: 0.00392156862745098 } arg { name: "mean" floats { v: [0.5] } } }
output { name: "PIXELS" }
output { name: "SMALL" source: "resize" }
`

func compile(t testing.TB, text string) *pipeline.Compiled {
	t.Helper()
	c, err := pipeline.CompileText([]byte(text), "test.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newExec(t testing.TB, workers int) *CPU {
	t.Helper()
	e, err := New(compile(t, testPipeline), Options{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func testBatch(t testing.TB) [][]byte {
	return [][]byte{testimg.JPEG(64, 48, 1), testimg.JPEG(33, 71, 2), testimg.JPEG(120, 90, 3), testimg.JPEG(17, 9, 4), testimg.JPEG(50, 50, 5)}
}

// hostDests points each sample's destinations into outs[o], which hold the
// whole batch of output o.
func hostDests(e *CPU, outs [][]byte) [][]Dest {
	dst := make([][]Dest, len(outs))
	for o, out := range outs {
		n := e.SampleBytes(o)
		for s := 0; s+n <= len(out) && n > 0; s += n {
			dst[o] = append(dst[o], Dest{Host: out[s : s+n]})
		}
	}
	return dst
}

// sample returns sample i of every output of a result.
func sample(e *CPU, r *Result, i int) [][]byte {
	var out [][]byte
	for o, x := range r.Outputs {
		n := e.SampleBytes(o)
		out = append(out, bytes.Clone(x.Data[i*n:(i+1)*n]))
	}
	return out
}

func TestBatchEqualsSingleRuns(t *testing.T) {
	e := newExec(t, 3)
	imgs := testBatch(t)
	var single [][][]byte
	for _, img := range imgs {
		r, err := e.Run([][][]byte{{img}})
		if err != nil || r.Errs[0] != nil {
			t.Fatal(err, r.Errs)
		}
		single = append(single, sample(e, r, 0))
	}
	r, err := e.Run([][][]byte{imgs})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Outputs[0].Spec.String(); got != "FP32[3,24,40]" {
		t.Errorf("PIXELS spec %s", got)
	}
	if len(r.Outputs[0].Data) != len(imgs)*3*24*40*4 || len(r.Outputs[1].Data) != len(imgs)*24*40*3 {
		t.Fatalf("output sizes %d, %d", len(r.Outputs[0].Data), len(r.Outputs[1].Data))
	}
	for i := range imgs {
		if r.Errs[i] != nil {
			t.Fatalf("sample %d: %v", i, r.Errs[i])
		}
		for o, want := range single[i] {
			if !bytes.Equal(sample(e, r, i)[o], want) {
				t.Errorf("sample %d output %d differs between batch and single run", i, o)
			}
		}
	}
	// Samples differ from each other: the test is not comparing zeros.
	if bytes.Equal(single[0][1], single[1][1]) {
		t.Fatal("two different images gave the same output")
	}
}

func TestBadSamplesFailAlone(t *testing.T) {
	e := newExec(t, 2)
	imgs := testBatch(t)
	good := e.mustRun(t, imgs)
	bad := append([][]byte(nil), imgs...)
	bad[1] = []byte("this is not an image at all")
	bad[3] = imgs[3][:len(imgs[3])/2]
	bad[4] = []byte("PANIC")
	r, err := e.Run([][][]byte{bad})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]struct {
		node  string
		cause ops.Cause
	}{1: {"decode", ops.NotImage}, 3: {"decode", ops.Truncated}, 4: {"probe", ops.BadInput}} {
		var se *SampleError
		if !errors.As(r.Errs[i], &se) || se.Index != i || se.Node != want.node || se.Cause() != want.cause {
			t.Errorf("sample %d: got %v, want node %s cause %q", i, r.Errs[i], want.node, want.cause)
		}
		for o, x := range sample(e, r, i) {
			if !bytes.Equal(x, make([]byte, len(x))) {
				t.Errorf("failed sample %d output %d is not zeroed", i, o)
			}
		}
	}
	if !strings.Contains(r.Errs[4].Error(), "internal error") {
		t.Errorf("panic reported as %v", r.Errs[4])
	}
	for _, i := range []int{0, 2} {
		if r.Errs[i] != nil {
			t.Errorf("good sample %d failed: %v", i, r.Errs[i])
		}
		for o, x := range sample(e, r, i) {
			if !bytes.Equal(x, good[i][o]) {
				t.Errorf("good sample %d output %d changed next to bad samples", i, o)
			}
		}
	}
	// The executor keeps working after a panic.
	again := e.mustRun(t, imgs)
	if !bytes.Equal(again[4][0], good[4][0]) {
		t.Error("output changed after a panicking batch")
	}
}

func (e *CPU) mustRun(t *testing.T, imgs [][]byte) [][][]byte {
	t.Helper()
	r, err := e.Run([][][]byte{imgs})
	if err != nil {
		t.Fatal(err)
	}
	var out [][][]byte
	for i := range imgs {
		if r.Errs[i] != nil {
			t.Fatalf("sample %d: %v", i, r.Errs[i])
		}
		out = append(out, sample(e, r, i))
	}
	return out
}

func TestLimits(t *testing.T) {
	c := compile(t, testPipeline)
	img := testimg.JPEG(64, 48, 1)
	for _, tc := range []struct {
		lim  ops.Limits
		want string
	}{
		{ops.Limits{MaxBytes: 100, MaxPixels: 1 << 20}, "100"},
		{ops.Limits{MaxBytes: 1 << 20, MaxPixels: 64*48 - 1}, "3071"},
	} {
		e, err := New(c, Options{Workers: 1, Limits: tc.lim})
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Run([][][]byte{{img}})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Errs[0]; err == nil || ops.CauseOf(err) != ops.TooLarge || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("limits %+v: got %v, want a too-large error naming %s", tc.lim, err, tc.want)
		}
		e.Close()
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	e := newExec(t, 2)
	in := [][][]byte{testBatch(t)}
	run := func() {
		if _, err := e.Run(in); err != nil {
			t.Fatal(err)
		}
	}
	// Every worker must have met every image size once.
	errs, err := e.Warm(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		run()
	}
	if n := allocstest.PerRun(t, 20, run); n > 0 {
		t.Errorf("%v allocations per batch in steady state", n)
	}
}

func TestConcurrentRunInto(t *testing.T) {
	e := newExec(t, 3)
	imgs := testBatch(t)
	want := e.mustRun(t, imgs)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs := [][]byte{make([]byte, len(imgs)*e.SampleBytes(0)), make([]byte, len(imgs)*e.SampleBytes(1))}
			errs := make([]error, len(imgs))
			for range 10 {
				if err := e.RunInto([][][]byte{imgs}, hostDests(e, outs), errs, nil); err != nil {
					t.Error(err)
					return
				}
				for i := range imgs {
					for o := range outs {
						n := e.SampleBytes(o)
						if errs[i] != nil || !bytes.Equal(outs[o][i*n:(i+1)*n], want[i][o]) {
							t.Errorf("goroutine %d sample %d output %d wrong (%v)", g, i, o, errs[i])
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestMalformedCalls(t *testing.T) {
	e := newExec(t, 1)
	img := testimg.JPEG(8, 8, 0)
	if _, err := e.Run([][][]byte{{img}, {img}}); err == nil {
		t.Error("two inputs accepted by a one-input pipeline")
	}
	if err := e.RunInto([][][]byte{{img}}, [][]Dest{{{Host: make([]byte, 5)}}, {{Host: make([]byte, e.SampleBytes(1))}}}, make([]error, 1), nil); err == nil {
		t.Error("short output buffer accepted")
	}
	if err := e.RunInto([][][]byte{{img}}, hostDests(e, [][]byte{make([]byte, e.SampleBytes(0)), make([]byte, e.SampleBytes(1))}), nil, nil); err == nil {
		t.Error("missing error slots accepted")
	}
	dev := hostDests(e, [][]byte{make([]byte, e.SampleBytes(0)), make([]byte, e.SampleBytes(1))})
	dev[0][0] = Dest{Dev: 0x1000}
	if err := e.RunInto([][][]byte{{img}}, dev, make([]error, 1), nil); err == nil || !strings.Contains(err.Error(), "device destination") {
		t.Errorf("device destination: %v", err)
	}
	r, err := e.Run([][][]byte{{}})
	if err != nil || len(r.Errs) != 0 || len(r.Outputs[0].Data) != 0 {
		t.Errorf("empty batch: %v %v", r, err)
	}
}

func TestCloseReleasesState(t *testing.T) {
	before := probeStates.Load()
	e, err := New(compile(t, testPipeline), Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := probeStates.Load() - before; got != 4 {
		t.Fatalf("%d probe states for 4 workers", got)
	}
	e.Close()
	e.Close()
	if got := probeStates.Load() - before; got != 0 {
		t.Fatalf("%d probe states left after Close", got)
	}
}

func BenchmarkRun(b *testing.B) {
	e := newExec(b, 0)
	var imgs [][]byte
	for i := range 32 {
		imgs = append(imgs, testimg.JPEG(320+i, 240, i))
	}
	in := [][][]byte{imgs}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Run(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(imgs))/b.Elapsed().Seconds(), "images/s")
}

func TestStepNanos(t *testing.T) {
	e := newExec(t, 2)
	steps := e.Steps()
	var names []string
	for _, st := range steps {
		names = append(names, st.Name)
	}
	if want := []string{"probe", "decode", "resize", "normalize"}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	var st Stats
	e.Stats(&st)
	before := slices.Clone(st.StepNanos)
	e.mustRun(t, testBatch(t))
	e.Stats(&st)
	after := st.StepNanos
	for i, step := range steps {
		name := step.Name
		if after[i] <= before[i] {
			t.Errorf("step %s: time did not grow (%d → %d ns)", name, before[i], after[i])
		}
	}
	// Each step's time is its own: the probe's sleep counts under probe,
	// not under the step after it. (A sleep is never shorter than asked,
	// so this holds on a loaded machine too.)
	const nap = 5 * time.Millisecond
	probeSleep.Store(int64(nap))
	defer probeSleep.Store(0)
	e.Stats(&st)
	before = slices.Clone(st.StepNanos)
	batch := testBatch(t)
	e.mustRun(t, batch)
	e.Stats(&st)
	if got, want := time.Duration(st.StepNanos[0]-before[0]), time.Duration(len(batch))*nap; got < want {
		t.Errorf("probe's time %v, under its %d samples' sleep of %v", got, len(batch), want)
	}
}

// Open makes the CPU executor by kind, and names a kind nobody registered.
func TestOpen(t *testing.T) {
	x, err := Open(KindCPU, compile(t, testPipeline), Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, ok := x.(*CPU); !ok || x.Workers() != 1 {
		t.Errorf("Open(%q) made %T with %d workers", KindCPU, x, x.Workers())
	}
	if _, err := Open("tpu", compile(t, testPipeline), Options{}); err == nil || !strings.Contains(err.Error(), "no tpu executor") {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestLargeImagesReleased: a worker lets go of what a large image grew (the
// decoded image, resample scratch) after the sample, so that a burst of
// them leaves the heap where it was once the pool drains; results stay the
// same.
func TestLargeImagesReleased(t *testing.T) {
	const workers = 4
	e := newExec(t, workers)
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 3000, 3000))); err != nil {
		t.Fatal(err)
	}
	big := b.Bytes() // 27 MB decoded (RGB), over ops.RetainBytes
	if _, err := e.Warm([][][]byte{testBatch(t)}); err != nil {
		t.Fatal(err)
	}
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapInuse)
	}
	bufpool.Drain()
	before := heap()
	burst := [][]byte{big, testimg.JPEG(64, 48, 1), big, big, big, big}
	first := e.mustRun(t, burst)
	// What the workers let go of waits in the pool for the next large
	// image, until it drains.
	if bufpool.Held() == 0 {
		t.Error("nothing went back to the pool")
	}
	bufpool.Drain()
	if grew := heap() - before; grew > ops.RetainBytes {
		t.Errorf("heap in use grew %d bytes over a burst of 3000x3000 images (%d workers)", grew, workers)
	}
	for i, w := range e.workers {
		if n := w.trim(ops.RetainBytes); n != 0 {
			t.Errorf("worker %d still holds %d bytes over ops.RetainBytes", i, n)
		}
	}
	// Buffers made anew give the same results.
	again := e.mustRun(t, burst)
	for i := range burst {
		for o := range first[i] {
			if !bytes.Equal(first[i][o], again[i][o]) {
				t.Errorf("sample %d output %d changed between runs", i, o)
			}
		}
	}
}

// TestDiscardedOutputs: a discarded destination is written nowhere, and
// the steps only it needs do not run; the wanted output is the full run's.
func TestDiscardedOutputs(t *testing.T) {
	e := newExec(t, 1)
	img := testimg.JPEG(64, 48, 1)
	full, err := e.Run([][][]byte{{img}})
	if err != nil || full.Errs[0] != nil {
		t.Fatal(err, full.Errs)
	}
	want := slices.Clone(full.Outputs[1].Data)
	var before Stats
	e.Stats(&before)
	small := make([]byte, e.SampleBytes(1))
	dst := [][]Dest{{{}}, {{Host: small}}}
	errs := make([]error, 1)
	if err := e.RunInto([][][]byte{{img}}, dst, errs, nil); err != nil || errs[0] != nil {
		t.Fatal(err, errs[0])
	}
	if !bytes.Equal(small, want) {
		t.Error("SMALL differs from the full run's")
	}
	var after Stats
	e.Stats(&after)
	for i, s := range e.Steps() {
		ran := after.StepNanos[i] > before.StepNanos[i]
		if wantRun := s.Name != "normalize"; ran != wantRun {
			t.Errorf("step %s ran %v, want %v (only PIXELS needs normalize)", s.Name, ran, wantRun)
		}
	}
	// Every output discarded is a valid call too.
	if err := e.RunInto([][][]byte{{img}}, [][]Dest{{{}}, {{}}}, errs, nil); err != nil || errs[0] != nil {
		t.Fatal(err, errs[0])
	}
}
