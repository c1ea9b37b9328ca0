package gpu

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/internal/hostile/hostiletest"
	"github.com/sluice-dev/sluice/internal/testimg"
)

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
	text := fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", "")
	cpu, err := executor.New(compile(t, text), executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	g, err := New(compile(t, text), executor.Options{HWShare: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
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
	if p := g.samples[0].path; p != PathCPU {
		t.Errorf("an RGB-coded JPEG went to the %s decoder, want cpu", p)
	}
	mean, mx := compare(values(got.Outputs[0].Data, got.Outputs[0].Spec.DType), wantPix, got.Outputs[0].Spec, cases()[0])
	if mean > 0.5 || mx > 4 {
		t.Errorf("mean |diff| %.3f, max %.2f on the 0..255 scale (bounds 0.5, 4)", mean, mx)
	}
}

// TestSplitter: a configured share stays; the adaptive one moves toward
// the side that finished first and settles where both take as long, for
// engines and CPU workers of fixed rates; counts round up to whole rounds
// of the engines' cores.
func TestSplitter(t *testing.T) {
	fixed := newSplitter(0.5)
	fixed.observe(time.Second, 3*time.Second)
	if fixed.share != 0.5 || fixed.count(64, 1) != 32 {
		t.Errorf("a configured share moved: %v, %d of 64", fixed.share, fixed.count(64, 1))
	}
	if n := fixed.count(10, 4); n != 8 {
		t.Errorf("count(10) with 4 cores a round: %d, want 8 (5 rounded up to whole rounds)", n)
	}
	// Engines at 20k images/s, CPU workers at 10k: both finish together
	// when the engines take two thirds.
	sp := newSplitter(-1)
	const n = 256
	for range 40 {
		k := sp.count(n, 1)
		hw := time.Duration(float64(k) / 20000 * float64(time.Second))
		cpu := time.Duration(float64(n-k) / 10000 * float64(time.Second))
		sp.observe(hw, cpu)
	}
	if math.Abs(sp.share-2.0/3) > 0.03 {
		t.Errorf("adaptive share settled at %.3f, want about 0.667", sp.share)
	}
	// A side that had nothing to do tells nothing.
	before := sp.share
	sp.observe(0, time.Second)
	if sp.share != before {
		t.Errorf("share moved on a part the engines sat out: %v -> %v", before, sp.share)
	}
	// Bounds: a CPU side far slower never takes the engines' share past maxShare.
	for range 100 {
		sp.observe(time.Millisecond, time.Second)
	}
	if sp.share > maxShare {
		t.Errorf("share %v over %v", sp.share, maxShare)
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
