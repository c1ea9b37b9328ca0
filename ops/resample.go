package ops

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// The resampler behind resize and letterbox. It reproduces Pillow's
// Image.resize (libImaging/Resample.c and, for nearest, Geometry.c) so that
// models trained on PIL-preprocessed images see the same pixels:
//
//   - Each output pixel i of an axis is a weighted sum of the input pixels
//     around center = (i+0.5)*scale, scale = in/out. When downscaling with
//     antialias the filter is stretched by scale, so that every input pixel
//     contributes (a low-pass filter); without it the filter keeps its
//     support, as in OpenCV's INTER_LINEAR and torchvision's antialias=False.
//   - Weights are normalised per output pixel and turned into fixed point
//     with 22 fractional bits; sums start at one half and are clipped to
//     0..255 after each pass.
//   - A horizontal pass into an intermediate buffer, then a vertical pass
//     (or the other way round, by Pillow 13's rule, see resample). A pass
//     whose size does not change is skipped.
//
// Weight tables depend only on (in, out, filter), so they are built once and
// kept in a small per-worker cache together with the intermediate buffer:
// in steady state a resample allocates nothing.

// interp is a resampling filter.
type interp uint8

const (
	interpNearest interp = iota
	interpLinear
	interpCubic
	interpArea
)

// interpNames are the values of the "interp" argument, in interp order.
var interpNames = []string{"nearest", "linear", "cubic", "area"}

func parseInterp(s string) interp {
	for i, n := range interpNames {
		if strings.EqualFold(s, n) {
			return interp(i)
		}
	}
	return interpLinear
}

func (f interp) String() string { return interpNames[f] }

// interpArgs are the "interp" and "antialias" arguments of resize and
// letterbox.
var interpArgs = []ArgSpec{
	{
		Name: "interp",
		Type: StringArg,
		Doc: "resampling filter, as Pillow's Image.resize: nearest (NEAREST), linear (BILINEAR), " +
			"cubic (BICUBIC, a=-0.5), area (BOX: when shrinking, the mean of the input pixels whose " +
			"centres fall in the output pixel; OpenCV's INTER_AREA also weighs partly covered pixels). " +
			"Channels are filtered independently: unlike Pillow on RGBA, alpha is not premultiplied",
		Default: StrVal("linear"),
		Enum:    interpNames,
	},
	{
		Name: "antialias",
		Type: BoolArg,
		Doc: "when shrinking, widen the linear and cubic filters by the shrink factor so that every input " +
			"pixel counts (Pillow, torchvision antialias=True); false keeps the plain 2- or 4-tap filter " +
			"(OpenCV INTER_LINEAR/INTER_CUBIC, torchvision antialias=False). Area always averages and " +
			"nearest never filters",
		Default: BoolVal(true),
	},
}

// Fixed point: 22 fractional bits leave 8 bits for the value and 2 for the
// overshoot of filters with negative lobes, within an int32 sum.
const (
	rsBits = 22
	rsHalf = 1 << (rsBits - 1)
)

// kernel is a filter and its support (half width) at scale 1.
type kernel struct {
	fn      func(float64) float64
	support float64
}

var kernels = [...]kernel{
	interpLinear: {triangle, 1},
	interpCubic:  {cubic, 2},
	interpArea:   {box, 0.5},
}

func box(x float64) float64 {
	if x > -0.5 && x <= 0.5 {
		return 1
	}
	return 0
}

func triangle(x float64) float64 {
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}

// cubic is Keys' cubic convolution with a = -0.5 (Pillow's BICUBIC),
// evaluated in Pillow's order. The float64() conversions round each product
// on its own: without them Go may fuse multiply-adds (arm64, GOAMD64=v3),
// which rounds differently from Pillow's x86 builds.
func cubic(x float64) float64 {
	const a = -0.5
	x = math.Abs(x)
	if x < 1 { // ((a+2)x - (a+3))x² + 1
		p := float64((a+2)*x) - (a + 3)
		return float64(float64(p*x)*x) + 1
	}
	if x < 2 { // (((x-5)x + 8)x - 4)a
		p := float64((x-5)*x) + 8
		p = float64(p*x) - 4
		return p * a
	}
	return 0
}

// axisTable maps one axis of in pixels onto out pixels.
type axisTable struct {
	in, out int
	f       interp
	aa      bool
	used    uint64 // for the cache's LRU eviction

	// Output pixel i is the sum of input pixels start[i]+j, j < taps,
	// times k[i*taps+j]. For nearest, start[i] is the one input pixel.
	start []int32
	k     []int32
	taps  int
	tmp   []float64 // weights of one output pixel before rounding
}

