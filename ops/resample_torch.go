package ops

import (
	"math"

	"github.com/sluice-dev/sluice/internal/reuse"
)

// interp "torch_linear" and "torch_cubic": torch's own resampling of uint8
// images, torch.nn.functional.interpolate(mode="bilinear" or "bicubic",
// align_corners=False, antialias=...) on a uint8 tensor, which is what
// torchvision.transforms.v2.functional.resize runs on a uint8 image tensor
// on an x86-64 CPU with AVX2 or AVX-512 (on other CPUs torchvision resizes
// bilinear in float32 instead, and torch's bicubic weights lose the fused
// multiply-adds below). Models trained on tensor pipelines (torchvision v2
// on uint8, transformers' fast image processors) see these pixels, which
// are neither Pillow's nor OpenCV's. torch's arithmetic (aten's
// cpu/UpSampleKernel.cpp, HelperInterpBase and the uint8 helpers, and
// cpu/UpSampleKernelAVXAntialias.h), checked byte for byte against torch on
// many sizes (python/tests/test_parity_torch_resize.py):
//
//   - Per axis, scale = in/out in float64. antialias=True uses Pillow's
//     windows: center = scale*(i+0.5), support = half the filter's width
//     times the scale when shrinking, taps (j + xmin - center + 0.5)/scale,
//     weights normalised by their sum, a = -0.5 for the cubic.
//     antialias=False uses the plain 2- or 4-tap filter around src =
//     scale*(i+0.5) - 0.5 (clipped at 0 for the linear one): index =
//     floor(float32(src)), lambda = src - index clipped to 0..1, weights
//     filter(j - 1 - lambda) for the cubic (a = -0.75, torch's float
//     bicubic) and 1-lambda, lambda for the linear, unnormalised, and the
//     weights of taps outside the image added onto the edge pixel's.
//   - The weights become int16 fixed point with a precision per axis: the
//     most fractional bits, at most 22, at which the axis's largest weight
//     still rounds below 2^15. Each weight is rounded half away from zero.
//   - A horizontal pass into a uint8 intermediate image, then a vertical
//     one, each summing pixel × weight in int32 from one half, shifted
//     right by the precision and clipped to 0..255. An axis whose size
//     does not change has no pass; both unchanged is a copy.
//
// torch's x86 build fuses multiply-adds in these kernels (its AVX2 code of
// the cubic and of the antialias=False source coordinate is vfmadd), so
// those are math.FMA here and in the GPU kernel; every other product is
// rounded on its own, as there.
//
// The weights go into the resampler's tables scaled from torch's precision
// p to the tables' 22 bits (w << (22-p)): a sum then equals torch's times
// 2^(22-p), started at the same half, so shifting by 22 gives torch's bytes,
// and the passes (resample.c) run unchanged. Sums stay within int32: at
// most 255 × 1.19 × 2^22 for the cubic's positive lobes.

// torch reports whether f is one of torch's uint8 modes.
func (f interp) torch() bool { return f == interpTorchLinear || f == interpTorchCubic }

// torchAxis is one axis of torch's resampling: the span lo..hi of an axis
// of in pixels resized to out. resize and letterbox resample the whole axis
// (0..in), as torch; a crop_boxes box, which torch has no form of, shifts
// the centres to its start and sets the scale from its width, as Pillow's
// box does.
type torchAxis struct {
	in, out        int
	cubic, aa      bool
	origin, scale  float64
	support, invsc float64 // antialias=True: the window's half width, 1/scale when shrinking
	maxTaps        int     // torch's max_interp_size: the weights computed per output
	a              float64 // the cubic's a
}

func newTorchAxis(in int, lo, hi float32, out int, f interp, aa bool) torchAxis {
	ax := torchAxis{in: in, out: out, cubic: f == interpTorchCubic, aa: aa, origin: float64(lo), invsc: 1}
	// in/out for the whole axis, as area_pixel_compute_scale without a
	// scale factor; a box's float32 width otherwise.
	ax.scale = float64(hi-lo) / float64(out)
	size := 2.0 // interp_size
	if ax.cubic {
		size = 4
	}
	ax.support = size * 0.5
	if aa {
		if ax.scale >= 1 {
			ax.support = ax.support * ax.scale
			ax.invsc = 1 / ax.scale
		}
		ax.maxTaps = int(math.Ceil(ax.support))*2 + 1
		ax.a = -0.5
	} else {
		ax.maxTaps = int(size)
		ax.a = -0.75
	}
	return ax
}

// filter is torch's aa_filter: the triangle, or Keys' cubic with a. torch
// evaluates the cubic as ((a+2)x - (a+3))x² + 1 and ((ax - 5a)x + 8a)x -
// 4a, each multiply-add fused.
func (ax *torchAxis) filter(x float64) float64 {
	x = math.Abs(x)
	if !ax.cubic {
		if x < 1 {
			return 1 - x
		}
		return 0
	}
	a := ax.a
	if x < 1 {
		t := math.FMA(a+2, x, -(a + 3))
		return math.FMA(float64(t*x), x, 1)
	}
	if x < 2 {
		t := math.FMA(a, x, -5*a)
		t = math.FMA(t, x, 8*a)
		return math.FMA(t, x, -4*a)
	}
	return 0
}

