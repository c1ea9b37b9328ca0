package ops

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// wantTooLarge checks that err is a TooLarge refusal whose message holds
// every one of parts.
func wantTooLarge(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil || CauseOf(err) != TooLarge {
		t.Fatalf("got %v, want a TooLarge refusal", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%v\nwant it to say %q", err, p)
		}
	}
}

// hugeImage is an h×w×c image whose pixels are never read by a refused
// operator: zeros the allocator takes fresh from the system, untouched.
func hugeImage(h, w, c int) *Tensor {
	return &Tensor{DType: Uint8, Dims: []int{h, w, c}, Color: colorOf[c], Data: make([]byte, h*w*c)}
}

// TestCropBoxesHostileRefusedFast: 256 whole-image boxes of an 8192x8192
// image (an attacker's 65 kB PNG; about 14 s of CPU when uncharged) are
// refused at the default limits, in milliseconds and before any crop,
// naming crop_boxes, the work, the limit and the parameter to raise.
func TestCropBoxesHostileRefusedFast(t *testing.T) {
	const side, n = 8192, MaxBoxes
	r := startCropBoxes(t, Args{"size": IntsVal(224)}, specOf(hugeImage(1, 1, 3)), n, PixelCoords)
	rows := make([][4]float32, n)
	for k := range rows {
		rows[k] = [4]float32{0, 0, side, side}
	}
	img := hugeImage(side, side, 3)
	start := time.Now()
	err := r.run(img, boxesTensor(rows...))
	took := time.Since(start)
	wantTooLarge(t, err, "crop_boxes needs about ", fmt.Sprintf("over the per-image limit of %d: max_image_work", DefaultLimits.MaxWork),
		"256 boxes of the 8192x8192 image")
	if took > 50*time.Millisecond {
		t.Errorf("refused in %v, want milliseconds", took)
	}
	if len(r.out[0].Data) != 0 {
		t.Error("the crops were sized before the refusal")
	}
	t.Logf("%v in %v", err, took)

	// One such box is legal at the default limits, and a few boxes of a
	// photo cost a small part of them.
	if err := r.run(hugeImage(side, side, 3), boxesTensor(append([][4]float32{{0, 0, side, side}}, nanRows(n-1)...)...)); err != nil {
		t.Fatalf("one whole-image box: %v", err)
	}
	photo := randImage(rand.New(rand.NewPCG(1, 2)), 480, 640, 3)
	var b Budget
	b.Reset("request", Quota{}, nil)
	r.ctx.Budget = &b
	few := append([][4]float32{{10, 20, 300, 400}, {0, 0, 640, 480}, {100.5, 50.25, 140, 90}}, nanRows(n-3)...)
	if err := r.run(photo, boxesTensor(few...)); err != nil || r.count() != 3 {
		t.Fatalf("three boxes of a photo: %v, count %d", err, r.count())
	}
	if w := b.work.Load(); w <= 0 || w > DefaultLimits.MaxWork/100 {
		t.Errorf("three boxes of a photo charged %d units, want some and under a hundredth of %d", w, DefaultLimits.MaxWork)
	}
}

func nanRows(n int) [][4]float32 {
	nan := float32(math.NaN())
	rows := make([][4]float32, n)
	for k := range rows {
		rows[k] = [4]float32{nan, nan, nan, nan}
	}
	return rows
}

// TestResamplersOverWorkLimit: resize, the fused resize+crop and
// letterbox refuse an image whose resampling is over max_image_work,
// naming themselves and the limit, before writing any output; at the
// default limits they run.
func TestResamplersOverWorkLimit(t *testing.T) {
	img := randImage(rand.New(rand.NewPCG(3, 4)), 300, 400, 3)
	lim := DefaultLimits
	lim.MaxWork = 200_000 // a 224x224 output alone is about 200,000 units
	cases := []struct {
		name string
		ops  []Op
	}{
		{"resize", []Op{mustBuild(t, "resize", Args{"size": IntsVal(224, 224)})}},
		{"resize", []Op{mustBuild(t, "resize", Args{"shorter": IntVal(256), "interp": StrVal("opencv_linear")})}},
		{"resize", []Op{mustBuild(t, "resize", Args{"shorter": IntVal(256)}), mustBuild(t, "crop", Args{"size": IntsVal(224, 224)})}},
		{"letterbox", []Op{mustBuild(t, "letterbox", Args{"size": IntsVal(640)})}},
	}
	for _, c := range cases {
		op := c.ops[0]
		if len(c.ops) == 2 {
			fused, ok := op.(Fuser).Fuse(c.ops[1])
			if !ok {
				t.Fatal("resize did not fuse with crop")
			}
			op = fused
		}
		r := newRunner(t, op, 3)
		r.ctx.Limits = lim
		err := r.run(img)
		wantTooLarge(t, err, c.name+" needs about ", "resampling 400x300 to ", "over the per-image limit of 200000: max_image_work")
		if len(r.out[0].Data) != 0 {
			t.Errorf("%s: output sized before the refusal", c.name)
		}
		r.ctx.Limits = DefaultLimits
		if err := r.run(img); err != nil {
			t.Errorf("%s at the default limits: %v", c.name, err)
		}
	}
}

