package ops

import (
	"encoding/binary"
	"math"
)

func init() { Register(letterboxSchema) }

var letterboxSchema = &Schema{
	Name: "letterbox",
	Doc: "YOLO-style letterbox: resizes the image keeping its aspect ratio to fit a fixed canvas and " +
		"centres it there, padding with fill. Rounding as ultralytics' LetterBox; for its pixels too " +
		"(cv2.resize INTER_LINEAR) use interp opencv_linear, which is OpenCV's bit for bit.",
	Inputs: []Port{{Name: "image", Doc: "HWC UINT8 image"}},
	Outputs: []Port{
		{Name: "image", Doc: "the canvas, [height, width, C], same colour"},
		{Name: "scale", Doc: "FP32 [1]: r = min(height/H, width/W) over the full-resolution input size, capped at 1 when scaleup is false"},
		{Name: "offset", Doc: "FP32 [2]: (left, top) padding in output pixels; an input point p maps to p*r + offset"},
	},
	Args: append([]ArgSpec{
		{
			Name:     "size",
			Type:     IntsArg,
			Doc:      "canvas [height, width]; one value means a square",
			Required: true,
			Lens:     []int{1, 2},
			Min:      1, Max: maxSide,
		},
		fillArg(114),
		{
			Name:    "scaleup",
			Type:    BoolArg,
			Doc:     "whether images smaller than the canvas are enlarged; false only shrinks",
			Default: BoolVal(true),
		},
	}, interpArgs...),
	New: newLetterbox,
}

type letterboxOp struct {
	h, w    int
	f       interp
	aa      bool
	fill    fill
	scaleup bool
}

func newLetterbox(a Args) (Op, error) {
	s := a.Ints("size")
	o := &letterboxOp{
		h: s[0], w: s[len(s)-1],
		f:       parseInterp(a.Str("interp")),
		fill:    newFill(a.Floats("fill")),
		scaleup: a.Bool("scaleup"),
	}
	var err error
	if o.aa, err = parseAntialias(a, o.f); err != nil {
		return nil, err
	}
	return o, nil
}

// geometry is ultralytics' LetterBox arithmetic for an input of h×w:
// scale, the resized size and the top-left corner of the image.
func (o *letterboxOp) geometry(h, w int) (r float64, nh, nw, top, left int) {
	h, w = max(h, 1), max(w, 1)
	r = math.Min(float64(o.h)/float64(h), float64(o.w)/float64(w))
	if !o.scaleup {
		r = math.Min(r, 1)
	}
	nw = min(max(roundHalfEven(float64(w)*r), 1), o.w)
	nh = min(max(roundHalfEven(float64(h)*r), 1), o.h)
	// The -0.1 sends the odd pixel of padding to the bottom and right.
	top = roundHalfEven(float64(o.h-nh)/2 - 0.1)
	left = roundHalfEven(float64(o.w-nw)/2 - 0.1)
	return r, nh, nw, top, left
}

// OutSize is the size of the resized image inside the canvas.
func (o *letterboxOp) OutSize(h, w int) (oh, ow int) {
	_, oh, ow, _, _ = o.geometry(h, w)
	return oh, ow
}

func (o *letterboxOp) Infer(in []Spec) ([]Spec, error) {
	s, c, err := oneImage("letterbox", in)
	if err != nil {
		return nil, err
	}
	if err := o.fill.check("letterbox", c); err != nil {
		return nil, err
	}
	return []Spec{
		imageSpec(o.h, o.w, c, s.Color),
		{DType: Float32, Dims: []int{1}},
		{DType: Float32, Dims: []int{2}},
	}, nil
}

func (o *letterboxOp) NewState() (State, error) { return new(resampler), nil }

func (o *letterboxOp) Run(c *Ctx, in, out []*Tensor) error {
	src := in[0]
	sh, sw, ch, err := imageIn("letterbox", src)
	if err != nil {
		return err
	}
	r, nh, nw, top, left := o.geometry(src.FullHW())
	// The resampling is priced; the canvas's fill is a copy whose size the
	// pipeline file fixes.
	win := rect{0, 0, nh, nw}
	if err := chargeResample(c, "letterbox", sh, sw, ch, nh, nw, win, o.f, o.aa, 0); err != nil {
		return err
	}
	canvas, err := out[0].Reshape(Uint8, o.h, o.w, ch)
	if err != nil {
		return err
	}
	out[0].Color = src.Color
	pat := o.fill.pixel(ch)
	fillBorder(canvas, o.h, o.w, ch, top, top+nh, left, left+nw, pat[:ch])
	// Resample straight into the canvas: rows of the region are o.w*ch apart.
	stride := o.w * ch
	stateOf(c).resample(canvas[top*stride+left*ch:], stride, nh, nw, win, src.Data, sh, sw, ch, o.f, o.aa)

	return writePlacement(out[1], out[2], r, top, left)
}

// writePlacement fills the scale and offset outputs: what maps boxes on
// the canvas back to the original image.
func writePlacement(scale, offset *Tensor, r float64, top, left int) error {
	s, err := scale.Reshape(Float32, 1)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(s, math.Float32bits(float32(r)))
	off, err := offset.Reshape(Float32, 2)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(off[0:], math.Float32bits(float32(left)))
	binary.LittleEndian.PutUint32(off[4:], math.Float32bits(float32(top)))
	return nil
}
