package ops

import (
	"strings"
	"testing"
)

func TestPadArgs(t *testing.T) {
	wantArgErr(t, "pad", Args{}, "size")
	wantArgErr(t, "pad", Args{"fill": FloatsVal(3)}, "size")
	wantArgErr(t, "pad", Args{"size": IntsVal(4, 4), "multiple": IntVal(32)}, "multiple")
	wantArgErr(t, "pad", Args{"multiple": IntVal(0)}, "multiple")
	wantArgErr(t, "pad", Args{"size": IntsVal(4, 4), "align": StrVal("bottom")}, "align")
	wantArgErr(t, "pad", Args{"size": IntsVal(4, 4), "fill": FloatsVal(-1)}, "fill")
	mustBuild(t, "pad", Args{"size": IntsVal(4, 4), "align": StrVal("CENTER")})
	for _, a := range padSchema.Args {
		if a.Doc == "" {
			t.Errorf("argument %s has no Doc", a.Name)
		}
	}
}

func TestPadInfer(t *testing.T) {
	op := mustBuild(t, "pad", Args{"size": IntsVal(640, 640)})
	if out, err := op.Infer([]Spec{rgbDyn}); err != nil || out[0].String() != "UINT8[640,640,3] RGB" {
		t.Errorf("size: %v %v", out, err)
	}
	big := Spec{DType: Uint8, Dims: []int{480, 700, 3}, Color: BGR}
	if _, err := op.Infer([]Spec{big}); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("static input wider than the pad: %v", err)
	}
	op = mustBuild(t, "pad", Args{"multiple": IntVal(32)})
	if out, err := op.Infer([]Spec{grayDyn}); err != nil || out[0].String() != "UINT8[-1,-1,1] GRAY" {
		t.Errorf("multiple: %v %v", out, err)
	}
	inferRejectsNonImages(t, op)
}

func TestPad(t *testing.T) {
	img := newImage(2, 3, 1, func(y, x, _ int) byte { return byte(10*y + x + 1) }) // 1 2 3 / 11 12 13
	cases := []struct {
		name string
		args Args
		dims []int
		want []byte
	}{
		{"top_left", Args{"size": IntsVal(3, 4), "fill": FloatsVal(9)}, []int{3, 4, 1},
			[]byte{1, 2, 3, 9, 11, 12, 13, 9, 9, 9, 9, 9}},
		// 3 rows of padding: 1 above, 2 below; 2 columns: 1 left, 1 right.
		{"center", Args{"size": IntsVal(5, 5), "align": StrVal("center")}, []int{5, 5, 1},
			[]byte{0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 11, 12, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		// Odd padding: the extra pixel goes to the bottom and right.
		{"center-odd", Args{"size": IntsVal(3, 4), "align": StrVal("center"), "fill": FloatsVal(9)}, []int{3, 4, 1},
			[]byte{1, 2, 3, 9, 11, 12, 13, 9, 9, 9, 9, 9}},
		{"same", Args{"size": IntsVal(2, 3)}, []int{2, 3, 1}, []byte{1, 2, 3, 11, 12, 13}},
		{"multiple", Args{"multiple": IntVal(4), "fill": FloatsVal(9)}, []int{4, 4, 1},
			[]byte{1, 2, 3, 9, 11, 12, 13, 9, 9, 9, 9, 9, 9, 9, 9, 9}},
		{"multiple-center", Args{"multiple": IntVal(2), "align": StrVal("center"), "fill": FloatsVal(9)}, []int{2, 4, 1},
			[]byte{1, 2, 3, 9, 11, 12, 13, 9}},
		{"multiple-1", Args{"multiple": IntVal(1)}, []int{2, 3, 1}, []byte{1, 2, 3, 11, 12, 13}},
	}
	for _, c := range cases {
		got := newRunner(t, mustBuild(t, "pad", c.args), 1).mustRun(t, img)
		t.Run(c.name, func(t *testing.T) { wantImage(t, got, c.dims, c.want) })
	}
}

func TestPadChannels(t *testing.T) {
	img := newImage(1, 1, 4, func(_, _, ch int) byte { return byte(100 + ch) })
	op := mustBuild(t, "pad", Args{"size": IntsVal(1, 3), "align": StrVal("center"), "fill": FloatsVal(1, 2, 3, 4)})
	got := newRunner(t, op, 1).mustRun(t, img)
	wantImage(t, got, []int{1, 3, 4}, []byte{1, 2, 3, 4, 100, 101, 102, 103, 1, 2, 3, 4})
	if got.Color != RGBA {
		t.Errorf("colour %v", got.Color)
	}
}

func TestPadTooLarge(t *testing.T) {
	r := newRunner(t, mustBuild(t, "pad", Args{"size": IntsVal(640, 640)}), 1)
	err := r.run(gradient(480, 700, 3))
	if CauseOf(err) != BadInput || !strings.Contains(err.Error(), "480x700") || !strings.Contains(err.Error(), "640x640") {
		t.Errorf("got %v, want a BadInput error naming both sizes", err)
	}
	// The sample error leaves the operator usable.
	r.mustRun(t, gradient(480, 600, 3))
}

func TestPadNoAllocs(t *testing.T) {
	img := gradient(375, 500, 3)
	noAllocs(t, newRunner(t, mustBuild(t, "pad", Args{"size": IntsVal(512, 512), "align": StrVal("center")}), 1), img)
	noAllocs(t, newRunner(t, mustBuild(t, "pad", Args{"multiple": IntVal(32)}), 1), img)
}

// TestOneOf: the argument given of several that exclude each other, and
// the errors for none and for two, as crop, resize and pad report them.
func TestOneOf(t *testing.T) {
	a := Args{"roi": IntsVal(0, 0, 2, 2)}
	if got, err := a.OneOf("crop", "size", "roi", "roi_rel"); got != "roi" || err != nil {
		t.Errorf("one given: %q, %v", got, err)
	}
	_, err := Args{}.OneOf("crop", "size", "roi", "roi_rel")
	if ae, ok := err.(*ArgError); !ok || ae.Arg != "size" || ae.Msg != "crop needs one of size, roi or roi_rel" {
		t.Errorf("none given: %v", err)
	}
	_, err = Args{"size": IntsVal(1, 1), "multiple": IntVal(2)}.OneOf("pad", "size", "multiple")
	if ae, ok := err.(*ArgError); !ok || ae.Arg != "multiple" || ae.Msg != "conflicts with size: give only one of size or multiple" {
		t.Errorf("two given: %v", err)
	}
}