// TestChargeBudget: operators draw on the request's budget as decode does:
// two images that each fit but not together fail the second, naming the
// operator and max_request_work, and a budget over stays over.
func TestChargeBudget(t *testing.T) {
	img := randImage(rand.New(rand.NewPCG(5, 6)), 300, 400, 3)
	r := newRunner(t, mustBuild(t, "letterbox", Args{"size": IntsVal(640)}), 3)
	var probe Budget
	probe.Reset("request", Quota{}, nil)
	r.ctx.Budget = &probe
	if err := r.run(img); err != nil {
		t.Fatal(err)
	}
	one := probe.work.Load()
	if one <= 0 {
		t.Fatalf("letterbox charged %d", one)
	}
	var batch, req Budget
	batch.Reset("batch", Quota{}, nil)
	req.Reset("request", Quota{MaxWork: one*2 - 1}, &batch)
	r.ctx.Budget = &req
	if err := r.run(img); err != nil {
		t.Fatalf("the first image: %v", err)
	}
	err := r.run(img)
	wantTooLarge(t, err, "letterbox: the request's images need more than", "units of decode and operator work, the limit max_request_work")
	if err := r.run(randImage(rand.New(rand.NewPCG(7, 8)), 3, 4, 3)); CauseOf(err) != TooLarge {
		t.Errorf("a tiny image after the budget is spent: %v, want it refused too", err)
	}
	// Take stops at the first group over: the batch holds the first draw.
	if got := batch.work.Load(); got != one {
		t.Errorf("the batch's budget holds %d units, want the first image's %d", got, one)
	}

	// A nil Ctx charges nothing (the GPU executor's compile-time probe).
	var c *Ctx
	if err := c.Charge("resize", math.MaxInt64, nil); err != nil {
		t.Error(err)
	}
}

// TestBoxTapsAreTables: the taps resampleWork prices are those the axis
// tables get.
func TestBoxTapsAreTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var tab axisTable
	for i := range 3000 {
		in, out := 1+rng.IntN(3000), 1+rng.IntN(3000)
		if i%3 == 0 {
			out = 1 + rng.IntN(40)
		}
		f := []interp{interpLinear, interpCubic, interpArea}[rng.IntN(3)]
		aa := rng.IntN(4) != 0
		lo := float32(rng.IntN(in))
		hi := lo + float32(1+rng.IntN(in-int(lo)))
		if rng.IntN(2) == 0 {
			lo, hi = 0, float32(in)
		}
		tab.buildBox(in, lo, hi, out, f, aa)
		if got := boxTaps(in, lo, hi, out, f, aa); got != tab.taps {
			t.Fatalf("%v box %g..%g: boxTaps %d, the table has %d", &tab, lo, hi, got, tab.taps)
		}
	}
}

