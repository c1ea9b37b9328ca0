package kernels_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// The fused kernel against the CPU operators: each case runs a pipeline
// through the CPU executor on a lossless PNG of an image, and the kernel on
// the same pixels with the Sample and Params that express that pipeline,
// and compares the outputs on the 0..255 scale.

// runner runs the kernel once over a batch: imgs[i] is the stored HWC image
// of samples[i] (tightly packed); it returns each sample's output bytes.
type runner func(t *testing.T, imgs [][]byte, samples []kernels.Sample, p kernels.Params) [][]byte

// newRunner gives the kernel's runner, skipping the test without a GPU.
var newRunner = cudaRunner

// cudaSetup makes the primary context current, loads the kernels and
// makes a stream, all released at the test's end; it skips the test
// without a GPU.
func cudaSetup(t *testing.T) (*cuda.Context, *kernels.Fused, cuda.Stream) {
	return cudaSetupWith(t, kernels.LoadFused)
}

func cudaSetupWith(t *testing.T, load func() (*kernels.Fused, error)) (*cuda.Context, *kernels.Fused, cuda.Stream) {
	ctx := gputest.Context(t)
	f, err := load()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	st, err := cuda.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Destroy(); err != nil {
			t.Error(err)
		}
	})
	return ctx, f, st
}

// onDevice makes ctx current on the calling goroutine's thread (subtests
// run on goroutines of their own) and gives an upload function whose
// device buffers done frees.
func onDevice(t *testing.T, ctx *cuda.Context, st cuda.Stream) (upload func([]byte) cuda.DevicePtr, done func()) {
	t.Helper()
	runtime.LockOSThread()
	if err := ctx.SetCurrent(); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	var bufs []cuda.DevicePtr
	upload = func(b []byte) cuda.DevicePtr {
		d, err := cuda.MemAlloc(len(b))
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, d)
		if err := cuda.MemcpyHtoDAsync(d, b, st); err != nil {
			t.Fatal(err)
		}
		return d
	}
	done = func() {
		for _, b := range bufs {
			if err := cuda.MemFree(b); err != nil {
				t.Error(err)
			}
		}
		runtime.UnlockOSThread()
	}
	return upload, done
}

func cudaRunner(t *testing.T) runner { return cudaRunnerWith(t, kernels.LoadFused) }

func cudaRunnerWith(t *testing.T, load func() (*kernels.Fused, error)) runner {
	ctx, f, st := cudaSetupWith(t, load)
	return func(t *testing.T, imgs [][]byte, samples []kernels.Sample, p kernels.Params) [][]byte {
		t.Helper()
		upload, done := onDevice(t, ctx, st)
		defer done()
		samples = append([]kernels.Sample(nil), samples...)
		outs := make([][]byte, len(samples))
		maxH, maxW := 0, 0
		for i := range samples {
			s := &samples[i]
			s.Src = uint64(upload(imgs[i]))
			// A sentinel that no output byte of these cases has in every
			// element: an unwritten output shows.
			outs[i] = bytes.Repeat([]byte{0xA5}, outBytes(s, &p))
			s.Dst = uint64(upload(outs[i]))
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			maxH, maxW = max(maxH, int(s.OutH)), max(maxW, int(s.OutW))
		}
		dev := upload(kernels.Bytes(samples))
		if err := f.Launch(st, &p, dev, len(samples), maxH, maxW); err != nil {
			t.Fatal(err)
		}
		for i := range samples {
			if err := cuda.MemcpyDtoHAsync(outs[i], cuda.DevicePtr(samples[i].Dst), st); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Synchronize(); err != nil {
			t.Fatal(err)
		}
		return outs
	}
}

func outBytes(s *kernels.Sample, p *kernels.Params) int {
	return int(s.OutH) * int(s.OutW) * int(p.OutC) * []int{1, 2, 4}[p.DType]
}

// testImage is a deterministic h×w RGB image: smooth gradients with noise,
// so that both flat areas and edges are resampled.
func testImage(h, w int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	px := make([]byte, h*w*3)
	for y := range h {
		for x := range w {
			p := px[(y*w+x)*3:]
			noise := r.IntN(41) - 20
			p[0] = clampByte(x*255/max(w-1, 1) + noise)
			p[1] = clampByte(y*255/max(h-1, 1) - noise)
			p[2] = clampByte((x+y)*2 + r.IntN(64))
			if (x/8+y/8)%5 == 0 { // hard edges
				p[2] = 255 - p[2]
			}
		}
	}
	return px
}

func clampByte(v int) byte { return byte(min(max(v, 0), 255)) }

// encodePNG encodes an HWC RGB image.
func encodePNG(t *testing.T, px []byte, h, w int) []byte {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range h * w {
		copy(m.Pix[i*4:], px[i*3:i*3+3])
		m.Pix[i*4+3] = 255
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// cpuRun runs a pipeline's text on one encoded image and returns its first
// output.
func cpuRun(t *testing.T, text string, enc []byte) []byte {
	t.Helper()
	prog, err := pipeline.CompileText([]byte(text), "gpu_test.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	e, err := executor.New(prog, executor.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := e.Run([][][]byte{{enc}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errs[0] != nil {
		t.Fatal(r.Errs[0])
	}
	return bytes.Clone(r.Outputs[0].Data)
}

// values decodes output bytes to the 0..255 scale, undoing mul/add.
func values(b []byte, p *kernels.Params, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		var f float64
		switch p.DType {
		case kernels.DTypeUint8:
			v[i] = float64(b[i])
			continue
		case kernels.DTypeFloat16:
			f = ops.Float16Value(binary.LittleEndian.Uint16(b[i*2:]))
		default:
			f = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:])))
		}
		k := i % int(p.OutC) // HWC
		if p.Layout == kernels.LayoutCHW {
			k = i / (n / int(p.OutC))
		}
		v[i] = (f - float64(p.Add[k])) / float64(p.Mul[k])
	}
	return v
}

