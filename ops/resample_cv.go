package ops

import (
	"math"

	"github.com/sluice-dev/sluice/internal/reuse"
)

// interp "opencv_linear": OpenCV's cv2.resize(..., interpolation=
// INTER_LINEAR) on uint8 images, bit for bit. OpenCV's uint8 bilinear is
// fixed point, and its rounding differs from Pillow's (22-bit weights,
// clipping per pass) by one level on a good part of the pixels, which is
// what detectors trained on cv2-preprocessed images see. Its arithmetic,
// from imgproc's resize.cpp (hal::resize, resizeGeneric_, HResizeLinear,
// VResizeLinear<uchar>), checked against opencv-python on many sizes:
//
//   - scale = 1 / (out/in) in float64 per axis. Same size: a copy.
//   - Both scales exactly 2 (is_area_fast with iscale 2): INTER_AREA's
//     fast path, (a+b+c+d+2) >> 2 over each 2×2 block.
//   - Otherwise, per output pixel i of an axis: f = float32((i+0.5)*scale
//     - 0.5), s = floor(f), f -= s; the weights are round-half-even of
//     (1-f)*2048 and f*2048 in float32 (INTER_RESIZE_COEF_BITS = 11).
//   - Horizontal pass, into int32: left of the image (s < 0) s = 0 and f =
//     0; from the first i whose s+1 reaches the last column on, the last
//     column times 2048; in between S[s]*w0 + S[s+1]*w1.
//   - Vertical pass: the rows s and s+1, each clipped into the image, with
//     weights left unclipped (above the top both rows are row 0 with
//     weights 1-f and f, and the rounding below shows it):
//     ((w0*(R0>>4))>>16 + (w1*(R1>>4))>>16 + 2) >> 2.
//
// Every output pixel depends on its position alone, so a window of the
// result (resize fused with crop, letterbox's region) is computed alone.

// cvAxis is one axis of OpenCV's bilinear map: output i reads source
// pixels (or rows) s[i] and s[i]+1 with weights w[2i], w[2i+1] of 2048.
type cvAxis struct {
	in, out int
	s       []int32
	w       []int32
	edge    int // first output of the horizontal pass that copies the last column (xmax)
}

// build follows hal::resize's table loops. Horizontal tables clip s and f
// at both ends; vertical ones keep them (clip only rows, when reading).
func (t *cvAxis) build(in, out int, horizontal bool) {
	t.in, t.out = in, out
	t.s = reuse.Len(t.s, out)
	t.w = reuse.Len(t.w, 2*out)
	t.edge = out
	scale := 1 / (float64(out) / float64(in))
	for i := range out {
		// float64() keeps Go from fusing the multiply-add (GOAMD64=v3,
		// arm64): OpenCV's x86 build rounds the product first.
		f := float32(float64(float64(i)+0.5)*scale - 0.5)
		s := int(math.Floor(float64(f)))
		f -= float32(s)
		if horizontal {
			if s < 0 {
				s, f = 0, 0
			}
			if s+1 >= in {
				t.edge = min(t.edge, i)
				s, f = in-1, 0
			}
		}
		t.s[i] = int32(s)
		t.w[2*i] = int32(math.RoundToEven(float64((1 - f) * 2048)))
		t.w[2*i+1] = int32(math.RoundToEven(float64(f * 2048)))
	}
}

// cvState is the per-worker part of the resampler for opencv_linear.
type cvState struct {
	x, y cvAxis
	rows []int32 // two horizontal-pass rows of the window
}

// cvAreaFast reports whether OpenCV resizes in×in2 to out×out2 through
// INTER_AREA's 2×2 path: both scales within DBL_EPSILON of the integer
// that saturate_cast (round half even) gives, and that integer 2.
func cvAreaFast(sh, sw, dh, dw int) bool {
	two := func(in, out int) bool {
		s := 1 / (float64(out) / float64(in))
		return math.RoundToEven(s) == 2 && math.Abs(s-2) < 0x1p-52
	}
	return two(sw, dw) && two(sh, dh)
}

