package kernels_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/kernels"
)

// torch's uint8 modes (interp torch_linear and torch_cubic) in the fused
// kernel: integer arithmetic after float64 weights computed as the CPU's, so
// the kernel's bytes must equal the CPU executor's on every case (same:
// true), not only be within rounding of them. The cases cover both filters
// with and without antialias, shrinking, enlarging, one axis unchanged, a
// single row and column, a large shrink factor (long filters, past the
// kernel's cached weights), an exact halving, an orientation, grey, a
// window reaching outside the image (fill), resize then centre crop,
// letterbox, and HWC, CHW and float outputs.

func torchCases() []fusedCase {
	hwc := func(interp string, aa bool) kernels.Params {
		f := int32(kernels.InterpTorchLinear)
		if interp == "torch_cubic" {
			f = kernels.InterpTorchCubic
		}
		return kernels.Params{Interp: f, Antialias: b2i(aa), OutC: 3, Layout: kernels.LayoutHWC,
			DType: kernels.DTypeUint8, SrcChan: rgb, Mul: ones}
	}
	resize := func(oh, ow int, interp string, aa bool) string {
		return fmt.Sprintf(`
node { op: "resize" arg { name: "size" ints { v: [%d, %d] } } arg { name: "interp" str: %q } arg { name: "antialias" bool: %v } }
node { op: "normalize" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }`, oh, ow, interp, aa)
	}
	var cs []fusedCase
	for _, interp := range []string{"torch_linear", "torch_cubic"} {
		for _, aa := range []bool{true, false} {
			p := hwc(interp, aa)
			tag := fmt.Sprintf("%s/aa=%v", interp, aa)
			for _, sz := range []struct{ h, w, oh, ow int }{
				{97, 131, 40, 50}, {31, 23, 70, 52}, {131, 97, 30, 90}, {96, 128, 48, 64}, {97, 131, 97, 60},
				{97, 131, 50, 131}, {1, 9, 4, 3}, {9, 1, 5, 7}, {5, 7, 11, 3}, {640, 480, 333, 250},
				{600, 40, 7, 40}, {3, 2, 150, 100},
			} {
				cs = append(cs, fusedCase{
					name: fmt.Sprintf("%s/%dx%d-%dx%d", tag, sz.h, sz.w, sz.oh, sz.ow), h: sz.h, w: sz.w, orient: 1,
					nodes: resize(sz.oh, sz.ow, interp, aa), sample: exact(sz.oh, sz.ow), p: p, same: true,
				})
			}
			gray := p
			gray.OutC, gray.SrcChan = 1, [4]int32{kernels.ChanLuma}
			fill := p
			fill.Fill = [4]float32{7, 7, 7, 7}
			lb := p
			lb.Fill = [4]float32{114, 114, 114, 114}
			chw := p
			chw.Layout, chw.DType, chw.Mul, chw.Add = kernels.LayoutCHW, kernels.DTypeFloat32, imagenS, imagenA
			cs = append(cs,
				fusedCase{name: tag + "/orient6", h: 97, w: 131, orient: 6, nodes: resize(50, 40, interp, aa),
					sample: exact(50, 40), p: p, same: true},
				fusedCase{name: tag + "/gray", h: 97, w: 131, orient: 1, gray: true, nodes: resize(50, 40, interp, aa),
					sample: exact(50, 40), p: gray, same: true},
				fusedCase{
					name: tag + "/crop-then-resize", h: 97, w: 131, orient: 1, p: fill, same: true,
					nodes: `
node { op: "crop" arg { name: "roi" ints { v: [-10, 20, 80, 130] } } arg { name: "fill" floats { v: [7] } } }` + resize(33, 47, interp, aa),
					sample: func(uh, uw int) kernels.Sample {
						return kernels.Sample{WinY: -10, WinX: 20, WinH: 80, WinW: 130, RsH: 33, RsW: 47, OutH: 33, OutW: 47}
					},
				},
				fusedCase{
					name: tag + "/letterbox", h: 97, w: 131, orient: 1, p: lb, same: true,
					nodes: fmt.Sprintf(`
node { op: "letterbox" arg { name: "size" ints { v: [64, 64] } } arg { name: "interp" str: %q } arg { name: "antialias" bool: %v } }
node { op: "normalize" input: "letterbox:image" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }`, interp, aa),
					sample: func(uh, uw int) kernels.Sample {
						nh, nw, top, left := letterbox(uh, uw, 64, 64)
						return kernels.Sample{WinH: int32(uh), WinW: int32(uw), RsH: int32(nh), RsW: int32(nw),
							OffY: int32(top), OffX: int32(left), OutH: 64, OutW: 64}
					},
				},
				// Float output: the resampled bytes then go through each
				// side's float map, so the values agree to float rounding.
				fusedCase{
					name: tag + "/shorter-crop-chw", h: 97, w: 131, orient: 3, p: chw, same: true,
					nodes: fmt.Sprintf(`
node { op: "resize" arg { name: "shorter" int: 64 } arg { name: "interp" str: %q } arg { name: "antialias" bool: %v } }
node { op: "crop" arg { name: "size" ints { v: [56, 56] } } }
node { op: "normalize" arg { name: "scale" float: 0.00392156862745098 }
  arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } } arg { name: "std" floats { v: [0.229, 0.224, 0.225] } } }`, interp, aa),
					sample: imagenet,
				},
			)
		}
	}
	return cs
}

