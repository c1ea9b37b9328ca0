package ops

import (
	"bytes"
	"testing"
)

func TestCropArgs(t *testing.T) {
	wantArgErr(t, "crop", Args{}, "size")
	wantArgErr(t, "crop", Args{"size": IntsVal(2, 2), "roi": IntsVal(0, 0, 1, 1)}, "roi")
	wantArgErr(t, "crop", Args{"roi": IntsVal(0, 0, 1, 1), "roi_rel": FloatsVal(0, 0, 1, 1)}, "roi_rel")
	wantArgErr(t, "crop", Args{"roi": IntsVal(0, 0, 0, 1)}, "roi")
	wantArgErr(t, "crop", Args{"roi": IntsVal(0, 0, 1)}, "roi")
	wantArgErr(t, "crop", Args{"roi_rel": FloatsVal(0, 0, 0, 0.5)}, "roi_rel")
	wantArgErr(t, "crop", Args{"roi_rel": FloatsVal(0, 0, 1.5, 0.5)}, "roi_rel")
	wantArgErr(t, "crop", Args{"size": IntsVal(2, 2), "fill": FloatsVal(1, 2)}, "fill")
	wantArgErr(t, "crop", Args{"size": IntsVal(2, 2), "fill": FloatsVal(256)}, "fill")
	for _, a := range cropSchema.Args {
		if a.Doc == "" {
			t.Errorf("argument %s has no Doc", a.Name)
		}
	}
}

func TestCropInfer(t *testing.T) {
	op := mustBuild(t, "crop", Args{"size": IntsVal(224, 200)})
	if out, err := op.Infer([]Spec{rgbDyn}); err != nil || out[0].String() != "UINT8[224,200,3] RGB" {
		t.Errorf("size: %v %v", out, err)
	}
	op = mustBuild(t, "crop", Args{"roi": IntsVal(-5, 3, 10, 20)})
	if out, err := op.Infer([]Spec{grayDyn}); err != nil || out[0].String() != "UINT8[10,20,1] GRAY" {
		t.Errorf("roi: %v %v", out, err)
	}
	op = mustBuild(t, "crop", Args{"roi_rel": FloatsVal(0.1, 0.1, 0.8, 0.8)})
	if out, err := op.Infer([]Spec{rgbDyn}); err != nil || out[0].String() != "UINT8[-1,-1,3] RGB" {
		t.Errorf("roi_rel: %v %v", out, err)
	}
	inferRejectsNonImages(t, op)
	// Three fill values do not fit a gray image.
	op = mustBuild(t, "crop", Args{"size": IntsVal(2, 2), "fill": FloatsVal(1, 2, 3)})
	if _, err := op.Infer([]Spec{grayDyn}); err == nil {
		t.Errorf("3 fill values accepted for a gray image")
	}
}

// TestCenterStart pins torchvision's center_crop offsets: round half to
// even when cropping, floor of half the padding before when padding.
func TestCenterStart(t *testing.T) {
	cases := []struct{ in, out, want int }{
		{10, 4, 3}, // 3.0
		{5, 2, 2},  // 1.5 → 2
		{7, 2, 2},  // 2.5 → 2
		{9, 2, 4},  // 3.5 → 4
		{256, 224, 16},
		{375, 224, 76}, // 75.5 → 76
		{341, 224, 58}, // 58.5 → 58
		{4, 4, 0},
		{4, 7, -1}, // pad 1 before, 2 after
		{4, 8, -2},
		{1, 4, -1},
	}
	for _, c := range cases {
		if got := centerStart(c.in, c.out); got != c.want {
			t.Errorf("centerStart(%d, %d) = %d, want %d", c.in, c.out, got, c.want)
		}
	}
}

