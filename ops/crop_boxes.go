package ops

import (
	"encoding/binary"
	"fmt"
	"math"
)

func init() { Register(cropBoxesSchema) }

// MaxBoxes bounds a boxes input's max: far above what a second-stage model
// takes per image, and with crop_boxes' size bound it keeps one sample's
// crops within MaxCropBytes.
const MaxBoxes = 256

// MaxCropBytes bounds one sample's crops, max × height × width × channels,
// checked when the pipeline is compiled: the size is fixed by the file, not
// by a request.
const MaxCropBytes = 256 << 20

var cropBoxesSchema = &Schema{
	Name: "crop_boxes",
	Doc: "Crops each box of a boxes input out of the image and resizes it to size, sampling the image once, " +
		"as Pillow's Image.resize((w, h), filter, box=(x1, y1, x2, y2)) with float box coordinates. Row k of the " +
		"crops is box k's; rows of unused boxes (a NaN coordinate, at or past the count input, or empty with " +
		`empty "zero") are zeros. Boxes are clipped to the image first; a box empty after clipping (x2 <= x1 or ` +
		"y2 <= y1) fails the sample or gives a zero row (see empty). The nodes after it see one more, leading, " +
		"dimension: normalize works crop by crop. interp opencv_linear, torch_linear and torch_cubic are refused: they have no box form.",
	Inputs: []Port{
		{Name: "image", Doc: "HWC UINT8 image: the decoded, oriented image the boxes are in"},
		{Name: "boxes", Doc: `a boxes pipeline input, FP32 [max, 4] rows x1, y1, x2, y2 (input { boxes { max: N coords: "pixel" } })`},
	},
	Outputs: []Port{
		{Name: "crops", Doc: "UINT8 [max, height, width, C], same colour: row k is box k's crop, zeros when unused"},
		{Name: "count", Doc: "INT32 [1]: the number of crops written"},
		{Name: "boxes", Doc: "FP32 [max, 4]: row k is the box crop k was sampled from, x1, y1, x2, y2 in pixels, clipped to the image; NaN when unused"},
	},
	Args: append([]ArgSpec{
		{
			Name:     "size",
			Type:     IntsArg,
			Doc:      "each crop's [height, width]; one value means a square",
			Required: true,
			Lens:     []int{1, 2},
			Min:      1, Max: maxSide,
		},
		{
			Name:    "letterbox",
			Type:    BoolArg,
			Doc:     "keep each box's aspect ratio: resize it to fit size and centre it, padding with fill, as letterbox does with an image",
			Default: BoolVal(false),
		},
		fillArg(114),
		{
			Name:    "empty",
			Type:    StringArg,
			Doc:     `a box empty after clipping: "error" fails the sample, naming the box and its coordinates; "zero" leaves its row zeros, not counted`,
			Default: StrVal("error"),
			Enum:    []string{"error", "zero"},
		},
	}, interpArgs...),
	New: newCropBoxes,
}

type cropBoxesOp struct {
	h, w      int
	f         interp
	aa        bool
	letterbox bool
	fill      fill
	zero      bool // empty "zero"

	// Set by Infer.
	max      int
	relative bool
}

