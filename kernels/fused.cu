// The GPU path's whole post-decode work in one kernel: orientation, crop
// window, Pillow-exact resampling weights, letterbox/crop placement with
// fill, channel selection (grey from colour included), normalisation and
// the cast to the output type and layout.
//
// Why one kernel: every stage after decoding is a per-pixel map or a small
// local filter, so fusing them means each decoded pixel is read about once
// from DRAM (neighbouring threads share their taps through the caches), each
// output element is written once, no intermediate image is ever stored, and
// a whole batch of differently sized images costs a single launch (grid z is
// the sample).
//
// Resampling follows ops/resample.go (Pillow): the same windows and
// weights, computed on the fly per output pixel (no tables to upload), and
// the same two passes with values rounded to bytes between and after them,
// but as nested loops over the taps of one output pixel rather than over
// an intermediate image, and in float rather than 22-bit fixed point. The
// bytes therefore match the CPU's except where a sum falls within float
// rounding of a half: a difference of one level on rare pixels. OpenCV's
// INTER_LINEAR (interp 4) follows ops/resample_cv.go in its own integer
// arithmetic, and torch's uint8 modes (interp 5 and 6) ops/resample_torch.go
// in theirs (torch.cuh), so their bytes equal the CPU's.
//
// Built to PTX by `make ptx` (scripts/ptx.sh); the Go side embeds it.

#include <cuda_fp16.h>
#include <stddef.h>

// One image of the batch; the source is an HWC uint8 image in device memory.
// Mirrored by kernels.Sample (a test compares the layouts).
struct sluice_sample {
    unsigned long long src;  // decoded image
    unsigned long long dst;  // this sample's output: out_h*out_w*out_c elements
    int src_h, src_w;        // as stored
    int src_pitch;           // bytes between stored rows
    int src_c;               // channels stored: 1, 3 or 4
    int orient;              // EXIF orientation 1..8: read the stored image upright
    int win_y, win_x;        // window of the upright image that is resized; may reach outside it
    int win_h, win_w;
    int rs_h, rs_w;          // size the window is resized to (window size: a plain copy)
    int off_y, off_x;        // output (y,x) shows resized (y-off_y, x-off_x); elsewhere fill
    int out_h, out_w;        // this sample's output size
    int zero;                // 1: write zeros, whatever the rest says (an unused box crop)
    float box_y0, box_x0;    // the region of the window resized, in window pixels, as Pillow's
    float box_y1, box_x1;    // float resize box (a box crop's); all zero: the whole window
};

// The same for the whole batch; passed by value. Mirrored by kernels.Params.
struct sluice_params {
    int interp;       // 0 nearest, 1 linear, 2 cubic, 3 area (Pillow's), 4 OpenCV's INTER_LINEAR, 5 and 6 torch's uint8 bilinear and bicubic
    int antialias;    // 1: widen linear and cubic when shrinking; area always widens
    int out_c;        // output channels 1..4
    int layout;       // 0 CHW, 1 HWC
    int dtype;        // 0 uint8, 1 float16, 2 float32
    int src_chan[4];  // per output channel: source channel, -2 luma; >= src_c reads 255
    float fill[4];    // per output channel, 0..255 scale, before mul/add
    float mul[4];     // out = clamp(v, 0, 255) * mul + add
    float add[4];
};

static_assert(sizeof(sluice_sample) == 96, "sluice_sample size");
static_assert(offsetof(sluice_sample, dst) == 8, "sluice_sample.dst offset");
static_assert(offsetof(sluice_sample, src_h) == 16, "sluice_sample.src_h offset");
static_assert(offsetof(sluice_sample, orient) == 32, "sluice_sample.orient offset");
static_assert(offsetof(sluice_sample, win_y) == 36, "sluice_sample.win_y offset");
static_assert(offsetof(sluice_sample, rs_h) == 52, "sluice_sample.rs_h offset");
static_assert(offsetof(sluice_sample, off_y) == 60, "sluice_sample.off_y offset");
static_assert(offsetof(sluice_sample, out_h) == 68, "sluice_sample.out_h offset");
static_assert(offsetof(sluice_sample, zero) == 76, "sluice_sample.zero offset");
static_assert(offsetof(sluice_sample, box_y0) == 80, "sluice_sample.box_y0 offset");
static_assert(offsetof(sluice_sample, box_x1) == 92, "sluice_sample.box_x1 offset");
static_assert(sizeof(sluice_params) == 84, "sluice_params size");
static_assert(offsetof(sluice_params, dtype) == 16, "sluice_params.dtype offset");
static_assert(offsetof(sluice_params, src_chan) == 20, "sluice_params.src_chan offset");
static_assert(offsetof(sluice_params, fill) == 36, "sluice_params.fill offset");
static_assert(offsetof(sluice_params, mul) == 52, "sluice_params.mul offset");
static_assert(offsetof(sluice_params, add) == 68, "sluice_params.add offset");

