package ops

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// torch parity itself is tested in Python against torch
// (python/tests/test_parity_torch_resize.py); here, tables small enough to
// work out by hand, properties that torch's arithmetic guarantees, and the
// resampler's machinery (padded tables, the C passes, a fused crop's
// window) against torch's formula written out plainly below.

func torchResize(t testing.TB, h, w int, interp string, aa bool) Op {
	return resizeTo(t, h, w, interp, aa)
}

// torchRef is torch's uint8 resize of the sh×sw×c image src to dh×dw:
// per axis, float64 weights over each output's inputs, int16 at the
// axis's precision, then a horizontal pass into a whole intermediate image
// and a vertical one, each rounded and clipped.
func torchRef(src []byte, sh, sw, c, dh, dw int, cubic, aa bool) []byte {
	type tap struct {
		i int
		w int32
	}
	axis := func(in, out int) ([][]tap, int) {
		scale := float64(in) / float64(out)
		a, size := -0.75, 2.0
		if cubic {
			size = 4
		}
		if aa {
			a = -0.5
		}
		filter := func(x float64) float64 {
			x = math.Abs(x)
			switch {
			case !cubic && x < 1:
				return 1 - x
			case !cubic:
				return 0
			case x < 1:
				return math.FMA(math.FMA(a+2, x, -(a+3))*x, x, 1)
			case x < 2:
				return math.FMA(math.FMA(math.FMA(a, x, -5*a), x, 8*a), x, -4*a)
			}
			return 0
		}
		// Each output's weights by input index, in the order torch adds
		// them, and the largest value any held on the way.
		ws := make([][]float64, out)
		lo := make([]int, out)
		wmax := 0.0
		for o := range out {
			if aa {
				support, inv := size/2, 1.0
				if scale >= 1 {
					support, inv = support*scale, 1/scale
				}
				center := float64(scale * (float64(o) + 0.5))
				l := max(int(center-support+0.5), 0)
				h := min(int(center+support+0.5), in)
				h = min(h, l+int(math.Ceil(support))*2+1)
				var sum float64
				for i := l; i < h; i++ {
					ws[o] = append(ws[o], filter((float64(i)-center+0.5)*inv))
					sum += ws[o][i-l]
				}
				for k := range ws[o] {
					if sum != 0 {
						ws[o][k] /= sum
						wmax = max(wmax, ws[o][k])
					}
				}
				lo[o] = l
				continue
			}
			src := math.FMA(scale, float64(o)+0.5, -0.5)
			if !cubic {
				src = max(src, 0)
			}
			idx := min(int(math.Floor(float64(float32(src)))), in-1)
			lambda := min(max(src-float64(idx), 0), 1)
			half := int(size) / 2
			// The taps idx-half+1 .. idx+half, clamped into the image.
			l := max(idx-half+1, 0)
			h := min(idx+half+1, in)
			ws[o] = make([]float64, h-l)
			for j := range int(size) {
				i := min(max(idx-half+1+j, l), h-1)
				ws[o][i-l] += filter(float64(j+1-half) - lambda)
				wmax = max(wmax, ws[o][i-l])
			}
			lo[o] = l
		}
		p := 22
		for b := range 22 {
			if math.Round(wmax*math.Pow(2, float64(b+1))) >= 32768 {
				p = b
				break
			}
		}
		taps := make([][]tap, out)
		for o := range out {
			for k, w := range ws[o] {
				v := w * math.Pow(2, float64(p))
				taps[o] = append(taps[o], tap{lo[o] + k, int32(math.Trunc(v + math.Copysign(0.5, v)))})
			}
		}
		return taps, p
	}
	pass := func(v int64, p int) byte { return byte(min(max(v>>p, 0), 255)) }
	mid := src
	if dw != sw {
		tx, p := axis(sw, dw)
		mid = make([]byte, sh*dw*c)
		for y := range sh {
			for x := range dw {
				for ch := range c {
					s := int64(1) << (p - 1)
					for _, t := range tx[x] {
						s += int64(src[(y*sw+t.i)*c+ch]) * int64(t.w)
					}
					mid[(y*dw+x)*c+ch] = pass(s, p)
				}
			}
		}
	}
	if dh == sh {
		return mid
	}
	ty, p := axis(sh, dh)
	out := make([]byte, dh*dw*c)
	for y := range dh {
		for x := range dw * c {
			s := int64(1) << (p - 1)
			for _, t := range ty[y] {
				s += int64(mid[t.i*dw*c+x]) * int64(t.w)
			}
			out[y*dw*c+x] = pass(s, p)
		}
	}
	return out
}

