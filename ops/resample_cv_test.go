package ops

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// OpenCV parity itself is tested in Python against cv2.resize
// (tests/test_opencv_linear.py); here, the arithmetic on cases small enough
// to work out by hand, and the structure (row reuse, windows, state reuse)
// against a per-pixel rendering of the same formula.

func cvResize(t testing.TB, h, w int) Op {
	return mustBuild(t, "resize", Args{"size": IntsVal(int64(h), int64(w)), "interp": StrVal("opencv_linear")})
}

func TestOpenCVLinearArgs(t *testing.T) {
	cv := StrVal("opencv_linear")
	wantArgErr(t, "resize", Args{"size": IntsVal(4, 4), "interp": cv, "antialias": BoolVal(true)}, "antialias")
	wantArgErr(t, "letterbox", Args{"size": IntsVal(64), "interp": cv, "antialias": BoolVal(true)}, "antialias")
	mustBuild(t, "resize", Args{"size": IntsVal(4, 4), "interp": cv, "antialias": BoolVal(false)})
	mustBuild(t, "letterbox", Args{"size": IntsVal(64), "interp": StrVal("OpenCV_Linear")})
	// The other filters keep antialias true when it is left out.
	if op := mustBuild(t, "resize", Args{"size": IntsVal(4, 4)}).(*resizeOp); !op.aa {
		t.Error("resize without antialias: aa false, want the default true")
	}
	if op := mustBuild(t, "letterbox", Args{"size": IntsVal(64), "interp": StrVal("cubic")}).(*letterboxOp); !op.aa {
		t.Error("letterbox without antialias: aa false, want the default true")
	}
}

// The weight tables, worked out from the formula: scale 1/(4/2) = 0.5, f =
// (i+0.5)*0.5 - 0.5 = -0.25, 0.25, 0.75, 1.25.
func TestOpenCVLinearTables(t *testing.T) {
	var x, y cvAxis
	x.build(2, 4, true)
	// Horizontal: -0.25 clips to pixel 0 with f = 0; 1.25 reaches the
	// last column, which is copied from output 3 on.
	if fmt.Sprint(x.s, x.w, x.edge) != "[0 0 0 1] [2048 0 1536 512 512 1536 2048 0] 3" {
		t.Errorf("horizontal 2→4: s %v w %v edge %d", x.s, x.w, x.edge)
	}
	// Vertical: s = -1 stays, with f = 0.75 (row -1 reads row 0).
	y.build(2, 4, false)
	if fmt.Sprint(y.s, y.w) != "[-1 0 0 1] [512 1536 1536 512 512 1536 1536 512]" {
		t.Errorf("vertical 2→4: s %v w %v", y.s, y.w)
	}
	// 3→2: scale 1.5, f = 0.25, 1.75.
	x.build(3, 2, true)
	if fmt.Sprint(x.s, x.w, x.edge) != "[0 1] [1536 512 512 1536] 2" {
		t.Errorf("horizontal 3→2: s %v w %v edge %d", x.s, x.w, x.edge)
	}
	// 1 pixel wide: every output copies it.
	x.build(1, 3, true)
	if fmt.Sprint(x.s, x.edge) != "[0 0 0] 0" {
		t.Errorf("horizontal 1→3: s %v edge %d", x.s, x.edge)
	}
}

func TestOpenCVLinearPixels(t *testing.T) {
	cases := []struct {
		name    string
		h, w, c int
		src     []byte
		oh, ow  int
		want    []byte
	}{
		// Row [10 200] to 4 wide; the height stays 1 (weights 2048, 0).
		// Column 1: H = 10*1536 + 200*512 = 117760; V = (2048*(117760>>4))>>16
		// = 230, (230+2)>>2 = 58. Column 2: H = 312320, V = 610 → 153.
		{"widen", 1, 2, 1, []byte{10, 200}, 1, 4, []byte{10, 58, 153, 200}},
		// The same column upside down: rows -1 and 0 both read row 0.
		{"heighten", 2, 1, 1, []byte{10, 200}, 4, 1, []byte{10, 58, 153, 200}},
		// 3→2 on [0 100 255]: H = 0*1536+100*512 = 51200 → (2048*3200)>>16
		// = 100, (100+2)>>2 = 25; H = 100*512+255*1536 = 442880 → 27680*2048
		// >>16 = 865, (865+2)>>2 = 216.
		{"shrink", 1, 3, 1, []byte{0, 100, 255}, 1, 2, []byte{25, 216}},
		// Halving: (1+2+3+5+2)>>2 = 3 per channel block.
		{"halve", 2, 2, 3, []byte{1, 10, 100, 2, 20, 200, 3, 30, 30, 5, 50, 50}, 1, 1, []byte{3, 28, 95}},
		// Same size: a copy.
		{"same", 1, 2, 4, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 1, 2, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
	}
	for _, c := range cases {
		src := &Tensor{DType: Uint8, Dims: []int{c.h, c.w, c.c}, Color: colorOf[c.c], Data: c.src}
		got := newRunner(t, cvResize(t, c.oh, c.ow), 1).mustRun(t, src)
		if !bytes.Equal(got.Data, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got.Data, c.want)
		}
	}
}

