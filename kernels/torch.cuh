// torch's uint8 resampling, interp 5 (torch_linear) and 6 (torch_cubic), as
// ops/resample_torch.go computes it, so that the bytes equal the CPU's:
// float64 windows and weights with the same operations and the same fused
// multiply-adds (explicit intrinsics: nvcc would otherwise fuse others),
// int16 weights at a precision chosen per axis, then a horizontal pass and a
// vertical one in integers, each rounded and clipped to a byte.
//
// The precision depends on the largest weight of the whole axis, which no
// single output pixel knows: the threads of a block, which all resample the
// same sample, find it together (torch_precisions) before any of them
// returns. Each thread then computes the weights of its own output pixel.
// Included by fused.cu, after fetch.

// One axis of a sample: its input span b0..b1 (the window's pixels, or a
// box crop's) of in pixels resized to out.
struct torch_axis {
    int in, out;
    bool cubic, aa;
    bool copy;  // the size does not change: no pass, output i reads input i
    double origin, scale;
    double support, invsc;  // antialias: the window's half width, 1/scale when shrinking
    int max_taps;           // torch's max_interp_size
    double a;               // the cubic's a
};

__device__ torch_axis torch_axis_of(int in, float b0, float b1, int out, bool cubic, bool aa) {
    torch_axis d;
    d.in = in;
    d.out = out;
    d.cubic = cubic;
    d.aa = aa;
    d.copy = in == out && b0 == 0.0f && b1 == (float)out;
    d.origin = (double)b0;
    d.scale = __ddiv_rn((double)__fsub_rn(b1, b0), (double)out);
    const double size = cubic ? 4.0 : 2.0;
    d.support = size * 0.5;
    d.invsc = 1.0;
    if (aa) {
        if (d.scale >= 1.0) {
            d.support = __dmul_rn(d.support, d.scale);
            d.invsc = __ddiv_rn(1.0, d.scale);
        }
        d.max_taps = (int)ceil(d.support) * 2 + 1;
        d.a = -0.5;
    } else {
        d.max_taps = (int)size;
        d.a = -0.75;
    }
    return d;
}

// torch_filter is the triangle, or Keys' cubic evaluated as torch's x86
// build does: ((a+2)x - (a+3))x² + 1 and ((ax - 5a)x + 8a)x - 4a, each
// multiply-add fused.
__device__ __forceinline__ double torch_filter(const torch_axis& d, double x) {
    x = fabs(x);
    if (!d.cubic) {
        return x < 1.0 ? __dsub_rn(1.0, x) : 0.0;
    }
    const double a = d.a;
    if (x < 1.0) {
        const double t = __fma_rn(a + 2.0, x, -(a + 3.0));
        return __fma_rn(__dmul_rn(t, x), x, 1.0);
    }
    if (x < 2.0) {
        double t = __fma_rn(a, x, -5.0 * a);
        t = __fma_rn(t, x, 8.0 * a);
        return __fma_rn(t, x, -4.0 * a);
    }
    return 0.0;
}

// The taps of output i of an axis: inputs lo..lo+n-1; with antialias the
// filter's centre and the weights' sum, without it the int16 weights
// (known once the precision is).
struct torch_taps {
    int lo, n;
    double center, total;
    double w[4];  // antialias=False: the float64 weights, edge taps added up
};

// torch_taps_at computes output i's window and, for antialias=False, its
// float64 weights; *wmax gets the largest weight as torch tracks it.
__device__ torch_taps torch_taps_at(const torch_axis& d, int i, double* wmax) {
    torch_taps t;
    t.center = 0.0;
    t.total = 0.0;
    *wmax = 0.0;
    if (d.copy) {
        t.lo = i;
        t.n = 1;
        t.w[0] = 1.0;
        *wmax = 1.0;
        return t;
    }
    if (d.aa) {
        t.center = __dadd_rn(d.origin, __dmul_rn(d.scale, (double)i + 0.5));
        t.lo = max((int)__dadd_rn(__dsub_rn(t.center, d.support), 0.5), 0);
        const int n = min((int)__dadd_rn(__dadd_rn(t.center, d.support), 0.5), d.in) - t.lo;
        t.n = min(max(n, 0), d.max_taps);
        double hi = 0.0, lo = 0.0;
        for (int j = 0; j < t.n; j++) {
            const double w = torch_filter(d, __dmul_rn(__dadd_rn(__dsub_rn((double)(j + t.lo), t.center), 0.5), d.invsc));
            t.total = __dadd_rn(t.total, w);
            hi = fmax(hi, w);
            lo = fmin(lo, w);
        }
        // Division rounds monotonically, so the largest quotient is that
        // of the largest weight (of the smallest, for a negative sum).
        if (t.total > 0.0) {
            *wmax = fmax(__ddiv_rn(hi, t.total), 0.0);
        } else if (t.total < 0.0) {
            *wmax = fmax(__ddiv_rn(lo, t.total), 0.0);
        }
        return t;
    }
    double src = __dadd_rn(d.origin, __fma_rn(d.scale, (double)i + 0.5, -0.5));
    if (!d.cubic && src < 0.0) {
        src = 0.0;
    }
    // torch floors the float32 of the coordinate (floorf).
    const int index = min((int)floorf(__double2float_rn(src)), d.in - 1);
    const double lambda = fmin(fmax(__dsub_rn(src, (double)index), 0.0), 1.0);
    const int half = d.max_taps / 2;
    t.lo = max(index - half + 1, 0);
    const int n = min(index + half + 1, d.in) - t.lo;
    t.n = min(max(n, 0), d.max_taps);
    // Taps outside the image add their weights onto the edge pixel's.
    const int first = index - half + 1;
    int k = 0;
    for (int j = 0; j < 4; j++) {
        t.w[j] = 0.0;
    }
    for (int j = 0; j < d.max_taps; j++) {
        const double v = torch_filter(d, __dsub_rn((double)(j + 1 - half), lambda));
        if (first + j <= 0) {
            k = 0;
        } else if (first + j >= d.in - 1) {
            k = t.n - 1;
        }
        k = min(max(k, 0), 3);
        t.w[k] = __dadd_rn(t.w[k], v);
        *wmax = fmax(*wmax, t.w[k]);
        k++;
    }
    return t;
}

