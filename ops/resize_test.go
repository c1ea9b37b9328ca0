package ops

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// resizeTo builds a resize; aa is ignored for opencv_linear, which refuses
// antialias true, so that loops over every filter can pass it.
func resizeTo(t testing.TB, h, w int, interp string, aa bool) Op {
	aa = aa && interp != "opencv_linear"
	return mustBuild(t, "resize", Args{"size": IntsVal(int64(h), int64(w)), "interp": StrVal(interp), "antialias": BoolVal(aa)})
}

func TestResizeArgs(t *testing.T) {
	wantArgErr(t, "resize", Args{}, "size")
	wantArgErr(t, "resize", Args{"interp": StrVal("cubic")}, "size")
	wantArgErr(t, "resize", Args{"size": IntsVal(2, 2), "shorter": IntVal(3)}, "shorter")
	wantArgErr(t, "resize", Args{"shorter": IntVal(3), "longer": IntVal(3)}, "longer")
	wantArgErr(t, "resize", Args{"size": IntsVal(2, 2), "max_size": IntVal(3)}, "max_size")
	wantArgErr(t, "resize", Args{"longer": IntVal(2), "max_size": IntVal(3)}, "max_size")
	wantArgErr(t, "resize", Args{"shorter": IntVal(256), "max_size": IntVal(256)}, "max_size")
	wantArgErr(t, "resize", Args{"size": IntsVal(2)}, "size")
	wantArgErr(t, "resize", Args{"size": IntsVal(0, 2)}, "size")
	wantArgErr(t, "resize", Args{"shorter": IntVal(8), "interp": StrVal("lanczos")}, "interp")
	wantArgErr(t, "resize", Args{"shorter": IntVal(8), "bogus": IntVal(1)}, "bogus")
	mustBuild(t, "resize", Args{"shorter": IntVal(256), "max_size": IntVal(257), "interp": StrVal("AREA")})
	for _, a := range resizeSchema.Args {
		if a.Doc == "" {
			t.Errorf("argument %s has no Doc", a.Name)
		}
	}
}

// TestResizeOutSize pins torchvision's size rules: truncation, and max_size
// computed from the truncated sizes.
func TestResizeOutSize(t *testing.T) {
	cases := []struct {
		args   Args
		h, w   int
		oh, ow int
	}{
		{Args{"size": IntsVal(224, 300)}, 375, 500, 224, 300},
		{Args{"shorter": IntVal(256)}, 375, 500, 256, 341}, // 341.33
		{Args{"shorter": IntVal(256)}, 500, 375, 341, 256},
		{Args{"shorter": IntVal(256)}, 256, 256, 256, 256},
		{Args{"shorter": IntVal(224)}, 333, 500, 224, 336}, // 336.33
		{Args{"shorter": IntVal(2)}, 1, 1000, 2, 2000},
		{Args{"shorter": IntVal(256), "max_size": IntVal(300)}, 375, 500, 225, 300},
		// int(4*3/6) = 2 from the truncated long side 6, not int(4*4/9) = 1.
		{Args{"shorter": IntVal(3), "max_size": IntVal(4)}, 4, 9, 2, 4},
		{Args{"shorter": IntVal(256), "max_size": IntVal(400)}, 375, 500, 256, 341},
		{Args{"longer": IntVal(256)}, 375, 500, 192, 256},
		{Args{"longer": IntVal(256)}, 500, 375, 256, 192},
		{Args{"longer": IntVal(100)}, 333, 500, 66, 100}, // 66.6
		{Args{"longer": IntVal(10)}, 1, 1000, 1, 10},     // never below 1
	}
	for _, c := range cases {
		op := mustBuild(t, "resize", c.args).(Sizer)
		if oh, ow := op.OutSize(c.h, c.w); oh != c.oh || ow != c.ow {
			t.Errorf("%v on %dx%d: %dx%d, want %dx%d", c.args, c.h, c.w, oh, ow, c.oh, c.ow)
		}
	}
}

func TestResizeInfer(t *testing.T) {
	op := mustBuild(t, "resize", Args{"size": IntsVal(224, 300)})
	out, err := op.Infer([]Spec{rgbDyn})
	if err != nil || out[0].String() != "UINT8[224,300,3] RGB" {
		t.Errorf("Infer: %v %v", out, err)
	}
	op = mustBuild(t, "resize", Args{"shorter": IntVal(256)})
	out, err = op.Infer([]Spec{grayDyn})
	if err != nil || out[0].String() != "UINT8[-1,-1,1] GRAY" {
		t.Errorf("Infer: %v %v", out, err)
	}
	inferRejectsNonImages(t, op)
}