// Worked by hand: 2 pixels to 4, antialias=False (scale 0.5, sources
// -0.25 → 0, 0.25, 0.75, 1.25): weights [1 0], [0.75 0.25], [0.25 0.75],
// and the last output's 0.75 and 0.25 both on pixel 1. The largest is 1, so
// 14 bits (2 × 2^14 = 32768 would not fit): 8192 + 10*12288 + 200*4096 =
// 950272 → 58; 8192 + 10*4096 + 200*12288 = 2506752 → 153.
func TestTorchLinearHand(t *testing.T) {
	img := newImage(1, 2, 1, func(_, x, _ int) byte { return []byte{10, 200}[x] })
	got := newRunner(t, torchResize(t, 1, 4, "torch_linear", false), 1).mustRun(t, img)
	wantImage(t, got, []int{1, 4, 1}, []byte{10, 58, 153, 200})
	var tb axisTable
	tb.start = make([]int32, 4)
	tb.buildTorch(2, 0, 2, 4, interpTorchLinear, false)
	const one = 1 << rsBits
	want := []int32{one, 0, one * 3 / 4, one / 4, one / 4, one * 3 / 4, 0, one}
	if tb.taps != 2 || !equalInt32(tb.k, want) {
		t.Errorf("2→4 table: %d taps %v, want 2 %v", tb.taps, tb.k, want)
	}
}

func equalInt32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTorchPrecision(t *testing.T) {
	for _, c := range []struct {
		wmax float64
		want int
	}{
		{1, 14},           // 1 × 2^15 = 32768: too large at 15
		{0.75, 15},        // 0.75 × 2^16 = 49152
		{0.5, 15},         // 0.5 × 2^16 = 32768
		{0.4999, 16},      // 32761 at 15 bits fits; 65523 at 16 does not
		{0.25, 16},        // 2^-2 × 2^17
		{1.0 / 1024, 22},  // 2^-10 × 2^23 = 8192: the 22-bit cap
		{0.59375, 15},     // the cubic's centre tap at lambda 0.5: 38912 at 16
		{0.0001, 22},      // long filters
		{0.999999999, 14}, // rounds as 1 at 15 bits
	} {
		if got := torchPrecision(c.wmax); got != c.want {
			t.Errorf("torchPrecision(%v) = %d, want %d", c.wmax, got, c.want)
		}
	}
	// Rounding is half away from zero, then int16.
	for _, c := range []struct {
		w    float64
		p    int
		want int32
	}{
		{1.5 / (1 << 14), 14, 2}, {-1.5 / (1 << 14), 14, -2}, {0.3, 14, 4915}, {-0.3, 14, -4915}, {0.5, 15, 16384},
	} {
		if got := torchFixed(c.w, c.p); got != c.want {
			t.Errorf("torchFixed(%v, %d) = %d, want %d", c.w, c.p, got, c.want)
		}
	}
}

// TestTorchMatchesReference: the resampler (its tables, the C passes, at
// every SIMD level) equals torchRef on random sizes, channels, both
// filters, with and without antialias, and long filters.
func TestTorchMatchesReference(t *testing.T) {
	forEachSIMD(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(31, 32))
		for i := range 300 {
			h, w := 1+rng.IntN(70), 1+rng.IntN(70)
			oh, ow := 1+rng.IntN(100), 1+rng.IntN(100)
			if i%4 == 0 { // big shrinks: long filters, high precisions
				h, w = 1+rng.IntN(400), 1+rng.IntN(400)
				oh, ow = 1+rng.IntN(8), 1+rng.IntN(8)
			}
			c := []int{1, 2, 3, 4}[i%4]
			cubic, aa := i%2 == 0, i%3 != 0
			name := map[bool]string{false: "torch_linear", true: "torch_cubic"}[cubic]
			img := randImage(rng, h, w, c)
			if i%5 == 0 { // black and white: the cubic's overshoot clips
				for k, v := range img.Data {
					img.Data[k] = (v >> 7) * 255
				}
			}
			got := newRunner(t, torchResize(t, oh, ow, name, aa), 1).mustRun(t, img)
			want := torchRef(img.Data, h, w, c, oh, ow, cubic, aa)
			if !bytes.Equal(got.Data, want) {
				t.Fatalf("%s aa=%v c=%d %dx%d→%dx%d differs from the reference", name, aa, c, h, w, oh, ow)
			}
		}
	})
}

