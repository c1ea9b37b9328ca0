package route

import (
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/hostile"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
)

// facts reads a JPEG's headers as the executor's parsers do.
func facts(t *testing.T, src []byte) codec.Header {
	t.Helper()
	d := codec.NewDecoder()
	defer d.Close()
	h, err := d.Header(src, codec.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func noisy(w, h int) []byte {
	b := make([]byte, w*h*3)
	for i := range b {
		b[i] = byte(i*7 + i/5)
	}
	return b
}

// TestDecide routes JPEGs libjpeg wrote in every coding this package
// distinguishes, with every set of decoders, by the table in the package
// comment.
func TestDecide(t *testing.T) {
	jpeg := func(w, h int, o testimg.LibJPEGOptions) codec.Header {
		o.Quality = 90
		src, err := testimg.LibJPEG(noisy(w, h), w, h, o)
		if err != nil {
			t.Fatal(err)
		}
		return facts(t, src)
	}
	pending, ok := hostile.Named("jpeg-refine-pending")
	if !ok {
		t.Fatal("no jpeg-refine-pending case")
	}
	var (
		c420     = jpeg(64, 48, testimg.LibJPEGOptions{})
		c444     = jpeg(64, 48, testimg.LibJPEGOptions{Luma: [2]int{1, 1}})
		c422     = jpeg(64, 48, testimg.LibJPEGOptions{Luma: [2]int{2, 1}})
		c440     = jpeg(64, 48, testimg.LibJPEGOptions{Luma: [2]int{1, 2}})
		c411     = jpeg(64, 48, testimg.LibJPEGOptions{Luma: [2]int{4, 1}})
		grey     = jpeg(64, 48, testimg.LibJPEGOptions{Grey: true})
		rgb      = jpeg(64, 48, testimg.LibJPEGOptions{RGB: true})
		arith    = jpeg(64, 48, testimg.LibJPEGOptions{Arithmetic: true})
		prog     = jpeg(64, 48, testimg.LibJPEGOptions{Scans: testimg.SimpleProgression})
		large    = jpeg(1200, 900, testimg.LibJPEGOptions{})
		largeP   = jpeg(1200, 900, testimg.LibJPEGOptions{Scans: testimg.SimpleProgression})
		refining = facts(t, pending.Make())
		png      = codec.Header{Format: "PNG", Width: 64, Height: 48}
	)
	all := Decoders{Engines: true, Decoupled: true, DecoupledGPU: true}
	noDecoupled := Decoders{Engines: true}
	none := Decoders{}
	set := Defaults()
	progOnly := Defaults()
	progOnly.Coefficients = CoefficientsProgressive
	off := Defaults()
	off.Coefficients = CoefficientsOff
	sms := Defaults()
	sms.SluiceGPUHuffman = true
	cases := []struct {
		name    string
		set     Settings
		h       codec.Header
		d       Decoders
		path    Path
		engines bool
		chroma  nvjpeg.Subsampling
	}{
		{"4:2:0 baseline", set, c420, all, SluiceCoefficients, true, nvjpeg.CSS420},
		{"4:4:4 baseline", set, c444, all, SluiceCoefficients, true, nvjpeg.CSS444},
		{"4:2:2 baseline", set, c422, all, SluiceCoefficients, true, nvjpeg.CSS422},
		{"4:4:0 baseline", set, c440, all, SluiceCoefficients, true, nvjpeg.CSS440},
		{"4:1:1: no plane layout of the conversion's", set, c411, all, CPU, false, nvjpeg.CSSUnknown},
		{"greyscale", set, grey, all, SluiceCoefficients, true, nvjpeg.CSSGray},
		{"RGB-coded: nvJPEG reads YCbCr", set, rgb, all, CPU, false, nvjpeg.CSSUnknown},
		{"arithmetic", set, arith, all, CPU, false, nvjpeg.CSSUnknown},
		{"progressive: not the engines", set, prog, all, SluiceCoefficients, false, nvjpeg.CSS420},
		{"progressive, refinement pending", set, refining, all, CPU, false, nvjpeg.CSSUnknown},
		{"PNG", set, png, all, CPU, false, nvjpeg.CSSUnknown},
		{"large baseline: GPU Huffman", set, large, all, NvjpegGPUHuffman, true, nvjpeg.CSS420},
		{"large progressive: GPU Huffman", set, largeP, all, NvjpegGPUHuffman, false, nvjpeg.CSS420},
		{"large baseline, no GPU-Huffman state", set, large, Decoders{Engines: true, Decoupled: true}, NvjpegCPUHuffman, true, nvjpeg.CSS420},
		{"large baseline, no decoupled decoder", set, large, noDecoupled, Hybrid, true, nvjpeg.CSS420},
		{"large progressive, no decoupled decoder", set, largeP, noDecoupled, CPU, false, nvjpeg.CSSUnknown},
		{"baseline, no engines", set, c420, none, SluiceCoefficients, false, nvjpeg.CSS420},
		{"baseline, coefficients for progressive only", progOnly, c420, all, NvjpegCPUHuffman, true, nvjpeg.CSS420},
		{"progressive, coefficients for progressive only", progOnly, prog, all, SluiceCoefficients, false, nvjpeg.CSS420},
		{"baseline, coefficients off, no decoupled", off, c420, noDecoupled, Hybrid, true, nvjpeg.CSS420},
		{"progressive, coefficients off", off, prog, all, NvjpegCPUHuffman, false, nvjpeg.CSS420},
		{"baseline, the SMs' Huffman decoding", sms, c420, all, SluiceGPUHuffman, true, nvjpeg.CSS420},
		{"greyscale, the SMs' Huffman decoding", sms, grey, none, SluiceGPUHuffman, false, nvjpeg.CSSGray},
		{"progressive, the SMs' Huffman decoding on: the CPU workers'", sms, prog, all, SluiceCoefficients, false, nvjpeg.CSS420},
		{"large baseline, the SMs' Huffman decoding on: nvJPEG's GPU state", sms, large, all, NvjpegGPUHuffman, true, nvjpeg.CSS420},
	}
	for _, c := range cases {
		d := c.set.Decide(c.h.JPEG(), c.h.Pixels(), c.d)
		if d.Path != c.path || d.Engines != c.engines || d.Chroma != c.chroma {
			t.Errorf("%s: %s, engines %v, chroma %d; want %s, %v, %d", c.name, d.Path, d.Engines, d.Chroma, c.path, c.engines, c.chroma)
		}
	}
}

// TestChromaRatios: three components map by the ratio of the luma's
// factors to the chroma's, the chroma alike; other layouts are unknown.
func TestChromaRatios(t *testing.T) {
	f := func(y, c1, c2 [2]uint8) codec.JPEGInfo {
		return codec.JPEGInfo{Components: 3, Sampling: [4]codec.Sampling{{H: y[0], V: y[1]}, {H: c1[0], V: c1[1]}, {H: c2[0], V: c2[1]}}}
	}
	for _, c := range []struct {
		j    codec.JPEGInfo
		want nvjpeg.Subsampling
	}{
		{f([2]uint8{2, 2}, [2]uint8{1, 1}, [2]uint8{1, 1}), nvjpeg.CSS420},
		{f([2]uint8{2, 2}, [2]uint8{1, 2}, [2]uint8{1, 2}), nvjpeg.CSS422},
		{f([2]uint8{2, 2}, [2]uint8{2, 2}, [2]uint8{2, 2}), nvjpeg.CSS444},
		{f([2]uint8{2, 2}, [2]uint8{2, 1}, [2]uint8{2, 1}), nvjpeg.CSS440},
		{f([2]uint8{4, 1}, [2]uint8{1, 1}, [2]uint8{1, 1}), nvjpeg.CSSUnknown},
		{f([2]uint8{2, 2}, [2]uint8{1, 1}, [2]uint8{1, 2}), nvjpeg.CSSUnknown},
		{f([2]uint8{3, 1}, [2]uint8{2, 1}, [2]uint8{2, 1}), nvjpeg.CSSUnknown},
		{f([2]uint8{1, 1}, [2]uint8{0, 0}, [2]uint8{0, 0}), nvjpeg.CSSUnknown},
	} {
		if got := Chroma(c.j); got != c.want {
			t.Errorf("%+v: %d, want %d", c.j.Sampling, got, c.want)
		}
	}
}

// TestDecideGreyFactors: a greyscale JPEG saying 2x2 sampling is routed
// like one saying 1x1, with the byte the engines' copy rewrites.
func TestDecideGreyFactors(t *testing.T) {
	src, err := testimg.LibJPEG(noisy(40, 24), 40, 24, testimg.LibJPEGOptions{Quality: 90, Grey: true})
	if err != nil {
		t.Fatal(err)
	}
	at := -1
	for i := 0; i+11 < len(src); i++ {
		if src[i] == 0xFF && src[i+1] == 0xC0 {
			at = i + 11
			break
		}
	}
	if at < 0 || src[at] != 0x11 {
		t.Fatal("no one-component SOF0 sampled 1x1")
	}
	odd := append([]byte(nil), src...)
	odd[at] = 0x22
	dec := Decoders{Engines: true, Decoupled: true}
	d1, d2 := Defaults().Decide(facts(t, src).JPEG(), 960, dec), Defaults().Decide(facts(t, odd).JPEG(), 960, dec)
	if d1.GreyFactorsAt != 0 || d2.GreyFactorsAt != at || d2.Path != d1.Path || d2.Engines != d1.Engines || d2.Chroma != nvjpeg.CSSGray {
		t.Errorf("1x1: %+v; 2x2: %+v (factors at %d)", d1, d2, at)
	}
}

// TestFallback: every path ends at libjpeg-turbo, the GPU-Huffman state by
// way of the CPU-Huffman one.
func TestFallback(t *testing.T) {
	for p := range NumPaths {
		steps, q := 0, p
		for q != CPU && steps < 3 {
			q, steps = Fallback(q), steps+1
		}
		if q != CPU {
			t.Errorf("%s never falls back to cpu", p)
		}
	}
	if Fallback(NvjpegGPUHuffman) != NvjpegCPUHuffman {
		t.Errorf("gpu_huffman falls back to %s, want cpu_huffman", Fallback(NvjpegGPUHuffman))
	}
	if Fallback(SluiceGPUHuffman) != SluiceCoefficients {
		t.Errorf("sluice_gpu_huffman falls back to %s, want coefficients", Fallback(SluiceGPUHuffman))
	}
	for p := range NumPaths {
		if p.String() == "unknown" || p.String() == "" {
			t.Errorf("path %d has no name", p)
		}
	}
}

// TestFromEnv: each variable overrides its setting; what does not parse
// keeps the default.
func TestFromEnv(t *testing.T) {
	env := map[string]string{
		"SLUICE_GPU_COEFFICIENTS":   "progressive",
		"SLUICE_GPU_HUFFMAN_PIXELS": "2000000",
		"SLUICE_GPU_BUSY_SHARE":     "60",
		"SLUICE_GPU_SHARED_QUEUE":   "0",
		"SLUICE_GPU_HW_LANES":       "x",
		"SLUICE_GPU_SLUICE_HUFFMAN": "1",
		"SLUICE_GPU_SM_SHARE":       "45",
	}
	s := FromEnv(func(k string) string { return env[k] })
	want := Defaults()
	want.Coefficients, want.GPUHuffmanPixels, want.BusyShare, want.SharedQueue = CoefficientsProgressive, 2_000_000, 0.6, 0
	want.SluiceGPUHuffman, want.SMShare = true, 0.45
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if s := FromEnv(func(string) string { return "" }); s != Defaults() {
		t.Errorf("an empty environment: %+v, want the defaults", s)
	}
}
