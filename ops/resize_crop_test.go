package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func fuse(t testing.TB, a, b Op) Op {
	t.Helper()
	f, ok := a.(Fuser)
	if !ok {
		t.Fatalf("%T is not a Fuser", a)
	}
	op, ok := f.Fuse(b)
	if !ok {
		t.Fatalf("%T did not fuse %T", a, b)
	}
	return op
}

func TestResizeCropFuse(t *testing.T) {
	rs := mustBuild(t, "resize", Args{"shorter": IntVal(256)})
	for _, args := range []Args{
		{"size": IntsVal(224, 224)},
		{"roi": IntsVal(-3, 5, 10, 20)},
		{"roi_rel": FloatsVal(0.1, 0.1, 0.8, 0.8)},
	} {
		op := fuse(t, rs, mustBuild(t, "crop", args))
		if _, ok := op.(Stateful); !ok {
			t.Errorf("%v: fused op is not Stateful", args)
		}
		sz, ok := op.(Sizer)
		if !ok {
			t.Fatalf("%v: fused op is not a Sizer", args)
		}
		if oh, ow := sz.OutSize(375, 500); oh != 256 || ow != 341 {
			t.Errorf("%v: OutSize %dx%d, want the resize's 256x341", args, oh, ow)
		}
	}
	// Only crops fuse.
	for _, next := range []Op{
		mustBuild(t, "resize", Args{"size": IntsVal(2, 2)}),
		mustBuild(t, "letterbox", Args{"size": IntsVal(64)}),
	} {
		if op, ok := rs.(Fuser).Fuse(next); ok || op != nil {
			t.Errorf("fused with %T", next)
		}
	}
}

func TestResizeCropInfer(t *testing.T) {
	cases := []struct {
		resize, crop Args
		in           Spec
	}{
		{Args{"shorter": IntVal(256)}, Args{"size": IntsVal(224, 200)}, rgbDyn},
		{Args{"size": IntsVal(30, 40)}, Args{"roi": IntsVal(1, 2, 3, 4)}, grayDyn},
		{Args{"longer": IntVal(30)}, Args{"roi_rel": FloatsVal(0, 0, 0.5, 0.5)}, rgbDyn},
	}
	for _, c := range cases {
		rs, cr := mustBuild(t, "resize", c.resize), mustBuild(t, "crop", c.crop)
		mid, err := rs.Infer([]Spec{c.in})
		if err != nil {
			t.Fatal(err)
		}
		want, err := cr.Infer(mid)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fuse(t, rs, cr).Infer([]Spec{c.in})
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v %v: Infer %v %v, want %v", c.resize, c.crop, got, err, want)
		}
	}
	rs := mustBuild(t, "resize", Args{"shorter": IntVal(8)})
	inferRejectsNonImages(t, fuse(t, rs, mustBuild(t, "crop", Args{"size": IntsVal(2, 2)})))
	// The crop's own checks still apply: 3 fill values on a gray image.
	op := fuse(t, rs, mustBuild(t, "crop", Args{"size": IntsVal(2, 2), "fill": FloatsVal(1, 2, 3)}))
	if _, err := op.Infer([]Spec{grayDyn}); err == nil {
		t.Error("3 fill values accepted for a gray image")
	}
}

// chainRunner runs two operators in sequence, each with its own state.
type chainRunner struct{ a, b *runner }

func (r chainRunner) run(t testing.TB, in *Tensor) *Tensor {
	return r.b.mustRun(t, r.a.mustRun(t, in))
}

// randResizeCrop draws a resize and a crop: every size rule, filter and
// crop mode, windows inside, across and outside the resized image.
func randResizeCrop(rng *rand.Rand, c int) (rs, cr Args) {
	interp := StrVal(interpNames[rng.IntN(len(interpNames))])
	aa := BoolVal(rng.IntN(3) != 0 && interp.Str != "opencv_linear")
	switch rng.IntN(4) {
	case 0, 1:
		rs = Args{"size": IntsVal(int64(1+rng.IntN(100)), int64(1+rng.IntN(100)))}
	case 2:
		rs = Args{"shorter": IntVal(int64(1 + rng.IntN(60)))}
	default:
		rs = Args{"longer": IntVal(int64(1 + rng.IntN(100)))}
	}
	rs["interp"], rs["antialias"] = interp, aa
	var fill []float64
	n := 1
	if c >= 3 && rng.IntN(2) == 0 {
		n = c
	}
	for range n {
		fill = append(fill, float64(rng.IntN(256)))
	}
	switch rng.IntN(3) {
	case 0:
		cr = Args{"size": IntsVal(int64(1+rng.IntN(110)), int64(1+rng.IntN(110)))}
	case 1:
		cr = Args{"roi": IntsVal(int64(rng.IntN(120)-20), int64(rng.IntN(120)-20), int64(1+rng.IntN(100)), int64(1+rng.IntN(100)))}
	default:
		cr = Args{"roi_rel": FloatsVal(rng.Float64(), rng.Float64(), 0.01+0.99*rng.Float64(), 0.01+0.99*rng.Float64())}
	}
	cr["fill"] = FloatsVal(fill...)
	return rs, cr
}

