package ops

import (
	"encoding/binary"
	"math"
	"testing"
)

func f32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func TestLetterboxArgs(t *testing.T) {
	wantArgErr(t, "letterbox", Args{}, "size")
	wantArgErr(t, "letterbox", Args{"size": IntsVal(1, 2, 3)}, "size")
	wantArgErr(t, "letterbox", Args{"size": IntsVal(640), "interp": StrVal("bogus")}, "interp")
	wantArgErr(t, "letterbox", Args{"size": IntsVal(640), "fill": FloatsVal(1, 2)}, "fill")
	for _, a := range letterboxSchema.Args {
		if a.Doc == "" {
			t.Errorf("argument %s has no Doc", a.Name)
		}
	}
	if len(letterboxSchema.Outputs) != 3 || letterboxSchema.Output("offset") != 2 {
		t.Errorf("outputs %v", letterboxSchema.Outputs)
	}
}

func TestLetterboxInfer(t *testing.T) {
	op := mustBuild(t, "letterbox", Args{"size": IntsVal(640)})
	out, err := op.Infer([]Spec{rgbDyn})
	if err != nil || len(out) != 3 || out[0].String() != "UINT8[640,640,3] RGB" || out[1].String() != "FP32[1]" || out[2].String() != "FP32[2]" {
		t.Errorf("Infer: %v %v", out, err)
	}
	op = mustBuild(t, "letterbox", Args{"size": IntsVal(384, 640)})
	if out, err := op.Infer([]Spec{grayDyn}); err != nil || out[0].String() != "UINT8[384,640,1] GRAY" {
		t.Errorf("Infer: %v %v", out, err)
	}
	inferRejectsNonImages(t, op)
}

// TestLetterboxGeometry pins ultralytics' LetterBox arithmetic.
func TestLetterboxGeometry(t *testing.T) {
	cases := []struct {
		size      []int64
		scaleup   bool
		h, w      int
		r         float64
		nh, nw    int
		top, left int
	}{
		{[]int64{640}, true, 480, 640, 1, 480, 640, 80, 0},
		{[]int64{640}, true, 375, 500, 1.28, 480, 640, 80, 0},
		{[]int64{640}, true, 333, 500, 1.28, 426, 640, 107, 0}, // 426.24; dh = 107
		{[]int64{640}, true, 500, 333, 1.28, 640, 426, 0, 107},
		{[]int64{640}, true, 1080, 1920, 1.0 / 3, 360, 640, 140, 0},
		// dh = 0.5: round(0.4) = 0, the odd row goes to the bottom.
		{[]int64{64}, true, 100, 101, 64.0 / 101, 63, 64, 0, 0},
		// dh = 1.5: round(1.4) = 1.
		{[]int64{64}, true, 61, 64, 1, 61, 64, 1, 0},
		{[]int64{640}, false, 100, 100, 1, 100, 100, 270, 270},
		{[]int64{640}, false, 1280, 960, 0.5, 640, 480, 0, 80},
		{[]int64{384, 640}, true, 480, 640, 0.8, 384, 512, 0, 64},
		// 5*0.5 = 2.5 rounds half to even: 2 rows, not 3.
		{[]int64{64, 50}, true, 5, 100, 0.5, 2, 50, 31, 0},
		// Never below one pixel.
		{[]int64{64}, true, 1, 10000, 0.0064, 1, 64, 31, 0},
	}
	for _, c := range cases {
		op := mustBuild(t, "letterbox", Args{"size": IntsVal(c.size...), "scaleup": BoolVal(c.scaleup)}).(*letterboxOp)
		r, nh, nw, top, left := op.geometry(c.h, c.w)
		if math.Abs(r-c.r) > 1e-12 || nh != c.nh || nw != c.nw || top != c.top || left != c.left {
			t.Errorf("%v scaleup=%v on %dx%d: r=%v %dx%d at (%d,%d), want r=%v %dx%d at (%d,%d)",
				c.size, c.scaleup, c.h, c.w, r, nh, nw, top, left, c.r, c.nh, c.nw, c.top, c.left)
		}
		if oh, ow := op.OutSize(c.h, c.w); oh != c.nh || ow != c.nw {
			t.Errorf("OutSize %dx%d: %dx%d", c.h, c.w, oh, ow)
		}
	}
}