// TestResizeHand checks values worked out by hand from Pillow's algorithm.
func TestResizeHand(t *testing.T) {
	row := newImage(1, 4, 1, func(_, x, _ int) byte { return byte(70 * x) }) // 0 70 140 210
	cases := []struct {
		interp string
		aa     bool
		ow     int
		want   []byte
	}{
		// Antialiased 2× shrink: triangle of half-width 2 centred on 1 and 3;
		// weights 3/7 3/7 1/7 and 1/7 3/7 3/7.
		{"linear", true, 2, []byte{50, 160}},
		// Without antialias: plain 2-tap averages.
		{"linear", false, 2, []byte{35, 175}},
		// Box of width 2: pixels 0-1 and 2-3.
		{"area", true, 2, []byte{35, 175}},
		{"area", false, 2, []byte{35, 175}},
		// Nearest: source x = trunc((i+0.5)*2).
		{"nearest", true, 2, []byte{70, 210}},
		// Upscale 4→8: centres at (i+0.5)/2, edge pixels see only one side.
		{"linear", true, 8, []byte{0, 18, 53, 88, 123, 158, 193, 210}},
		{"nearest", true, 8, []byte{0, 0, 70, 70, 140, 140, 210, 210}},
	}
	for _, c := range cases {
		r := newRunner(t, resizeTo(t, 1, c.ow, c.interp, c.aa), 1)
		got := r.mustRun(t, row)
		wantImage(t, got, []int{1, c.ow, 1}, c.want)
	}
}

// TestResizeNearest pins Pillow's NEAREST, including its accumulated source
// coordinate: for 2→7, 0.5*(2/7) plus three steps of 2/7 falls just below 1,
// so pixel 3 still reads source pixel 0, where (3+0.5)*2/7 would give 1.
func TestResizeNearest(t *testing.T) {
	src := newImage(1, 2, 1, func(_, x, _ int) byte { return byte(10 + 10*x) })
	got := newRunner(t, resizeTo(t, 1, 7, "nearest", true), 1).mustRun(t, src)
	wantImage(t, got, []int{1, 7, 1}, []byte{10, 10, 10, 10, 20, 20, 20})

	grid := newImage(5, 5, 1, func(y, x, _ int) byte { return byte(50*y + 10*x) })
	got = newRunner(t, resizeTo(t, 2, 3, "nearest", true), 1).mustRun(t, grid)
	wantImage(t, got, []int{2, 3, 1}, []byte{50, 70, 90, 150, 170, 190})
	got = newRunner(t, resizeTo(t, 7, 8, "nearest", true), 1).mustRun(t, grid)
	wantImage(t, got, []int{7, 8, 1}, []byte{
		0, 0, 10, 20, 20, 30, 40, 40,
		50, 50, 60, 70, 70, 80, 90, 90,
		50, 50, 60, 70, 70, 80, 90, 90,
		100, 100, 110, 120, 120, 130, 140, 140,
		150, 150, 160, 170, 170, 180, 190, 190,
		150, 150, 160, 170, 170, 180, 190, 190,
		200, 200, 210, 220, 220, 230, 240, 240,
	})

	// Every channel count picks the same pixels as the 1-channel path.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []int{3, 4} {
		img := randImage(rng, 33, 47, c)
		got := newRunner(t, resizeTo(t, 61, 20, "nearest", true), 1).mustRun(t, img)
		for ch := range c {
			plane := newImage(33, 47, 1, func(y, x, _ int) byte { return img.Data[(y*47+x)*c+ch] })
			want := newRunner(t, resizeTo(t, 61, 20, "nearest", true), 1).mustRun(t, plane)
			for i, v := range want.Data {
				if got.Data[i*c+ch] != v {
					t.Fatalf("c=%d channel %d pixel %d: %d, want %d", c, ch, i, got.Data[i*c+ch], v)
				}
			}
		}
	}
}

// TestResizeChannels checks that the 3- and 4-channel loops compute each
// channel exactly as the 1-channel loop, for both pass orders.
func TestResizeChannels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := [][4]int{{40, 50, 17, 23}, {40, 50, 9, 45}, {13, 11, 40, 3}, {30, 30, 30, 12}, {30, 30, 7, 30}}
	for _, f := range []string{"linear", "cubic", "area"} {
		for _, s := range sizes {
			for _, c := range []int{3, 4} {
				img := randImage(rng, s[0], s[1], c)
				got := newRunner(t, resizeTo(t, s[2], s[3], f, true), 1).mustRun(t, img)
				for ch := range c {
					plane := newImage(s[0], s[1], 1, func(y, x, _ int) byte { return img.Data[(y*s[1]+x)*c+ch] })
					want := newRunner(t, resizeTo(t, s[2], s[3], f, true), 1).mustRun(t, plane)
					for i, v := range want.Data {
						if got.Data[i*c+ch] != v {
							t.Fatalf("%s %v c=%d: channel %d pixel %d: %d, want %d", f, s, c, ch, i, got.Data[i*c+ch], v)
						}
					}
				}
			}
		}
	}
}