// TestResizeCropMatchesChain: the fused operator gives the pair's bytes on
// random images, sizes, filters and windows, at every SIMD level, with
// Pillow 13's vertical-first order, windows across the edges (fill) and
// windows entirely outside among them.
func TestResizeCropMatchesChain(t *testing.T) {
	forEachSIMD(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		var vfirst, partial, outside int
		for i := range 600 {
			c := []int{1, 2, 3, 4}[i%4]
			rsArgs, crArgs := randResizeCrop(rng, c)
			rs, cr := mustBuild(t, "resize", rsArgs), mustBuild(t, "crop", crArgs)
			fused := newRunner(t, fuse(t, rs, cr), 1)
			chain := chainRunner{newRunner(t, rs, 1), newRunner(t, cr, 1)}
			// Two images per operator: the second run reuses the state.
			for range 2 {
				h, w := 1+rng.IntN(90), 1+rng.IntN(90)
				img := randImage(rng, h, w, c)
				want := chain.run(t, img)
				got := fused.mustRun(t, img)
				if fmt.Sprint(got.Dims) != fmt.Sprint(want.Dims) || string(got.Data) != string(want.Data) || got.Color != want.Color {
					t.Fatalf("case %d: %v then %v on %dx%dx%d: fused %v differs from the pair's %v", i, rsArgs, crArgs, h, w, c, got.Dims, want.Dims)
				}
				oh, ow := rs.(Sizer).OutSize(h, w)
				if oh < h && h-oh > 2*(w-ow) && ow != w {
					vfirst++
				}
				top, left, wh, ww := cr.(*cropOp).window(oh, ow)
				switch {
				case top >= oh || left >= ow || top+wh <= 0 || left+ww <= 0:
					outside++
				case top < 0 || left < 0 || top+wh > oh || left+ww > ow:
					partial++
				}
			}
		}
		if vfirst < 50 || partial < 50 || outside < 20 {
			t.Errorf("coverage: %d vertical-first, %d partial windows, %d outside", vfirst, partial, outside)
		}
	})
}

// TestResizeCropCases: the ImageNet shapes and the edge cases by hand.
func TestResizeCropCases(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	cases := []struct {
		h, w, c int
		rs, cr  Args
		vfirst  bool
	}{
		{375, 500, 3, Args{"shorter": IntVal(256)}, Args{"size": IntsVal(224, 224)}, false},
		{500, 375, 3, Args{"shorter": IntVal(256)}, Args{"size": IntsVal(224, 224)}, false},
		{333, 500, 4, Args{"shorter": IntVal(256), "interp": StrVal("cubic")}, Args{"size": IntsVal(224, 224)}, false},
		{375, 500, 1, Args{"shorter": IntVal(256), "interp": StrVal("area")}, Args{"size": IntsVal(224, 224)}, false},
		{375, 500, 3, Args{"shorter": IntVal(256), "interp": StrVal("nearest")}, Args{"size": IntsVal(224, 224)}, false},
		{375, 500, 3, Args{"shorter": IntVal(256), "antialias": BoolVal(false)}, Args{"size": IntsVal(224, 224)}, false},
		// Vertical first: the height shrinks by more than twice the width.
		{400, 300, 3, Args{"size": IntsVal(100, 250)}, Args{"size": IntsVal(64, 64)}, true},
		{1000, 100, 3, Args{"shorter": IntVal(64)}, Args{"roi": IntsVal(100, 10, 50, 40)}, true},
		{90, 90, 4, Args{"size": IntsVal(40, 95), "interp": StrVal("cubic")}, Args{"roi": IntsVal(3, 7, 30, 80)}, true},
		// One pass only, and none.
		{100, 80, 3, Args{"size": IntsVal(100, 50)}, Args{"size": IntsVal(60, 30)}, false},
		{100, 80, 3, Args{"size": IntsVal(50, 80)}, Args{"size": IntsVal(30, 60)}, false},
		{100, 80, 3, Args{"size": IntsVal(100, 80)}, Args{"roi": IntsVal(10, 20, 30, 40)}, false},
		// Windows larger than the image, across a corner, outside.
		{375, 500, 3, Args{"shorter": IntVal(200)}, Args{"size": IntsVal(224, 224)}, false},
		{50, 60, 3, Args{"size": IntsVal(30, 40)}, Args{"roi": IntsVal(-5, 30, 20, 20), "fill": FloatsVal(1, 2, 3)}, false},
		{50, 60, 3, Args{"size": IntsVal(30, 40)}, Args{"roi": IntsVal(30, 0, 5, 5)}, false},
		{50, 60, 1, Args{"size": IntsVal(30, 40)}, Args{"roi": IntsVal(-10, -10, 5, 5)}, false},
	}
	for _, c := range cases {
		rs, cr := mustBuild(t, "resize", c.rs), mustBuild(t, "crop", c.cr)
		oh, ow := rs.(Sizer).OutSize(c.h, c.w)
		if got := oh < c.h && c.h-oh > 2*(c.w-ow) && ow != c.w; got != c.vfirst {
			t.Fatalf("%v on %dx%d: vertical first %v, want %v", c.rs, c.h, c.w, got, c.vfirst)
		}
		forEachSIMD(t, func(t *testing.T) {
			img := randImage(rng, c.h, c.w, c.c)
			want := chainRunner{newRunner(t, rs, 1), newRunner(t, cr, 1)}.run(t, img)
			got := newRunner(t, fuse(t, rs, cr), 1).mustRun(t, img)
			wantImage(t, got, want.Dims, want.Data)
		})
	}
}