// TestExampleModelsWithinWorkLimit: the example models' resamplers on the
// largest legal images (max_image_pixels, 64 MP, in every aspect ratio
// that passes the pixel limits) stay under the default max_image_work,
// with the margin logged: preprocess_imagenet (resize shorter 256, linear,
// antialias, fused with crop 224) and preprocess_letterbox (letterbox 640).
func TestExampleModelsWithinWorkLimit(t *testing.T) {
	imagenet, ok := mustBuild(t, "resize", Args{"shorter": IntVal(256), "interp": StrVal("linear"), "antialias": BoolVal(true)}).(Fuser).
		Fuse(mustBuild(t, "crop", Args{"size": IntsVal(224, 224)}))
	if !ok {
		t.Fatal("resize did not fuse with crop")
	}
	models := []struct {
		name string
		op   Op
	}{
		{"preprocess_imagenet", imagenet},
		{"preprocess_letterbox", mustBuild(t, "letterbox", Args{"size": IntsVal(640, 640), "fill": FloatsVal(114)})},
	}
	px := DefaultLimits.MaxPixels
	buf := make([]byte, px*3)
	for _, m := range models {
		r := newRunner(t, m.op, 3)
		worst, at := int64(0), ""
		for _, aspect := range []float64{1, 4. / 3, 3. / 2, 16. / 9, 2, 3, 4, 8, 16, 64, 256, 1024, 4096} {
			for _, tall := range []bool{false, true} {
				h := int(math.Sqrt(float64(px) / aspect))
				w := min(px/h, maxSide)
				if tall {
					h, w = w, h
				}
				var b Budget
				// A budget of one unit fails every charge after recording it:
				// the charge is read without resampling 64 MP.
				b.Reset("request", Quota{MaxWork: 1}, nil)
				r.ctx.Budget = &b
				err := r.run(&Tensor{DType: Uint8, Dims: []int{h, w, 3}, Color: RGB, Data: buf[:h*w*3]})
				if err == nil || !strings.Contains(err.Error(), "max_request_work") {
					// The output's pixel limit refuses it first (shorter 256
					// of a 1:1024 strip): no resampling to price.
					var e *Error
					if !errors.As(err, &e) || !strings.Contains(e.Msg, "exceeds the limit of") {
						t.Fatalf("%s %dx%d: %v", m.name, w, h, err)
					}
					continue
				}
				if got := b.work.Load(); got > worst {
					worst, at = got, fmt.Sprintf("%dx%d", w, h)
				}
			}
		}
		if worst <= 0 || worst >= DefaultLimits.MaxWork {
			t.Errorf("%s: the worst 64 MP image needs %d units, want under max_image_work %d", m.name, worst, DefaultLimits.MaxWork)
		}
		t.Logf("%s: the worst 64 MP image (%s) needs %d units, %.1f× under max_image_work %d", m.name, at, worst,
			float64(DefaultLimits.MaxWork)/float64(worst), DefaultLimits.MaxWork)
	}
}

// TestGPUChargesAsRun: the GPU executor's per-sample planning (GPU,
// GPUCrops) charges what Run charges for the same image, so that a
// request is priced alike on either kind of instance, and refuses alike.
func TestGPUChargesAsRun(t *testing.T) {
	img := randImage(rand.New(rand.NewPCG(11, 12)), 300, 400, 3)
	charged := func(run func(c *Ctx) error) int64 {
		t.Helper()
		var b Budget
		b.Reset("request", Quota{}, nil)
		c := &Ctx{Limits: DefaultLimits, Budget: &b}
		if err := run(c); err != nil {
			t.Fatal(err)
		}
		_, w := b.Used()
		return w
	}
	for _, op := range []Op{
		mustBuild(t, "resize", Args{"size": IntsVal(224, 224)}),
		mustBuild(t, "resize", Args{"shorter": IntVal(600), "interp": StrVal("cubic")}),
		mustBuild(t, "letterbox", Args{"size": IntsVal(640)}),
		mustBuild(t, "letterbox", Args{"size": IntsVal(256), "interp": StrVal("opencv_linear")}),
	} {
		r := newRunner(t, op, 3)
		cpu := charged(func(c *Ctx) error { c.State = r.ctx.State; r.in[0] = img; return op.Run(c, r.in, r.out) })
		gpu := charged(func(c *Ctx) error {
			g := NewGeom(300, 400, RGB, DefaultLimits)
			return op.(GPUStage).GPU(c, &g, []*Tensor{{}, {}})
		})
		if cpu <= 0 || gpu != cpu {
			t.Errorf("%T: Run charges %d, GPU %d", op, cpu, gpu)
		}
		g := NewGeom(300, 400, RGB, DefaultLimits)
		lim := DefaultLimits
		lim.MaxWork = 1000
		err := op.(GPUStage).GPU(&Ctx{Limits: lim}, &g, []*Tensor{{}, {}})
		wantTooLarge(t, err, "over the per-image limit of 1000: max_image_work")
	}

	r := startCropBoxes(t, Args{"size": IntsVal(64, 48), "letterbox": BoolVal(true)}, specOf(img), 4, PixelCoords)
	boxes := boxesTensor(append([][4]float32{{0, 0, 400, 300}, {10.5, 20, 100, 290}, {350, 0, 400, 20}}, nanRows(1)...)...)
	cpu := charged(func(c *Ctx) error { c.State = r.ctx.State; return r.op.Run(c, []*Tensor{img, boxes}, r.out) })
	crops := make([]Crop, 4)
	gpu := charged(func(c *Ctx) error {
		g := NewGeom(300, 400, RGB, DefaultLimits)
		return r.op.GPUCrops(c, &g, boxes.Data, 4, crops, nil)
	})
	if cpu <= 0 || gpu != cpu {
		t.Errorf("crop_boxes: Run charges %d, GPUCrops %d", cpu, gpu)
	}
}