// Geometry as the CPU operators compute it (torchvision's and
// ultralytics' rules), to express each pipeline as a Sample.

func shorterSize(h, w, n int) (int, int) {
	short, long := min(h, w), max(h, w)
	nl := int(float64(n) * float64(long) / float64(short))
	if w <= h {
		return nl, n
	}
	return n, nl
}

func centerStart(in, out int) int {
	if out > in {
		return -((out - in) / 2)
	}
	return int(math.RoundToEven(float64(in-out) / 2))
}

func letterbox(h, w, ch, cw int) (nh, nw, top, left int) {
	r := math.Min(float64(ch)/float64(h), float64(cw)/float64(w))
	nw = min(max(int(math.RoundToEven(float64(w)*r)), 1), cw)
	nh = min(max(int(math.RoundToEven(float64(h)*r)), 1), ch)
	top = int(math.RoundToEven(float64(ch-nh)/2 - 0.1))
	left = int(math.RoundToEven(float64(cw-nw)/2 - 0.1))
	return nh, nw, top, left
}

type fusedCase struct {
	name   string
	h, w   int // stored size
	orient int
	gray   bool   // decode color GRAY
	nodes  string // the pipeline's nodes after decode
	// sample fills in the geometry for the upright size uh×uw.
	sample func(uh, uw int) kernels.Sample
	p      kernels.Params
	// same: the kernel's bytes must equal the CPU's (integer arithmetic
	// on both), not only be within rounding of them.
	same bool
}

var (
	rgb     = [4]int32{0, 1, 2, 3}
	imagenS = [4]float32{
		float32(1 / 255.0 / 0.229), float32(1 / 255.0 / 0.224), float32(1 / 255.0 / 0.225), 1}
	imagenA = [4]float32{
		float32(-0.485 / 0.229), float32(-0.456 / 0.224), float32(-0.406 / 0.225), 0}
	ones   = [4]float32{1, 1, 1, 1}
	by255  = [4]float32{1 / 255.0, 1 / 255.0, 1 / 255.0, 1 / 255.0}
	interp = []string{"nearest", "linear", "cubic", "area"}
)

const imagenetNodes = `
node { op: "resize" arg { name: "shorter" int: 64 } arg { name: "interp" str: "linear" } }
node { op: "crop" arg { name: "size" ints { v: [56, 56] } } }
node { op: "normalize" arg { name: "scale" float: 0.00392156862745098 }
  arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } } arg { name: "std" floats { v: [0.229, 0.224, 0.225] } } }
`

