package ops

import (
	"fmt"
	"math"
)

// Helpers shared by the geometric operators (resize, crop, pad, letterbox).

// maxSide bounds every height and width argument: far above any model input,
// low enough that products of two sides cannot overflow.
const maxSide = 1 << 16

// oneImage checks the inputs of an operator that takes a single HWC uint8
// image and returns its spec and channel count.
func oneImage(op string, in []Spec) (Spec, int, error) {
	if len(in) != 1 {
		return Spec{}, 0, fmt.Errorf("%s takes 1 input, got %d", op, len(in))
	}
	s := in[0]
	if err := needImage(op, s); err != nil {
		return Spec{}, 0, err
	}
	c := s.Color.Channels()
	if d := s.Dims[2]; d != Dynamic && d != c {
		return Spec{}, 0, fmt.Errorf("%s: input %v has %d channels, but %v images have %d", op, s, d, s.Color, c)
	}
	return s, c, nil
}

// imageSpec is the spec of an output image of h×w (Dynamic allowed).
func imageSpec(h, w, c int, col Color) Spec {
	return Spec{DType: Uint8, Dims: []int{h, w, c}, Color: col}
}

// imageIn checks at run time that a tensor really is an HWC uint8 image
// whose data matches its dims, so that a bad upstream tensor becomes a
// per-sample error rather than an index panic.
func imageIn(op string, t *Tensor) (h, w, c int, err error) {
	if t.DType != Uint8 || len(t.Dims) != 3 {
		return 0, 0, 0, Errorf(BadInput, "%s: input is %v %v, not an HWC UINT8 image", op, t.DType, t.Dims)
	}
	h, w, c = t.HWC()
	if h < 1 || w < 1 || c < 1 || c > 4 || h > math.MaxInt32/w || len(t.Data) != h*w*c {
		return 0, 0, 0, Errorf(BadInput, "%s: image of dims %v holds %d bytes", op, t.Dims, len(t.Data))
	}
	return h, w, c, nil
}

// checkPixels enforces Limits.MaxPixels on an output size before it is
// allocated: size rules such as shorter=N blow up on extreme aspect ratios.
func checkPixels(op string, c *Ctx, h, w int) error {
	if c != nil && c.Limits.MaxPixels > 0 && h*w > c.Limits.MaxPixels {
		return Errorf(TooLarge, "%s: output of %dx%d exceeds the limit of %d pixels", op, w, h, c.Limits.MaxPixels)
	}
	return nil
}

// imageOut sizes out as an h×w image of ch channels and colour col, after
// checking the pixel limit, and returns its pixels.
func imageOut(op string, c *Ctx, out *Tensor, h, w, ch int, col Color) ([]byte, error) {
	if err := checkPixels(op, c, h, w); err != nil {
		return nil, err
	}
	dst, err := out.Reshape(Uint8, h, w, ch)
	if err != nil {
		return nil, err
	}
	out.Color = col
	return dst, nil
}

// fillArg is the "fill" argument shared by crop, pad and letterbox.
func fillArg(def float64) ArgSpec {
	return ArgSpec{
		Name:    "fill",
		Type:    FloatsArg,
		Doc:     "value of padded pixels, 0..255 (rounded): one for every channel, or one per channel",
		Default: FloatsVal(def),
		Min:     0,
		Max:     255,
		Lens:    []int{1, 3, 4},
	}
}

// fill is a parsed fill argument.
type fill struct {
	v [4]byte
	n int // 1, or one per channel
}

func newFill(f []float64) fill {
	var p fill
	p.n = min(len(f), 4)
	for i := range p.n {
		p.v[i] = byte(math.RoundToEven(f[i]))
	}
	return p
}

// check reports whether the fill suits an image of c channels.
func (f fill) check(op string, c int) error {
	if f.n != 1 && f.n != c {
		return &ArgError{"fill", fmt.Sprintf("%s: %d values for a %d-channel image (want 1 or %d)", op, f.n, c, c)}
	}
	return nil
}

// pixel returns the fill pixel for c channels.
func (f fill) pixel(c int) [4]byte {
	if f.n >= c {
		return f.v
	}
	return [4]byte{f.v[0], f.v[0], f.v[0], f.v[0]}
}

// fillPixels repeats the c-byte pixel pat over dst (a whole number of
// pixels) by doubling copies: memmove speed without a per-pixel loop.
func fillPixels(dst []byte, pat []byte) {
	if len(dst) == 0 {
		return
	}
	n := copy(dst, pat)
	for n < len(dst) {
		n += copy(dst[n:], dst[:n])
	}
}

// fillBorder fills the pixels of a dh×dw×c image outside the rectangle of
// rows [y0,y1) and columns [x0,x1), which the caller writes itself. The
// rectangle must lie inside the image; an empty one fills everything.
func fillBorder(dst []byte, dh, dw, c, y0, y1, x0, x1 int, pat []byte) {
	row := dw * c
	if y0 >= y1 || x0 >= x1 {
		fillPixels(dst[:dh*row], pat)
		return
	}
	fillPixels(dst[:y0*row], pat)
	fillPixels(dst[y1*row:dh*row], pat)
	if x0 == 0 && x1 == dw {
		return
	}
	for y := y0; y < y1; y++ {
		r := dst[y*row : (y+1)*row]
		fillPixels(r[:x0*c], pat)
		fillPixels(r[x1*c:], pat)
	}
}

// place writes the sh×sw×c image src into the dh×dw×c image dst with src's
// top-left pixel at (y, x) of dst, either of which may be negative or past
// the edge; dst pixels that src does not cover get the pixel pat. Crop is
// place at (-top, -left), pad at (top, left): both copy whole rows.
func place(dst []byte, dh, dw int, src []byte, sh, sw, c, y, x int, pat []byte) {
	y0, y1 := max(y, 0), min(y+sh, dh)
	x0, x1 := max(x, 0), min(x+sw, dw)
	if y0 >= y1 || x0 >= x1 {
		fillPixels(dst[:dh*dw*c], pat)
		return
	}
	fillBorder(dst, dh, dw, c, y0, y1, x0, x1, pat)
	n := (x1 - x0) * c
	for r := y0; r < y1; r++ {
		d := (r*dw + x0) * c
		s := ((r-y)*sw + x0 - x) * c
		copy(dst[d:d+n], src[s:s+n])
	}
}

// roundHalfEven is Python's round() for the size rules we copy from
// torchvision and ultralytics.
func roundHalfEven(x float64) int { return int(math.RoundToEven(x)) }