enum {
    INTERP_NEAREST = 0,
    INTERP_LINEAR = 1,
    INTERP_CUBIC = 2,
    INTERP_AREA = 3,
    INTERP_OPENCV_LINEAR = 4,
    INTERP_TORCH_LINEAR = 5,
    INTERP_TORCH_CUBIC = 6
};
enum { KIND_FLAT = 0, KIND_TRIANGLE = 1, KIND_CUBIC = 2 };

// The taps of one output coordinate along one axis, in window coordinates:
// inputs lo..lo+n-1, tap t weighted kernel((base+t)*ss) * inv (KIND_FLAT:
// weight inv for every tap).
struct axis_taps {
    int lo, n, kind;
    float base, ss, inv;
};

__device__ __forceinline__ float filter_weight(int kind, float x) {
    x = fabsf(x);
    if (kind == KIND_TRIANGLE) {
        return x < 1.0f ? 1.0f - x : 0.0f;
    }
    // Keys' cubic, a = -0.5, as Pillow's BICUBIC.
    if (x < 1.0f) {
        return (1.5f * x - 2.5f) * x * x + 1.0f;
    }
    if (x < 2.0f) {
        return (((x - 5.0f) * x + 8.0f) * x - 4.0f) * -0.5f;
    }
    return 0.0f;
}

// axis_setup reproduces axisTable.buildBox (and buildNearest) of
// ops/resample.go for output coordinate i of an axis of in pixels whose
// span b0..b1 (Pillow's float resize box) is resized to out. Taps are in
// the axis's pixels. The bounds use the CPU's double arithmetic with
// explicit rounding intrinsics so that no fused multiply-add moves a
// window edge.
__device__ axis_taps axis_setup(int i, int in, float b0, float b1, int out, int interp, bool aa) {
    axis_taps a;
    a.kind = KIND_FLAT;
    a.base = 0.0f;
    a.ss = 1.0f;
    a.inv = 1.0f;
    a.n = 1;
    if (in == out && b0 == 0.0f && b1 == (float)out) {  // Pillow skips the pass: a plain copy
        a.lo = i;
        return a;
    }
    // Pillow's scale is that of the float box's width.
    const double origin = (double)b0;
    double scale = (double)__fsub_rn(b1, b0) / (double)out;
    if (interp == INTERP_NEAREST) {
        // Pillow accumulates the coordinate; the running sum decides
        // exact ties (frequent with rational ratios), so near one the sum
        // is replayed exactly.
        const double x0 = __dadd_rn(origin, scale * 0.5);
        double x = __dadd_rn(x0, (double)i * scale);
        if (fabs(x - rint(x)) < 1e-5) {
            x = x0;
            for (int k = 0; k < i; k++) {
                x = __dadd_rn(x, scale);
            }
        }
        a.lo = min(max((int)x, 0), in - 1);
        return a;
    }
    double fs = scale;
    if (fs < 1.0 || (!aa && interp != INTERP_AREA)) {
        fs = 1.0;
    }
    double support = (interp == INTERP_CUBIC ? 2.0 : interp == INTERP_AREA ? 0.5 : 1.0) * fs;
    double ss = 1.0 / fs;
    double center = __dadd_rn(origin, __dmul_rn(__dadd_rn((double)i, 0.5), scale));
    int lo = max((int)__dadd_rn(__dsub_rn(center, support), 0.5), 0);
    int hi = max(min((int)__dadd_rn(__dadd_rn(center, support), 0.5), in), lo);
    if (interp == INTERP_AREA) {
        // The box's weights are 1 on a run of taps and 0 elsewhere; its
        // edges are ties, decided in double exactly as on the CPU.
        int first = hi, last = lo - 1;
        for (int j = lo; j < hi; j++) {
            double x = __dmul_rn(__dadd_rn(__dsub_rn((double)j, center), 0.5), ss);
            if (x > -0.5 && x <= 0.5) {
                first = min(first, j);
                last = j;
            }
        }
        a.lo = first < hi ? first : lo;
        a.n = max(last - first + 1, 0);
        a.inv = a.n > 0 ? 1.0f / (float)a.n : 1.0f;
        return a;
    }
    a.kind = interp == INTERP_CUBIC ? KIND_CUBIC : KIND_TRIANGLE;
    a.lo = lo;
    a.n = hi - lo;
    a.base = (float)__dadd_rn(__dsub_rn((double)lo, center), 0.5);
    a.ss = (float)ss;
    float sum = 0.0f;
    for (int t = 0; t < a.n; t++) {
        sum += filter_weight(a.kind, (a.base + (float)t) * a.ss);
    }
    a.inv = sum != 0.0f ? 1.0f / sum : 1.0f;
    return a;
}