// imagenet is resize shorter=64 then a centre crop of 56.
func imagenet(uh, uw int) kernels.Sample {
	rh, rw := shorterSize(uh, uw, 64)
	return kernels.Sample{WinH: int32(uh), WinW: int32(uw), RsH: int32(rh), RsW: int32(rw),
		OffY: int32(-centerStart(rh, 56)), OffX: int32(-centerStart(rw, 56)), OutH: 56, OutW: 56}
}

func imagenetParams() kernels.Params {
	return kernels.Params{Interp: kernels.InterpLinear, Antialias: 1, OutC: 3, Layout: kernels.LayoutCHW,
		DType: kernels.DTypeFloat32, SrcChan: rgb, Mul: imagenS, Add: imagenA}
}

func exact(h, w int) func(uh, uw int) kernels.Sample {
	return func(uh, uw int) kernels.Sample {
		return kernels.Sample{WinH: int32(uh), WinW: int32(uw), RsH: int32(h), RsW: int32(w), OutH: int32(h), OutW: int32(w)}
	}
}

func fusedCases() []fusedCase {
	cs := []fusedCase{
		{name: "imagenet", h: 97, w: 131, orient: 1, nodes: imagenetNodes, sample: imagenet, p: imagenetParams()},
		{name: "imagenet/orient3", h: 97, w: 131, orient: 3, nodes: imagenetNodes, sample: imagenet, p: imagenetParams()},
		{name: "imagenet/orient6", h: 97, w: 131, orient: 6, nodes: imagenetNodes, sample: imagenet, p: imagenetParams()},
		{
			name: "letterbox/fp16", h: 97, w: 131, orient: 1,
			nodes: `
node { op: "letterbox" arg { name: "size" ints { v: [64, 64] } } arg { name: "fill" floats { v: [114] } } }
node { op: "normalize" input: "letterbox:image" arg { name: "scale" float: 0.00392156862745098 }
  arg { name: "dtype" str: "FP16" } }`,
			sample: func(uh, uw int) kernels.Sample {
				nh, nw, top, left := letterbox(uh, uw, 64, 64)
				return kernels.Sample{WinH: int32(uh), WinW: int32(uw), RsH: int32(nh), RsW: int32(nw),
					OffY: int32(top), OffX: int32(left), OutH: 64, OutW: 64}
			},
			p: kernels.Params{Interp: kernels.InterpLinear, Antialias: 1, OutC: 3, Layout: kernels.LayoutCHW,
				DType: kernels.DTypeFloat16, SrcChan: rgb, Fill: [4]float32{114, 114, 114, 114}, Mul: by255},
		},
		{
			// The window reaches past the top and the right of the image.
			name: "crop-then-resize", h: 97, w: 131, orient: 1,
			nodes: `
node { op: "crop" arg { name: "roi" ints { v: [-10, 20, 80, 130] } } arg { name: "fill" floats { v: [7] } } }
node { op: "resize" arg { name: "size" ints { v: [33, 47] } } }
node { op: "normalize" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }`,
			sample: func(uh, uw int) kernels.Sample {
				return kernels.Sample{WinY: -10, WinX: 20, WinH: 80, WinW: 130, RsH: 33, RsW: 47, OutH: 33, OutW: 47}
			},
			p: kernels.Params{Interp: kernels.InterpLinear, Antialias: 1, OutC: 3, Layout: kernels.LayoutHWC,
				DType: kernels.DTypeUint8, SrcChan: rgb, Fill: [4]float32{7, 7, 7, 7}, Mul: ones},
		},
		{
			name: "gray/orient6", h: 97, w: 131, orient: 6, gray: true,
			nodes: `
node { op: "resize" arg { name: "size" ints { v: [50, 40] } } arg { name: "interp" str: "cubic" } }
node { op: "normalize" arg { name: "scale" float: 0.00392156862745098 } arg { name: "mean" floats { v: [0.5] } } }`,
			sample: exact(50, 40),
			p: kernels.Params{Interp: kernels.InterpCubic, Antialias: 1, OutC: 1, Layout: kernels.LayoutCHW,
				DType: kernels.DTypeFloat32, SrcChan: [4]int32{kernels.ChanLuma}, Mul: by255, Add: [4]float32{-0.5}},
		},
		{
			// Channels reversed, CHW bytes.
			name: "bgr/uint8-chw", h: 60, w: 45, orient: 8,
			nodes: `
node { op: "resize" arg { name: "size" ints { v: [45, 30] } } }
node { op: "normalize" arg { name: "order" str: "BGR" } arg { name: "dtype" str: "UINT8" } }`,
			sample: exact(45, 30),
			p: kernels.Params{Interp: kernels.InterpLinear, Antialias: 1, OutC: 3, Layout: kernels.LayoutCHW,
				DType: kernels.DTypeUint8, SrcChan: [4]int32{2, 1, 0}, Mul: ones},
		},
	}
	// Exact sizes for every filter with and without antialias: a shrink
	// on both axes, an enlargement, a height shrunk much more than the
	// width (Pillow's vertical-first order), and ratios with exact ties
	// for nearest (96→36 and 128→48 are 8/3).
	sizes := []struct{ h, w, oh, ow int }{{97, 131, 40, 50}, {31, 23, 70, 52}, {131, 97, 30, 90}, {96, 128, 36, 48}}
	for f, name := range interp {
		for _, aa := range []bool{true, false} {
			for _, sz := range sizes {
				cs = append(cs, fusedCase{
					name: fmt.Sprintf("%s/aa=%v/%dx%d-%dx%d", name, aa, sz.h, sz.w, sz.oh, sz.ow),
					h:    sz.h, w: sz.w, orient: 1,
					nodes: fmt.Sprintf(`
node { op: "resize" arg { name: "size" ints { v: [%d, %d] } } arg { name: "interp" str: %q } arg { name: "antialias" bool: %v } }
node { op: "normalize" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }`, sz.oh, sz.ow, name, aa),
					sample: exact(sz.oh, sz.ow),
					p: kernels.Params{Interp: int32(f), Antialias: b2i(aa), OutC: 3, Layout: kernels.LayoutHWC,
						DType: kernels.DTypeUint8, SrcChan: rgb, Mul: ones},
				})
			}
		}
	}
	return append(cs, openCVCases()...)
}