// TestTorchProperties: the same size is a copy; a constant image stays
// constant (each axis's int16 weights sum to within a rounding of one);
// and at dyadic ratios, where every coordinate and weight is exact, a
// mirrored image resizes to the mirrored result, as torch's windows and
// rounding are symmetric.
func TestTorchProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, name := range []string{"torch_linear", "torch_cubic"} {
		for _, aa := range []bool{true, false} {
			for i := range 60 {
				h, w, c := 1+rng.IntN(50), 1+rng.IntN(50), []int{1, 3, 4}[i%3]
				img := randImage(rng, h, w, c)
				got := newRunner(t, torchResize(t, h, w, name, aa), 1).mustRun(t, img)
				wantImage(t, got, []int{h, w, c}, img.Data)

				v := byte(rng.IntN(256))
				flat := newImage(h, w, c, func(int, int, int) byte { return v })
				oh, ow := 1+rng.IntN(90), 1+rng.IntN(90)
				got = newRunner(t, torchResize(t, oh, ow, name, aa), 1).mustRun(t, flat)
				for _, b := range got.Data {
					if b != v {
						t.Fatalf("%s aa=%v %dx%d→%dx%d: constant %d became %d", name, aa, h, w, oh, ow, v, b)
					}
				}
			}
			for _, sz := range [][4]int{{64, 64, 32, 16}, {16, 64, 64, 32}, {8, 8, 32, 2}, {1, 16, 4, 64}, {128, 4, 16, 8}} {
				h, w, oh, ow := sz[0], sz[1], sz[2], sz[3]
				img := randImage(rng, h, w, 3)
				flip := newImage(h, w, 3, func(y, x, ch int) byte { return img.Data[((h-1-y)*w+w-1-x)*3+ch] })
				r := newRunner(t, torchResize(t, oh, ow, name, aa), 1)
				a := bytes.Clone(r.mustRun(t, img).Data)
				b := r.mustRun(t, flip).Data
				for y := range oh {
					for x := range ow {
						for ch := range 3 {
							if a[(y*ow+x)*3+ch] != b[((oh-1-y)*ow+ow-1-x)*3+ch] {
								t.Fatalf("%s aa=%v %dx%d→%dx%d: pixel (%d,%d) is not the mirror of the mirrored image's", name, aa, h, w, oh, ow, y, x)
							}
						}
					}
				}
			}
		}
	}
}

// TestTorchPassOrder: torch always resamples the width first; Pillow's
// rule would take the height first here (it shrinks by far more), and the
// rounding between the passes shows the difference on some pixel.
func TestTorchPassOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	img := randImage(rng, 200, 60, 3)
	if !verticalFirst(200, 60, 20, 50, interpCubic) || verticalFirst(200, 60, 20, 50, interpTorchCubic) {
		t.Fatal("the order rule changed: this test needs a size Pillow resamples height first")
	}
	got := newRunner(t, torchResize(t, 20, 50, "torch_cubic", true), 1).mustRun(t, img)
	if want := torchRef(img.Data, 200, 60, 3, 20, 50, true, true); !bytes.Equal(got.Data, want) {
		t.Error("differs from width-first torchRef")
	}
}

// TestTorchArgs: source_mode (Pillow's per-mode resampling) refuses the
// torch modes, and the antialias default is true for them.
func TestTorchArgs(t *testing.T) {
	wantArgErr(t, "resize", Args{"size": IntsVal(4, 4), "interp": StrVal("torch_cubic"), "source_mode": BoolVal(true)}, "source_mode")
	if op := mustBuild(t, "resize", Args{"size": IntsVal(4, 4), "interp": StrVal("torch_linear")}).(*resizeOp); !op.aa || op.f != interpTorchLinear {
		t.Errorf("resize torch_linear: f %v aa %v, want torch_linear with the default antialias true", op.f, op.aa)
	}
	if op := mustBuild(t, "letterbox", Args{"size": IntsVal(64), "interp": StrVal("torch_cubic"), "antialias": BoolVal(false)}).(*letterboxOp); op.aa || op.f != interpTorchCubic {
		t.Errorf("letterbox torch_cubic: f %v aa %v", op.f, op.aa)
	}
}