__device__ __forceinline__ float tap_weight(const axis_taps& a, int t) {
    return a.kind == KIND_FLAT ? 1.0f : filter_weight(a.kind, (a.base + (float)t) * a.ss);
}

// to_byte is the CPU's fixed-point rounding of a resampled value, half up,
// clipped to 0..255 (Pillow's clip8).
__device__ __forceinline__ float to_byte(float x) { return fminf(fmaxf(floorf(x + 0.5f), 0.0f), 255.0f); }

// What each output channel reads from a source pixel.
enum { SEL_ALPHA = -1, SEL_LUMA = -2 };

// The upright image of a sample: upright (u, w) is stored byte
// u*su + w*sv + o0 (orientations as codec.Orient applies them), of
// channels sc; sel holds each output channel's source (SEL_*).
struct upright {
    const unsigned char* src;
    long long o0, su, sv;
    int uh, uw, sc;
    int sel[4];
};

// fetch reads what each output channel takes from upright pixel (u, w),
// or the fill outside the image (the window was cut from an image padded
// with fill).
__device__ __forceinline__ void fetch(const upright& im, const float fill[4], int u, int w, float px[4]) {
    if (u < 0 || u >= im.uh || w < 0 || w >= im.uw) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            px[k] = fill[k];
        }
        return;
    }
    const int sc = im.sc;
    const unsigned char* q = im.src + (im.o0 + (long long)u * im.su + (long long)w * im.sv);
    const unsigned int b0 = __ldg(q);
    const unsigned int b1 = sc > 1 ? __ldg(q + 1) : b0;
    const unsigned int b2 = sc > 2 ? __ldg(q + 2) : b0;
    const unsigned int b3 = sc > 3 ? __ldg(q + 3) : 255u;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int c = im.sel[k];
        unsigned int val;
        if (c == SEL_LUMA) {
            // libjpeg's and codec's fixed-point ITU-R 601 luma, rounded
            // as the CPU's grey decode.
            val = (b0 * 19595u + b1 * 38470u + b2 * 7471u + 0x8000u) >> 16;
        } else if (c == SEL_ALPHA) {
            val = 255u;
        } else {
            // Selects, not an indexed array, keep it in registers.
            val = c == 0 ? b0 : c == 1 ? b1 : c == 2 ? b2 : b3;
        }
        px[k] = (float)val;
    }
}

// cv_coord is OpenCV's map (ops/resample_cv.go, cvAxis.build) of output i
// of an axis resizing in to out: source s and the fraction f, in the same
// double-then-float arithmetic, each step rounded on its own (no fused
// multiply-add).
__device__ __forceinline__ void cv_coord(int i, int in, int out, int* s, float* f) {
    const double scale = __ddiv_rn(1.0, __ddiv_rn((double)out, (double)in));
    const float x = __double2float_rn(__dsub_rn(__dmul_rn((double)i + 0.5, scale), 0.5));
    const float fl = floorf(x);
    *s = (int)fl;
    *f = __fsub_rn(x, fl);
}

// cv_weight is round-half-even of w*2048 in float (INTER_RESIZE_COEF_BITS).
__device__ __forceinline__ int cv_weight(float w) { return (int)rintf(__fmul_rn(w, 2048.0f)); }

// cv_area_fast: both scales are 2 (within DBL_EPSILON): OpenCV then takes
// INTER_AREA's 2x2 average instead.
__device__ __forceinline__ bool cv_area_fast(int in, int out) {
    const double s = __ddiv_rn(1.0, __ddiv_rn((double)out, (double)in));
    return rint(s) == 2.0 && fabs(s - 2.0) < 0x1p-52;
}

