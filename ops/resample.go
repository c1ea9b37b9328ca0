package ops

import (
	"fmt"
	"math"
	"strings"

	"github.com/sluice-dev/sluice/internal/bufpool"
	"github.com/sluice-dev/sluice/internal/reuse"
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
//   - The passes' inner loops are in C (resample.c, through resample_c.go),
//     with AVX2 where the CPU has it; the tests keep Go versions of them as
//     the reference.
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
	// interpOpenCVLinear is OpenCV's fixed-point INTER_LINEAR, not a
	// Pillow filter: resample_cv.go.
	interpOpenCVLinear
	// interpTorchLinear and interpTorchCubic are torch's uint8 bilinear
	// and bicubic (torchvision v2's resize of a uint8 tensor), with their
	// own weights in the same passes: resample_torch.go.
	interpTorchLinear
	interpTorchCubic
)

// interpNames are the values of the "interp" argument, in interp order.
var interpNames = []string{"nearest", "linear", "cubic", "area", "opencv_linear", "torch_linear", "torch_cubic"}

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
			"Channels are filtered independently: unlike Pillow on RGBA, alpha is not premultiplied (resize's " +
			"source_mode does). " +
			"opencv_linear is OpenCV's cv2.resize(interpolation=INTER_LINEAR) bit for bit (its 11-bit " +
			"fixed point, and its 2×2 average for an exact halving), for detectors trained on cv2 " +
			"preprocessing; it never antialiases. torch_linear and torch_cubic are torch's own uint8 " +
			"resampling bit for bit: torchvision.transforms.v2.functional.resize of a uint8 tensor " +
			"(torch.nn.functional.interpolate, mode bilinear or bicubic, align_corners=False) on an " +
			"x86-64 CPU with AVX2, whose int16 weights and rounding differ from Pillow's; antialias picks " +
			"torch's antialias=True or False (the cubic is a=-0.5 with it, a=-0.75 without). For " +
			"opencv_linear and the torch modes the GPU executor's kernel does the same integer " +
			"arithmetic: its bytes equal the CPU's for the same decoded pixels",
		Default: StrVal("linear"),
		Enum:    interpNames,
	},
	{
		Name: "antialias",
		Type: BoolArg,
		Doc: "when shrinking, widen the linear and cubic filters by the shrink factor so that every input " +
			"pixel counts (Pillow, torchvision antialias=True); false keeps the plain 2- or 4-tap filter " +
			"(OpenCV INTER_LINEAR/INTER_CUBIC, torchvision antialias=False). With torch_linear and " +
			"torch_cubic, torch's antialias argument. Area always averages and " +
			"nearest never filters. Default true, except with opencv_linear, which refuses true",
		// No schema default: opencv_linear must tell a given true (refused)
		// from an absent one; parseAntialias applies the default.
	},
}

// parseAntialias reads the antialias argument for filter f: true when
// absent, except for opencv_linear, which does no antialiasing and refuses
// to be asked for it rather than silently ignoring it. The value in effect
// is written back into a, as Check does with schema defaults, so that a
// compiled pipeline's description shows it either way.
func parseAntialias(a Args, f interp) (bool, error) {
	aa := !a.Has("antialias") || a.Bool("antialias")
	if f == interpOpenCVLinear {
		if a.Has("antialias") && aa {
			return false, &ArgError{"antialias", `true is not possible with interp "opencv_linear": ` +
				"OpenCV's INTER_LINEAR does no antialiasing; leave antialias out or set it false"}
		}
		aa = false
	}
	a["antialias"] = BoolVal(aa)
	return aa, nil
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
	// lo, hi are the source span sampled, Pillow's float32 box edges:
	// 0 and in for a whole-image resize, a crop's for crop_boxes.
	lo, hi float32
	f      interp
	aa     bool
	used   uint64 // for the cache's LRU eviction

	// Output pixel i is the sum of input pixels start[i]+j, j < taps,
	// times k[i*taps+j]. For nearest, start[i] is the one input pixel.
	start []int32
	k     []int32
	taps  int
	tmp   []float64 // weights before rounding: of one output pixel, or all of torch's
	sizes []int32   // torch's window sizes

	// The weights in the layouts of the C SIMD loops, built on first
	// use: for horizontal passes (1 channel, or 3 and 4) and vertical
	// ones. See resample_c.go.
	hw, vw simdLayout
}