// openCVCases: interp opencv_linear, whose integer arithmetic the kernel
// must reproduce bit for bit: shrinking, enlarging, OpenCV's 2x2 path at
// exactly half, one axis unchanged, a single row and column (every read
// past the edge), a window reaching outside the image, an orientation,
// grey, and letterbox as ultralytics uses it.
func openCVCases() []fusedCase {
	hwc := kernels.Params{Interp: kernels.InterpOpenCVLinear, OutC: 3, Layout: kernels.LayoutHWC,
		DType: kernels.DTypeUint8, SrcChan: rgb, Mul: ones}
	resize := func(oh, ow int) string {
		return fmt.Sprintf(`
node { op: "resize" arg { name: "size" ints { v: [%d, %d] } } arg { name: "interp" str: "opencv_linear" } }
node { op: "normalize" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }`, oh, ow)
	}
	var cs []fusedCase
	for _, sz := range []struct{ h, w, oh, ow int }{
		{97, 131, 40, 50}, {31, 23, 70, 52}, {131, 97, 30, 90}, {96, 128, 48, 64}, {97, 131, 97, 60},
		{1, 9, 4, 3}, {9, 1, 5, 7}, {5, 7, 11, 3}, {640, 480, 333, 250},
	} {
		cs = append(cs, fusedCase{
			name: fmt.Sprintf("opencv_linear/%dx%d-%dx%d", sz.h, sz.w, sz.oh, sz.ow), h: sz.h, w: sz.w, orient: 1,
			nodes: resize(sz.oh, sz.ow), sample: exact(sz.oh, sz.ow), p: hwc, same: true,
		})
	}
	gray := hwc
	gray.OutC, gray.SrcChan = 1, [4]int32{kernels.ChanLuma}
	fill := hwc
	fill.Fill = [4]float32{7, 7, 7, 7}
	lb := hwc
	lb.Fill = [4]float32{114, 114, 114, 114}
	return append(cs,
		fusedCase{name: "opencv_linear/orient6", h: 97, w: 131, orient: 6, nodes: resize(50, 40), sample: exact(50, 40), p: hwc, same: true},
		fusedCase{name: "opencv_linear/gray", h: 97, w: 131, orient: 1, gray: true, nodes: resize(50, 40), sample: exact(50, 40), p: gray, same: true},
		fusedCase{
			name: "opencv_linear/crop-then-resize", h: 97, w: 131, orient: 1, p: fill, same: true,
			nodes: `
node { op: "crop" arg { name: "roi" ints { v: [-10, 20, 80, 130] } } arg { name: "fill" floats { v: [7] } } }` + resize(33, 47),
			sample: func(uh, uw int) kernels.Sample {
				return kernels.Sample{WinY: -10, WinX: 20, WinH: 80, WinW: 130, RsH: 33, RsW: 47, OutH: 33, OutW: 47}
			},
		},
		fusedCase{
			name: "opencv_linear/letterbox", h: 97, w: 131, orient: 1, p: lb, same: true,
			nodes: `
node { op: "letterbox" arg { name: "size" ints { v: [64, 64] } } arg { name: "interp" str: "opencv_linear" } }
node { op: "normalize" input: "letterbox:image" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }`,
			sample: func(uh, uw int) kernels.Sample {
				nh, nw, top, left := letterbox(uh, uw, 64, 64)
				return kernels.Sample{WinH: int32(uh), WinW: int32(uw), RsH: int32(nh), RsW: int32(nw),
					OffY: int32(top), OffX: int32(left), OutH: 64, OutW: 64}
			},
		},
	)
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func TestFusedMatchesCPU(t *testing.T) {
	run := newRunner(t)
	for i, c := range fusedCases() {
		t.Run(c.name, func(t *testing.T) {
			stored := testImage(c.h, c.w, uint64(i))
			uh, uw := codec.OrientedDims(c.h, c.w, c.orient)
			upright := make([]byte, len(stored))
			codec.Orient(upright, stored, c.h, c.w, 3, c.orient)
			color := "RGB"
			if c.gray {
				color = "GRAY"
			}
			text := fmt.Sprintf("version: 1\ninput { name: \"IMAGE\" }\nnode { op: \"decode\" arg { name: \"color\" str: %q } }\n%s\noutput { name: \"OUT\" }\n", color, c.nodes)
			want := cpuRun(t, text, encodePNG(t, upright, uh, uw))

			s := c.sample(uh, uw)
			s.SrcH, s.SrcW, s.SrcPitch, s.SrcC, s.Orient = int32(c.h), int32(c.w), int32(c.w*3), 3, int32(c.orient)
			got := run(t, [][]byte{stored}, []kernels.Sample{s}, c.p)[0]
			if len(got) != len(want) {
				t.Fatalf("kernel wrote %d bytes, the CPU %d", len(got), len(want))
			}
			if c.same {
				if i, n := diff(got, want); i >= 0 {
					t.Fatalf("byte %d of %d: kernel %d, CPU %d (%d bytes differ)", i, len(got), got[i], want[i], n)
				}
				return
			}
			compare(t, values(got, &c.p, int(s.OutH*s.OutW)*int(c.p.OutC)), values(want, &c.p, int(s.OutH*s.OutW)*int(c.p.OutC)))
		})
	}
}

// TestFusedBatch runs differently sized and oriented images in one launch:
// each sample must get its own geometry and leave the grid's spare threads
// idle.
func TestFusedBatch(t *testing.T) {
	run := newRunner(t)
	shapes := []struct{ h, w, o int }{{97, 131, 1}, {40, 300, 6}, {256, 64, 3}, {57, 57, 7}}
	var imgs [][]byte
	var samples []kernels.Sample
	var wants [][]byte
	p := imagenetParams()
	text := "version: 1\ninput { name: \"IMAGE\" }\nnode { op: \"decode\" }\n" + imagenetNodes + "output { name: \"OUT\" }\n"
	for i, sh := range shapes {
		stored := testImage(sh.h, sh.w, uint64(100+i))
		uh, uw := codec.OrientedDims(sh.h, sh.w, sh.o)
		upright := make([]byte, len(stored))
		codec.Orient(upright, stored, sh.h, sh.w, 3, sh.o)
		wants = append(wants, cpuRun(t, text, encodePNG(t, upright, uh, uw)))
		s := imagenet(uh, uw)
		s.SrcH, s.SrcW, s.SrcPitch, s.SrcC, s.Orient = int32(sh.h), int32(sh.w), int32(sh.w*3), 3, int32(sh.o)
		imgs, samples = append(imgs, stored), append(samples, s)
	}
	// A larger last sample: the others' threads past 56×56 must return.
	big := testImage(120, 90, 200)
	imgs = append(imgs, big)
	samples = append(samples, kernels.Sample{SrcH: 120, SrcW: 90, SrcPitch: 270, SrcC: 3, Orient: 1,
		WinH: 120, WinW: 90, RsH: 120, RsW: 90, OutH: 120, OutW: 90})
	got := run(t, imgs, samples, p)
	for i := range shapes {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			compare(t, values(got[i], &p, 3*56*56), values(wants[i], &p, 3*56*56))
		})
	}
	// The last one is a plain copy: exact up to float rounding.
	v := values(got[len(got)-1], &p, 3*120*90)
	for k := range 3 {
		for i := range 120 * 90 {
			if d := math.Abs(v[k*120*90+i] - float64(big[i*3+k])); d > 1e-3 {
				t.Fatalf("copied sample: channel %d pixel %d is %v, want %d", k, i, v[k*120*90+i], big[i*3+k])
			}
		}
	}
}