// cv_linear is output (ry, rx) of OpenCV's cv2.resize(INTER_LINEAR) of
// the window (its top left at upright (wy, wx), wh x ww) to rh x rw, as
// ops/resample_cv.go computes it: a copy at the same size, the 2x2
// average at exactly half, else a horizontal pass into 11-bit fixed point
// (its source column clipped, the last column copied past the edge) of
// the two rows the vertical map names (clipped to the window), weighed
// with the vertical weights as VResizeLinear<uchar> does.
__device__ void cv_linear(const upright& im, const float fill[4], int wy, int wx, int wh, int ww, int rh, int rw,
                          int ry, int rx, float v[4]) {
    if (wh == rh && ww == rw) {
        fetch(im, fill, wy + ry, wx + rx, v);
        return;
    }
    if (cv_area_fast(wh, rh) && cv_area_fast(ww, rw)) {
        float a[4], b[4], c[4], d[4];
        fetch(im, fill, wy + 2 * ry, wx + 2 * rx, a);
        fetch(im, fill, wy + 2 * ry, wx + 2 * rx + 1, b);
        fetch(im, fill, wy + 2 * ry + 1, wx + 2 * rx, c);
        fetch(im, fill, wy + 2 * ry + 1, wx + 2 * rx + 1, d);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            v[k] = (float)(((int)a[k] + (int)b[k] + (int)c[k] + (int)d[k] + 2) >> 2);
        }
        return;
    }
    int sx, sy;
    float fx, fy;
    cv_coord(rx, ww, rw, &sx, &fx);
    cv_coord(ry, wh, rh, &sy, &fy);
    if (sx < 0) {
        sx = 0, fx = 0.0f;
    }
    const bool edge = sx + 1 >= ww;  // the last column, times 2048
    if (edge) {
        sx = ww - 1, fx = 0.0f;
    }
    const int wx0 = cv_weight(__fsub_rn(1.0f, fx)), wx1 = cv_weight(fx);
    const int wy0 = cv_weight(__fsub_rn(1.0f, fy)), wy1 = cv_weight(fy);
    int h[2][4];
    const int rows[2] = {min(max(sy, 0), wh - 1), min(max(sy + 1, 0), wh - 1)};
#pragma unroll
    for (int r = 0; r < 2; r++) {
        float p0[4], p1[4];
        fetch(im, fill, wy + rows[r], wx + sx, p0);
        if (edge) {
#pragma unroll
            for (int k = 0; k < 4; k++) {
                h[r][k] = (int)p0[k] * 2048;
            }
        } else {
            fetch(im, fill, wy + rows[r], wx + sx + 1, p1);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                h[r][k] = (int)p0[k] * wx0 + (int)p1[k] * wx1;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int t = ((wy0 * (h[0][k] >> 4)) >> 16) + ((wy1 * (h[1][k] >> 4)) >> 16);
        v[k] = (float)min(max((t + 2) >> 2, 0), 255);
    }
}

#include "torch.cuh"

