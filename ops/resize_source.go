package ops

import (
	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/fixed"
)

// resize with source_mode resamples each image as Pillow's Image.resize
// does in the mode Image.open gives it, then converts to the decoded
// colour, as Image.open(f).resize(size, filter).convert(c) with c "RGB"
// (RGB, BGR), "L" (GRAY) or "RGBA" (RGBA, BGRA): open_clip's preprocess
// converts to RGB after Resize and CenterCrop, and a crop commutes with a
// per-pixel conversion. The decode before it hands each image over as
// resampleInto needs it (held), with the mode in Tensor.Mode. Pillow 13's
// rules (Image.resize, Image.convert; libImaging/Convert.c):
//
//   - "P" and "1" (codec.ModeNearest) resample with NEAREST whatever the
//     filter, and NEAREST picks pixels while every conversion maps each
//     pixel alone: the decode in the output colour is resampled as it is
//     (p2l, p2rgba with the palette's alpha from tRNS, bit2l, bit2rgb).
//   - "RGBA" and "LA" (codec.ModeAlpha), held as RGBA (L, L, L, A for
//     "LA"), convert to "RGBa"/"La" first, c' = MULDIV255(c, a)
//     (rgbA2rgba, lA2la), resample the four channels and convert back,
//     c = CLIP8(255*c' / a) truncated where 0 < a < 255 (rgba2rgbA,
//     la2lA). Not with NEAREST, and not when the size does not change:
//     Image.resize returns a copy then, before converting. Then "RGB"
//     drops alpha, "RGBA" keeps it (la2rgb for "LA"), and "L" is the luma
//     of R, G, B (rgb2l, which for L, L, L is la2l's L).
//   - "CMYK" (codec.ModeCMYK) resamples the inks as Pillow holds them (255
//     minus the stored Adobe samples), then cmyk2rgb (codec.InksTo), with
//     alpha 255 for "RGBA" and the luma of that RGB for "L" (Image.convert
//     goes through "RGB": Convert.c has no CMYK to L).
//   - "RGB", "L" and every other mode (codec.ModeDirect) resample their
//     channels as they are. Towards "L" the image is held in RGB, since
//     the luma of resampled colours is not the resampled luma (an "L"
//     image holds v, v, v, whose luma is v). Towards "RGBA" it is held in
//     the output colour, alpha from a PNG's tRNS colour key: Image.convert
//     makes a pixel transparent where the resampled colour equals the key
//     (convert_transparent, rgbT2a), opaque elsewhere. The key is the
//     colour of a transparent source pixel; a key that no source pixel
//     has is not seen, and such an image comes out opaque.

func (o *resizeOp) sourceMode() bool     { return o.source }
func (o *resizeCropOp) sourceMode() bool { return o.resize.source }

// held is how src comes from the decode linked to this resize: the
// channels each pixel holds, and whether resampleInto converts them to
// src.Color after resampling.
func (o *resizeOp) held(src *Tensor) (ch int, converts bool) {
	if o.source {
		switch src.Mode {
		case codec.ModeAlpha, codec.ModeCMYK:
			return 4, true
		case codec.ModeDirect:
			switch src.Color {
			case Gray:
				return 3, true
			case RGBA, BGRA:
				return 4, true
			}
		}
	}
	return src.Color.Channels(), false
}

// outChannels is the output's channel count for an input of ch channels:
// ch, or those of the colour an image handed over for conversion becomes.
func (o *resizeOp) outChannels(src *Tensor, ch int) (int, error) {
	want, converts := o.held(src)
	if !converts {
		return ch, nil
	}
	if ch != want {
		return 0, Errorf(BadInput, "resize: an image in mode %v for %v holds %d channels, want %d",
			src.Mode, src.Color, ch, want)
	}
	return src.Color.Channels(), nil
}

// filter is the filter resampleInto uses for src: nearest for a palette
// or 1-bit image with source_mode, as Pillow.
func (o *resizeOp) filter(src *Tensor) interp {
	if o.source && src.Mode == codec.ModeNearest {
		return interpNearest
	}
	return o.f
}

// premultiplies reports whether resampleInto premultiplies src's alpha
// before resampling it with f to oh×ow.
func premultiplies(src *Tensor, f interp, oh, ow, sh, sw int) bool {
	return src.Mode == codec.ModeAlpha && f != interpNearest && (oh != sh || ow != sw)
}

// keyed reports an image resampled straight into its colour, RGBA or BGRA,
// whose alpha resampleInto then sets from the colour key.
func keyed(src *Tensor) bool { return src.Mode == codec.ModeDirect && src.Color.Channels() == 4 }

// charge prices resampleInto for the same arguments on c before it runs
// (Ctx.Charge, as op): the resampling in the channels it runs in and, with
// source_mode, the premultiplication or the search for the key (per input
// sample) and the conversion (per window sample).
func (o *resizeOp) charge(c *Ctx, op string, oh, ow int, win rect, src *Tensor, sh, sw, ch int) error {
	f := o.filter(src)
	if _, converts := o.held(src); !converts {
		return chargeResample(c, op, sh, sw, ch, oh, ow, win, f, o.aa, 0)
	}
	extra := 4 * float64(win.h) * float64(win.w)
	if premultiplies(src, f, oh, ow, sh, sw) || keyed(src) {
		extra += float64(ch) * float64(sh) * float64(sw)
	}
	return chargeResample(c, op, sh, sw, ch, oh, ow, win, f, o.aa, extra)
}

