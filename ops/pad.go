package ops

import (
	"fmt"
	"strings"
)

func init() { Register(padSchema) }

var padSchema = &Schema{
	Name: "pad",
	Doc: "Pads an image to a fixed size (size) or up to a multiple of a number (multiple). " +
		"Exactly one of them.",
	Inputs:  []Port{{Name: "image", Doc: "HWC UINT8 image"}},
	Outputs: []Port{{Name: "image", Doc: "the padded image, same colour"}},
	Args: []ArgSpec{
		{
			Name: "size",
			Type: IntsArg,
			Doc:  "output size [height, width]; a larger image fails its sample (it is never cropped)",
			Lens: []int{2},
			Min:  1, Max: maxSide,
		},
		{
			Name: "multiple",
			Type: IntArg,
			Doc:  "pad height and width up to the next multiple of this",
			Min:  1, Max: maxSide,
		},
		{
			Name:    "align",
			Type:    StringArg,
			Doc:     "where the image goes: top_left, or center (an odd extra pixel goes to the bottom or right)",
			Default: StrVal("top_left"),
			Enum:    []string{"top_left", "center"},
		},
		fillArg(0),
	},
	New: newPad,
}

type padOp struct {
	h, w     int // size; 0 when multiple
	multiple int
	center   bool
	fill     fill
}

func newPad(a Args) (Op, error) {
	o := &padOp{center: strings.EqualFold(a.Str("align"), "center"), fill: newFill(a.Floats("fill"))}
	given, err := a.OneOf("pad", "size", "multiple")
	if err != nil {
		return nil, err
	}
	if given == "size" {
		s := a.Ints("size")
		o.h, o.w = s[0], s[1]
	} else {
		o.multiple = a.Int("multiple")
	}
	return o, nil
}

func (o *padOp) Infer(in []Spec) ([]Spec, error) {
	s, c, err := oneImage("pad", in)
	if err != nil {
		return nil, err
	}
	if err := o.fill.check("pad", c); err != nil {
		return nil, err
	}
	if o.multiple > 0 {
		return []Spec{imageSpec(Dynamic, Dynamic, c, s.Color)}, nil
	}
	if h, w := s.Dims[0], s.Dims[1]; h > o.h || w > o.w {
		return nil, fmt.Errorf("pad: input %v is larger than the pad size %dx%d (HxW)", s, o.h, o.w)
	}
	return []Spec{imageSpec(o.h, o.w, c, s.Color)}, nil
}

// Run is not charged (Ctx.Charge): a copy, a byte moved per output byte,
// of an output that the pixel limit bounds and that is its input rounded
// up to a multiple or of a size the pipeline file fixes; the input cost
// more to make (decode and the resamplers are charged at least 4 units a
// pixel) or to receive.
func (o *padOp) Run(c *Ctx, in, out []*Tensor) error {
	src := in[0]
	h, w, ch, err := imageIn("pad", src)
	if err != nil {
		return err
	}
	ph, pw, top, left, err := o.placement(h, w)
	if err != nil {
		return err
	}
	dst, err := imageOut("pad", c, out[0], ph, pw, ch, src.Color)
	if err != nil {
		return err
	}
	pat := o.fill.pixel(ch)
	place(dst, ph, pw, src.Data, h, w, ch, top, left, pat[:ch])
	return nil
}

// placement is the padded size for an h×w image and where the image goes.
func (o *padOp) placement(h, w int) (ph, pw, top, left int, err error) {
	ph, pw = o.h, o.w
	if m := o.multiple; m > 0 {
		ph, pw = (h+m-1)/m*m, (w+m-1)/m*m
	} else if h > ph || w > pw {
		return 0, 0, 0, 0, Errorf(BadInput, "pad: image of %dx%d (HxW) is larger than the pad size %dx%d", h, w, ph, pw)
	}
	if o.center {
		top, left = (ph-h)/2, (pw-w)/2
	}
	return ph, pw, top, left, nil
}