// fused_sample is one thread's output pixel. TORCH: the launch is one of
// torch's modes (sluice_fused_torch, interp 5 or 6); otherwise any other
// (sluice_fused).
template <bool TORCH>
__device__ __forceinline__ void fused_sample(const sluice_sample* __restrict__ samples, const sluice_params& p) {
    const sluice_sample s = samples[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const bool whole = s.box_y0 == 0.0f && s.box_x0 == 0.0f && s.box_y1 == 0.0f && s.box_x1 == 0.0f;
    const float by1 = whole ? (float)s.win_h : s.box_y1, bx1 = whole ? (float)s.win_w : s.box_x1;
    // torch's modes: the block finds each axis's precision before any of
    // its threads returns (the interp is the launch's, so all or none).
    torch_axis tay = {}, tax = {};
    int tpy = 0, tpx = 0;
    if (TORCH) {
        const bool cubic = p.interp == INTERP_TORCH_CUBIC, aa = p.antialias != 0;
        tay = torch_axis_of(s.win_h, s.box_y0, by1, s.rs_h, cubic, aa);
        tax = torch_axis_of(s.win_w, s.box_x0, bx1, s.rs_w, cubic, aa);
        const bool live = !s.zero && s.win_h > 0 && s.win_w > 0 && s.rs_h > 0 && s.rs_w > 0;
        torch_precisions(tay, tax, live, &tpy, &tpx);
    }
    if (x >= s.out_w || y >= s.out_h) {
        return;
    }
    const int oc = min(max(p.out_c, 1), 4);
    const int sc = s.src_c;
    const int ry = y - s.off_y, rx = x - s.off_x;

    float v[4];
    if (s.zero) {
        // An unused row of box crops: zeros in the output type, not the
        // fill mapped through mul/add.
        const size_t plane = (size_t)s.out_h * (size_t)s.out_w;
        const size_t pix = (size_t)y * (size_t)s.out_w + (size_t)x;
        for (int k = 0; k < oc; k++) {
            const size_t i = p.layout == 0 ? (size_t)k * plane + pix : pix * (size_t)oc + (size_t)k;
            if (p.dtype == 0) {
                ((unsigned char*)s.dst)[i] = 0;
            } else if (p.dtype == 1) {
                ((__half*)s.dst)[i] = __float2half_rn(0.0f);
            } else {
                ((float*)s.dst)[i] = 0.0f;
            }
        }
        return;
    }
    if (ry < 0 || ry >= s.rs_h || rx < 0 || rx >= s.rs_w || s.win_h <= 0 || s.win_w <= 0) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            v[k] = p.fill[k];
        }
    } else {
        // Channel selectors, resolved once per thread.
        upright im;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            int c = p.src_chan[k];
            if (c == SEL_LUMA) {
                im.sel[k] = sc >= 3 ? SEL_LUMA : 0;
            } else if (c < 0) {
                im.sel[k] = 0;
            } else if (sc == 1 && c < 3) {
                im.sel[k] = 0;  // grey serves red, green and blue
            } else {
                im.sel[k] = c < sc ? c : SEL_ALPHA;
            }
        }
        // The upright size swaps for orientations 5..8.
        const long long pitch = s.src_pitch, cc = sc;
        const long long H1 = s.src_h - 1, W1 = s.src_w - 1;
        im.o0 = 0, im.su = pitch, im.sv = cc;
        switch (s.orient) {
            case 2: im.o0 = W1 * cc; im.su = pitch; im.sv = -cc; break;
            case 3: im.o0 = H1 * pitch + W1 * cc; im.su = -pitch; im.sv = -cc; break;
            case 4: im.o0 = H1 * pitch; im.su = -pitch; im.sv = cc; break;
            case 5: im.o0 = 0; im.su = cc; im.sv = pitch; break;
            case 6: im.o0 = H1 * pitch; im.su = cc; im.sv = -pitch; break;
            case 7: im.o0 = H1 * pitch + W1 * cc; im.su = -cc; im.sv = -pitch; break;
            case 8: im.o0 = W1 * cc; im.su = -cc; im.sv = pitch; break;
            default: break;
        }
        const bool swap = s.orient >= 5 && s.orient <= 8;
        im.uh = swap ? s.src_w : s.src_h;
        im.uw = swap ? s.src_h : s.src_w;
        im.sc = sc;
        im.src = (const unsigned char*)s.src;

        if (TORCH) {
            torch_resample(im, p.fill, s.win_y, s.win_x, tay, tax, tpy, tpx, ry, rx, v);
        } else if (p.interp == INTERP_OPENCV_LINEAR) {
            cv_linear(im, p.fill, s.win_y, s.win_x, s.win_h, s.win_w, s.rs_h, s.rs_w, ry, rx, v);
        } else {
            const bool aa = p.antialias != 0;
            const axis_taps ay = axis_setup(ry, s.win_h, s.box_y0, by1, s.rs_h, p.interp, aa);
            const axis_taps ax = axis_setup(rx, s.win_w, s.box_x0, bx1, s.rs_w, p.interp, aa);

            // Pillow's two passes: the one it runs first (vertical when the
            // height shrinks by over twice as many pixels as the width, as
            // ops.resample) is the inner loop, and its results are rounded
            // to bytes before the outer pass weighs them, as the CPU's
            // intermediate image does. A pass over an unchanged axis is a
            // copy, where the rounding changes nothing.
            const bool vfirst = s.win_h - s.rs_h > 2 * (s.win_w - s.rs_w) && s.rs_h < s.win_h;
            const axis_taps ao = vfirst ? ax : ay;
            const axis_taps ai = vfirst ? ay : ax;
            float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int to = 0; to < ao.n; to++) {
                float racc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                for (int ti = 0; ti < ai.n; ti++) {
                    const int u = s.win_y + ay.lo + (vfirst ? ti : to);  // upright row
                    const int w = s.win_x + ax.lo + (vfirst ? to : ti);  // upright column
                    float px[4];
                    fetch(im, p.fill, u, w, px);
                    const float wi = tap_weight(ai, ti);
#pragma unroll
                    for (int k = 0; k < 4; k++) {
                        racc[k] = fmaf(wi, px[k], racc[k]);
                    }
                }
                const float wo = tap_weight(ao, to);
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    acc[k] = fmaf(wo, to_byte(racc[k] * ai.inv), acc[k]);
                }
            }
#pragma unroll
            for (int k = 0; k < 4; k++) {
                v[k] = to_byte(acc[k] * ao.inv);
            }
        }
    }

    const size_t plane = (size_t)s.out_h * (size_t)s.out_w;
    const size_t pix = (size_t)y * (size_t)s.out_w + (size_t)x;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if (k >= oc) {
            break;
        }
        // Resampled values are bytes already; the clamp bounds the fill.
        const float f = fminf(fmaxf(v[k], 0.0f), 255.0f) * p.mul[k] + p.add[k];
        const size_t i = p.layout == 0 ? (size_t)k * plane + pix : pix * (size_t)oc + (size_t)k;
        switch (p.dtype) {
            case 0:  // as ops.normalize: round half to even, then clamp
                ((unsigned char*)s.dst)[i] = (unsigned char)fminf(fmaxf(rintf(f), 0.0f), 255.0f);
                break;
            case 1:
                ((__half*)s.dst)[i] = __float2half_rn(f);
                break;
            default:
                ((float*)s.dst)[i] = f;
                break;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) sluice_fused(const sluice_sample* __restrict__ samples,
                                                              sluice_params p) {
    fused_sample<false>(samples, p);
}