// simdLayout is a table's weights in one layout of the SIMD loops.
type simdLayout struct {
	kind int // the layout's kind + 1; 0: not built
	w    []int32
}

// buildBox fills the table for the span lo..hi of the in input pixels
// (0..in for the whole axis), following Pillow's precompute_coeffs with a
// resize box and normalize_coeffs_8bpc operation for operation so that
// weights match: the scale is the span's (its float32 width, as Pillow
// subtracts the float box edges) and the centres start at lo.
func (t *axisTable) buildBox(in int, lo, hi float32, out int, f interp, aa bool) {
	t.in, t.out, t.f, t.aa, t.lo, t.hi = in, out, f, aa, lo, hi
	t.hw.kind, t.vw.kind = 0, 0
	t.start = reuse.Len(t.start, out)
	if f == interpNearest {
		t.buildNearest()
		return
	}
	if f.torch() {
		t.buildTorch(in, lo, hi, out, f, aa)
		return
	}
	// Pillow computes the scale from float32 box coordinates.
	scale := float64(hi-lo) / float64(out)
	origin := float64(lo)
	fs, support := filterSupport(scale, f, aa)
	kn := kernels[f]
	ax := axisWindows{in, origin, scale, support}
	t.taps = ax.taps(out)
	t.k = reuse.Len(t.k, out*t.taps)
	t.tmp = reuse.Len(t.tmp, t.taps)
	ss := 1 / fs
	for i := range out {
		center, lo, hi := ax.window(i)
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

// axisWindows are the input windows of an axis of in pixels whose box
// starts at origin, at scale input pixels per output pixel, with the
// filter's support.
type axisWindows struct {
	in                     int
	origin, scale, support float64
}

// window is Pillow's range of input pixels [lo, hi) for output i.
func (a axisWindows) window(i int) (center float64, lo, hi int) {
	center = a.origin + float64(float64(i)+0.5)*a.scale
	lo = max(int(center-a.support+0.5), 0) // int() truncates, as C's cast
	hi = max(min(int(center+a.support+0.5), a.in), lo)
	return center, lo, hi
}

// taps is the number of taps every one of out output pixels gets: the
// widest window, so that the loops run a fixed count (windows near the end
// move left with zero weights in front, which adds nothing to the sums),
// made even for the unrolled 2- and 4-tap kernels.
func (a axisWindows) taps(out int) int {
	taps := 1
	for i := range out {
		_, lo, hi := a.window(i)
		taps = max(taps, hi-lo)
	}
	if taps > 1 && taps%2 == 1 && taps < a.in {
		taps++
	}
	return taps
}

// filterSupport is the stretch of filter f at scale (input pixels per
// output pixel) and its support, the half width of an output pixel's
// window in input pixels: stretched by the scale when shrinking with
// antialias (area always), the filter's own otherwise. f is a Pillow
// filter other than nearest.
func filterSupport(scale float64, f interp, aa bool) (fs, support float64) {
	fs = scale
	if fs < 1 || (!aa && f != interpArea) {
		fs = 1
	}
	return fs, kernels[f].support * fs
}

// boxTaps is the taps buildBox gives the axis of in pixels whose span
// lo..hi is resampled to out pixels with f: the same windows, computed
// without the weights.
func boxTaps(in int, lo, hi float32, out int, f interp, aa bool) int {
	if f.torch() {
		return torchTaps(in, lo, hi, out, f, aa)
	}
	scale := float64(hi-lo) / float64(out)
	_, support := filterSupport(scale, f, aa)
	return axisWindows{in, float64(lo), scale, support}.taps(out)
}

// buildNearest follows Pillow's ImagingScaleAffine, which Image.resize uses
// for NEAREST: the source coordinate starts at scale/2 and grows by scale
// per output pixel, accumulated in float64 (not multiplied: the rounding of
// the running sum decides ties, and we must pick the same pixels), then
// truncated.
func (t *axisTable) buildNearest() {
	a := float64(t.hi-t.lo) / float64(t.out)
	x := float64(t.lo) + a*0.5
	for i := range t.out {
		t.start[i] = int32(min(max(int(x), 0), t.in-1))
		x += a
	}
}

// resampler is the per-worker state of resize and letterbox.
type resampler struct {
	tables [6]axisTable // cache: a few (in, out) pairs per axis
	clock  uint64
	tmp    []byte // the first pass's output
	cv     cvState
	// resize with source_mode (resize_source.go): an RGBA image
	// premultiplied, and the four-channel result before its conversion.
	pre, quad []byte
}

func (r *resampler) Close() {}

// Trim gives each buffer over keep bytes (the first pass's output,
// source_mode's) back to the pool; the weight tables stay (a few kilobytes
// per axis).
func (r *resampler) Trim(keep int) int {
	n := 0
	for _, b := range [...]*[]byte{&r.tmp, &r.pre, &r.quad} {
		if c := cap(*b); c > keep {
			bufpool.Put(*b)
			*b = nil
			n += c
		}
	}
	return n
}

// table returns the weights for one axis from the cache, building them on a
// miss into the least recently used slot. The LRU order guarantees that the
// table returned by the previous call survives this one.
func (r *resampler) table(in, out int, f interp, aa bool) *axisTable {
	return r.tableBox(in, 0, float32(in), out, f, aa)
}

// tableBox is table for the span lo..hi of the input axis.
func (r *resampler) tableBox(in int, lo, hi float32, out int, f interp, aa bool) *axisTable {
	r.clock++
	lru := &r.tables[0]
	for i := range r.tables {
		t := &r.tables[i]
		if t.used != 0 && t.in == in && t.out == out && t.f == f && t.aa == aa && t.lo == lo && t.hi == hi {
			t.used = r.clock
			return t
		}
		if t.used < lru.used {
			lru = t
		}
	}
	lru.buildBox(in, lo, hi, out, f, aa)
	lru.used = r.clock
	return lru
}

// rect is a window of an image: rows y..y+h, columns x..x+w.
type rect struct{ y, x, h, w int }

// resample resizes the sh×sw×c image src to dh×dw×c and writes the window
// win of the result, which must lie inside dh×dw: pixel (y, x) of the
// window goes to dst[y*stride+x*c]. dst may be a region of a larger canvas
// (letterbox); a window smaller than the image (resize fused with crop)
// costs only its own pixels: weights for its columns, the first pass over
// the input rows or columns that its second pass reads, the second over the
// window.
func (r *resampler) resample(dst []byte, stride, dh, dw int, win rect, src []byte, sh, sw, c int, f interp, aa bool) {
	if win.h <= 0 || win.w <= 0 {
		return
	}
	if f == interpOpenCVLinear {
		r.resampleCV(dst, stride, dh, dw, win, src, sh, sw, c)
		return
	}
	r.resampleBox(dst, stride, dh, dw, win, src, sh, sw, c, srcBox{0, 0, float32(sw), float32(sh)}, f, aa)
}

// srcBox is a source region in Pillow's resize box form, float32 as Pillow
// takes it: x1, y1, x2, y2, inside the image.
type srcBox [4]float32

// resampleBox is resample of the region b of src only, sampled once as
// Pillow's Image.resize(size, box=b) does: the Pillow filters, not
// opencv_linear.
func (r *resampler) resampleBox(dst []byte, stride, dh, dw int, win rect, src []byte, sh, sw, c int, b srcBox, f interp, aa bool) {
	if win.h <= 0 || win.w <= 0 {
		return
	}
	srow, wrow := sw*c, win.w*c
	needH, needV := needPasses(sh, sw, dh, dw, b)
	tableX := func(f interp, aa bool) *axisTable { return r.tableBox(sw, b[0], b[2], dw, f, aa) }
	tableY := func(f interp, aa bool) *axisTable { return r.tableBox(sh, b[1], b[3], dh, f, aa) }
	switch {
	case f == interpNearest:
		tx := tableX(interpNearest, false)
		ty := tableY(interpNearest, false)
		nearestPass(dst, stride, src, srow, c, ty, win.y, win.h, tx, win.x, win.w)
	case !needH && !needV:
		for y := range win.h {
			copy(dst[y*stride:y*stride+wrow], src[(win.y+y)*srow+win.x*c:])
		}
	case !needV:
		th := tableX(f, aa)
		hpass(dst, stride, src[win.y*srow:], srow, win.h, c, th, win.x, win.w)
	case !needH:
		tv := tableY(f, aa)
		vpass(dst, stride, src[win.x*c:], srow, wrow, tv, win.y, win.h, 0)
	case verticalFirst(sh, sw, dh, dw, f):
		tv := tableY(f, aa)
		th := tableX(f, aa)
		// Only the columns that the horizontal pass reads go through the
		// vertical one; the others of tmp are stale, and read only by
		// taps of weight 0.
		x0 := int(th.start[win.x]) * c
		x1 := (int(th.start[win.x+win.w-1]) + th.taps) * c
		r.tmp = growBuf(r.tmp, win.h*srow)
		vpass(r.tmp[x0:], srow, src[x0:], srow, x1-x0, tv, win.y, win.h, 0)
		hpass(dst, stride, r.tmp, srow, win.h, c, th, win.x, win.w)
	default:
		tv := tableY(f, aa)
		th := tableX(f, aa)
		// Only the rows that the vertical pass reads go through the
		// horizontal one.
		y0 := int(tv.start[win.y])
		y1 := int(tv.start[win.y+win.h-1]) + tv.taps
		r.tmp = growBuf(r.tmp, (y1-y0)*wrow)
		hpass(r.tmp, wrow, src[y0*srow:], srow, y1-y0, c, th, win.x, win.w)
		vpass(dst, stride, r.tmp, wrow, wrow, tv, win.y, win.h, y0)
	}
}

// needPasses are Pillow's need_horizontal and need_vertical: whether a
// pass over each axis runs at all for the box b of an sh×sw image resized
// to dh×dw.
func needPasses(sh, sw, dh, dw int, b srcBox) (needH, needV bool) {
	needH = dw != sw || b[0] != 0 || b[2] != float32(dw)
	needV = dh != sh || b[1] != 0 || b[3] != float32(dh)
	return needH, needV
}

// verticalFirst is Pillow 13's pass order (PR 9549): vertical first when
// the height shrinks by over twice as many pixels as the width, which is
// less work, and since each pass rounds, the order shows in the pixels.
// With a box it still compares the whole image's sizes (checked against
// Pillow 13.0.0 with one-axis box resizes). torch's modes always run the
// horizontal pass first.
func verticalFirst(sh, sw, dh, dw int, f interp) bool {
	return sh-dh > 2*(sw-dw) && dh < sh && !f.torch()
}

// The price of resampling, in codec work units (about one per sample
// visited, a third of a nanosecond of one core: codec.Limits.MaxWork).
// BenchmarkResampleWork measures nanoseconds per unit.
const (
	// resampleTapWork: one tap of a pass on one channel, a load and a
	// multiply-add in the C loops.
	resampleTapWork = 1
	// resamplePixelWork: each output pixel's base, its clipping, store and
	// loop, whatever the filter.
	resamplePixelWork = 4
	// resampleWeightWork: one weight of an axis table, a filter evaluation
	// in float64 with its normalisation and rounding, and its SIMD layout.
	resampleWeightWork = 16
	// resampleCVTapWork: one tap of opencv_linear's passes on one
	// channel, scalar Go loops with OpenCV's shifts and clamps
	// (resample_cv.go) rather than SIMD C.
	resampleCVTapWork = 4
	// resampleCallWork: a call's fixed cost (a crop_boxes box of a few
	// pixels still looks its tables up and sets its passes up).
	resampleCallWork = 256
)

// resampleWork is the work of resample (sh, sw, dh, dw, win, c, f, aa as
// given to it, b the whole image) or of resampleBox (b its box): the
// separable passes that run, taps × channels for every sample each pass
// writes, plus the axis tables and a base per output pixel. It follows the
// resampler's own choices: which passes run (needPasses), their order
// (verticalFirst), the input rows or columns the first pass covers for the
// window, and each axis's taps as its table gets them (boxTaps), so that
// what is priced is what runs. It takes O(dh + dw) time, a small part of
// the base it prices per output pixel. The result saturates at
// math.MaxInt64.
func resampleWork(sh, sw, dh, dw int, win rect, c int, b srcBox, f interp, aa bool) int64 {
	if win.h <= 0 || win.w <= 0 {
		return 0
	}
	wh, ww := float64(win.h), float64(win.w)
	out, cc := wh*ww, float64(c)
	work := resampleCallWork + out*resamplePixelWork
	needH, needV := needPasses(sh, sw, dh, dw, b)
	switch {
	case f == interpOpenCVLinear:
		switch {
		case dh == sh && dw == sw:
			work += out * cc
		case cvAreaFast(sh, sw, dh, dw):
			work += 4 * out * cc
		default:
			// The horizontal pass runs once on each source row the
			// window's rows read, two of them each at most; the
			// vertical one weighs two rows.
			rows := min(2*wh, math.Ceil(wh*float64(sh)/float64(dh))+2)
			work += float64(dh+dw)*resampleWeightWork + (2*rows*ww+2*out)*cc*resampleCVTapWork
		}
	case f == interpNearest || !needH && !needV:
		// One input pixel per output pixel.
		work += float64(dh+dw) + out*cc
	default:
		sx, sy := float64(b[2]-b[0])/float64(dw), float64(b[3]-b[1])/float64(dh)
		tx, ty := float64(boxTaps(sw, b[0], b[2], dw, f, aa)), float64(boxTaps(sh, b[1], b[3], dh, f, aa))
		tap := cc * resampleTapWork
		switch {
		case !needV:
			work += float64(dw)*tx*resampleWeightWork + out*tx*tap
		case !needH:
			work += float64(dh)*ty*resampleWeightWork + out*ty*tap
		case verticalFirst(sh, sw, dh, dw, f):
			cols := min(float64(sw), math.Ceil(ww*sx)+tx)
			work += (float64(dw)*tx+float64(dh)*ty)*resampleWeightWork + (wh*cols*ty+out*tx)*tap
		default:
			rows := min(float64(sh), math.Ceil(wh*sy)+ty)
			work += (float64(dw)*tx+float64(dh)*ty)*resampleWeightWork + (rows*ww*tx+out*ty)*tap
		}
	}
	return satWork(work)
}

// resampleDetail says what a refused resampling was, for Ctx.Charge.
func resampleDetail(sh, sw, dh, dw int, win rect, f interp, aa bool) string {
	s := fmt.Sprintf("resampling %dx%d to %dx%d", sw, sh, dw, dh)
	if win.h != dh || win.w != dw {
		s += fmt.Sprintf(" (a %dx%d window of it)", win.w, win.h)
	}
	s += ", " + f.String()
	if aa && f != interpNearest && f != interpOpenCVLinear {
		s += " with antialias"
	}
	return s
}

// chargeResample charges c, as op, before the work runs, for resampling
// the whole sh×sw image of ch channels to dh×dw (the window win of it) with
// f, plus extra units done beside it: what resize, letterbox and their GPU
// steps price alike.
func chargeResample(c *Ctx, op string, sh, sw, ch, dh, dw int, win rect, f interp, aa bool, extra float64) error {
	work := float64(resampleWork(sh, sw, dh, dw, win, ch, srcBox{0, 0, float32(sw), float32(sh)}, f, aa)) + extra
	return c.Charge(op, satWork(work), func() string { return resampleDetail(sh, sw, dh, dw, win, f, aa) })
}

// satWork converts an estimate made in float64, whose products of sizes
// and taps may pass int64's range, to work units.
func satWork(w float64) int64 {
	if w >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(w)
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