func TestCrop(t *testing.T) {
	// 4×5 gray, pixel value 10*y + x + 1.
	img := newImage(4, 5, 1, func(y, x, _ int) byte { return byte(10*y + x + 1) })
	cases := []struct {
		name string
		args Args
		dims []int
		want []byte
	}{
		// top = round(1.0) = 1, left = round(1.5) = 2
		{"center", Args{"size": IntsVal(2, 2)}, []int{2, 2, 1}, []byte{13, 14, 23, 24}},
		{"center-odd", Args{"size": IntsVal(3, 3)}, []int{3, 3, 1}, []byte{2, 3, 4, 12, 13, 14, 22, 23, 24}},
		{"center-pad", Args{"size": IntsVal(6, 3), "fill": FloatsVal(7)}, []int{6, 3, 1},
			[]byte{7, 7, 7, 2, 3, 4, 12, 13, 14, 22, 23, 24, 32, 33, 34, 7, 7, 7}},
		{"roi", Args{"roi": IntsVal(1, 2, 2, 3)}, []int{2, 3, 1}, []byte{13, 14, 15, 23, 24, 25}},
		{"roi-out", Args{"roi": IntsVal(-1, 3, 2, 3), "fill": FloatsVal(9)}, []int{2, 3, 1}, []byte{9, 9, 9, 4, 5, 9}},
		{"roi-away", Args{"roi": IntsVal(10, 10, 1, 2), "fill": FloatsVal(9)}, []int{1, 2, 1}, []byte{9, 9}},
		// floor(0.3*4)=1, floor(0.5*5)=2, round(0.5*4)=2, round(0.5*5)=round(2.5)=2
		{"rel", Args{"roi_rel": FloatsVal(0.3, 0.5, 0.5, 0.5)}, []int{2, 2, 1}, []byte{13, 14, 23, 24}},
		{"rel-edge", Args{"roi_rel": FloatsVal(0.75, 0.8, 0.5, 0.4)}, []int{2, 2, 1}, []byte{35, 0, 0, 0}},
	}
	for _, c := range cases {
		got := newRunner(t, mustBuild(t, "crop", c.args), 1).mustRun(t, img)
		if !bytes.Equal(got.Data, c.want) || len(got.Dims) != 3 || got.Dims[0] != c.dims[0] || got.Dims[1] != c.dims[1] {
			t.Errorf("%s: %v %v, want %v %v", c.name, got.Dims, got.Data, c.dims, c.want)
		}
	}
}

func TestCropFillPerChannel(t *testing.T) {
	img := newImage(1, 1, 3, func(_, _, ch int) byte { return byte(100 + ch) })
	op := mustBuild(t, "crop", Args{"size": IntsVal(1, 3), "fill": FloatsVal(1, 2.4, 2.6)})
	got := newRunner(t, op, 1).mustRun(t, img)
	wantImage(t, got, []int{1, 3, 3}, []byte{1, 2, 3, 100, 101, 102, 1, 2, 3})
	if got.Color != RGB {
		t.Errorf("colour %v", got.Color)
	}
}

func TestCropNoAllocs(t *testing.T) {
	img := gradient(375, 500, 3)
	noAllocs(t, newRunner(t, mustBuild(t, "crop", Args{"size": IntsVal(224, 224)}), 1), img)
	noAllocs(t, newRunner(t, mustBuild(t, "crop", Args{"size": IntsVal(400, 600)}), 1), img)
	noAllocs(t, newRunner(t, mustBuild(t, "crop", Args{"roi_rel": FloatsVal(0.5, 0.5, 0.9, 0.9)}), 1), img)
}

func TestCropErrors(t *testing.T) {
	r := newRunner(t, mustBuild(t, "crop", Args{"roi": IntsVal(0, 0, 5000, 5000)}), 1)
	r.ctx.Limits.MaxPixels = 1 << 20
	if err := r.run(gradient(4, 4, 1)); CauseOf(err) != TooLarge {
		t.Errorf("huge crop: %v", err)
	}
	if err := r.run(&Tensor{DType: Uint8, Dims: []int{4}, Data: make([]byte, 4)}); CauseOf(err) != BadInput {
		t.Errorf("1-D input: %v", err)
	}
}