// TestResizeProperties: a constant image stays constant under every
// filter; linear and area never overshoot the input's range; the identity
// size copies.
func TestResizeProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 200 {
		h, w := 1+rng.IntN(60), 1+rng.IntN(60)
		oh, ow := 1+rng.IntN(90), 1+rng.IntN(90)
		c := []int{1, 3, 4}[i%3]
		aa := i%2 == 0
		v := byte(rng.IntN(256))
		flat := newImage(h, w, c, func(int, int, int) byte { return v })
		for _, f := range interpNames {
			got := newRunner(t, resizeTo(t, oh, ow, f, aa), 1).mustRun(t, flat)
			for _, b := range got.Data {
				if b != v {
					t.Fatalf("%s aa=%v %dx%d→%dx%d: constant %d became %d", f, aa, h, w, oh, ow, v, b)
				}
			}
		}
		lo, hi := byte(rng.IntN(128)), byte(128+rng.IntN(128))
		img := newImage(h, w, c, func(int, int, int) byte { return lo + byte(rng.IntN(int(hi-lo)+1)) })
		for _, f := range []string{"linear", "area"} {
			got := newRunner(t, resizeTo(t, oh, ow, f, aa), 1).mustRun(t, img)
			for _, b := range got.Data {
				if b < lo || b > hi {
					t.Fatalf("%s aa=%v %dx%d→%dx%d: %d outside [%d,%d]", f, aa, h, w, oh, ow, b, lo, hi)
				}
			}
		}
		got := newRunner(t, resizeTo(t, h, w, "cubic", aa), 1).mustRun(t, img)
		wantImage(t, got, []int{h, w, c}, img.Data)
	}
}

// TestResizeSinglePass: when only one side changes, the result equals the
// separable result computed through a one-pixel-wide image.
func TestResizeSinglePass(t *testing.T) {
	img := gradient(20, 30, 3)
	got := newRunner(t, resizeTo(t, 20, 11, "cubic", true), 1).mustRun(t, img)
	for y := range 20 {
		row := newImage(1, 30, 3, func(_, x, ch int) byte { return img.Data[(y*30+x)*3+ch] })
		want := newRunner(t, resizeTo(t, 1, 11, "cubic", true), 1).mustRun(t, row)
		if string(got.Data[y*33:(y+1)*33]) != string(want.Data) {
			t.Fatalf("row %d differs", y)
		}
	}
}

// TestResizeFull: the size rule reads Tensor.Full (a DCT-scaled decode),
// the pixels come from Dims.
func TestResizeFull(t *testing.T) {
	op := mustBuild(t, "resize", Args{"shorter": IntVal(256)})
	img := gradient(375/4+1, 500/4, 3)
	img.Full = [2]int{375, 500}
	got := newRunner(t, op, 1).mustRun(t, img)
	wantImage(t, got, []int{256, 341, 3}, nil)
	if got.Color != RGB || got.Full != [2]int{} {
		t.Errorf("color %v full %v", got.Color, got.Full)
	}
}

func TestResizeErrors(t *testing.T) {
	op := mustBuild(t, "resize", Args{"shorter": IntVal(1000)})
	r := newRunner(t, op, 1)
	r.ctx.Limits.MaxPixels = 1 << 20
	if err := r.run(gradient(1, 2000, 1)); CauseOf(err) != TooLarge {
		t.Errorf("huge output: %v", err)
	}
	bad := &Tensor{DType: Uint8, Dims: []int{2, 2, 3}, Color: RGB, Data: make([]byte, 5)}
	if err := r.run(bad); CauseOf(err) != BadInput {
		t.Errorf("short data: %v", err)
	}
	if err := r.run(&Tensor{DType: Float32, Dims: []int{2, 2, 3}, Data: make([]byte, 48)}); err == nil {
		t.Errorf("float input accepted")
	}
	// No state from the executor: still works.
	if err := op.Run(&Ctx{}, []*Tensor{gradient(3, 3, 1)}, []*Tensor{{}}); err != nil {
		t.Error(err)
	}
}