// cvPixel is the formula for one output value, with nothing shared
// between pixels: OpenCV's coordinate map, clipping and fixed point.
func cvPixel(src []byte, sh, sw, c, dh, dw, y, x, k int) byte {
	if sh == dh && sw == dw {
		return src[(y*sw+x)*c+k]
	}
	coord := func(i, in, out int) (int, float32) {
		f := float32(float64(float64(i)+0.5)*(1/(float64(out)/float64(in))) - 0.5)
		s := int(math.Floor(float64(f)))
		return s, f - float32(s)
	}
	q := func(f float32) int64 { return int64(math.RoundToEven(float64(f * 2048))) }
	clip := func(v, n int) int { return min(max(v, 0), n-1) }
	sx, fx := coord(x, sw, dw)
	if sx < 0 {
		sx, fx = 0, 0
	}
	last := sx+1 >= sw
	if last {
		sx = sw - 1
	}
	h := func(row int) int64 {
		p := src[(row*sw+sx)*c+k:]
		if last {
			return int64(p[0]) * 2048
		}
		return int64(p[0])*q(1-fx) + int64(p[c])*q(fx)
	}
	sy, fy := coord(y, sh, dh)
	v := (q(1-fy)*(h(clip(sy, sh))>>4))>>16 + (q(fy)*(h(clip(sy+1, sh))>>4))>>16
	return byte((v + 2) >> 2)
}

func TestOpenCVLinearFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 25))
	sizes := []int{1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64}
	op := cvResize(t, 1, 1)
	state, _ := op.(Stateful).NewState()
	r := state.(*resampler)
	for n := range 300 {
		sh, sw := sizes[rng.IntN(len(sizes))], sizes[rng.IntN(len(sizes))]
		dh, dw := sizes[rng.IntN(len(sizes))], sizes[rng.IntN(len(sizes))]
		if n%7 == 0 { // exact halvings take OpenCV's area path
			dh, dw = max(sh/2, 1), max(sw/2, 1)
			sh, sw = 2*dh, 2*dw
		}
		c := []int{1, 3, 4}[n%3]
		src := randImage(rng, sh, sw, c).Data
		want := make([]byte, dh*dw*c)
		for y := range dh {
			for x := range dw {
				for k := range c {
					want[(y*dw+x)*c+k] = cvPixel(src, sh, sw, c, dh, dw, y, x, k)
				}
			}
		}
		got := make([]byte, dh*dw*c)
		r.resample(got, dw*c, dh, dw, rect{0, 0, dh, dw}, src, sh, sw, c, interpOpenCVLinear, false)
		if !bytes.Equal(got, want) {
			t.Fatalf("%dx%dx%d → %dx%d: differs from the formula", sh, sw, c, dh, dw)
		}
		// A window of the result, into a strided canvas, is the same
		// pixels (resize fused with crop, letterbox's region).
		wy, wx := rng.IntN(dh), rng.IntN(dw)
		win := rect{wy, wx, 1 + rng.IntN(dh-wy), 1 + rng.IntN(dw-wx)}
		stride := (win.w + 3) * c
		canvas := make([]byte, win.h*stride)
		r.resample(canvas, stride, dh, dw, win, src, sh, sw, c, interpOpenCVLinear, false)
		for y := range win.h {
			row := want[((win.y+y)*dw+win.x)*c:][:win.w*c]
			if !bytes.Equal(canvas[y*stride:][:win.w*c], row) {
				t.Fatalf("%dx%dx%d → %dx%d window %+v row %d differs", sh, sw, c, dh, dw, win, y)
			}
		}
	}
}

// The fixed resize allocates nothing once warm, as the Pillow filters.
func TestOpenCVLinearNoAllocs(t *testing.T) {
	noAllocs(t, newRunner(t, cvResize(t, 37, 61), 1), gradient(100, 80, 3))
}
