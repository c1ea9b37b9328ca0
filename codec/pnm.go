package codec

import (
	"fmt"
	"math"

	"github.com/sluice-dev/sluice/internal/reuse"
)

// PNM (Netpbm) decoding: PBM, PGM and PPM, plain (P1-P3, ASCII) and raw
// (P4-P6), maxval 1 to 65535, written to agree with Pillow 13's
// PpmImagePlugin, the accuracy tests' reference:
//
//   - header tokens are separated by whitespace; '#' starts a comment that
//     runs to CR or LF and is cut out (in the header and in plain data), so
//     that it does not end a token; the raster starts after the single
//     whitespace byte that ends the last header token;
//   - bitmaps: 1 is black (0), 0 is white (255);
//   - samples scale as Pillow scales them, round(v/maxval*M) rounding half
//     to even, M = 255 except for greymaps of maxval over 255, which Pillow
//     reads as 16-bit ("I", M = 65535): those then keep the high byte, as
//     16-bit PNGs do (see pngconv.go). A 16-bit pixmap is read by Pillow
//     straight to 8 bits, so there round(v/maxval*255) it is too: at maxval
//     65535 that is v/257 rounded, not the high byte, and may differ from
//     it by one level;
//   - raw samples over maxval are clamped (Pillow clamps them); plain ones
//     are an error (Pillow's too).
//
// PAM (P7) and PFM ("PF", "Pf") are recognised and Unsupported. Pillow
// reads no PAM; it reads PFM as 32-bit floats (mode F), samples in linear
// light with no fixed range (HDR), which have no 8-bit meaning to give
// them short of a tone mapping: so the error names PFM instead of calling
// the file not an image.

func init() {
	Register(Format{
		Name:  "PNM",
		Match: isPNM,
		New:   func() (FormatDecoder, error) { return &pnmDecoder{}, nil },
	})
}

func isPNM(b []byte) bool {
	return len(b) >= 3 && b[0] == 'P' && (b[1] >= '1' && b[1] <= '7' || b[1] == 'F' || b[1] == 'f') && isPNMSpace(b[2])
}

func isPNMSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func pnmErr(c Cause, format string, a ...any) *Error { return formatErr(c, "PNM", format, a...) }

// pnmInfo is a parsed header.
type pnmInfo struct {
	kind   byte // '1'...'6'
	w, h   int
	maxval int
	off    int // first raster byte
}

func (p pnmInfo) channels() int {
	if p.kind == '3' || p.kind == '6' {
		return 3
	}
	return 1
}

// pnmDecoder keeps its row and its sample lookup table between images.
type pnmDecoder struct {
	info   pnmInfo
	row    []byte
	lut    []byte // sample → 8 bits, for lutKey
	lutKey [2]int // maxval, M
}

func (d *pnmDecoder) Close() { d.row, d.lut = nil, nil }

func (d *pnmDecoder) Header(src []byte, lim Limits) (Header, error) {
	maxPixels := lim.MaxPixels
	if err := d.info.parse(src, maxPixels); err != nil {
		return Header{}, err
	}
	h := Header{Width: d.info.w, Height: d.info.h, Orientation: 1}
	if d.info.kind == '1' || d.info.kind == '4' {
		h.Mode = ModeNearest // a PBM opens as mode "1"
	}
	return h, nil
}

func (p *pnmInfo) parse(src []byte, maxPixels int) error {
	*p = pnmInfo{}
	if !isPNM(src) {
		return pnmErr(NotImage, "not a PNM")
	}
	p.kind = src[1]
	if p.kind == '7' {
		return pnmErr(Unsupported, "PAM (P7) images are not supported")
	}
	if p.kind == 'F' || p.kind == 'f' {
		return pnmErr(Unsupported, "PFM (floating-point) images are not supported")
	}
	t := pnmTokens{src: src, i: 3}
	var dims [3]int
	n := 3
	if p.kind == '1' || p.kind == '4' {
		n, dims[2] = 2, 1
	}
	names := [3]string{"width", "height", "maxval"}
	for k := 0; k < n; k++ {
		v, err := t.header(names[k])
		if err != nil {
			return err
		}
		dims[k] = v
	}
	p.w, p.h, p.maxval = dims[0], dims[1], dims[2]
	if p.w < 1 || p.h < 1 {
		return pnmErr(Corrupt, "PNM header gives a %dx%d image", p.w, p.h)
	}
	if p.w > 1<<31-1 || p.h > 1<<31-1 {
		return pnmErr(TooLarge, "PNM image is %dx%d, too large", p.w, p.h)
	}
	if err := TooLargeErr("PNM", p.w, p.h, maxPixels); err != nil {
		return err
	}
	if p.maxval < 1 || p.maxval > 65535 {
		return pnmErr(Corrupt, "PNM maxval %d is outside 1..65535", p.maxval)
	}
	p.off = t.i
	// Bound the raster by the input before anything is allocated.
	rest := int64(len(src) - p.off)
	samples := int64(p.w) * int64(p.h) * int64(p.channels())
	var need int64
	switch p.kind {
	case '1':
		need = samples // one digit a pixel, whitespace optional
	case '2', '3':
		need = 2*samples - 1 // digits and separators
	case '4':
		need = int64(p.h) * int64((p.w+7)/8)
	default:
		need = samples
		if p.maxval > 255 {
			need *= 2
		}
	}
	if rest < need {
		return pnmErr(Truncated, "PNM data ends early: %d bytes of raster, %dx%d needs %d at least", rest, p.w, p.h, need)
	}
	return nil
}