// TestCubinMatchesPTX runs every case through the sm_90 cubin and through
// the JIT-compiled PTX, which other GPUs load: the same sources must give
// the same bytes both ways.
func TestCubinMatchesPTX(t *testing.T) {
	cubin := cudaRunner(t)
	probe, err := kernels.LoadFused()
	if err != nil {
		t.Fatal(err)
	}
	fromCubin := probe.FromCubin()
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	if !fromCubin {
		t.Skip("this GPU is not sm_90 (or SLUICE_KERNELS=ptx): it runs the PTX, which the other tests cover")
	}
	jit := cudaRunnerWith(t, kernels.LoadFusedPTX)
	for i, c := range fusedCases() {
		t.Run(c.name, func(t *testing.T) {
			stored := testImage(c.h, c.w, uint64(i))
			uh, uw := codec.OrientedDims(c.h, c.w, c.orient)
			s := c.sample(uh, uw)
			s.SrcH, s.SrcW, s.SrcPitch, s.SrcC, s.Orient = int32(c.h), int32(c.w), int32(c.w*3), 3, int32(c.orient)
			a := cubin(t, [][]byte{stored}, []kernels.Sample{s}, c.p)[0]
			b := jit(t, [][]byte{stored}, []kernels.Sample{s}, c.p)[0]
			if !bytes.Equal(a, b) {
				n := 0
				for k := range a {
					if a[k] != b[k] {
						n++
					}
				}
				t.Errorf("cubin and PTX outputs differ in %d of %d bytes", n, len(a))
			}
		})
	}
}