// build fills the table, following Pillow's precompute_coeffs and
// normalize_coeffs_8bpc operation for operation so that weights match.
func (t *axisTable) build(in, out int, f interp, aa bool) {
	t.in, t.out, t.f, t.aa = in, out, f, aa
	t.start = grow(t.start, out)
	if f == interpNearest {
		t.buildNearest()
		return
	}
	// Pillow computes the scale from float32 box coordinates.
	scale := float64(float32(in)) / float64(out)
	fs := scale
	if fs < 1 || (!aa && f != interpArea) {
		fs = 1
	}
	kn := kernels[f]
	support := kn.support * fs
	// window is Pillow's range of input pixels [lo, hi) for output i.
	window := func(i int) (center float64, lo, hi int) {
		center = float64(float64(i)+0.5) * scale
		lo = max(int(center-support+0.5), 0) // int() truncates, as C's cast
		hi = max(min(int(center+support+0.5), in), lo)
		return center, lo, hi
	}
	// Every output pixel gets the same number of taps, the widest window,
	// so that the loops run a fixed count: windows near the end move left
	// with zero weights in front, which adds nothing to the sums.
	t.taps = 1
	for i := range out {
		_, lo, hi := window(i)
		t.taps = max(t.taps, hi-lo)
	}
	// Even counts run on the unrolled 2- and 4-tap kernels.
	if t.taps > 1 && t.taps%2 == 1 && t.taps < in {
		t.taps++
	}
	t.k = grow(t.k, out*t.taps)
	t.tmp = grow(t.tmp, t.taps)
	ss := 1 / fs
	for i := range out {
		center, lo, hi := window(i)
		w := t.tmp[:hi-lo]
		sum := 0.0
		for j := range w {
			w[j] = kn.fn(float64(float64(j+lo)-center+0.5) * ss)
			sum += w[j]
		}
		s := min(lo, in-t.taps)
		k := t.k[i*t.taps : (i+1)*t.taps]
		clear(k)
		for j, x := range w {
			if sum != 0 {
				x /= sum
			}
			if x < 0 {
				k[lo-s+j] = int32(-0.5 + float64(x*(1<<rsBits)))
			} else {
				k[lo-s+j] = int32(0.5 + float64(x*(1<<rsBits)))
			}
		}
		t.start[i] = int32(s)
	}
}

// buildNearest follows Pillow's ImagingScaleAffine, which Image.resize uses
// for NEAREST: the source coordinate starts at scale/2 and grows by scale
// per output pixel, accumulated in float64 (not multiplied: the rounding of
// the running sum decides ties, and we must pick the same pixels), then
// truncated.
func (t *axisTable) buildNearest() {
	a := float64(float32(t.in)) / float64(t.out)
	x := a * 0.5
	for i := range t.out {
		t.start[i] = int32(min(max(int(x), 0), t.in-1))
		x += a
	}
}

// grow returns s with length n, reusing its array when large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// resampler is the per-worker state of resize and letterbox.
type resampler struct {
	tables [6]axisTable // cache: a few (in, out) pairs per axis
	clock  uint64
	tmp    []byte  // the horizontal pass's output
	acc    []int32 // sums of vertical passes wider than 4 taps
}

func (r *resampler) Close() {}

// table returns the weights for one axis from the cache, building them on a
// miss into the least recently used slot. The LRU order guarantees that the
// table returned by the previous call survives this one.
func (r *resampler) table(in, out int, f interp, aa bool) *axisTable {
	r.clock++
	lru := &r.tables[0]
	for i := range r.tables {
		t := &r.tables[i]
		if t.used != 0 && t.in == in && t.out == out && t.f == f && t.aa == aa {
			t.used = r.clock
			return t
		}
		if t.used < lru.used {
			lru = t
		}
	}
	lru.build(in, out, f, aa)
	lru.used = r.clock
	return lru
}

