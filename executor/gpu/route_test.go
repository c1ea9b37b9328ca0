package gpu

import (
	"fmt"
	"slices"
	"testing"

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

// TestSplitter: the share of the pixels, what the CPU workers have already
// counted against theirs, rounded up to whole rounds of the engines'
// cores; a negative one is the default.
func TestSplitter(t *testing.T) {
	same := func(n, p int) []int { return slices.Repeat([]int{p}, n) }
	sp := newSplitter(0.5)
	if n := sp.count(same(64, 100), 0, 1); n != 32 {
		t.Errorf("64 images at 0.5: %d to the engines, want 32", n)
	}
	if n := sp.count(same(10, 100), 0, 4); n != 8 {
		t.Errorf("10 images with 4 cores a round: %d, want 8 (5 rounded up to whole rounds)", n)
	}
	if n := sp.count(same(64, 100), 1600, 1); n != 40 {
		t.Errorf("64 images beside 1,600 CPU pixels at 0.5: %d to the engines, want 40", n)
	}
	if n := sp.count(same(64, 100), 6400, 1); n != 64 {
		t.Errorf("64 images beside as many CPU pixels at 0.5: %d to the engines, want all", n)
	}
	if n := sp.count([]int{100, 100, 1000}, 0, 1); n != 2 {
		t.Errorf("a large image last at 0.5: %d to the engines, want 2 (the large one to the CPU)", n)
	}
	if d := newSplitter(-1); d.share != DefaultHWShare || d.count(same(7, 100), 0, 4) != 7 {
		t.Errorf("default: share %v, count %d of 7", d.share, d.count(same(7, 100), 0, 4))
	}
	if z := newSplitter(0); z.count(same(64, 100), 0, 4) != 0 {
		t.Errorf("share 0 sent %d to the engines", z.count(same(64, 100), 0, 4))
	}
	if n := sp.count(nil, 500, 4); n != 0 {
		t.Errorf("no engine-decodable image: %d", n)
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