// torch's uint8 modes (interp 5 and 6) have an entry point of their own:
// their float64 weights and the block-wide precision take about twice the
// registers of the other modes, which would halve sluice_fused's occupancy.
extern "C" __global__ void __launch_bounds__(256) sluice_fused_torch(const sluice_sample* __restrict__ samples,
                                                                    sluice_params p) {
    fused_sample<true>(samples, p);
}

// ---------------------------------------------------------------------------
// Colour JPEGs reach the GPU as nvJPEG's planar YCbCr rather than its RGB:
// nvJPEG's own chroma upsampling is not libjpeg's "fancy" (triangular) one
// and differs from the CPU decode by tens of levels at colour edges.
// sluice_ycc upsamples and converts the planes exactly as libjpeg-turbo 2.1
// does with TurboJPEG's default flags (jdsample.c's fancy upsamplers,
// jdcolor.c's ycc_rgb_convert), or with chroma replicated when simple is
// set (do_fancy_upsampling off), so that only IDCT rounding can differ from
// codec's RGB decode.

// One colour JPEG decoded to planes. Mirrored by kernels.YCC.
struct sluice_ycc {
    unsigned long long y, cb, cr;  // planes in device memory
    unsigned long long dst;        // interleaved RGB out, dst_pitch bytes per row
    int w, h;                      // image (Y plane) size
    int y_pitch, c_pitch;          // bytes between rows of Y, and of Cb/Cr
    int c_w, c_h;                  // chroma plane size (at least w and h over sub, rounded up)
    int sub_x, sub_y;              // 1 or 2: chroma subsampling
    int dst_pitch;
    int simple;                    // 1: replicate chroma samples (no fancy upsampling)
};

static_assert(sizeof(sluice_ycc) == 72, "sluice_ycc size");
static_assert(offsetof(sluice_ycc, dst) == 24, "sluice_ycc.dst offset");
static_assert(offsetof(sluice_ycc, w) == 32, "sluice_ycc.w offset");
static_assert(offsetof(sluice_ycc, y_pitch) == 40, "sluice_ycc.y_pitch offset");
static_assert(offsetof(sluice_ycc, c_w) == 48, "sluice_ycc.c_w offset");
static_assert(offsetof(sluice_ycc, sub_x) == 56, "sluice_ycc.sub_x offset");
static_assert(offsetof(sluice_ycc, dst_pitch) == 64, "sluice_ycc.dst_pitch offset");
static_assert(offsetof(sluice_ycc, simple) == 68, "sluice_ycc.simple offset");

// chroma_at is the upsampled chroma sample of output pixel (x, y) from a
// cw×ch plane (libjpeg's downsampled size). libjpeg pads each plane by
// replicating its edge columns and rows, which clamping the neighbours'
// indices reproduces; its separate first/last column cases equal that.
__device__ __forceinline__ int chroma_at(const unsigned char* __restrict__ p, int pitch, int cw, int ch,
                                         int sx, int sy, int x, int y, bool fancy) {
    const int i = min(x / sx, cw - 1);
    const int r = min(y / sy, ch - 1);
    const unsigned char* row = p + (long long)r * pitch;
    // jinit_upsampler: the horizontal-doubling fancy upsamplers need more
    // than two columns; with fewer, libjpeg replicates (both axes for 2x2).
    const bool hfancy = fancy && sx == 2 && cw > 2;
    if (fancy && sy == 2 && (sx == 1 || hfancy)) {
        // The nearer chroma row weighs 3, the other (above for even output
        // rows, below for odd ones) 1.
        const int r2 = (y & 1) ? min(r + 1, ch - 1) : max(r - 1, 0);
        const unsigned char* row2 = p + (long long)r2 * pitch;
        if (sx == 1) {  // h1v2_fancy_upsample
            const int colsum = 3 * (int)__ldg(row + i) + (int)__ldg(row2 + i);
            return (colsum + ((y & 1) ? 2 : 1)) >> 2;
        }
        // h2v2_fancy_upsample: column sums, then the same 3:1 across.
        const int j = (x & 1) ? min(i + 1, cw - 1) : max(i - 1, 0);
        const int cs = 3 * (int)__ldg(row + i) + (int)__ldg(row2 + i);
        const int cn = 3 * (int)__ldg(row + j) + (int)__ldg(row2 + j);
        return (3 * cs + cn + ((x & 1) ? 7 : 8)) >> 4;
    }
    if (sy == 1 && hfancy) {  // h2v1_fancy_upsample
        const int j = (x & 1) ? min(i + 1, cw - 1) : max(i - 1, 0);
        return (3 * (int)__ldg(row + i) + (int)__ldg(row + j) + ((x & 1) ? 2 : 1)) >> 2;
    }
    return __ldg(row + i);  // 4:4:4, or plain replication
}