// resampleCV is resample for interp opencv_linear: same arguments, same
// window rule.
func (r *resampler) resampleCV(dst []byte, stride, dh, dw int, win rect, src []byte, sh, sw, c int) {
	srow, wrow := sw*c, win.w*c
	switch {
	case dh == sh && dw == sw:
		for y := range win.h {
			copy(dst[y*stride:y*stride+wrow], src[(win.y+y)*srow+win.x*c:])
		}
		return
	case cvAreaFast(sh, sw, dh, dw):
		for y := range win.h {
			s0 := src[2*(win.y+y)*srow:]
			s1 := s0[srow:]
			d := dst[y*stride : y*stride+wrow]
			for x := range win.w {
				p := 2 * (win.x + x) * c
				for k := range c {
					v := int(s0[p+k]) + int(s0[p+c+k]) + int(s1[p+k]) + int(s1[p+c+k])
					d[x*c+k] = byte((v + 2) >> 2)
				}
			}
		}
		return
	}
	cv := &r.cv
	if cv.x.in != sw || cv.x.out != dw || len(cv.x.s) != dw {
		cv.x.build(sw, dw, true)
	}
	if cv.y.in != sh || cv.y.out != dh || len(cv.y.s) != dh {
		cv.y.build(sh, dh, false)
	}
	cv.rows = reuse.Len(cv.rows, 2*wrow)
	buf := [2][]int32{cv.rows[:wrow], cv.rows[wrow:]}
	held := [2]int{-1, -1} // the source row each buffer holds
	row := func(sy int) []int32 {
		sy = min(max(sy, 0), sh-1)
		for b := range held {
			if held[b] == sy {
				return buf[b]
			}
		}
		return nil
	}
	for y := range win.h {
		sy := int(cv.y.s[win.y+y])
		r0, r1 := min(max(sy, 0), sh-1), min(max(sy+1, 0), sh-1)
		// Fill the rows not held, into buffers that the other row
		// does not need.
		for _, need := range [2]int{r0, r1} {
			if row(need) != nil {
				continue
			}
			b := 0
			if held[0] == r0 || held[0] == r1 {
				b = 1
			}
			cvHPass(buf[b], src[need*srow:(need+1)*srow], c, &cv.x, win.x, win.w)
			held[b] = need
		}
		cvVPass(dst[y*stride:y*stride+wrow], row(r0), row(r1), cv.y.w[2*(win.y+y)], cv.y.w[2*(win.y+y)+1])
	}
}

// cvHPass is HResizeLinear on one source row, for outputs x0..x0+n-1.
// The re-slicing lets the compiler drop bounds checks from the loops.
func cvHPass(d []int32, s []byte, c int, t *cvAxis, x0, n int) {
	d = d[:n*c]
	split := min(max(t.edge-x0, 0), n) // outputs before it interpolate, from it on copy
	w := t.w[2*x0 : 2*(x0+split)]
	for x := range split {
		p := int(t.s[x0+x]) * c
		w0, w1 := w[2*x], w[2*x+1]
		a, b, o := s[p:p+c], s[p+c:p+2*c], d[x*c:x*c+c]
		for k := range o {
			o[k] = int32(a[k])*w0 + int32(b[k])*w1
		}
	}
	for x := split; x < n; x++ {
		p := int(t.s[x0+x]) * c
		a, o := s[p:p+c], d[x*c:x*c+c]
		for k := range o {
			o[k] = int32(a[k]) * 2048
		}
	}
}

// cvVPass is VResizeLinear<uchar>: each product loses its low 16 bits
// (the SIMD path multiplies int16 halves, mulhi), then one rounding shift.
// The sum cannot leave 0..255; the clamp is the SIMD path's saturation.
func cvVPass(d []byte, r0, r1 []int32, w0, w1 int32) {
	r0, r1 = r0[:len(d)], r1[:len(d)]
	for j := range d {
		v := (w0*(r0[j]>>4))>>16 + (w1*(r1[j]>>4))>>16
		d[j] = byte(min(max((v+2)>>2, 0), 255))
	}
}
