package ops

import (
	"fmt"
	"math"
	"unsafe"
)

func init() {
	Register(&Schema{
		Name: "normalize",
		Doc: "Per-channel (x*scale - mean) / std, laid out HWC or CHW, as FP32, FP16 or UINT8, " +
			"optionally reordering channels. mean and std are given in output channel order.",
		Inputs:  []Port{{Name: "image", Doc: "HWC UINT8 image, or crop_boxes' crops [N,H,W,C], normalized crop by crop"}},
		Outputs: []Port{{Name: "tensor", Doc: "normalized tensor, [C,H,W] or [H,W,C] (with crops: [N,C,H,W] or [N,H,W,C], unused crops' rows zeros)"}},
		Args: []ArgSpec{
			{Name: "mean", Type: FloatsArg, Default: FloatsVal(0), Doc: "subtracted after scaling; one value or one per channel"},
			{Name: "std", Type: FloatsArg, Default: FloatsVal(1), Min: 1e-12, Max: math.MaxFloat32, Doc: "divides after subtracting the mean; one value or one per channel"},
			{Name: "scale", Type: FloatArg, Default: FloatVal(1), Min: -math.MaxFloat32, Max: math.MaxFloat32, Doc: "multiplies the 0-255 input first (1/255 maps to 0-1)"},
			{Name: "layout", Type: StringArg, Default: StrVal("CHW"), Enum: []string{"CHW", "HWC"}},
			{Name: "dtype", Type: StringArg, Default: StrVal("FP32"), Enum: []string{"FP32", "FP16", "UINT8"}, Doc: "UINT8 rounds and clamps to 0-255"},
			{Name: "order", Type: StringArg, Default: StrVal("keep"), Enum: []string{"keep", "RGB", "BGR"}, Doc: "output channel order; RGB/BGR from a 4-channel input drop alpha"},
		},
		New: newNormalize,
	})
}

type normalize struct {
	mean, std []float64
	scale     float64
	chw       bool
	dtype     DType
	order     string

	// Set by Infer, which runs once before any Run.
	perm []int // output channel k reads input channel perm[k]
	// lut[k][v] is the output value of input byte v in output channel k,
	// as float32 bits, float16 bits or a byte: uint8 input makes the
	// whole arithmetic a table lookup.
	lut [][256]uint32
}

func newNormalize(a Args) (Op, error) {
	dt, _ := ParseDType(a.Str("dtype"))
	return &normalize{
		mean:  a.Floats("mean"),
		std:   a.Floats("std"),
		scale: a.Float("scale"),
		chw:   a.Str("layout") == "CHW",
		dtype: dt,
		order: a.Str("order"),
	}, nil
}

func (n *normalize) Infer(in []Spec) ([]Spec, error) {
	s := in[0]
	// A stack of crops is normalized crop by crop, its leading dimension
	// kept in front.
	var lead []int
	if s.IsImages() {
		lead, s = s.Dims[:1], Spec{DType: s.DType, Dims: s.Dims[1:], Color: s.Color}
	}
	if err := needImage("normalize", s); err != nil {
		return nil, err
	}
	perm, err := channelPerm(s.Color, n.order)
	if err != nil {
		return nil, err
	}
	c := len(perm)
	for _, a := range []struct {
		name string
		v    []float64
	}{{"mean", n.mean}, {"std", n.std}} {
		if len(a.v) != 1 && len(a.v) != c {
			return nil, &ArgError{a.name, fmt.Sprintf("has %d values; the %d-channel output needs 1 or %d", len(a.v), c, c)}
		}
	}
	n.perm = perm
	n.lut = make([][256]uint32, c)
	for k := range c {
		mean, std := pick(n.mean, k), pick(n.std, k)
		for v := range 256 {
			f := (float64(v)*n.scale - mean) / std
			switch n.dtype {
			case Float32:
				n.lut[k][v] = math.Float32bits(float32(f))
			case Float16:
				n.lut[k][v] = uint32(Float16Bits(float32(f)))
			case Uint8:
				n.lut[k][v] = uint32(math.Max(0, math.Min(255, math.RoundToEven(f))))
			}
		}
	}
	h, w := s.Dims[0], s.Dims[1]
	dims := []int{h, w, c}
	if n.chw {
		dims = []int{c, h, w}
	}
	return []Spec{{DType: n.dtype, Dims: append(lead, dims...)}}, nil
}

func pick(v []float64, k int) float64 {
	if len(v) == 1 {
		return v[0]
	}
	return v[k]
}