// TestResizeCropFull: the fused size rule reads Tensor.Full, as resize's.
func TestResizeCropFull(t *testing.T) {
	rs := mustBuild(t, "resize", Args{"shorter": IntVal(256)})
	cr := mustBuild(t, "crop", Args{"size": IntsVal(224, 224)})
	img := gradient(375/4+1, 500/4, 3)
	img.Full = [2]int{375, 500}
	want := chainRunner{newRunner(t, rs, 1), newRunner(t, cr, 1)}.run(t, img)
	got := newRunner(t, fuse(t, rs, cr), 1).mustRun(t, img)
	wantImage(t, got, []int{224, 224, 3}, want.Data)
	if got.Full != [2]int{} || got.Color != RGB {
		t.Errorf("full %v color %v", got.Full, got.Color)
	}
}

func TestResizeCropErrors(t *testing.T) {
	cr := mustBuild(t, "crop", Args{"size": IntsVal(4, 4)})
	r := newRunner(t, fuse(t, mustBuild(t, "resize", Args{"shorter": IntVal(1000)}), cr), 1)
	r.ctx.Limits.MaxPixels = 1 << 20
	// The resized image is over the limit even though the window is not:
	// the pair fails, so the fused operator does.
	if err := r.run(gradient(1, 2000, 1)); CauseOf(err) != TooLarge {
		t.Errorf("huge resize: %v", err)
	}
	if err := r.run(&Tensor{DType: Uint8, Dims: []int{2, 2, 3}, Color: RGB, Data: make([]byte, 5)}); CauseOf(err) != BadInput {
		t.Errorf("short data: %v", err)
	}
	r = newRunner(t, fuse(t, mustBuild(t, "resize", Args{"size": IntsVal(4, 4)}), mustBuild(t, "crop", Args{"size": IntsVal(2000, 2000)})), 1)
	r.ctx.Limits.MaxPixels = 1 << 20
	if err := r.run(gradient(10, 10, 3)); CauseOf(err) != TooLarge {
		t.Errorf("huge crop: %v", err)
	}
	// No state from the executor: still works.
	op := fuse(t, mustBuild(t, "resize", Args{"shorter": IntVal(5)}), cr)
	if err := op.Run(&Ctx{}, []*Tensor{gradient(9, 7, 3)}, []*Tensor{{}}); err != nil {
		t.Error(err)
	}
}

func TestResizeCropNoAllocs(t *testing.T) {
	img := gradient(375, 500, 3)
	for _, f := range interpNames {
		for _, crop := range []Args{
			{"size": IntsVal(224, 224)},
			{"size": IntsVal(300, 300)}, // across the edges
			{"roi": IntsVal(400, 0, 10, 10)},
		} {
			t.Run(fmt.Sprintf("%s-%v", f, crop), func(t *testing.T) {
				rs := mustBuild(t, "resize", Args{"shorter": IntVal(256), "interp": StrVal(f)})
				noAllocs(t, newRunner(t, fuse(t, rs, mustBuild(t, "crop", crop)), 1), img)
			})
		}
	}
}
