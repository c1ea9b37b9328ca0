package ops

import (
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/reclaim"
)

func init() {
	Register(&Schema{
		Name: "decode",
		Doc: "Decodes a JPEG, PNG, WebP, BMP, PNM, TIFF, JPEG 2000 or AVIF image (recognised by content) " +
			"into an HWC UINT8 image, as Pillow 13 decodes it (README, Image formats). " +
			"JPEG goes through libjpeg-turbo with the accurate IDCT, bit-exact with Pillow. " +
			"With dct_scale, when the only consumer is a resize or letterbox, JPEGs are decoded " +
			"at the DCT scale (1/2, 1/4 or 1/8) that still covers 1.5 times its output size.",
		Inputs:  []Port{{Name: "encoded", Doc: "the encoded image bytes, UINT8 [-1]"}},
		Outputs: []Port{{Name: "image", Doc: "decoded image, UINT8 [H, W, C]"}},
		Args: []ArgSpec{
			{Name: "color", Type: StringArg, Default: StrVal("RGB"), Enum: []string{"RGB", "BGR", "GRAY", "RGBA", "BGRA"},
				Doc: "output channels; alpha is kept only by RGBA and BGRA (255 where the image has none)"},
			{Name: "orient", Type: BoolArg, Default: BoolVal(true), Doc: "apply the orientation (a JPEG's EXIF tag, an AVIF's irot/imir)"},
			// Off by default: a scaled decode is faster on large JPEGs but no
			// longer matches Pillow (up to 25 levels on progressive 4:4:4
			// photos), and GPU instances never scale, so CPU and GPU
			// instances of one model would disagree.
			{Name: "dct_scale", Type: BoolArg, Default: BoolVal(false),
				Doc: "let a resize or letterbox consumer make JPEGs decode at a reduced DCT scale: faster on large JPEGs, not bit-exact with Pillow"},
			// No default: absent means alpha is dropped (or kept by RGBA
			// and BGRA), as Pillow's convert does, not composited.
			{Name: "background", Type: IntsArg, Lens: []int{3}, Min: 0, Max: 255,
				Doc: "[r, g, b]: composite an image with alpha onto this opaque colour, bit-exact with Pillow's " +
					"Image.alpha_composite(Image.new(\"RGBA\", size, background), im.convert(\"RGBA\")).convert(\"RGB\") " +
					"(transformers' convert_to_rgb uses white, [255, 255, 255]); a PNG's tRNS counts as alpha. " +
					"Needs color RGB, BGR or GRAY. Absent: alpha is dropped, not composited (Pillow's convert(\"RGB\"))"},
			// On by default: Pillow's decode. Off is DALI's default on the
			// GPU, where the JPEG engines then write RGB themselves (faster,
			// docs/perf.md).
			{Name: "jpeg_fancy_upsampling", Type: BoolArg, Default: BoolVal(true),
				Doc: "upsample a JPEG's subsampled chroma (4:2:0, 4:2:2, 4:4:0) with libjpeg's default triangular filter, " +
					"as Pillow does; false replicates each chroma sample (libjpeg with do_fancy_upsampling off, as DALI's " +
					"jpeg_fancy_upsampling=False, its default): faster on the GPU, up to tens of levels from Pillow at colour " +
					"edges. CPU and GPU instances agree either way"},
			{Name: "cmyk", Type: StringArg, Default: StrVal("pillow"), Enum: []string{"pillow", "opencv"},
				Doc: "how a CMYK (or YCCK) JPEG's inks become colours: \"pillow\" as Image.open(f).convert(\"RGB\") " +
					"(rounded), \"opencv\" as cv2.imread and cv2.imdecode (truncated; up to 3 levels apart); " +
					"bit-exact with each. Other images are not affected"},
		},
		New: newDecode,
	})
}

type decodeOp struct {
	color        Color
	orient       bool
	dctScale     bool
	bg           *[3]byte // background: flatten alpha onto it; nil: drop alpha (or keep it for RGBA, BGRA)
	cmyk         codec.CMYKRule
	fastUpsample bool  // jpeg_fancy_upsampling false: replicate chroma
	sizer        Sizer // the only consumer, when it sizes from the input alone
	// source: the only consumer is a resize with source_mode, which
	// resamples each image as Pillow's Image.open holds it (Tensor.Mode).
	source bool
}