__device__ __forceinline__ unsigned char clamp_byte(int v) { return (unsigned char)min(max(v, 0), 255); }

extern "C" __global__ void __launch_bounds__(256) sluice_ycc(const sluice_ycc* __restrict__ imgs) {
    const struct sluice_ycc m = imgs[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= m.w || y >= m.h) {
        return;
    }
    const int sx = m.sub_x == 2 ? 2 : 1, sy = m.sub_y == 2 ? 2 : 1;
    // libjpeg's downsampled size, which decides its edges; the planes may
    // be larger (padded), never smaller (LaunchYCC checks).
    const int cw = min(m.c_w, (m.w + sx - 1) / sx), ch = min(m.c_h, (m.h + sy - 1) / sy);
    const int Y = __ldg((const unsigned char*)m.y + (long long)y * m.y_pitch + x);
    const bool fancy = m.simple == 0;
    const int cb = chroma_at((const unsigned char*)m.cb, m.c_pitch, cw, ch, sx, sy, x, y, fancy) - 128;
    const int cr = chroma_at((const unsigned char*)m.cr, m.c_pitch, cw, ch, sx, sy, x, y, fancy) - 128;
    // build_ycc_rgb_table's entries (16-bit fixed point, FIX(1.40200) =
    // 91881, FIX(1.77200) = 116130, FIX(0.71414) = 46802, FIX(0.34414) =
    // 22554, ONE_HALF = 32768), combined as ycc_rgb_convert does; >> of a
    // negative int is arithmetic, as libjpeg's RIGHT_SHIFT.
    const int cr_r = (91881 * cr + 32768) >> 16;
    const int cb_b = (116130 * cb + 32768) >> 16;
    const int g = (-22554 * cb + 32768 + -46802 * cr) >> 16;
    unsigned char* d = (unsigned char*)m.dst + (long long)y * m.dst_pitch + 3LL * x;
    d[0] = clamp_byte(Y + cr_r);
    d[1] = clamp_byte(Y + g);
    d[2] = clamp_byte(Y + cb_b);
}

// ---------------------------------------------------------------------------
// Progressive JPEGs can reach the GPU as their quantised DCT coefficients
// (codec.CoefDecoder on a CPU worker): sluice_idct dequantises them and runs
// libjpeg's accurate integer IDCT (jidctint.c's algorithm: the LLM
// factorisation with 13-bit constants and 2 extra bits between the passes)
// into the planes sluice_ycc converts, so that such a decode equals the
// CPU's exactly. Results are saturated to 0..255, as libjpeg-turbo's SIMD
// IDCTs do (its C one wraps values far outside, which only crafted data
// reach).

// One component of a JPEG: its coefficient blocks and its plane. Mirrored
// by kernels.IDCT.
struct sluice_idct {
    unsigned long long coef;   // blocks of 64 int16 coefficients, natural order, pitch blocks a row
    unsigned long long dst;    // the plane: w×h samples, dst_pitch bytes a row
    int pitch;                 // blocks a stored row, at least blocks_w
    int blocks_w, blocks_h;    // blocks holding image data
    int w, h;                  // plane size, at most 8 × blocks
    int dst_pitch;
    int first;                 // index of its first block among the launch's (over components in order)
    unsigned short quant[64];  // quantisation table, natural order
};

static_assert(sizeof(sluice_idct) == 176, "sluice_idct size");
static_assert(offsetof(sluice_idct, dst) == 8, "sluice_idct.dst offset");
static_assert(offsetof(sluice_idct, pitch) == 16, "sluice_idct.pitch offset");
static_assert(offsetof(sluice_idct, w) == 28, "sluice_idct.w offset");
static_assert(offsetof(sluice_idct, dst_pitch) == 36, "sluice_idct.dst_pitch offset");
static_assert(offsetof(sluice_idct, first) == 40, "sluice_idct.first offset");
static_assert(offsetof(sluice_idct, quant) == 44, "sluice_idct.quant offset");

#define IDCT_BLOCKS 16  // 8x8 blocks a thread block takes: 8 threads each