// firstDiff is the index of the first byte where a and b (of one length)
// differ, or -1.
// diff gives the first index where a and b differ (-1: none) and how
// many bytes differ.
func diff(a, b []byte) (first, n int) {
	first = -1
	for i := range a {
		if a[i] != b[i] {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	return first, n
}

// compare asserts the kernel's values are within rounding of the CPU's:
// mean absolute difference at most 0.5 and none above 4 levels of 255.
func compare(t *testing.T, got, want []float64) {
	t.Helper()
	sum, worst, at := 0.0, 0.0, 0
	for i := range got {
		d := math.Abs(got[i] - want[i])
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		sum += d
		if d > worst {
			worst, at = d, i
		}
	}
	mean := sum / float64(len(got))
	t.Logf("mean |diff| %.4f, max %.3f at element %d", mean, worst, at)
	if mean > 0.5 || worst > 4 {
		t.Errorf("kernel differs from the CPU: mean |diff| %.4f (limit 0.5), max %.3f at element %d (got %.3f, want %.3f; limit 4)",
			mean, worst, at, got[at], want[at])
	}
}

// TestFusedBoxCrops: box crops, one kernel sample per box with Pillow's
// float resize box, against crop_boxes on the CPU, for every filter,
// letterboxed or not, on an oriented image; the geometry is ops' own
// (GPUCrops), an unused row zeros.
func TestFusedBoxCrops(t *testing.T) {
	run := newRunner(t)
	const h, w, oh, ow = 97, 131, 24, 40
	stored := testImage(h, w, 11)
	boxes := f32Bytes(
		10.5, 3.25, 70.75, 50, // inside, fractional
		-20, 40, 60.5, 200, // reaching outside: clipped
		30, 30, 30.4, 90, // thinner than a pixel across
		float32(math.NaN()), 0, 1, 1, // unused: zeros
		0, 0, 97, 131, // the whole upright image (orientation 6: 97 wide)
	)
	for _, orient := range []int{1, 6} {
		uh, uw := codec.OrientedDims(h, w, orient)
		upright := make([]byte, len(stored))
		codec.Orient(upright, stored, h, w, 3, orient)
		enc := encodePNG(t, upright, uh, uw)
		for f, name := range interp {
			for _, lb := range []bool{false, true} {
				t.Run(fmt.Sprintf("orient%d/%s/letterbox=%v", orient, name, lb), func(t *testing.T) {
					prog, err := pipeline.CompileText([]byte(fmt.Sprintf(`version: 1 input { name: "IMAGE" }
input { name: "BOXES" boxes { max: 5 coords: "pixel" } }
node { op: "decode" input: "IMAGE" }
node { op: "crop_boxes" input: ["decode", "BOXES"] arg { name: "size" ints { v: [%d, %d] } } arg { name: "interp" str: %q }
  arg { name: "letterbox" bool: %v } arg { name: "fill" floats { v: [114] } } }
node { op: "normalize" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }
output { name: "OUT" }`, oh, ow, name, lb)), "boxes.pbtxt")
					if err != nil {
						t.Fatal(err)
					}
					e, err := executor.New(prog, executor.Options{Workers: 1})
					if err != nil {
						t.Fatal(err)
					}
					defer e.Close()
					r, err := e.Run([][][]byte{{enc}, {boxes}})
					if err != nil || r.Errs[0] != nil {
						t.Fatal(err, r.Errs[0])
					}
					want := r.Outputs[0].Data

					g := ops.NewGeom(uh, uw, ops.RGB, ops.Limits{})
					crops := make([]ops.Crop, 5)
					if err := prog.Nodes[1].Op.(ops.GPUCropper).GPUCrops(nil, &g, boxes, 5, crops, nil); err != nil {
						t.Fatal(err)
					}
					p := kernels.Params{Interp: int32(f), Antialias: 1, OutC: 3, Layout: kernels.LayoutHWC,
						DType: kernels.DTypeUint8, SrcChan: rgb, Mul: ones}
					if g.HasFill {
						p.Fill = [4]float32{114, 114, 114, 114}
					}
					var imgs [][]byte
					var samples []kernels.Sample
					for _, c := range crops {
						s := kernels.Sample{SrcH: h, SrcW: w, SrcPitch: w * 3, SrcC: 3, Orient: int32(orient),
							WinH: int32(uh), WinW: int32(uw), RsH: int32(c.Rs[0]), RsW: int32(c.Rs[1]),
							OffY: int32(c.Off[0]), OffX: int32(c.Off[1]), OutH: oh, OutW: ow,
							BoxX0: c.Box[0], BoxY0: c.Box[1], BoxX1: c.Box[2], BoxY1: c.Box[3]}
						if !c.Used {
							s = kernels.Sample{SrcH: h, SrcW: w, SrcPitch: w * 3, SrcC: 3, Orient: 1,
								WinH: 1, WinW: 1, RsH: 1, RsW: 1, OutH: oh, OutW: ow, Zero: 1}
						}
						imgs, samples = append(imgs, stored), append(samples, s)
					}
					got := run(t, imgs, samples, p)
					row := oh * ow * 3
					for k := range crops {
						gb, wb := got[k], want[k*row:(k+1)*row]
						if !crops[k].Used {
							zeros := make([]byte, row)
							if i, _ := diff(gb, zeros); i >= 0 {
								t.Errorf("crop %d: unused, yet the kernel's is not zeros", k)
							}
							if i, _ := diff(wb, zeros); i >= 0 {
								t.Errorf("crop %d: unused, yet the CPU's is not zeros", k)
							}
							continue
						}
						compare(t, values(gb, &p, row), values(wb, &p, row))
					}
				})
			}
		}
	}
}

func f32Bytes(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}
