package ops

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkResampleWork calibrates resampleWork: each case runs an
// operator with a budget that records what it charges, and reports
// nanoseconds per charged work unit (ns/unit), which should be near a
// third of a nanosecond, the codec's unit (codec.Limits.MaxWork), and
// within a small factor of it in every case.
func BenchmarkResampleWork(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	photo := randImage(rng, 3000, 4000, 3)
	small := randImage(rng, 375, 500, 3)
	fused := func(a, c Op) Op {
		op, ok := a.(Fuser).Fuse(c)
		if !ok {
			b.Fatal("no fusion")
		}
		return op
	}
	resize := func(args Args) Op { return mustBuild(b, "resize", args) }
	cases := []struct {
		name string
		img  *Tensor
		op   Op
	}{
		{"down-imagenet-4000x3000", photo, fused(resize(Args{"shorter": IntVal(256)}), mustBuild(b, "crop", Args{"size": IntsVal(224, 224)}))},
		{"down-224-linear-4000x3000", photo, resize(Args{"size": IntsVal(224, 224)})},
		{"down-224-cubic-4000x3000", photo, resize(Args{"size": IntsVal(224, 224), "interp": StrVal("cubic")})},
		{"down-1000-noaa-4000x3000", photo, resize(Args{"longer": IntVal(1000), "antialias": BoolVal(false)})},
		{"down-letterbox640-4000x3000", photo, mustBuild(b, "letterbox", Args{"size": IntsVal(640)})},
		{"down-letterbox640-opencv-4000x3000", photo, mustBuild(b, "letterbox", Args{"size": IntsVal(640), "interp": StrVal("opencv_linear")})},
		{"down-imagenet-500x375", small, fused(resize(Args{"shorter": IntVal(256)}), mustBuild(b, "crop", Args{"size": IntsVal(224, 224)}))},
		{"up-2000-linear-500x375", small, resize(Args{"longer": IntVal(2000)})},
		{"up-2000-cubic-500x375", small, resize(Args{"longer": IntVal(2000), "interp": StrVal("cubic")})},
		{"up-2000-opencv-500x375", small, resize(Args{"longer": IntVal(2000), "interp": StrVal("opencv_linear")})},
		{"up-2000-nearest-500x375", small, resize(Args{"longer": IntVal(2000), "interp": StrVal("nearest")})},
		{"up-letterbox1280-500x375", small, mustBuild(b, "letterbox", Args{"size": IntsVal(1280)})},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r := newRunner(b, c.op, 3)
			r.mustRun(b, c.img) // tables built, buffers grown
			var budget Budget
			budget.Reset("request", Quota{}, nil)
			r.ctx.Budget = &budget
			for b.Loop() {
				r.mustRun(b, c.img)
			}
			work := budget.work.Load()
			b.ReportMetric(float64(work)/float64(b.N), "units/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(work), "ns/unit")
		})
	}
	b.Run("crop_boxes-8-boxes-4000x3000", func(b *testing.B) {
		op := mustBuild(b, "crop_boxes", Args{"size": IntsVal(224)}).(*cropBoxesOp)
		if _, err := op.Infer([]Spec{specOf(photo), {DType: Float32, Dims: []int{8, 4}, Coords: PixelCoords}}); err != nil {
			b.Fatal(err)
		}
		boxes := boxesTensor([4]float32{0, 0, 4000, 3000}, [4]float32{100, 200, 1300, 2900}, [4]float32{2000, 0, 3999.5, 1000},
			[4]float32{10.5, 10.5, 300, 500}, [4]float32{3000, 2000, 3900, 2900}, [4]float32{0, 0, 2000, 1500},
			[4]float32{1000, 1000, 1100, 1100}, [4]float32{500, 100, 3500, 2900})
		st, _ := op.NewState()
		var budget Budget
		ctx := Ctx{State: st, Limits: DefaultLimits}
		out := []*Tensor{{}, {}}
		if err := op.Run(&ctx, []*Tensor{photo, boxes}, out); err != nil {
			b.Fatal(err)
		}
		budget.Reset("request", Quota{}, nil)
		ctx.Budget = &budget
		for b.Loop() {
			if err := op.Run(&ctx, []*Tensor{photo, boxes}, out); err != nil {
				b.Fatal(err)
			}
		}
		work := budget.work.Load()
		b.ReportMetric(float64(work)/float64(b.N), "units/op")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(work), "ns/unit")
	})
}

// BenchmarkResampleWorkPortable: the same without SIMD (a CPU without
// AVX2), where a unit costs more.
func BenchmarkResampleWorkPortable(b *testing.B) {
	prev := setSIMD(0)
	defer setSIMD(prev)
	BenchmarkResampleWork(b)
}