func TestFusedTorchMatchesCPU(t *testing.T) {
	run := newRunner(t)
	for i, c := range torchCases() {
		t.Run(c.name, func(t *testing.T) {
			stored := testImage(c.h, c.w, uint64(500+i))
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
			if c.p.DType != kernels.DTypeUint8 {
				n := int(s.OutH*s.OutW) * int(c.p.OutC)
				g, w := values(got, &c.p, n), values(want, &c.p, n)
				for k := range g {
					// A resampled byte off by one would be 1 level.
					if math.Abs(g[k]-w[k]) > 1e-3 {
						t.Fatalf("element %d of %d: kernel %.4f, CPU %.4f (levels of 255)", k, n, g[k], w[k])
					}
				}
				return
			}
			if i, n := diff(got, want); i >= 0 {
				t.Fatalf("byte %d of %d: kernel %d, CPU %d (%d bytes differ)", i, len(got), got[i], want[i], n)
			}
		})
	}
}

// TestFusedTorchBatch runs differently sized images in one launch: each
// block finds its own sample's precisions, and the blocks past a small
// sample's size still take part in them before returning.
func TestFusedTorchBatch(t *testing.T) {
	run := newRunner(t)
	shapes := []struct{ h, w, o, oh, ow int }{{97, 131, 1, 40, 50}, {40, 300, 6, 200, 30}, {256, 64, 3, 9, 9}, {57, 57, 7, 120, 90}}
	for _, interp := range []string{"torch_linear", "torch_cubic"} {
		for _, aa := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/aa=%v", interp, aa), func(t *testing.T) {
				f := int32(kernels.InterpTorchLinear)
				if interp == "torch_cubic" {
					f = kernels.InterpTorchCubic
				}
				p := kernels.Params{Interp: f, Antialias: b2i(aa), OutC: 3, Layout: kernels.LayoutHWC,
					DType: kernels.DTypeUint8, SrcChan: rgb, Mul: ones}
				var imgs, wants [][]byte
				var samples []kernels.Sample
				for i, sh := range shapes {
					stored := testImage(sh.h, sh.w, uint64(700+i))
					uh, uw := codec.OrientedDims(sh.h, sh.w, sh.o)
					upright := make([]byte, len(stored))
					codec.Orient(upright, stored, sh.h, sh.w, 3, sh.o)
					text := fmt.Sprintf(`version: 1
input { name: "IMAGE" }
node { op: "decode" }
node { op: "resize" arg { name: "size" ints { v: [%d, %d] } } arg { name: "interp" str: %q } arg { name: "antialias" bool: %v } }
node { op: "normalize" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }
output { name: "OUT" }
`, sh.oh, sh.ow, interp, aa)
					wants = append(wants, cpuRun(t, text, encodePNG(t, upright, uh, uw)))
					s := exact(sh.oh, sh.ow)(uh, uw)
					s.SrcH, s.SrcW, s.SrcPitch, s.SrcC, s.Orient = int32(sh.h), int32(sh.w), int32(sh.w*3), 3, int32(sh.o)
					imgs, samples = append(imgs, stored), append(samples, s)
				}
				got := run(t, imgs, samples, p)
				for i := range shapes {
					if !bytes.Equal(got[i], wants[i]) {
						j, n := diff(got[i], wants[i])
						t.Errorf("sample %d: byte %d: kernel %d, CPU %d (%d bytes differ)", i, j, got[i][j], wants[i][j], n)
					}
				}
			})
		}
	}
}

// TestTorchCubinMatchesPTX: the torch cases give the same bytes from the
// sm_90 cubin and from the JIT-compiled PTX.
func TestTorchCubinMatchesPTX(t *testing.T) {
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
	for i, c := range torchCases() {
		t.Run(c.name, func(t *testing.T) {
			stored := testImage(c.h, c.w, uint64(500+i))
			uh, uw := codec.OrientedDims(c.h, c.w, c.orient)
			s := c.sample(uh, uw)
			s.SrcH, s.SrcW, s.SrcPitch, s.SrcC, s.Orient = int32(c.h), int32(c.w), int32(c.w*3), 3, int32(c.orient)
			a := cubin(t, [][]byte{stored}, []kernels.Sample{s}, c.p)[0]
			b := jit(t, [][]byte{stored}, []kernels.Sample{s}, c.p)[0]
			if _, n := diff(a, b); n > 0 {
				t.Errorf("cubin and PTX outputs differ in %d of %d bytes", n, len(a))
			}
		})
	}
}