// TestResizeCache: tables are reused across samples and survive a mix of
// sizes (the LRU never evicts the table of the other axis in use).
func TestResizeCache(t *testing.T) {
	op := mustBuild(t, "resize", Args{"shorter": IntVal(16)})
	r := newRunner(t, op, 1)
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 50 {
		h, w := 10+rng.IntN(40), 10+rng.IntN(40)
		img := randImage(rng, h, w, 3)
		got := r.mustRun(t, img)
		want := newRunner(t, op, 1).mustRun(t, img)
		if string(got.Data) != string(want.Data) {
			t.Fatalf("sample %d (%dx%d): cached state gives a different result", i, h, w)
		}
	}
}

func TestResizeNoAllocs(t *testing.T) {
	img := gradient(375, 500, 3)
	for _, f := range interpNames {
		for _, size := range [][2]int{{256, 341}, {100, 480}, {600, 200}, {375, 300}} {
			t.Run(fmt.Sprintf("%s-%dx%d", f, size[0], size[1]), func(t *testing.T) {
				noAllocs(t, newRunner(t, resizeTo(t, size[0], size[1], f, true), 1), img)
			})
		}
	}
	t.Run("shorter", func(t *testing.T) {
		noAllocs(t, newRunner(t, mustBuild(t, "resize", Args{"shorter": IntVal(256)}), 1), img)
	})
	t.Run("gray-big-shrink", func(t *testing.T) {
		noAllocs(t, newRunner(t, resizeTo(t, 30, 40, "cubic", true), 1), gradient(375, 500, 1))
	})
}

// Benchmarks: the ImageNet-style resize of a 500x375 photo.
func BenchmarkResize(b *testing.B) {
	img := gradient(375, 500, 3)
	for _, c := range []struct {
		name string
		args Args
	}{
		{"linear-shorter256", Args{"shorter": IntVal(256)}},
		{"linear-noaa-shorter256", Args{"shorter": IntVal(256), "antialias": BoolVal(false)}},
		{"cubic-shorter256", Args{"shorter": IntVal(256), "interp": StrVal("cubic")}},
		{"area-shorter256", Args{"shorter": IntVal(256), "interp": StrVal("area")}},
		{"nearest-shorter256", Args{"shorter": IntVal(256), "interp": StrVal("nearest")}},
		{"linear-224x224", Args{"size": IntsVal(224, 224)}},
		{"linear-up-750x1000", Args{"size": IntsVal(750, 1000)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := newRunner(b, mustBuild(b, "resize", c.args), 1)
			r.mustRun(b, img)
			b.ReportAllocs()
			b.SetBytes(int64(len(img.Data)))
			for b.Loop() {
				_ = r.run(img)
			}
		})
	}
}

func TestResizeMatchesReference(t *testing.T) {
	forEachSIMD(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		for i := range 400 {
			h, w := 1+rng.IntN(70), 1+rng.IntN(70)
			oh, ow := 1+rng.IntN(100), 1+rng.IntN(100)
			if i%4 == 0 { // big shrinks: long filters
				oh, ow = 1+rng.IntN(8), 1+rng.IntN(8)
			}
			c := []int{1, 2, 3, 4}[i%4]
			f := []string{"linear", "cubic", "area"}[i%3]
			aa := i%5 != 0
			img := randImage(rng, h, w, c)
			got := newRunner(t, resizeTo(t, oh, ow, f, aa), 1).mustRun(t, img)
			want := pillowResample(img.Data, h, w, c, oh, ow, f, aa)
			if string(got.Data) != string(want) {
				t.Fatalf("%v aa=%v c=%d %dx%d→%dx%d differs from the reference", f, aa, c, h, w, oh, ow)
			}
		}
	})
}

// TestResizeTrim: Trim releases the first pass's buffer only when it is
// over the bound, and the next image resizes the same.
func TestResizeTrim(t *testing.T) {
	r := newRunner(t, resizeTo(t, 300, 420, "linear", true), 1)
	img := gradient(375, 500, 3)
	first := bytes.Clone(r.mustRun(t, img).Data)
	tr := r.ctx.State.(Trimmer)
	if n := tr.Trim(1 << 30); n != 0 {
		t.Errorf("Trim under the bound released %d bytes", n)
	}
	if n := tr.Trim(0); n < 300*500*3 {
		t.Errorf("Trim(0) released %d bytes, want the first pass's 300x500x3 or more", n)
	}
	if n := tr.Trim(0); n != 0 {
		t.Errorf("a second Trim released %d bytes", n)
	}
	if !bytes.Equal(r.mustRun(t, img).Data, first) {
		t.Error("resizing after Trim gives a different result")
	}
}