// window is output i's input pixels, lo..lo+n-1 (inside the axis), and for
// antialias=False the source index and lambda its weights follow.
func (ax *torchAxis) window(i int) (lo, n int, center float64, index int, lambda float64) {
	if ax.aa {
		center = ax.origin + float64(ax.scale*(float64(i)+0.5))
		lo = max(int(center-ax.support+0.5), 0) // int() truncates, as C's cast
		n = min(int(center+ax.support+0.5), ax.in) - lo
		return lo, min(max(n, 0), ax.maxTaps), center, 0, 0
	}
	src := ax.origin + math.FMA(ax.scale, float64(i)+0.5, -0.5)
	if !ax.cubic && src < 0 {
		src = 0
	}
	// torch floors the float32 of the coordinate (floorf).
	index = min(int(math.Floor(float64(float32(src)))), ax.in-1)
	lambda = min(max(src-float64(index), 0), 1)
	half := ax.maxTaps / 2
	lo = max(index-half+1, 0)
	n = min(index+half+1, ax.in) - lo
	return lo, min(max(n, 0), ax.maxTaps), 0, index, lambda
}

// weights writes output i's float64 weights into w (maxTaps long) and
// returns its window and the largest weight as torch tracks it for the
// precision: the largest normalised weight, or with antialias=False the
// largest value any weight held while the edge taps were added up.
func (ax *torchAxis) weights(i int, w []float64) (lo, n int, wmax float64) {
	lo, n, center, index, lambda := ax.window(i)
	if ax.aa {
		total := 0.0
		for j := range n {
			w[j] = ax.filter(float64(float64(j+lo)-center+0.5) * ax.invsc)
			total += w[j]
		}
		if total != 0 {
			for j := range n {
				w[j] /= total
				wmax = max(wmax, w[j])
			}
		}
		return lo, n, wmax
	}
	half := ax.maxTaps / 2
	first := index - half + 1 // the unclipped window's first input
	k := 0
	for j := range ax.maxTaps {
		w[j] = 0
		v := ax.filter(float64(j+1-half) - lambda)
		if first+j <= 0 {
			k = 0
		} else if first+j >= ax.in-1 {
			k = n - 1
		}
		w[k] += v
		wmax = max(wmax, w[k])
		k++
	}
	return lo, n, wmax
}

// torchPrecision is the fractional bits of torch's int16 weights for an
// axis whose largest weight is wmax: the first p < 22 at which the weight
// at p+1 bits would round to 2^15 or more, else 22.
func torchPrecision(wmax float64) int {
	p := 0
	for ; p < 22; p++ {
		if int(0.5+wmax*float64(int(1)<<(p+1))) >= 1<<15 {
			break
		}
	}
	return p
}

// torchFixed is weight w in int16 fixed point with p fractional bits,
// rounded half away from zero (C's truncating cast of v ± 0.5).
func torchFixed(w float64, p int) int32 {
	v := w * float64(int(1)<<p)
	if v < 0 {
		return int32(int16(int(v - 0.5)))
	}
	return int32(int16(int(v + 0.5)))
}

// buildTorch fills the table with torch's windows and weights for the span
// lo..hi of the in input pixels, resized to out.
func (t *axisTable) buildTorch(in int, lo, hi float32, out int, f interp, aa bool) {
	ax := newTorchAxis(in, lo, hi, out, f, aa)
	m := ax.maxTaps
	t.tmp = reuse.Len(t.tmp, out*m)
	t.sizes = reuse.Len(t.sizes, out)
	wmax, taps := 0.0, 1
	for i := range out {
		xmin, n, wm := ax.weights(i, t.tmp[i*m:(i+1)*m])
		t.start[i], t.sizes[i] = int32(xmin), int32(n)
		wmax, taps = max(wmax, wm), max(taps, n)
	}
	// Even counts, for the unrolled 2- and 4-tap loops, as buildBox.
	if taps > 1 && taps%2 == 1 && taps < in {
		taps++
	}
	p := torchPrecision(wmax)
	t.taps = taps
	t.k = reuse.Len(t.k, out*taps)
	for i := range out {
		xmin := int(t.start[i])
		s := min(xmin, in-taps)
		k := t.k[i*taps : (i+1)*taps]
		clear(k)
		for j, w := range t.tmp[i*m : i*m+int(t.sizes[i])] {
			k[xmin-s+j] = torchFixed(w, p) << (rsBits - p)
		}
		t.start[i] = int32(s)
	}
}

// torchTaps is the taps buildTorch gives the axis, from the windows alone.
func torchTaps(in int, lo, hi float32, out int, f interp, aa bool) int {
	ax := newTorchAxis(in, lo, hi, out, f, aa)
	taps := 1
	for i := range out {
		_, n, _, _, _ := ax.window(i)
		taps = max(taps, n)
	}
	if taps > 1 && taps%2 == 1 && taps < in {
		taps++
	}
	return taps
}