func TestLetterboxRun(t *testing.T) {
	// 2×4 gray image into a 4×4 canvas, nearest: rows 1-2 hold the image.
	img := newImage(2, 4, 1, func(y, x, _ int) byte { return byte(10*y + x + 1) })
	op := mustBuild(t, "letterbox", Args{"size": IntsVal(4), "interp": StrVal("nearest"), "fill": FloatsVal(7)})
	r := newRunner(t, op, 3)
	got := r.mustRun(t, img)
	wantImage(t, got, []int{4, 4, 1}, []byte{7, 7, 7, 7, 1, 2, 3, 4, 11, 12, 13, 14, 7, 7, 7, 7})
	if s, o := f32s(r.out[1].Data), f32s(r.out[2].Data); len(s) != 1 || s[0] != 1 || len(o) != 2 || o[0] != 0 || o[1] != 1 {
		t.Errorf("scale %v offset %v", s, o)
	}

	// 2× enlargement, nearest, per-channel fill: offsets and every pixel.
	img = newImage(1, 2, 3, func(_, x, ch int) byte { return byte(100*x + ch + 1) })
	op = mustBuild(t, "letterbox", Args{"size": IntsVal(4, 4), "interp": StrVal("nearest"), "fill": FloatsVal(7, 8, 9)})
	r = newRunner(t, op, 3)
	got = r.mustRun(t, img)
	px := func(v ...byte) []byte { return v }
	var want []byte
	for y := range 4 {
		for x := range 4 {
			switch {
			case y == 1 || y == 2:
				want = append(want, byte(100*(x/2)+1), byte(100*(x/2)+2), byte(100*(x/2)+3))
			default:
				want = append(want, px(7, 8, 9)...)
			}
		}
	}
	wantImage(t, got, []int{4, 4, 3}, want)
	if s, o := f32s(r.out[1].Data), f32s(r.out[2].Data); s[0] != 2 || o[0] != 0 || o[1] != 1 {
		t.Errorf("scale %v offset %v", s, o)
	}
}

// TestLetterboxMatchesResize: the canvas region equals resize's output,
// the border is fill.
func TestLetterboxMatchesResize(t *testing.T) {
	img := gradient(333, 500, 3)
	for _, f := range interpNames {
		lb := newRunner(t, mustBuild(t, "letterbox", Args{"size": IntsVal(320), "interp": StrVal(f)}), 3)
		got := lb.mustRun(t, img)
		// r = 0.64: 213×320 at top 53.
		want := newRunner(t, resizeTo(t, 213, 320, f, true), 1).mustRun(t, img)
		for y := range 320 {
			row := got.Data[y*320*3 : (y+1)*320*3]
			if y >= 53 && y < 53+213 {
				if string(row) != string(want.Data[(y-53)*320*3:(y-52)*320*3]) {
					t.Fatalf("%s: row %d differs from resize", f, y)
				}
				continue
			}
			for _, v := range row {
				if v != 114 {
					t.Fatalf("%s: border row %d holds %d", f, y, v)
				}
			}
		}
		if o := f32s(lb.out[2].Data); o[0] != 0 || o[1] != 53 {
			t.Errorf("offset %v", o)
		}
	}
}

// TestLetterboxFull: scale comes from the full-resolution size, pixels
// from the DCT-scaled decode.
func TestLetterboxFull(t *testing.T) {
	img := gradient(240, 320, 3)
	img.Full = [2]int{480, 640}
	r := newRunner(t, mustBuild(t, "letterbox", Args{"size": IntsVal(640)}), 3)
	got := r.mustRun(t, img)
	wantImage(t, got, []int{640, 640, 3}, nil)
	if s, o := f32s(r.out[1].Data), f32s(r.out[2].Data); s[0] != 1 || o[0] != 0 || o[1] != 80 {
		t.Errorf("scale %v offset %v", s, o)
	}
	if got.Data[0] != 114 || got.Data[80*640*3] == 114 && got.Data[80*640*3+1] == 114 {
		t.Errorf("border/image placement wrong")
	}
}

func TestLetterboxNoAllocs(t *testing.T) {
	img := gradient(375, 500, 3)
	for _, f := range interpNames {
		t.Run(f, func(t *testing.T) {
			noAllocs(t, newRunner(t, mustBuild(t, "letterbox", Args{"size": IntsVal(640), "interp": StrVal(f)}), 3), img)
		})
	}
	noAllocs(t, newRunner(t, mustBuild(t, "letterbox", Args{"size": IntsVal(320)}), 3), gradient(375, 500, 4))
}

func BenchmarkLetterbox(b *testing.B) {
	img := gradient(375, 500, 3)
	r := newRunner(b, mustBuild(b, "letterbox", Args{"size": IntsVal(640)}), 3)
	r.mustRun(b, img)
	b.ReportAllocs()
	for b.Loop() {
		_ = r.run(img)
	}
}
