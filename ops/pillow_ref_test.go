package ops

import "math"

// pillowResample is the reference the resampler is judged by: Pillow 13's
// Image.resize on 8-bit images (libImaging/Resample.c, and Geometry.c's
// affine scaling for NEAREST), written here from Pillow's published
// algorithm, plainly — one output pixel at a time, its own filters, weights
// and rounding, nothing shared with resample.go. filter is "nearest",
// "linear" (BILINEAR), "cubic" (BICUBIC) or "area" (BOX).
//
// aa=false is Sluice's one addition (torchvision's antialias=False,
// OpenCV's INTER_LINEAR): when shrinking, linear and cubic keep their
// unit-scale support instead of being stretched by the shrink factor.
func pillowResample(src []byte, sh, sw, c, dh, dw int, filter string, aa bool) []byte {
	return pillowResampleBox(src, sh, sw, c, dh, dw, [4]float32{0, 0, float32(sw), float32(sh)}, filter, aa)
}

// pillowResampleBox is Image.resize((dw, dh), filter, box=b): the region
// b, x1, y1, x2, y2 in float32 as Pillow takes it (inside the image),
// resized in one sampling: each axis's scale is the box's side over the
// output's, and output pixel centres start at the box's edge.
func pillowResampleBox(src []byte, sh, sw, c, dh, dw int, b [4]float32, filter string, aa bool) []byte {
	if filter == "nearest" {
		return pillowNearestBox(src, sh, sw, c, dh, dw, b)
	}
	// Pillow's filters and their support at scale 1.
	fn, support := func(x float64) float64 { // BOX
		if x > -0.5 && x <= 0.5 {
			return 1
		}
		return 0
	}, 0.5
	switch filter {
	case "linear":
		fn, support = func(x float64) float64 {
			x = math.Abs(x)
			if x < 1 {
				return 1 - x
			}
			return 0
		}, 1
	case "cubic":
		// Keys' cubic convolution, a = -0.5, in Pillow's operation
		// order; each float64() rounds its product, as the compiled C
		// does on x86-64 (no fused multiply-add).
		const a = -0.5
		fn, support = func(x float64) float64 {
			x = math.Abs(x)
			if x < 1 {
				return float64(float64(float64(float64((a+2)*x)-(a+3))*x)*x) + 1
			}
			if x < 2 {
				return float64(float64(float64(float64(x-5)*x)+8)*x-4) * a
			}
			return 0
		}, 2
	}
	// 22 fractional bits ("PRECISION_BITS = 32 - 8 - 2"); sums start at
	// one half and are clipped to 0..255 after each pass.
	const bits = 22
	clip := func(s int64) byte {
		s >>= bits
		return byte(min(max(s, 0), 255))
	}
	// weights of output pixel i of an axis of in pixels shrunk or grown to
	// out: the first input pixel and the fixed-point taps.
	// lo and hi are the box's edges on the axis.
	weights := func(in, out, i int, lo, hi float32) (int, []int64) {
		scale := float64(hi-lo) / float64(out)
		fscale := max(scale, 1)
		if !aa && filter != "area" {
			fscale = 1
		}
		sup := support * fscale
		center := float64(lo) + (float64(i)+0.5)*scale
		first := max(int(center-sup+0.5), 0)
		last := min(int(center+sup+0.5), in)
		var w []float64
		total := 0.0
		for x := first; x < last; x++ {
			v := fn((float64(x) - center + 0.5) / fscale)
			w = append(w, v)
			total += v
		}
		k := make([]int64, len(w))
		for j, v := range w {
			if total != 0 {
				v /= total
			}
			if v < 0 {
				k[j] = int64(int32(-0.5 + v*(1<<bits)))
			} else {
				k[j] = int64(int32(0.5 + v*(1<<bits)))
			}
		}
		return first, k
	}
	horizontal := func(img []byte, h, w, ow int) []byte {
		out := make([]byte, h*ow*c)
		for x := range ow {
			lo, k := weights(w, ow, x, b[0], b[2])
			for y := range h {
				for ch := range c {
					s := int64(1 << (bits - 1))
					for j, kj := range k {
						s += int64(img[(y*w+lo+j)*c+ch]) * kj
					}
					out[(y*ow+x)*c+ch] = clip(s)
				}
			}
		}
		return out
	}
	vpass := func(img []byte, h, w, oh int) []byte {
		out := make([]byte, oh*w*c)
		for y := range oh {
			lo, k := weights(h, oh, y, b[1], b[3])
			for i := range w * c {
				s := int64(1 << (bits - 1))
				for j, kj := range k {
					s += int64(img[(lo+j)*w*c+i]) * kj
				}
				out[y*w*c+i] = clip(s)
			}
		}
		return out
	}
	// A pass whose size does not change is skipped. Both passes: Pillow 13
	// goes vertical first when the height shrinks by over twice as many
	// pixels as the width (which may grow), else horizontal first (checked
	// against Pillow 13.0.0 by comparing with two one-axis resizes).
	// A box other than the whole image needs its passes, as Pillow's
	// need_horizontal and need_vertical; the pass order still follows the
	// image's sizes (checked against Pillow 13.0.0 with one-axis boxes).
	needH := sw != dw || b[0] != 0 || b[2] != float32(dw)
	needV := sh != dh || b[1] != 0 || b[3] != float32(dh)
	switch {
	case !needH && !needV:
		return append([]byte(nil), src...)
	case !needV:
		return horizontal(src, sh, sw, dw)
	case !needH:
		return vpass(src, sh, sw, dh)
	case dh < sh && sh-dh > 2*(sw-dw):
		return horizontal(vpass(src, sh, sw, dh), dh, sw, dw)
	}
	return vpass(horizontal(src, sh, sw, dw), sh, dw, dh)
}

// pillowNearestBox is Pillow's NEAREST resize with a box (_imaging.c's
// resize, ImagingScaleAffine: an affine scale of step (x2-x1)/out, in
// float32 then double; the source coordinate of output pixel i starts at
// x1 + step/2 and grows by one step, added up in double precision, then
// truncated).
func pillowNearestBox(src []byte, sh, sw, c, dh, dw int, b [4]float32) []byte {
	coords := func(in, out int, lo, hi float32) []int {
		step := float64(hi-lo) / float64(out)
		xs := make([]int, out)
		x := float64(lo) + step/2
		for i := range xs {
			xs[i] = min(int(x), in-1)
			x += step
		}
		return xs
	}
	ys, xs := coords(sh, dh, b[1], b[3]), coords(sw, dw, b[0], b[2])
	out := make([]byte, 0, dh*dw*c)
	for _, y := range ys {
		for _, x := range xs {
			out = append(out, src[(y*sw+x)*c:(y*sw+x+1)*c]...)
		}
	}
	return out
}