// channelPerm maps output channels to input channels for an order.
func channelPerm(in Color, order string) ([]int, error) {
	switch order {
	case "keep":
		p := make([]int, in.Channels())
		for i := range p {
			p[i] = i
		}
		return p, nil
	case "RGB", "BGR":
		var p []int
		switch in {
		case RGB, RGBA:
			p = []int{0, 1, 2}
		case BGR, BGRA:
			p = []int{2, 1, 0}
		default:
			return nil, &ArgError{"order", fmt.Sprintf("%s needs a colour input, got %v", order, in)}
		}
		if order == "BGR" {
			p[0], p[2] = p[2], p[0]
		}
		return p, nil
	}
	return nil, &ArgError{"order", "unknown order " + order}
}

// Run is not charged (Ctx.Charge): one table lookup per input sample, of
// an image within the pixel limit that cost more to make (decode and the
// resamplers are charged at least 4 units a pixel) or to receive (a
// decoded-image input), or of crops whose size the pipeline file fixes
// (MaxCropBytes).
func (n *normalize) Run(_ *Ctx, in, out []*Tensor) error {
	src := in[0]
	if len(src.Dims) == 4 {
		return n.runStack(src, out[0])
	}
	h, w, c := src.HWC()
	k := len(n.perm)
	dims := [3]int{h, w, k}
	if n.chw {
		dims = [3]int{k, h, w}
	}
	dst, err := out[0].Reshape(n.dtype, dims[:]...)
	if err != nil {
		return err
	}
	n.into(dst, src.Data, h, w, c)
	return nil
}

// runStack normalizes crop_boxes' crops one by one; the rows it marked
// unused stay zeros, so that a consumer sees no crop there either way.
func (n *normalize) runStack(src, out *Tensor) error {
	m, h, w, c := src.Dims[0], src.Dims[1], src.Dims[2], src.Dims[3]
	if src.DType != Uint8 || m < 0 || h < 1 || w < 1 || c < 1 || len(src.Data) != m*h*w*c {
		return Errorf(BadInput, "normalize: crops of dims %v hold %d bytes", src.Dims, len(src.Data))
	}
	k := len(n.perm)
	dims := [4]int{m, h, w, k}
	if n.chw {
		dims = [4]int{m, k, h, w}
	}
	dst, err := out.Reshape(n.dtype, dims[:]...)
	if err != nil {
		return err
	}
	out.Unused = append(out.Unused, src.Unused...)
	in, o := h*w*c, h*w*k*n.dtype.Size()
	for i := range m {
		if i < len(src.Unused) && src.Unused[i] {
			clear(dst[i*o : (i+1)*o])
			continue
		}
		n.into(dst[i*o:(i+1)*o], src.Data[i*in:(i+1)*in], h, w, c)
	}
	return nil
}

// into normalizes one h×w×c image into dst.
func (n *normalize) into(dst, px []byte, h, w, c int) {
	switch n.dtype {
	case Float32:
		normalizeInto(asUint32(dst), px, h*w, c, n.perm, n.lut, n.chw)
	case Float16:
		normalizeInto(asUint16(dst), px, h*w, c, n.perm, n.lut, n.chw)
	case Uint8:
		normalizeInto(dst, px, h*w, c, n.perm, n.lut, n.chw)
	}
}

// normalizeInto writes each output channel as one plane (CHW) or
// interleaved (HWC). Generic over the element width so that each dtype gets
// its own tight loop.
func normalizeInto[T uint8 | uint16 | uint32](dst []T, px []byte, hw, c int, perm []int, luts [][256]uint32, chw bool) {
	k := len(perm)
	px = px[:hw*c]
	if chw && k == 3 {
		// The common case in one pass over the pixels, three planes out.
		l0, l1, l2 := &luts[0], &luts[1], &luts[2]
		p0, p1, p2 := perm[0], perm[1], perm[2]
		d0, d1, d2 := dst[:hw], dst[hw:2*hw], dst[2*hw:3*hw]
		for i := range d0 {
			p := px[i*c : i*c+c]
			d0[i] = T(l0[p[p0]])
			d1[i] = T(l1[p[p1]])
			d2[i] = T(l2[p[p2]])
		}
		return
	}
	for ch, ic := range perm {
		lut := &luts[ch]
		if chw {
			plane := dst[ch*hw : (ch+1)*hw]
			for i := range plane {
				plane[i] = T(lut[px[i*c+ic]])
			}
		} else {
			for i := range hw {
				dst[i*k+ch] = T(lut[px[i*c+ic]])
			}
		}
	}
}

func asUint32(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

func asUint16(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

// Float16Bits converts to IEEE 754 half precision, rounding to nearest even,
// with overflow to infinity and gradual underflow.
func Float16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 0x1f: // overflow or infinity
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		if rem := mant & (1<<shift - 1); rem > half || rem == half && r&1 == 1 {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || rem == 0x1000 && r&1 == 1 {
		r++ // may carry into the exponent, which is the correct rounding
	}
	return sign | uint16(r)
}

// Float16Value converts IEEE 754 half precision bits back: the inverse of
// Float16Bits, for reading FP16 outputs.
func Float16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}
