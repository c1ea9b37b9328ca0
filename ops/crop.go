package ops

import (
	"fmt"
	"math"
)

func init() { Register(cropSchema) }

var cropSchema = &Schema{
	Name: "crop",
	Doc: "Cuts a window out of an image: centred (size), absolute (roi) or relative (roi_rel). " +
		"Exactly one of them. Window pixels outside the image get fill, as torchvision's center_crop " +
		"pads an image smaller than the crop.",
	Inputs:  []Port{{Name: "image", Doc: "HWC UINT8 image"}},
	Outputs: []Port{{Name: "image", Doc: "the window, same colour"}},
	Args: []ArgSpec{
		{
			Name: "size",
			Type: IntsArg,
			Doc: "centre crop [height, width], by default torchvision's rule: top = round((H-height)/2) with " +
				"round half to even; when the crop is taller than the image, top = -((height-H)//2) " +
				"(the extra row of fill goes to the bottom). Likewise for left. See rounding",
			Lens: []int{2},
			Min:  1, Max: maxSide,
		},
		{
			Name: "roi",
			Type: IntsArg,
			Doc:  "absolute window [top, left, height, width] in input pixels; top and left may be negative",
			Lens: []int{4},
			Min:  -maxSide, Max: maxSide,
		},
		{
			Name: "roi_rel",
			Type: FloatsArg,
			Doc: "window [top, left, height, width] as fractions 0..1 of the input's height and width: " +
				"top = floor(top*H), left = floor(left*W), height = round(height*H), " +
				"width = round(width*W) (round half to even), at least 1 pixel",
			Lens: []int{4},
			Min:  0, Max: 1,
		},
		{
			Name: "rounding",
			Type: StringArg,
			Doc: "with size only: how the centre window's offset rounds when the margin is odd. half_even " +
				"(when absent) is torchvision's center_crop, top = round((H-height)/2) with round half to even; " +
				"floor is transformers' center_crop, top = (H-height)//2 (floor division), which also puts an " +
				"odd row of fill at the top when the crop is taller than the image. Likewise for left",
			Enum: []string{"half_even", "floor"},
		},
		fillArg(0),
	},
	New: newCrop,
}

type cropMode uint8

const (
	cropCenter cropMode = iota
	cropROI
	cropRel
)

type cropOp struct {
	mode      cropMode
	floor     bool // cropCenter: transformers' (H-h)//2 instead of torchvision's rule
	top, left int  // cropROI
	h, w      int  // cropCenter, cropROI
	rel       [4]float64
	fill      fill
}

func newCrop(a Args) (Op, error) {
	o := &cropOp{fill: newFill(a.Floats("fill"))}
	given, err := a.OneOf("crop", "size", "roi", "roi_rel")
	if err != nil {
		return nil, err
	}
	// No schema default for rounding: a rounding given with roi or
	// roi_rel must be seen, and refused, since it would change nothing.
	if a.Has("rounding") && given != "size" {
		return nil, &ArgError{"rounding", fmt.Sprintf("applies to centre crops (size) only, not to %s", given)}
	}
	switch given {
	case "size":
		s := a.Ints("size")
		o.mode, o.h, o.w = cropCenter, s[0], s[1]
		o.floor = a.Str("rounding") == "floor"
	case "roi":
		r := a.Ints("roi")
		if r[2] < 1 || r[3] < 1 {
			return nil, &ArgError{"roi", fmt.Sprintf("height and width must be at least 1, got %dx%d", r[2], r[3])}
		}
		o.mode, o.top, o.left, o.h, o.w = cropROI, r[0], r[1], r[2], r[3]
	case "roi_rel":
		r := a.Floats("roi_rel")
		if r[2] <= 0 || r[3] <= 0 {
			return nil, &ArgError{"roi_rel", fmt.Sprintf("height and width must be positive, got %v and %v", r[2], r[3])}
		}
		o.mode = cropRel
		copy(o.rel[:], r)
	}
	return o, nil
}

// centerStart is torchvision's center_crop offset along one axis of in
// pixels for a crop of out: padding splits as (out-in)//2 before, the rest
// after; cropping starts at round((in-out)/2).
func centerStart(in, out int) int {
	if out > in {
		return -((out - in) / 2)
	}
	return roundHalfEven(float64(in-out) / 2)
}

// floorStart is transformers' center_crop offset: (in-out)//2 with
// Python's floor division, for cropping and padding alike (its padding
// puts ceil((out-in)/2) before the image, the same start).
func floorStart(in, out int) int {
	d := in - out
	if d < 0 {
		return -((1 - d) / 2)
	}
	return d / 2
}

// window gives the crop window for an input of h×w. Every executor takes
// it from here: Run, the fused resize+crop and the GPU chain (GPU).
func (o *cropOp) window(h, w int) (top, left, wh, ww int) {
	switch o.mode {
	case cropCenter:
		if o.floor {
			return floorStart(h, o.h), floorStart(w, o.w), o.h, o.w
		}
		return centerStart(h, o.h), centerStart(w, o.w), o.h, o.w
	case cropROI:
		return o.top, o.left, o.h, o.w
	}
	top = int(math.Floor(o.rel[0] * float64(h)))
	left = int(math.Floor(o.rel[1] * float64(w)))
	wh = max(roundHalfEven(o.rel[2]*float64(h)), 1)
	ww = max(roundHalfEven(o.rel[3]*float64(w)), 1)
	return top, left, wh, ww
}

func (o *cropOp) Infer(in []Spec) ([]Spec, error) {
	s, c, err := oneImage("crop", in)
	if err != nil {
		return nil, err
	}
	if err := o.fill.check("crop", c); err != nil {
		return nil, err
	}
	if o.mode == cropRel {
		return []Spec{imageSpec(Dynamic, Dynamic, c, s.Color)}, nil
	}
	return []Spec{imageSpec(o.h, o.w, c, s.Color)}, nil
}

// Run is not charged (Ctx.Charge): a copy, a byte moved per output byte,
// of an output that the pixel limit bounds and that is no larger than its
// input or of a size the pipeline file fixes; the input cost more to make
// (decode and the resamplers are charged at least 4 units a pixel) or to
// receive.
func (o *cropOp) Run(c *Ctx, in, out []*Tensor) error {
	src := in[0]
	h, w, ch, err := imageIn("crop", src)
	if err != nil {
		return err
	}
	top, left, wh, ww := o.window(h, w)
	dst, err := imageOut("crop", c, out[0], wh, ww, ch, src.Color)
	if err != nil {
		return err
	}
	pat := o.fill.pixel(ch)
	place(dst, wh, ww, src.Data, h, w, ch, -top, -left, pat[:ch])
	return nil
}