func newDecode(a Args) (Op, error) {
	col, err := ParseColor(a.Str("color"))
	if err != nil {
		return nil, &ArgError{"color", err.Error()}
	}
	o := &decodeOp{color: col, orient: a.Bool("orient"), dctScale: a.Bool("dct_scale"), fastUpsample: !a.Bool("jpeg_fancy_upsampling")}
	if a.Str("cmyk") == "opencv" {
		o.cmyk = codec.CMYKOpenCV
	}
	if a.Has("background") {
		if col.Channels() == 4 {
			return nil, &ArgError{"background", fmt.Sprintf("flattens alpha, but color %v keeps it: use RGB, BGR or GRAY", col)}
		}
		b := a.Ints("background")
		o.bg = &[3]byte{byte(b[0]), byte(b[1]), byte(b[2])}
	}
	return o, nil
}

func (o *decodeOp) Infer(in []Spec) ([]Spec, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("decode takes 1 input, got %d", len(in))
	}
	switch s := in[0]; {
	case s.IsImage():
		// The common slip with a decoded-image input: the chain still
		// starts with decode out of habit.
		return nil, fmt.Errorf("decode needs encoded bytes, UINT8 [-1], got an image already decoded, %v: let the image operator read the input directly (resize, crop, ...) and drop this decode", s)
	case s.DType != Uint8 || len(s.Dims) != 1 || s.Color != NoColor:
		return nil, fmt.Errorf("decode needs encoded bytes, UINT8 [-1], got %v", s)
	}
	return []Spec{{DType: Uint8, Dims: []int{Dynamic, Dynamic, o.color.Channels()}, Color: o.color}}, nil
}

// Link remembers the consumer when it is the only one and sizes its output
// from the input size alone: only then may the decoder shrink the image
// for it. Anything else reading the image needs it at full size.
//
// A resize with source_mode (checked at compile to be the only consumer)
// gets each image as Pillow holds it, whatever the colour: RGBA for an
// image with alpha, the inks of a CMYK JPEG, RGB for a GRAY output, and
// the mode in Tensor.Mode; it converts to the colour after resampling.
func (o *decodeOp) Link(consumers []Op) {
	o.sizer, o.source = nil, false
	if len(consumers) == 1 {
		o.sizer, _ = consumers[0].(Sizer)
		r, ok := consumers[0].(sourceResampler)
		o.source = ok && r.sourceMode() && o.bg == nil
	}
}

// sourceResampler is a resize (alone or fused with a crop) that may
// resample images as Pillow holds them.
type sourceResampler interface{ sourceMode() bool }

// decodeState is one worker's decoder: a TurboJPEG handle and scratch
// buffers, made on first use.
type decodeState struct {
	dec *codec.Decoder
	// held bounds what the decoder's scratch buffers may hold since the
	// last Trim: at most 4 bytes a pixel (CMYK samples, or the image
	// before EXIF orientation).
	held int
}

func (s *decodeState) Close() { s.dec.Close() }

// Trim replaces the decoder after an image whose scratch may exceed keep
// bytes: the codec keeps its buffers for the next image, and a new
// decoder costs microseconds next to decoding an image that large.
func (s *decodeState) Trim(keep int) int {
	n := s.held
	s.held = 0
	if n <= keep {
		return 0
	}
	s.dec.Close()
	s.dec = codec.NewDecoder()
	reclaim.Released(n)
	return n
}

func (o *decodeOp) NewState() (State, error) {
	return &decodeState{dec: codec.NewDecoder()}, nil
}