// idct_1d is one pass of the 8-point IDCT over in[0..7] (dequantised,
// scaled): the outputs before descaling. FIX(x) = round(x * 2^13).
__device__ __forceinline__ void idct_1d(const int in[8], int out[8]) {
    const int z2 = in[2], z3 = in[6];
    const int z1 = (z2 + z3) * 4433;          // FIX(0.541196100)
    const int t2 = z1 - z3 * 15137;           // FIX(1.847759065)
    const int t3 = z1 + z2 * 6270;            // FIX(0.765366865)
    const int t0 = (in[0] + in[4]) * 8192;    // << CONST_BITS
    const int t1 = (in[0] - in[4]) * 8192;
    const int t10 = t0 + t3, t13 = t0 - t3, t11 = t1 + t2, t12 = t1 - t2;
    int o0 = in[7], o1 = in[5], o2 = in[3], o3 = in[1];
    int q1 = o0 + o3, q2 = o1 + o2, q3 = o0 + o2, q4 = o1 + o3;
    const int z5 = (q3 + q4) * 9633;          // FIX(1.175875602)
    o0 *= 2446;                               // FIX(0.298631336)
    o1 *= 16819;                              // FIX(2.053119869)
    o2 *= 25172;                              // FIX(3.072711026)
    o3 *= 12299;                              // FIX(1.501321110)
    q1 *= -7373;                              // FIX(0.899976223)
    q2 *= -20995;                             // FIX(2.562915447)
    q3 = q3 * -16069 + z5;                    // FIX(1.961570560)
    q4 = q4 * -3196 + z5;                     // FIX(0.390180644)
    o0 += q1 + q3;
    o1 += q2 + q4;
    o2 += q2 + q3;
    o3 += q1 + q4;
    out[0] = t10 + o3, out[7] = t10 - o3;
    out[1] = t11 + o2, out[6] = t11 - o2;
    out[2] = t12 + o1, out[5] = t12 - o1;
    out[3] = t13 + o0, out[4] = t13 - o0;
}

// sluice_idct: thread block b takes blocks b*16 .. b*16+15 of the launch
// (over the n components' blocks_w × blocks_h in order), 8 threads each:
// thread r of a block takes its column r, then its row r.
extern "C" __global__ void __launch_bounds__(8 * IDCT_BLOCKS) sluice_idct(const sluice_idct* __restrict__ comps, int n,
                                                                       int total) {
    __shared__ int ws[IDCT_BLOCKS][64];
    const int slot = threadIdx.x >> 3, r = threadIdx.x & 7;
    const int j = blockIdx.x * IDCT_BLOCKS + slot;
    const bool live = j < total;
    int ci = 0;
    if (live) {  // the last component whose first block is at or before j
        int lo = 0, hi = n - 1;
        while (lo < hi) {
            const int mid = (lo + hi + 1) >> 1;
            if (__ldg(&comps[mid].first) <= j) lo = mid; else hi = mid - 1;
        }
        ci = lo;
    }
    const struct sluice_idct* c = &comps[ci];
    const int k = j - (live ? __ldg(&c->first) : 0);
    const int bw = live ? __ldg(&c->blocks_w) : 1;
    const int bx = k % bw, by = k / bw;
    if (live) {
        const short* blk = (const short*)__ldg(&c->coef) + ((long long)by * __ldg(&c->pitch) + bx) * 64;
        int in[8], out[8];
        for (int i = 0; i < 8; i++) {
            in[i] = (int)__ldg(blk + i * 8 + r) * (int)__ldg(&c->quant[i * 8 + r]);
        }
        idct_1d(in, out);
        for (int i = 0; i < 8; i++) {
            ws[slot][i * 8 + r] = (out[i] + (1 << 10)) >> 11;  // DESCALE by CONST_BITS - PASS1_BITS
        }
    }
    __syncthreads();
    if (!live) {
        return;
    }
    const int y = by * 8 + r, h = __ldg(&c->h), w = __ldg(&c->w);
    if (y >= h) {
        return;
    }
    int in[8], out[8];
    for (int i = 0; i < 8; i++) {
        in[i] = ws[slot][r * 8 + i];
    }
    idct_1d(in, out);
    unsigned char* row = (unsigned char*)__ldg(&c->dst) + (long long)y * __ldg(&c->dst_pitch) + bx * 8;
    const int m = min(8, w - bx * 8);
    for (int i = 0; i < m; i++) {
        // DESCALE by CONST_BITS + PASS1_BITS + 3, then libjpeg's +128 and range limit.
        row[i] = clamp_byte(((out[i] + (1 << 17)) >> 18) + 128);
    }
}

// Huffman decoding of sequential JPEGs on the GPU (sluice_huffman).
#include "huffman.cuh"