// resampleInto writes the window win of src's oh×ow resize into dst (rows
// of stride bytes, in src.Color), following src.Mode with source_mode. ch
// is what outChannels accepted.
func (o *resizeOp) resampleInto(r *resampler, dst []byte, stride, oh, ow int, win rect, src *Tensor, sh, sw, ch int) {
	f := o.filter(src)
	if _, converts := o.held(src); !converts {
		r.resample(dst, stride, oh, ow, win, src.Data, sh, sw, ch, f, o.aa)
		return
	}
	if keyed(src) {
		r.resample(dst, stride, oh, ow, win, src.Data, sh, sw, 4, f, o.aa)
		key, found := colorKey(src.Data)
		for y := range win.h {
			keyAlpha(dst[y*stride:y*stride+win.w*4], key, found)
		}
		return
	}
	data := src.Data
	premul := premultiplies(src, f, oh, ow, sh, sw)
	if premul {
		r.pre = growBuf(r.pre, len(data))
		premultiply(r.pre, data)
		data = r.pre
	}
	// At most 4 bytes a pixel of the window, whose pixel limit the caller
	// has checked.
	wrow, och := win.w*ch, src.Color.Channels()
	r.quad = growBuf(r.quad, win.h*wrow)
	r.resample(r.quad, wrow, oh, ow, win, data, sh, sw, ch, f, o.aa)
	for y := range win.h {
		in, out := r.quad[y*wrow:(y+1)*wrow], dst[y*stride:y*stride+win.w*och]
		switch src.Mode {
		case codec.ModeCMYK:
			codec.InksTo(out, in, src.Color)
		case codec.ModeAlpha:
			fromRGBA(out, in, src.Color, premul)
		default:
			lumaRow(out, in)
		}
	}
}

// premultiply is Pillow's RGBA to RGBa: each colour times alpha,
// MULDIV255 (rounded); alpha stays.
func premultiply(dst, src []byte) {
	for i := 0; i+3 < len(src); i += 4 {
		a := uint32(src[i+3])
		for k := range 3 {
			dst[i+k] = byte(fixed.MulDiv255(uint32(src[i+k]), a))
		}
		dst[i+3] = byte(a)
	}
}

// fromRGBA writes RGBA pixels in colour c, dividing premultiplied ones by
// their alpha first as Pillow's RGBa to RGBA does: 255*v/a, truncated and
// clipped, where alpha is neither 0 nor 255. GRAY is Pillow's luma of R,
// G and B (rgb2l); RGB and BGR drop alpha.
func fromRGBA(dst, src []byte, c Color, premul bool) {
	n := c.Channels()
	ri, bi := 0, 2
	if c == BGR || c == BGRA {
		ri, bi = 2, 0
	}
	for i, j := 0, 0; i+3 < len(src); i, j = i+4, j+n {
		p := src[i : i+4 : i+4]
		r, g, b, a := p[0], p[1], p[2], p[3]
		if a32 := uint32(a); premul && a32 != 0 && a32 != 255 {
			r, g, b = unpremul(r, a32), unpremul(g, a32), unpremul(b, a32)
		}
		if n == 1 {
			dst[j] = codec.Luma(r, g, b)
			continue
		}
		d := dst[j : j+n : j+n]
		d[ri], d[1], d[bi] = r, g, b
		if n == 4 {
			d[3] = a
		}
	}
}

func unpremul(v byte, a uint32) byte { return byte(min(255*uint32(v)/a, 255)) }

// lumaRow writes the luma of RGB pixels, as Pillow's convert("L") (rgb2l).
func lumaRow(dst, rgb []byte) {
	for i, j := 0, 0; i+2 < len(rgb); i, j = i+3, j+1 {
		p := rgb[i : i+3 : i+3]
		dst[j] = codec.Luma(p[0], p[1], p[2])
	}
}

// colorKey is the colour (in the image's order) of the first transparent
// pixel of four-channel pixels whose alpha came from a tRNS colour key, 0
// where the colour is the key and 255 elsewhere; found is false when every
// pixel is opaque.
func colorKey(px []byte) (key [3]byte, found bool) {
	for i := 3; i < len(px); i += 4 {
		if px[i] == 0 {
			return [3]byte{px[i-3], px[i-2], px[i-1]}, true
		}
	}
	return key, false
}

// keyAlpha sets each pixel's alpha as Pillow's convert("RGBA") of an image
// with a colour key (rgbT2a): 0 where the colour is the key, 255
// elsewhere.
func keyAlpha(px []byte, key [3]byte, found bool) {
	for i := 0; i+3 < len(px); i += 4 {
		p := px[i : i+4 : i+4]
		p[3] = 255
		if found && p[0] == key[0] && p[1] == key[1] && p[2] == key[2] {
			p[3] = 0
		}
	}
}