func newCropBoxes(a Args) (Op, error) {
	s := a.Ints("size")
	o := &cropBoxesOp{
		h: s[0], w: s[len(s)-1],
		f:         parseInterp(a.Str("interp")),
		letterbox: a.Bool("letterbox"),
		fill:      newFill(a.Floats("fill")),
		zero:      a.Str("empty") == "zero",
	}
	if o.f == interpOpenCVLinear || o.f.torch() {
		// OpenCV's and torch's fixed point have no box form to match.
		return nil, &ArgError{"interp", fmt.Sprintf("%q has no box crop form: use linear, cubic, nearest or area (Pillow's box resize)", o.f)}
	}
	var err error
	if o.aa, err = parseAntialias(a, o.f); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *cropBoxesOp) Infer(in []Spec) ([]Spec, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("crop_boxes takes 2 inputs (image, boxes), got %d", len(in))
	}
	s, c, err := oneImage("crop_boxes", in[:1])
	if err != nil {
		return nil, err
	}
	b := in[1]
	if !b.IsBoxes() {
		return nil, fmt.Errorf(`crop_boxes: its boxes port needs a boxes pipeline input, FP32 [max, 4] (input { name: "BOXES" boxes { max: 8 coords: "pixel" } }), got %v`, b)
	}
	if err := o.fill.check("crop_boxes", c); err != nil {
		return nil, err
	}
	// Divided, so that the product cannot overflow before it is compared.
	if n := b.Dims[0]; n > MaxCropBytes/o.h/o.w/c {
		return nil, fmt.Errorf("crop_boxes: %d crops of %dx%dx%d are over %d bytes per image (MaxCropBytes): lower the boxes input's max or size", n, o.h, o.w, c, MaxCropBytes)
	}
	o.max, o.relative = b.Dims[0], b.Coords == RelativeCoords
	return []Spec{
		{DType: Uint8, Dims: []int{o.max, o.h, o.w, c}, Color: s.Color},
		{DType: Int32, Dims: []int{1}},
		{DType: Float32, Dims: []int{o.max, 4}},
	}, nil
}

func (o *cropBoxesOp) NewState() (State, error) { return new(resampler), nil }

func (o *cropBoxesOp) Run(c *Ctx, in, out []*Tensor) error {
	src := in[0]
	sh, sw, ch, err := imageIn("crop_boxes", src)
	if err != nil {
		return err
	}
	if src.Full[0] > 0 {
		// Boxes are in full-resolution pixels; the decoder only scales
		// down for a Sizer consumer, which crop_boxes is not.
		return Errorf(BadInput, "crop_boxes: image decoded at a reduced scale (%dx%d of %dx%d)", sw, sh, src.Full[1], src.Full[0])
	}
	bx := in[1]
	if bx.DType != Float32 || len(bx.Data) != o.max*16 {
		return Errorf(BadInput, "crop_boxes: boxes are %v %v (%d bytes), want FP32 [%d, 4]", bx.DType, bx.Dims, len(bx.Data), o.max)
	}
	// Every box is read and clipped, and all the crops' work charged at
	// once, before any is cropped: a boxes input of many whole-image
	// boxes on a large image is refused at the cost of reading it.
	var work float64
	boxes := 0
	for k := range o.max {
		b, ok, err := o.box(bx.Data[k*16:], k, sh, sw)
		if err != nil {
			return err
		}
		if ok {
			work += float64(o.work(sh, sw, ch, b))
			boxes++
		}
	}
	if err := c.Charge("crop_boxes", satWork(work), func() string { return o.workDetail(boxes, sh, sw) }); err != nil {
		return err
	}
	crops, err := out[0].Reshape(Uint8, o.max, o.h, o.w, ch)
	if err != nil {
		return err
	}
	out[0].Color = src.Color
	sampled, err := out[2].Reshape(Float32, o.max, 4)
	if err != nil {
		return err
	}
	row := o.h * o.w * ch
	r := stateOf(c)
	n := 0
	for k := range o.max {
		dst := crops[k*row : (k+1)*row]
		b, used, _ := o.box(bx.Data[k*16:], k, sh, sw) // checked above
		putBox(sampled[k*16:], b, used)
		if !used {
			clear(dst)
			out[0].Unused = append(out[0].Unused, true)
			continue
		}
		out[0].Unused = append(out[0].Unused, false)
		o.crop(r, dst, src.Data, sh, sw, ch, b)
		n++
	}
	if n == o.max {
		out[0].Unused = out[0].Unused[:0]
	}
	cnt, err := out[1].Reshape(Int32, 1)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(cnt, uint32(n))
	return nil
}

// putBox writes a row of the boxes output: the box sampled, or NaNs when
// the row is unused.
func putBox(p []byte, b srcBox, used bool) {
	for i, v := range b {
		if !used {
			v = float32(math.NaN())
		}
		binary.LittleEndian.PutUint32(p[4*i:], math.Float32bits(v))
	}
}

