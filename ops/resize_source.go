package ops

import (
	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/fixed"
)

// resize with source_mode resamples each image as Pillow's Image.resize
// does in the mode Image.open gives it, then converts to the decoded
// colour, as Image.open(f).resize(size, filter).convert("RGB") (open_clip's
// preprocess converts after Resize and CenterCrop; a crop commutes with a
// per-pixel conversion). The decode before it hands the mode over in
// Tensor.Mode, with four channels where the mode needs them. Pillow 13's
// rules (Image.resize; libImaging/Convert.c):
//
//   - "P" and "1" (codec.ModeNearest) resample with NEAREST whatever the
//     filter: the decoded RGB, since NEAREST picks pixels and convert("RGB")
//     maps each one alone.
//   - "RGBA" and "LA" (codec.ModeAlpha) convert to "RGBa"/"La" first,
//     c' = MULDIV255(c, a) (rgbA2rgba, lA2la), resample the four channels
//     and convert back, c = CLIP8(255*c' / a) truncated where 0 < a < 255
//     (rgba2rgbA, la2lA); convert("RGB") then drops alpha. Not with
//     NEAREST, and not when the size does not change: Image.resize returns
//     a copy then, before converting.
//   - "CMYK" (codec.ModeCMYK) resamples the inks as Pillow holds them
//     (255 minus the stored Adobe samples), then cmyk2rgb (codec.InksTo).

func (o *resizeOp) sourceMode() bool     { return o.source }
func (o *resizeCropOp) sourceMode() bool { return o.resize.source }

// fourChannels reports an image handed over in four channels that the
// resize converts to its colour.
func (o *resizeOp) fourChannels(src *Tensor) bool {
	return o.source && (src.Mode == codec.ModeAlpha || src.Mode == codec.ModeCMYK)
}

// outChannels is the output's channel count for an input of ch channels:
// ch, or 3 (RGB, BGR) for an image handed over in four.
func (o *resizeOp) outChannels(src *Tensor, ch int) (int, error) {
	if !o.fourChannels(src) {
		return ch, nil
	}
	if ch != 4 || src.Color.Channels() != 3 {
		return 0, Errorf(BadInput, "resize: an image in mode %v holds %d channels of %v, want 4 converting to RGB or BGR",
			src.Mode, ch, src.Color)
	}
	return 3, nil
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

// charge prices resampleInto for the same arguments on c before it runs
// (Ctx.Charge, as op): the resampling in the channels it runs in and, with
// source_mode, the premultiplication (per input sample) and the conversion
// (per window sample).
func (o *resizeOp) charge(c *Ctx, op string, oh, ow int, win rect, src *Tensor, sh, sw, ch int) error {
	f := o.filter(src)
	if !o.fourChannels(src) {
		return chargeResample(c, op, sh, sw, ch, oh, ow, win, f, o.aa, 0)
	}
	extra := 4 * float64(win.h) * float64(win.w)
	if premultiplies(src, f, oh, ow, sh, sw) {
		extra += 4 * float64(sh) * float64(sw)
	}
	return chargeResample(c, op, sh, sw, 4, oh, ow, win, f, o.aa, extra)
}

// resampleInto writes the window win of src's oh×ow resize into dst (rows
// of stride bytes, in src.Color), following src.Mode with source_mode.
func (o *resizeOp) resampleInto(r *resampler, dst []byte, stride, oh, ow int, win rect, src *Tensor, sh, sw, ch int) {
	f := o.filter(src)
	if !o.fourChannels(src) {
		r.resample(dst, stride, oh, ow, win, src.Data, sh, sw, ch, f, o.aa)
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
	wrow := win.w * 4
	r.quad = growBuf(r.quad, win.h*wrow)
	r.resample(r.quad, wrow, oh, ow, win, data, sh, sw, 4, f, o.aa)
	for y := range win.h {
		in, out := r.quad[y*wrow:(y+1)*wrow], dst[y*stride:y*stride+win.w*3]
		if src.Mode == codec.ModeCMYK {
			codec.InksTo(out, in, src.Color)
		} else {
			dropAlpha(out, in, src.Color, premul)
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

// dropAlpha writes RGBA pixels as c (RGB or BGR), dividing premultiplied
// ones by their alpha first as Pillow's RGBa to RGBA does: 255*v/a,
// truncated and clipped, where alpha is neither 0 nor 255.
func dropAlpha(dst, src []byte, c Color, premul bool) {
	ri, bi := 0, 2
	if c == BGR {
		ri, bi = 2, 0
	}
	for i, j := 0, 0; i+3 < len(src); i, j = i+4, j+3 {
		p := src[i : i+4 : i+4]
		r, g, b := p[0], p[1], p[2]
		if a := uint32(p[3]); premul && a != 0 && a != 255 {
			r, g, b = unpremul(r, a), unpremul(g, a), unpremul(b, a)
		}
		d := dst[j : j+3 : j+3]
		d[ri], d[1], d[bi] = r, g, b
	}
}

func unpremul(v byte, a uint32) byte { return byte(min(255*uint32(v)/a, 255)) }