// torch_precision: the first p < 22 at which the axis's largest weight at
// p+1 bits rounds to 2^15 or more, else 22.
__device__ __forceinline__ int torch_precision(double wmax) {
    int p = 0;
    for (; p < 22; p++) {
        if ((int)__dadd_rn(0.5, __dmul_rn(wmax, (double)(1 << (p + 1)))) >= (1 << 15)) {
            break;
        }
    }
    return p;
}

// torch_fixed is w in int16 fixed point with p fractional bits, rounded
// half away from zero.
__device__ __forceinline__ int torch_fixed(double w, int p) {
    const double v = __dmul_rn(w, (double)(1 << p));
    return v < 0.0 ? (int)(short)(int)__dsub_rn(v, 0.5) : (int)(short)(int)__dadd_rn(v, 0.5);
}

// torch_weight is tap j's int16 weight.
__device__ __forceinline__ int torch_weight(const torch_axis& d, const torch_taps& t, int j, int p) {
    if (d.copy) {
        return 1;
    }
    if (!d.aa) {
        return torch_fixed(t.w[j], p);
    }
    const double w = torch_filter(d, __dmul_rn(__dadd_rn(__dsub_rn((double)(j + t.lo), t.center), 0.5), d.invsc));
    return torch_fixed(t.total != 0.0 ? __ddiv_rn(w, t.total) : w, p);
}

// torch_precisions finds both axes' precisions; every thread of the block
// calls it (it synchronises the block).
__device__ void torch_precisions(const torch_axis& ay, const torch_axis& ax, bool live, int* py, int* px) {
    __shared__ unsigned long long bits[2];
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nt = blockDim.x * blockDim.y;
    if (tid == 0) {
        bits[0] = bits[1] = 0ull;
    }
    __syncthreads();
    if (live) {
        for (int k = 0; k < 2; k++) {
            const torch_axis& d = k == 0 ? ay : ax;
            if (d.copy) {
                continue;
            }
            double m = 0.0;
            for (int i = tid; i < d.out; i += nt) {
                double w;
                torch_taps_at(d, i, &w);
                m = fmax(m, w);
            }
            // Non-negative doubles order as their bit patterns do.
            atomicMax(&bits[k], (unsigned long long)__double_as_longlong(m));
        }
    }
    __syncthreads();
    *py = torch_precision(__longlong_as_double((long long)bits[0]));
    *px = torch_precision(__longlong_as_double((long long)bits[1]));
}

// Up to this many horizontal weights are computed once per thread rather
// than once per row read.
#define TORCH_CACHED 32

// torch_resample is output (ry, rx) of the window (its top left at upright
// (wy, wx)) resized through axes ay and ax at precisions py and px: the
// horizontal pass on each row the vertical taps read, rounded to a byte,
// then the vertical pass.
__device__ void torch_resample(const upright& im, const float fill[4], int wy, int wx, const torch_axis& ay,
                               const torch_axis& ax, int py, int px, int ry, int rx, float v[4]) {
    double unused;
    const torch_taps ty = torch_taps_at(ay, ry, &unused);
    const torch_taps tx = torch_taps_at(ax, rx, &unused);
    int cache[TORCH_CACHED];
    const bool cached = tx.n <= TORCH_CACHED;
    if (cached) {
        for (int b = 0; b < tx.n; b++) {
            cache[b] = torch_weight(ax, tx, b, px);
        }
    }
    const int hx = ax.copy ? 0 : 1 << (px - 1), hy = ay.copy ? 0 : 1 << (py - 1);
    int acc[4] = {hy, hy, hy, hy};
    for (int a = 0; a < ty.n; a++) {
        const int u = wy + ty.lo + a;
        int h[4];
        if (ax.copy) {
            float q[4];
            fetch(im, fill, u, wx + rx, q);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                h[k] = (int)q[k];
            }
        } else {
            int sum[4] = {hx, hx, hx, hx};
            for (int b = 0; b < tx.n; b++) {
                float q[4];
                fetch(im, fill, u, wx + tx.lo + b, q);
                const int w = cached ? cache[b] : torch_weight(ax, tx, b, px);
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    sum[k] += (int)q[k] * w;
                }
            }
#pragma unroll
            for (int k = 0; k < 4; k++) {
                h[k] = min(max(sum[k] >> px, 0), 255);
            }
        }
        if (ay.copy) {
#pragma unroll
            for (int k = 0; k < 4; k++) {
                v[k] = (float)h[k];
            }
            return;
        }
        const int w = torch_weight(ay, ty, a, py);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            acc[k] += h[k] * w;
        }
    }
#pragma unroll
    for (int k = 0; k < 4; k++) {
        v[k] = (float)min(max(acc[k] >> py, 0), 255);
    }
}
