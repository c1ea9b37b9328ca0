package ops

import "fmt"

func init() { Register(resizeSchema) }

var resizeSchema = &Schema{
	Name: "resize",
	Doc: "Resizes an image to an exact size or by one side, keeping the aspect ratio, with Pillow's " +
		"resampling, OpenCV's bilinear or torch's uint8 bilinear and bicubic (see interp). Exactly one of size, shorter and longer. A crop that alone reads the " +
		"result is fused into it: only the kept window is computed, with the same pixels.",
	Inputs:  []Port{{Name: "image", Doc: "HWC UINT8 image"}},
	Outputs: []Port{{Name: "image", Doc: "the resized image, same colour"}},
	Args: append([]ArgSpec{
		{
			Name: "size",
			Type: IntsArg,
			Doc:  "exact output size [height, width]; the aspect ratio is not kept",
			Lens: []int{2},
			Min:  1, Max: maxSide,
		},
		{
			Name: "shorter",
			Type: IntArg,
			Doc: "the shorter side becomes this, the longer one keeps the aspect ratio, truncated: " +
				"torchvision's resize(size=N)",
			Min: 1, Max: maxSide,
		},
		{
			Name: "longer",
			Type: IntArg,
			Doc: "the longer side becomes this, the shorter one keeps the aspect ratio, truncated: " +
				"torchvision's resize(size=None, max_size=N)",
			Min: 1, Max: maxSide,
		},
		{
			Name: "max_size",
			Type: IntArg,
			Doc: "with shorter only: if the longer side would exceed this, it becomes this and the " +
				"shorter one follows (torchvision's max_size); must be larger than shorter",
			Min: 1, Max: maxSide,
		},
		{
			Name: "source_mode",
			Type: BoolArg,
			Doc: "resample as Pillow does in the mode Image.open gives the image, then convert to the decoded " +
				"colour: NEAREST for palette and 1-bit images, premultiplied alpha for images with alpha, the " +
				"four inks for CMYK JPEGs, colour images in colour before GRAY's luma (open_clip's preprocess " +
				"converts to RGB after resizing). Bit-exact with Image.open(f).resize(...).convert(m), m \"RGB\" " +
				"for RGB and BGR, \"L\" for GRAY, \"RGBA\" for RGBA and BGRA (alpha from a palette's or a colour " +
				"key's tRNS), for every format (BMP and TIFF palettes, TIFF, AVIF and JPEG 2000 alpha included; " +
				"16-bit grey keeps its high byte, as decode does, where Pillow resamples 16 bits and clips). " +
				"Needs a decode (any color, no background, cmyk pillow) directly before it, read by nothing " +
				"else, and a Pillow filter. The GPU kernel has no form of it: a KIND_GPU instance runs such a " +
				"pipeline on its CPU executor (docs/gpu.md)",
			Default: BoolVal(false),
		},
	}, interpArgs...),
	New: newResize,
}

type resizeMode uint8

const (
	resizeExact resizeMode = iota
	resizeShorter
	resizeLonger
)

type resizeOp struct {
	mode    resizeMode
	h, w    int // resizeExact
	n       int // resizeShorter, resizeLonger
	maxSize int // resizeShorter; 0 = none
	f       interp
	aa      bool
	source  bool // source_mode: see resize_source.go
}

func newResize(a Args) (Op, error) {
	o := &resizeOp{f: parseInterp(a.Str("interp")), source: a.Bool("source_mode")}
	var err error
	if o.aa, err = parseAntialias(a, o.f); err != nil {
		return nil, err
	}
	if o.source && (o.f == interpOpenCVLinear || o.f.torch()) {
		return nil, &ArgError{"source_mode", fmt.Sprintf("follows Pillow's Image.resize, and interp %s is not Pillow's", o.f)}
	}
	given, err := a.OneOf("resize", "size", "shorter", "longer")
	if err != nil {
		return nil, err
	}
	switch given {
	case "size":
		s := a.Ints("size")
		o.mode, o.h, o.w = resizeExact, s[0], s[1]
	case "shorter":
		o.mode, o.n = resizeShorter, a.Int("shorter")
	case "longer":
		o.mode, o.n = resizeLonger, a.Int("longer")
	}
	if a.Has("max_size") {
		o.maxSize = a.Int("max_size")
		if o.mode != resizeShorter {
			return nil, &ArgError{"max_size", "applies only with shorter"}
		}
		if o.maxSize <= o.n {
			return nil, &ArgError{"max_size", fmt.Sprintf("%d must be larger than shorter (%d)", o.maxSize, o.n)}
		}
	}
	return o, nil
}

// OutSize follows torchvision's _compute_resized_output_size: the computed
// side is truncated, never rounded, and max_size rescales from the already
// truncated sizes.
func (o *resizeOp) OutSize(h, w int) (oh, ow int) {
	if o.mode == resizeExact {
		return o.h, o.w
	}
	short, long := max(min(h, w), 1), max(h, w, 1)
	var ns, nl int
	// Products in float64 are exact here (< 2^53), so each division rounds
	// once, as Python's int / int does.
	if o.mode == resizeShorter {
		ns, nl = o.n, int(float64(o.n)*float64(long)/float64(short))
		if o.maxSize > 0 && nl > o.maxSize {
			ns, nl = int(float64(o.maxSize)*float64(ns)/float64(nl)), o.maxSize
		}
	} else {
		ns, nl = int(float64(o.n)*float64(short)/float64(long)), o.n
	}
	ns, nl = max(ns, 1), max(nl, 1)
	if w <= h {
		return nl, ns
	}
	return ns, nl
}

func (o *resizeOp) Infer(in []Spec) ([]Spec, error) {
	s, c, err := oneImage("resize", in)
	if err != nil {
		return nil, err
	}
	if o.mode == resizeExact {
		return []Spec{imageSpec(o.h, o.w, c, s.Color)}, nil
	}
	return []Spec{imageSpec(Dynamic, Dynamic, c, s.Color)}, nil
}

func (o *resizeOp) NewState() (State, error) { return new(resampler), nil }

func (o *resizeOp) Run(c *Ctx, in, out []*Tensor) error {
	src := in[0]
	sh, sw, ch, err := imageIn("resize", src)
	if err != nil {
		return err
	}
	och, err := o.outChannels(src, ch)
	if err != nil {
		return err
	}
	// The size rule sees the full-resolution size; the pixels may be a
	// DCT-downscaled decode of it, resampled straight to the output.
	oh, ow := o.OutSize(src.FullHW())
	if err := checkPixels("resize", c, oh, ow); err != nil {
		return err
	}
	win := rect{0, 0, oh, ow}
	if err := o.charge(c, "resize", oh, ow, win, src, sh, sw, ch); err != nil {
		return err
	}
	dst, err := imageOut("resize", c, out[0], oh, ow, och, src.Color)
	if err != nil {
		return err
	}
	o.resampleInto(stateOf(c), dst, ow*och, oh, ow, win, src, sh, sw, ch)
	return nil
}
