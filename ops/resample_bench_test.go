package ops

import (
	"math/rand/v2"
	"testing"
)

// fuseOrChain builds resize → crop as the executor does: fused when the
// resize absorbs the crop, else the two in sequence.
func fuseOrChain(tb testing.TB, a, b Op) func(*Tensor) *Tensor {
	if f, ok := a.(Fuser); ok {
		if op, ok := f.Fuse(b); ok {
			r := newRunner(tb, op, 1)
			return func(in *Tensor) *Tensor { return r.mustRun(tb, in) }
		}
	}
	ra, rb := newRunner(tb, a, 1), newRunner(tb, b, 1)
	return func(in *Tensor) *Tensor { return rb.mustRun(tb, ra.mustRun(tb, in)) }
}

// BenchmarkResample: the sizes of the report, on a random photo-sized image.
func BenchmarkResample(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	img500 := randImage(rng, 375, 500, 3)
	img640 := randImage(rng, 480, 640, 3)
	cases := []struct {
		name string
		img  *Tensor
		ops  []Op
	}{
		{"shorter256-linear-500x375", img500, []Op{mustBuild(b, "resize", Args{"shorter": IntVal(256)})}},
		{"shorter256-linear-noaa-500x375", img500, []Op{mustBuild(b, "resize", Args{"shorter": IntVal(256), "antialias": BoolVal(false)})}},
		{"shorter256-crop224-500x375", img500, []Op{
			mustBuild(b, "resize", Args{"shorter": IntVal(256)}),
			mustBuild(b, "crop", Args{"size": IntsVal(224, 224)}),
		}},
		{"224x224-cubic-640x480", img640, []Op{mustBuild(b, "resize", Args{"size": IntsVal(224, 224), "interp": StrVal("cubic")})}},
		{"letterbox640-500x375", img500, []Op{mustBuild(b, "letterbox", Args{"size": IntsVal(640)})}},
		{"letterbox640-opencv-500x375", img500, []Op{mustBuild(b, "letterbox", Args{"size": IntsVal(640), "interp": StrVal("opencv_linear")})}},
		{"shorter256-opencv-500x375", img500, []Op{mustBuild(b, "resize", Args{"shorter": IntVal(256), "interp": StrVal("opencv_linear")})}},
		{"shorter256-nearest-500x375", img500, []Op{mustBuild(b, "resize", Args{"shorter": IntVal(256), "interp": StrVal("nearest")})}},
		{"shorter256-area-500x375", img500, []Op{mustBuild(b, "resize", Args{"shorter": IntVal(256), "interp": StrVal("area")})}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var run func(*Tensor) *Tensor
			if len(c.ops) == 2 {
				run = fuseOrChain(b, c.ops[0], c.ops[1])
			} else {
				r := newRunner(b, c.ops[0], 3)
				run = func(in *Tensor) *Tensor { return r.mustRun(b, in) }
			}
			run(c.img)
			b.ReportAllocs()
			for b.Loop() {
				run(c.img)
			}
		})
	}
}

// BenchmarkResamplePortable: the same without SIMD.
func BenchmarkResamplePortable(b *testing.B) {
	prev := setSIMD(0)
	defer setSIMD(prev)
	BenchmarkResample(b)
}

// BenchmarkPasses times the C passes alone on the shapes above.
func BenchmarkPasses(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		name           string
		sh, sw, dh, dw int
		f              interp
	}{
		{"linear-500x375-341x256", 375, 500, 256, 341, interpLinear},
		{"linear-500x375-640x480", 375, 500, 480, 640, interpLinear},
		{"cubic-640x480-224x224", 480, 640, 224, 224, interpCubic},
	} {
		img := randImage(rng, c.sh, c.sw, 3)
		r := new(resampler)
		th := r.table(c.sw, c.dw, c.f, true)
		tv := r.table(c.sh, c.dh, c.f, true)
		tmp := make([]byte, c.sh*c.dw*3)
		dst := make([]byte, c.dh*c.dw*3)
		b.Run(c.name+"/h", func(b *testing.B) {
			for b.Loop() {
				hpass(tmp, c.dw*3, img.Data, c.sw*3, c.sh, 3, th, 0, c.dw)
			}
		})
		b.Run(c.name+"/v", func(b *testing.B) {
			for b.Loop() {
				vpass(dst, c.dw*3, tmp, c.dw*3, c.dw*3, tv, 0, c.dh, 0)
			}
		})
	}
}