// resample resizes the sh×sw×c image src to dh×dw×c. Output row y starts
// at dst[y*stride]: dst may be a region of a larger canvas (letterbox).
func (r *resampler) resample(dst []byte, stride, dh, dw int, src []byte, sh, sw, c int, f interp, aa bool) {
	srow, drow := sw*c, dw*c
	if f == interpNearest {
		r.nearest(dst, stride, dh, dw, src, sh, sw, c)
		return
	}
	needH, needV := dw != sw, dh != sh
	switch {
	case !needH && !needV:
		for y := range dh {
			copy(dst[y*stride:y*stride+drow], src[y*srow:])
		}
	case !needV:
		th := r.table(sw, dw, f, aa)
		for y := range dh {
			hrow(dst[y*stride:y*stride+drow], src[y*srow:(y+1)*srow], th, c)
		}
	case !needH:
		tv := r.table(sh, dh, f, aa)
		r.vpass(dst, stride, src, srow, drow, 0, tv)
	case sh-dh > 2*(sw-dw) && dh < sh:
		// Pillow 13 (PR 9549) goes vertical first when the height shrinks
		// by over twice as many pixels as the width: less work, and since
		// each pass rounds, the order shows in the pixels.
		tv := r.table(sh, dh, f, aa)
		th := r.table(sw, dw, f, aa)
		// Only the columns that the horizontal pass reads go through the
		// vertical one.
		x0 := int(th.start[0]) * c
		x1 := (int(th.start[dw-1]) + th.taps) * c
		r.tmp = grow(r.tmp, dh*srow)
		r.vpass(r.tmp[x0:], srow, src[x0:], srow, x1-x0, 0, tv)
		for y := range dh {
			hrow(dst[y*stride:y*stride+drow], r.tmp[y*srow:(y+1)*srow], th, c)
		}
	default:
		tv := r.table(sh, dh, f, aa)
		th := r.table(sw, dw, f, aa)
		// Only the rows that the vertical pass reads go through the
		// horizontal one.
		y0 := int(tv.start[0])
		y1 := int(tv.start[dh-1]) + tv.taps
		r.tmp = grow(r.tmp, (y1-y0)*drow)
		for y := y0; y < y1; y++ {
			hrow(r.tmp[(y-y0)*drow:(y-y0+1)*drow], src[y*srow:(y+1)*srow], th, c)
		}
		r.vpass(dst, stride, r.tmp, drow, drow, y0, tv)
	}
}

// vpass resamples vertically: output row y of n bytes is a weighted sum of
// whole input rows, whatever the channel count. Input row j (in table
// coordinates) starts at src[(j-first)*sstride].
func (r *resampler) vpass(dst []byte, dstride int, src []byte, sstride, n, first int, t *axisTable) {
	for y, s := range t.start {
		k := t.k[y*t.taps : (y+1)*t.taps]
		base := (int(s) - first) * sstride
		row := func(j int) []byte { return src[base+j*sstride : base+j*sstride+n] }
		out := dst[y*dstride : y*dstride+n]
		switch len(k) {
		case 1:
			vrow1(out, row(0), k[0])
		case 2:
			vrow2(out, row(0), row(1), k[0], k[1])
		case 3:
			vrow3(out, row(0), row(1), row(2), k[0], k[1], k[2])
		case 4:
			vrow4(out, row(0), row(1), row(2), row(3), k[0], k[1], k[2], k[3])
		default:
			// Long filters (big shrink factors) sum four rows per sweep
			// into acc, then clip.
			r.acc = grow(r.acc, n)
			acc := r.acc
			for i := range acc {
				acc[i] = rsHalf
			}
			j := 0
			for ; j+4 <= len(k); j += 4 {
				vacc4(acc, row(j), row(j+1), row(j+2), row(j+3), k[j], k[j+1], k[j+2], k[j+3])
			}
			for ; j < len(k); j++ {
				vacc1(acc, row(j), k[j])
			}
			for i, v := range acc {
				out[i] = clip8(v)
			}
		}
	}
}

// nearest picks one input pixel per output pixel, as Pillow's NEAREST.
// Output rows that read the same input row (upscaling) are copied.
func (r *resampler) nearest(dst []byte, stride, dh, dw int, src []byte, sh, sw, c int) {
	tx := r.table(sw, dw, interpNearest, false)
	ty := r.table(sh, dh, interpNearest, false)
	srow, drow := sw*c, dw*c
	prev := int32(-1)
	for y, sy := range ty.start {
		out := dst[y*stride : y*stride+drow]
		if sy == prev {
			copy(out, dst[(y-1)*stride:])
			continue
		}
		prev = sy
		in := src[int(sy)*srow : int(sy+1)*srow]
		if dw == sw {
			copy(out, in)
			continue
		}
		switch c {
		case 1:
			for x, sx := range tx.start {
				out[x] = in[sx]
			}
		case 3:
			out = out[:3*len(tx.start)]
			for x, sx := range tx.start {
				p := in[3*int(sx) : 3*int(sx)+3 : 3*int(sx)+3]
				d := out[3*x : 3*x+3 : 3*x+3]
				d[0], d[1], d[2] = p[0], p[1], p[2]
			}
		case 4:
			out = out[:4*len(tx.start)]
			for x, sx := range tx.start {
				binary.LittleEndian.PutUint32(out[4*x:], binary.LittleEndian.Uint32(in[4*int(sx):]))
			}
		default:
			for x, sx := range tx.start {
				copy(out[x*c:x*c+c], in[int(sx)*c:])
			}
		}
	}
}

// stateOf returns the operator's per-worker resampler, or a fresh one when
// the caller gave none (tests, one-off use): slower, never wrong.
func stateOf(c *Ctx) *resampler {
	if c != nil {
		if r, ok := c.State.(*resampler); ok {
			return r
		}
	}
	return new(resampler)
}

// String describes a table, for test failures.
func (t *axisTable) String() string {
	return fmt.Sprintf("%d→%d %v aa=%v", t.in, t.out, t.f, t.aa)
}