// pnmTokens reads whitespace-separated decimal tokens, cutting out
// comments as Pillow does.
type pnmTokens struct {
	src []byte
	i   int
}

// maxTokenLen is Pillow's limit on a token's length.
const maxTokenLen = 10

// next returns the next token's value, or ok false at the end of the data.
// A token ends at (and consumes) one whitespace byte.
func (t *pnmTokens) next() (v int, ok bool, err error) {
	n := 0
	for t.i < len(t.src) {
		c := t.src[t.i]
		t.i++
		switch {
		case c == '#':
			t.skipComment()
		case isPNMSpace(c):
			if n > 0 {
				return v, true, nil
			}
		case c >= '0' && c <= '9':
			if n++; n > maxTokenLen {
				return 0, false, pnmErr(Corrupt, "PNM token longer than %d digits", maxTokenLen)
			}
			v = 10*v + int(c-'0')
		default:
			return 0, false, pnmErr(Corrupt, "PNM has %s where a number should be", byteName(c))
		}
	}
	if t.i > len(t.src) {
		t.i = len(t.src)
	}
	return v, n > 0, nil
}

// skipComment skips the rest of a comment's line and its line end.
func (t *pnmTokens) skipComment() {
	for t.i < len(t.src) && t.src[t.i] != '\n' && t.src[t.i] != '\r' {
		t.i++
	}
	t.i++
}

func (t *pnmTokens) header(name string) (int, error) {
	v, ok, err := t.next()
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, pnmErr(Truncated, "PNM data ends early, before the %s", name)
	}
	return v, nil
}

// bit reads one plain-bitmap digit: '0' or '1', whitespace optional.
func (t *pnmTokens) bit() (byte, error) {
	for t.i < len(t.src) {
		c := t.src[t.i]
		t.i++
		switch {
		case c == '#':
			t.skipComment()
		case isPNMSpace(c):
		case c == '0':
			return 0xFF, nil
		case c == '1':
			return 0, nil
		default:
			return 0, pnmErr(Corrupt, "PNM bitmap has %s where 0 or 1 should be", byteName(c))
		}
	}
	return 0, pnmErr(Truncated, "PNM data ends early")
}

// byteName quotes a printable ASCII byte, else gives its value.
func byteName(c byte) string {
	if c >= ' ' && c <= '~' {
		return fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("byte %#02x", c)
}

func (d *pnmDecoder) Decode(dst, src []byte, h Header, o Options) error {
	p := &d.info
	if err := p.parse(src, 0); err != nil {
		return err
	}
	if p.w != h.Width || p.h != h.Height {
		return pnmErr(Corrupt, "PNM header changed between reads")
	}
	c := o.color()
	ch, w := c.Channels(), p.w
	d.setLUT(p)
	n := w * p.channels()
	d.row = reuse.Room(d.row, 4*w)
	samples := d.row[:n]
	t := pnmTokens{src: src, i: p.off}
	raw := src[p.off:]
	for y := 0; y < p.h; y++ {
		switch p.kind {
		case '1':
			for x := range samples {
				v, err := t.bit()
				if err != nil {
					return err
				}
				samples[x] = v
			}
		case '4':
			r := raw[y*((w+7)/8):]
			for x := range samples {
				samples[x] = r[x/8]>>(7-x%8)&1 - 1 // 1 → 0, 0 → 255 (wraps)
			}
		case '2', '3':
			for x := range samples {
				v, ok, err := t.next()
				if err != nil {
					return err
				}
				if !ok {
					return pnmErr(Truncated, "PNM data ends early, in row %d", y)
				}
				if v > p.maxval {
					return pnmErr(Corrupt, "PNM sample %d is over maxval %d", v, p.maxval)
				}
				samples[x] = d.lut[v]
			}
		default:
			if p.maxval > 255 {
				r := raw[2*y*n:]
				for x := range samples {
					samples[x] = d.lut[int(r[2*x])<<8|int(r[2*x+1])]
				}
			} else {
				r := raw[y*n : (y+1)*n]
				for x, v := range r {
					samples[x] = d.lut[v]
				}
			}
		}
		out := dst[y*w*ch : (y+1)*w*ch]
		if p.channels() == 1 {
			packGray(out, samples, c)
			continue
		}
		if c == RGB {
			copy(out, samples)
			continue
		}
		// RGB → RGBA in place, from the end backwards.
		rgba := d.row[:4*w]
		for x := w - 1; x >= 0; x-- {
			rgba[4*x+3], rgba[4*x+2], rgba[4*x+1], rgba[4*x] = 0xFF, samples[3*x+2], samples[3*x+1], samples[3*x]
		}
		packRGBA(out, rgba, c)
	}
	return nil
}

// setLUT makes the sample table for p: every value a sample of its width
// can hold (raw samples may exceed maxval: they clamp).
func (d *pnmDecoder) setLUT(p *pnmInfo) {
	m := 255
	if p.maxval > 255 && (p.kind == '2' || p.kind == '5') {
		m = 65535
	}
	if d.lutKey == [2]int{p.maxval, m} && d.lut != nil {
		return
	}
	size := 256
	if p.maxval > 255 {
		size = 65536
	}
	d.lut = reuse.Room(d.lut, size)
	for v := range d.lut {
		s := min(float64(m), math.RoundToEven(float64(v)/float64(p.maxval)*float64(m)))
		if m == 65535 {
			d.lut[v] = byte(int(s) >> 8)
		} else {
			d.lut[v] = byte(s)
		}
	}
	d.lutKey = [2]int{p.maxval, m}
}
