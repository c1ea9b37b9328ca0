package ops

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// chainGeom folds operators into a geometry the way the GPU executor does.
func chainGeom(t *testing.T, h, w int, lim Limits, side [][]*Tensor, op ...Op) (Geom, error) {
	t.Helper()
	g := NewGeom(h, w, RGB, lim)
	c := &Ctx{Limits: lim}
	for i, o := range op {
		var s []*Tensor
		if i < len(side) {
			s = side[i]
		}
		if err := o.(GPUStage).GPU(c, &g, s); err != nil {
			return g, err
		}
	}
	return g, nil
}

// The GPU geometry of each operator is what its Run produces: the same
// sizes, placements and fills, checked against the CPU operators' own
// size rules.
func TestGPUGeometry(t *testing.T) {
	resize := mustBuild(t, "resize", Args{"shorter": IntVal(256)})
	crop := mustBuild(t, "crop", Args{"size": IntsVal(224, 224)})
	g, err := chainGeom(t, 375, 500, DefaultLimits, nil, resize, crop)
	if err != nil {
		t.Fatal(err)
	}
	// 375x500 → 256x341, window 224 from (16, 58): round-half-even of 58.5.
	want := Geom{H: 224, W: 224, Color: RGB, Win: [4]int{0, 0, 375, 500}, Rs: [2]int{256, 341},
		Off: [2]int{-16, -58}, Resized: true, Filter: Filter{Interp: 1, Antialias: true}, Limits: DefaultLimits}
	if g != want {
		t.Errorf("imagenet geometry\n got %+v\nwant %+v", g, want)
	}

	// A crop before the resize moves the window read from the source;
	// reaching outside the image needs the fill.
	roi := mustBuild(t, "crop", Args{"roi": IntsVal(-10, 20, 100, 50), "fill": FloatsVal(7)})
	small := mustBuild(t, "resize", Args{"size": IntsVal(40, 20)})
	g, err = chainGeom(t, 300, 400, DefaultLimits, nil, roi, small)
	if err != nil {
		t.Fatal(err)
	}
	if g.Win != [4]int{-10, 20, 100, 50} || g.Rs != [2]int{40, 20} || g.Off != [2]int{} || !g.HasFill || g.Fill[0] != 7 {
		t.Errorf("crop then resize: %+v", g)
	}

	// Letterbox: the resized image centred on the canvas, its scale and
	// offset written as Run writes them.
	lb := mustBuild(t, "letterbox", Args{"size": IntsVal(640, 640)})
	scale, off := new(Tensor), new(Tensor)
	g, err = chainGeom(t, 480, 640, DefaultLimits, [][]*Tensor{{scale, off}}, lb)
	if err != nil {
		t.Fatal(err)
	}
	if g.Rs != [2]int{480, 640} || g.Off != [2]int{80, 0} || g.H != 640 || !g.HasFill || g.Fill[0] != 114 {
		t.Errorf("letterbox: %+v", g)
	}
	f32 := func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
	if f32(scale.Data) != 1 || f32(off.Data) != 0 || f32(off.Data[4:]) != 80 {
		t.Errorf("letterbox scale %v offset %v,%v", f32(scale.Data), f32(off.Data), f32(off.Data[4:]))
	}

	// Pad to a multiple: the same size rule and error as Run.
	pad := mustBuild(t, "pad", Args{"multiple": IntVal(32), "align": StrVal("center")})
	g, err = chainGeom(t, 100, 70, DefaultLimits, nil, pad)
	if err != nil {
		t.Fatal(err)
	}
	if g.H != 128 || g.W != 96 || g.Off != [2]int{14, 13} {
		t.Errorf("pad: %+v", g)
	}
	tooSmall := mustBuild(t, "pad", Args{"size": IntsVal(50, 50)})
	if _, err := chainGeom(t, 100, 70, DefaultLimits, nil, tooSmall); CauseOf(err) != BadInput {
		t.Errorf("pad of a larger image: %v", err)
	}

	// Limits apply to every output size, per sample.
	huge := mustBuild(t, "resize", Args{"shorter": IntVal(4000)})
	if _, err := chainGeom(t, 10, 5000, Limits{MaxPixels: 1 << 20}, nil, huge); CauseOf(err) != TooLarge {
		t.Errorf("resize beyond the pixel limit: %v", err)
	}

	// What the one kernel cannot do is ErrNotOnGPU.
	if _, err := chainGeom(t, 100, 100, DefaultLimits, nil, resize, small); !errors.Is(err, ErrNotOnGPU) {
		t.Errorf("two resizes: %v", err)
	}
}

func TestGPUValues(t *testing.T) {
	op, _ := buildNormalize(t, Spec{DType: Uint8, Dims: []int{4, 4, 3}, Color: BGR}, Args{
		"scale": FloatVal(2), "mean": FloatsVal(1, 2, 3), "std": FloatsVal(4), "order": StrVal("RGB"),
		"layout": StrVal("HWC"), "dtype": StrVal("FP16"),
	})
	v := op.(GPUValues).GPUValues()
	if len(v.Perm) != 3 || v.Perm[0] != 2 || v.Perm[2] != 0 || v.CHW || v.DType != Float16 {
		t.Errorf("values %+v", v)
	}
	// The affine map equals the table Run uses, per output channel.
	n := op.(*normalize)
	for k := range 3 {
		for _, x := range []int{0, 17, 255} {
			got := Float16Bits(float32(x)*v.Mul[k] + v.Add[k])
			if want := uint16(n.lut[k][x]); got != want {
				t.Errorf("channel %d value %d: affine %#x, table %#x", k, x, got, want)
			}
		}
	}
}