func (o *decodeOp) Run(c *Ctx, in, out []*Tensor) error {
	var lim Limits
	var st *decodeState
	var budget *Budget
	if c != nil {
		lim, budget = c.Limits, c.Budget
		st, _ = c.State.(*decodeState)
	}
	if st == nil {
		// Run without NewState (tests, tools): correct but not reusable.
		st = &decodeState{dec: codec.NewDecoder()}
		defer st.Close()
	}
	src := in[0].Data
	if in[0].DType != Uint8 {
		return Errorf(BadInput, "encoded input is %v, not UINT8 bytes", in[0].DType)
	}
	h, err := DecodeHeader(st.dec, src, lim, budget)
	if err != nil {
		return err
	}
	opt := codec.Options{Color: o.color, Orient: o.orient, Scale: o.scale(h), Background: o.bg, CMYK: o.cmyk, FastUpsample: o.fastUpsample}
	mode := codec.ModeDirect
	if o.source {
		// Three or four channels for the consumer alone; they count in
		// held and, like an RGBA decode's, in the pixel limit already
		// checked. Other images come in the colour itself: "P" and "1"
		// resample NEAREST, which commutes with converting each pixel,
		// and RGBA or BGRA of "RGB" and "L" carry a tRNS colour key's
		// alpha for the resize to apply again.
		switch mode = h.Mode; mode {
		case codec.ModeAlpha:
			opt.Color = RGBA
		case codec.ModeCMYK:
			opt.Color, opt.Inks = RGBA, true
		case codec.ModeDirect:
			if o.color == Gray {
				// Pillow resamples an "RGB" image in colour and takes
				// the luma after: a grey decode first is not the same.
				opt.Color = RGB
			}
		}
	}
	oh, ow, oc := h.OutSize(opt)
	st.held = max(st.held, h.Scratch(opt))
	dst, err := out[0].Reshape(Uint8, oh, ow, oc)
	if err != nil {
		return err
	}
	out[0].Color, out[0].Mode = o.color, mode
	if opt.Scale < 8 {
		fh, fw := h.OrientedSize(o.orient)
		out[0].Full = [2]int{fh, fw} // after Reshape, which clears it
	}
	err = st.dec.Decode(dst, src, h, opt)
	// What the C decoder allocated is freed by now, into glibc's arenas.
	reclaim.ReleasedC(h.Memory)
	if err != nil {
		return DecodeError(err)
	}
	return nil
}

// scale picks the DCT scale m/8 for an image: the smallest of 1/8, 1/4
// and 1/2 whose oriented size still covers 1.5 times the consumer's
// output size in both dimensions (8, full size, when none does).
//
// Measured on the corpus with the ImageNet pipeline: the other
// factors (3/8, 5/8, 6/8, 7/8) use libjpeg-turbo's plain-C scaled IDCTs,
// which made the whole pipeline slower than full decode, and at a margin
// of 1 they moved outputs by up to 13 levels of 255 on noisy photos. Powers
// of two with a margin of 1.5 keep the mean difference from full decode +
// resize under 1 level on every photo of the corpus.
func (o *decodeOp) scale(h codec.Header) int {
	if !o.dctScale || o.sizer == nil || !h.Scalable {
		return 8
	}
	fh, fw := h.OrientedSize(o.orient)
	th, tw := o.sizer.OutSize(fh, fw)
	if th <= 0 || tw <= 0 {
		return 8
	}
	for _, m := range [...]int{1, 2, 4} {
		sh, sw := h.ScaledSize(m)
		sh, sw = codec.OrientedDims(sh, sw, orientationIf(o.orient, h.Orientation))
		if 2*sh >= 3*th && 2*sw >= 3*tw {
			return m
		}
	}
	return 8
}

func orientationIf(on bool, o int) int {
	if on {
		return o
	}
	return 1
}

// DecodeHeader reads one encoded image's header with decode's checks and
// messages (byte limit, format, pixel, work and memory limits), and draws
// the image on budget (when not nil). The GPU executor, which decodes
// elsewhere, checks its images with it too.
func DecodeHeader(dec *codec.Decoder, src []byte, lim Limits, budget *Budget) (codec.Header, error) {
	if lim.MaxBytes > 0 && len(src) > lim.MaxBytes {
		return codec.Header{}, Errorf(TooLarge, "encoded image is %d bytes, over the limit of %d", len(src), lim.MaxBytes)
	}
	h, err := dec.Header(src, lim)
	if err != nil {
		return h, DecodeError(err)
	}
	if budget != nil {
		if err := budget.Take(int64(h.Pixels()), h.Work); err != nil {
			return h, err
		}
	}
	return h, nil
}

// DecodeError turns a codec error into a per-sample *Error with the same
// cause and message; other errors (misuse) pass through.
func DecodeError(err error) error {
	var ce *codec.Error
	if !errors.As(err, &ce) {
		return err
	}
	return &Error{Cause: ce.Cause, Msg: ce.Msg}
}