// box reads row k of the boxes, x1, y1, x2, y2, and clips it to the
// sh×sw image: the region to sample, or unused (a NaN coordinate, which
// is how detectors and the count input mark padding rows; an empty box
// with empty "zero"), or the error of an empty box.
func (o *cropBoxesOp) box(p []byte, k, sh, sw int) (srcBox, bool, error) {
	var v [4]float32
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
		if v[i] != v[i] {
			return srcBox{}, false, nil
		}
	}
	b := srcBox(v)
	if o.relative {
		// In float64, then rounded once to the float32 Pillow takes.
		for i := range b {
			side := sw
			if i%2 == 1 {
				side = sh
			}
			b[i] = float32(float64(v[i]) * float64(side))
		}
	}
	b[0], b[1] = max(b[0], 0), max(b[1], 0)
	b[2], b[3] = min(b[2], float32(sw)), min(b[3], float32(sh))
	if b[2] <= b[0] || b[3] <= b[1] {
		if o.zero {
			return srcBox{}, false, nil
		}
		what := "pixels"
		if o.relative {
			what = "relative"
		}
		return srcBox{}, false, Errorf(BadInput, "crop_boxes: box %d (x1, y1, x2, y2) = (%g, %g, %g, %g) %s is empty once clipped to the %dx%d image (x2 <= x1 or y2 <= y1); mark unused rows with NaN or the count input, or set empty: \"zero\"",
			k, v[0], v[1], v[2], v[3], what, sw, sh)
	}
	return b, true, nil
}

// work is the work of cropping box b (clipped) of an sh×sw×ch image: its
// resampling into the crop or, with letterbox, into the region fit gives
// it. A crop's fill, and an unused row's zeros, are copies of a size the
// pipeline file fixes (MaxCropBytes bounds them).
func (o *cropBoxesOp) work(sh, sw, ch int, b srcBox) int64 {
	dh, dw := o.h, o.w
	if o.letterbox {
		dh, dw, _, _ = o.fit(float64(b[3]-b[1]), float64(b[2]-b[0]))
	}
	return resampleWork(sh, sw, dh, dw, rect{0, 0, dh, dw}, ch, b, o.f, o.aa)
}

// workDetail says what a refused charge counted: n boxes of an sh×sw image.
func (o *cropBoxesOp) workDetail(n, sh, sw int) string {
	s := fmt.Sprintf("%d boxes of the %dx%d image, each resampled to %dx%d, %v", n, sw, sh, o.w, o.h, o.f)
	if o.aa && o.f != interpNearest {
		s += " with antialias"
	}
	return s + "; fewer or smaller boxes cost less"
}

// crop writes one box's crop into dst, an h×w×ch image.
func (o *cropBoxesOp) crop(r *resampler, dst, src []byte, sh, sw, ch int, b srcBox) {
	if !o.letterbox {
		r.resampleBox(dst, o.w*ch, o.h, o.w, rect{0, 0, o.h, o.w}, src, sh, sw, ch, b, o.f, o.aa)
		return
	}
	nh, nw, top, left := o.fit(float64(b[3]-b[1]), float64(b[2]-b[0]))
	pat := o.fill.pixel(ch)
	fillBorder(dst, o.h, o.w, ch, top, top+nh, left, left+nw, pat[:ch])
	stride := o.w * ch
	r.resampleBox(dst[top*stride+left*ch:], stride, nh, nw, rect{0, 0, nh, nw}, src, sh, sw, ch, b, o.f, o.aa)
}

// fit is letterbox's geometry for a box of bh×bw pixels (not whole
// pixels): the size it is resized to and where it is placed.
func (o *cropBoxesOp) fit(bh, bw float64) (nh, nw, top, left int) {
	r := math.Min(float64(o.h)/bh, float64(o.w)/bw)
	nw = min(max(roundHalfEven(bw*r), 1), o.w)
	nh = min(max(roundHalfEven(bh*r), 1), o.h)
	// The -0.1 sends the odd pixel of padding to the bottom and right.
	top = roundHalfEven(float64(o.h-nh)/2 - 0.1)
	left = roundHalfEven(float64(o.w-nw)/2 - 0.1)
	return nh, nw, top, left
}
