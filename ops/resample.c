// Inner loops of the resampler (resample.go). Go calls each once per pass
// per image, so the cgo call costs nothing next to the work.
//
// The arithmetic is Pillow's, as in the Go reference kernels of the tests:
// for every output byte, a sum started at one half (1 << 21) of input bytes
// times 22-bit fixed-point weights, shifted right by 22 and clipped to
// 0..255. Sums are kept in uint32 (wrapping, like Go's int32: no undefined
// behaviour) and read back as int32; every path, portable or SIMD, computes
// the same sums modulo 2^32 and so gives the same bytes.
//
// Two levels, picked once at run time (rs_init): portable C that any
// compiler and architecture take (gcc -O3 vectorizes the vertical pass at
// the baseline ISA), and AVX2 on x86-64 CPUs that have it, in functions
// compiled for AVX2 alone (target attribute), so that the file still builds
// for the baseline. Defining RS_PORTABLE leaves the AVX2 code out.

#include <string.h>

#include "resample.h"

#define RS_BITS 22
#define RS_HALF (1u << (RS_BITS - 1))

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(RS_PORTABLE)
#define RS_X86 1
#include <immintrin.h>
#endif

static int rs_cpu, rs_level; // what the CPU has, what the loops use

void rs_init(void) {
#ifdef RS_X86
	__builtin_cpu_init();
	rs_cpu = __builtin_cpu_supports("avx2") ? 1 : 0;
#endif
	rs_level = rs_cpu;
}

int rs_simd(void) { return rs_level; }

void rs_set_simd(int level) { rs_level = level < rs_cpu ? level : rs_cpu; }

static inline uint8_t clip8(uint32_t s) {
	int32_t v = (int32_t)s >> RS_BITS;
	if ((uint32_t)v > 255) {
		return v < 0 ? 0 : 255;
	}
	return (uint8_t)v;
}

// Weight halves for the SIMD loops (see the AVX2 section): w = hi*2^15 + lo.
static inline int32_t wlo(int32_t w) { return w & 0x7fff; }
static inline int32_t whi(int32_t w) { return w >> 15; }

// pairword packs two 16-bit halves into one 32-bit lane, a's low.
static inline int32_t pairword(int32_t a, int32_t b) { return (int32_t)(((uint32_t)a & 0xffff) | ((uint32_t)b << 16)); }

// --- portable loops ---------------------------------------------------------

// hrow_c computes outputs [i0, i1) of one row; c is a constant where inlined.
static inline __attribute__((always_inline)) void hrow_c(uint8_t *d, const uint8_t *s, int c, const int32_t *start,
                                                          const int32_t *k, int n, int i0, int i1) {
	for (int i = i0; i < i1; i++) {
		const uint8_t *p = s + (ptrdiff_t)start[i] * c;
		const int32_t *w = k + (ptrdiff_t)i * n;
		uint32_t a[4] = {RS_HALF, RS_HALF, RS_HALF, RS_HALF};
		for (int j = 0; j < n; j++) {
			for (int ch = 0; ch < c; ch++) {
				a[ch] += (uint32_t)p[j * c + ch] * (uint32_t)w[j];
			}
		}
		for (int ch = 0; ch < c; ch++) {
			d[(ptrdiff_t)i * c + ch] = clip8(a[ch]);
		}
	}
}

// hrow_any dispatches to hrow_c with constant channel counts, and constant
// tap counts for the common 2 and 4, so that the compiler unrolls.
static void hrow_any(uint8_t *d, const uint8_t *s, int c, const int32_t *start, const int32_t *k, int n, int i0,
                     int i1) {
#define RS_CASE(C)                                                                                           \
	case C:                                                                                                    \
		if (n == 2) {                                                                                      \
			hrow_c(d, s, C, start, k, 2, i0, i1);                                                      \
		} else if (n == 4) {                                                                               \
			hrow_c(d, s, C, start, k, 4, i0, i1);                                                      \
		} else {                                                                                           \
			hrow_c(d, s, C, start, k, n, i0, i1);                                                      \
		}                                                                                                  \
		break;
	switch (c) {
		RS_CASE(1)
		RS_CASE(2)
		RS_CASE(3)
	default:
		hrow_c(d, s, 4, start, k, n, i0, i1);
	}
#undef RS_CASE
}

// vrow_c computes one output row of n bytes from taps rows, B bytes at a
// time so that the inner loops vectorize.
static void vrow_c(uint8_t *d, const uint8_t *base, ptrdiff_t sstride, int n, const int32_t *w, int taps) {
	enum { B = 256 };
	uint32_t acc[B];
	for (int x = 0; x < n; x += B) {
		int m = n - x < B ? n - x : B;
		for (int i = 0; i < m; i++) {
			acc[i] = RS_HALF;
		}
		for (int j = 0; j < taps; j++) {
			const uint8_t *r = base + j * sstride + x;
			uint32_t wj = (uint32_t)w[j];
			for (int i = 0; i < m; i++) {
				acc[i] += (uint32_t)r[i] * wj;
			}
		}
		for (int i = 0; i < m; i++) {
			d[x + i] = clip8(acc[i]);
		}
	}
}

// --- AVX2 -------------------------------------------------------------------

#ifdef RS_X86

#define AVX2 __attribute__((target("avx2")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2")))

// load2 puts 16 bytes from a in the low lane and 16 from b in the high one.
AVX2_INLINE __m256i load2(const uint8_t *a, const uint8_t *b) {
	return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
	                               _mm_loadu_si128((const __m128i *)b), 1);
}

// The vertical and the 3- and 4-channel horizontal loops multiply with
// vpmaddwd, 16-bit pairs summed into 32-bit lanes: two taps per lane and
// instruction. The 22-bit weights do not fit 16 bits, so each is split
// exactly into w = hi*2^15 + lo, lo = w & 0x7fff (0..32767) and hi = w >> 15
// (-128..128 for Pillow's weights, at most about 2^22 in magnitude; any
// below 2^30 fits), and the sums of pixel*lo and pixel*hi are kept apart and
// joined as lo + (hi << 15) before the final shift. Every step wraps modulo
// 2^32 as the scalar sums do, so the result is the same. This takes fewer
// shuffles than vpmulld (one tap per lane), and vpmulld is two µops on
// Intel cores: 1.5x faster there, as fast on AMD Zen 4. The 1-channel
// horizontal loop, rarer, keeps vpmulld.

// Horizontal pass, 3 and 4 channels: four outputs per step, two per
// register (one per 128-bit lane). A lane holds the four channel sums of
// its pixel (the fourth is 0 for RGB). Each pair of taps is a shuffle that
// widens the taps' pixels, from the 16 bytes loaded at the window, to
// 16-bit pairs per channel, and two vpmaddwd by the weights' lo and hi
// halves (wx) into separate sums. np is the tap count padded to even; it is
// a constant where inlined.

// pair34 picks pixels t and t+1 (t constant) of the 16 bytes loaded in each
// lane as 16-bit pairs per channel: R R G G B B 0 0 for c = 3, A A for 4.
AVX2_INLINE __m256i pair34(__m256i v, int c, int t) {
	char b = (char)(c * t), e = (char)(c * t + c);
	char a = c == 4 ? (char)(b + 3) : -1, f = c == 4 ? (char)(e + 3) : -1;
	return _mm256_shuffle_epi8(v, _mm256_setr_epi8(b, -1, e, -1, b + 1, -1, e + 1, -1, b + 2, -1, e + 2, -1, a, -1,
	                                               f, -1, b, -1, e, -1, b + 1, -1, e + 1, -1, b + 2, -1, e + 2, -1,
	                                               a, -1, f, -1));
}

AVX2_INLINE void h34_block(uint8_t *d, const uint8_t *s, int c, const int32_t *start, const int32_t *wx,
                           ptrdiff_t wstride, int np, int i, int store16) {
	__m256i lo01 = _mm256_set1_epi32(RS_HALF), lo23 = lo01, hi01 = _mm256_setzero_si256(), hi23 = hi01;
	const uint8_t *p0 = s + (ptrdiff_t)start[i] * c, *p1 = s + (ptrdiff_t)start[i + 1] * c;
	const uint8_t *p2 = s + (ptrdiff_t)start[i + 2] * c, *p3 = s + (ptrdiff_t)start[i + 3] * c;
	const int32_t *w = wx + (ptrdiff_t)i * 4;
	for (int g = 0; g < np; g += 4) {
		__m256i v01 = load2(p0 + g * c, p1 + g * c);
		__m256i v23 = load2(p2 + g * c, p3 + g * c);
		int m = np - g < 4 ? np - g : 4;
#define RS_PAIR(t)                                                                                                 \
	if (t < m) {                                                                                               \
		const int32_t *wl = w + (ptrdiff_t)(g + t) * wstride * 4, *wh = wl + wstride * 4;                  \
		__m256i x01 = pair34(v01, c, t), x23 = pair34(v23, c, t);                                          \
		lo01 = _mm256_add_epi32(lo01, _mm256_madd_epi16(x01, _mm256_loadu_si256((const __m256i *)wl)));   \
		hi01 = _mm256_add_epi32(hi01, _mm256_madd_epi16(x01, _mm256_loadu_si256((const __m256i *)wh)));   \
		lo23 = _mm256_add_epi32(lo23, _mm256_madd_epi16(x23, _mm256_loadu_si256((const __m256i *)(wl + 8)))); \
		hi23 = _mm256_add_epi32(hi23, _mm256_madd_epi16(x23, _mm256_loadu_si256((const __m256i *)(wh + 8)))); \
	}
		RS_PAIR(0)
		RS_PAIR(2)
#undef RS_PAIR
	}
	__m256i a01 = _mm256_srai_epi32(_mm256_add_epi32(lo01, _mm256_slli_epi32(hi01, 15)), RS_BITS);
	__m256i a23 = _mm256_srai_epi32(_mm256_add_epi32(lo23, _mm256_slli_epi32(hi23, 15)), RS_BITS);
	// Lanes [o0|o1] and [o2|o3] → bytes o0 o1 o2 o3, saturating as clip8.
	__m256i b = _mm256_packs_epi32(a01, a23);
	b = _mm256_packus_epi16(b, b);
	b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
	__m128i q = _mm256_castsi256_si128(b);
	if (c == 4) {
		_mm_storeu_si128((__m128i *)(d + (ptrdiff_t)i * 4), q);
		return;
	}
	q = _mm_shuffle_epi8(q, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
	uint8_t *o = d + (ptrdiff_t)i * 3;
	if (store16) {
		_mm_storeu_si128((__m128i *)o, q);
	} else {
		_mm_storel_epi64((__m128i *)o, q);
		uint32_t hi = (uint32_t)_mm_extract_epi32(q, 2);
		memcpy(o + 8, &hi, 4);
	}
}

AVX2_INLINE void h34_rows(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, ptrdiff_t srclen,
                          int rows, int c, const int32_t *start, const int32_t *k, int n, int out,
                          const int32_t *wx, ptrdiff_t wstride, int np) {
	// The last window of an output is 16 bytes at tap glast.
	int glast = (np - 1) & ~3;
	for (int y = 0; y < rows; y++) {
		const uint8_t *s = src + y * sstride;
		uint8_t *d = dst + y * dstride;
		ptrdiff_t avail = srclen - y * sstride;
		// Outputs whose windows would read past the buffer (the end of
		// the last row) go to the portable loop; starts never decrease.
		int safe = out;
		while (safe > 0 && ((ptrdiff_t)start[safe - 1] + glast) * c + 16 > avail) {
			safe--;
		}
		int i = 0;
		for (; i + 4 <= safe; i += 4) {
			// 16-byte stores of RGB spill 4 bytes into the next two
			// outputs, written after.
			h34_block(d, s, c, start, wx, wstride, np, i, i + 6 <= out);
		}
		hrow_any(d, s, c, start, k, n, i, out);
	}
}

static AVX2 void h34_avx2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, ptrdiff_t srclen,
                          int rows, int c, const int32_t *start, const int32_t *k, int n, int out,
                          const int32_t *wx, ptrdiff_t wstride) {
	int np = (n + 1) & ~1;
	// Constant channel and tap counts unroll: 2 taps (linear upscale), 4
	// (linear shrink by up to 2, cubic upscale), 6 and 8.
#define RS_CASE(C, NP)                                                                                       \
	if (c == C && np == NP) {                                                                                  \
		h34_rows(dst, dstride, src, sstride, srclen, rows, C, start, k, n, out, wx, wstride, NP);         \
		return;                                                                                            \
	}
	RS_CASE(3, 2)
	RS_CASE(3, 4)
	RS_CASE(3, 6)
	RS_CASE(3, 8)
	RS_CASE(4, 2)
	RS_CASE(4, 4)
	RS_CASE(4, 6)
	RS_CASE(4, 8)
#undef RS_CASE
	if (c == 3) {
		h34_rows(dst, dstride, src, sstride, srclen, rows, 3, start, k, n, out, wx, wstride, np);
	} else {
		h34_rows(dst, dstride, src, sstride, srclen, rows, 4, start, k, n, out, wx, wstride, np);
	}
}

// Horizontal pass, 1 channel: eight outputs per step, two per register,
// each lane the products of four taps of its output; three horizontal adds
// reduce them.
AVX2_INLINE void h1_rows(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, ptrdiff_t srclen,
                         int rows, const int32_t *start, const int32_t *k, int n, int out, const int32_t *wx,
                         ptrdiff_t wstride, int np) {
	int glast = np - 4;
	for (int y = 0; y < rows; y++) {
		const uint8_t *s = src + y * sstride;
		uint8_t *d = dst + y * dstride;
		ptrdiff_t avail = srclen - y * sstride;
		int safe = out;
		while (safe > 0 && (ptrdiff_t)start[safe - 1] + glast + 4 > avail) {
			safe--;
		}
		int i = 0;
		for (; i + 8 <= safe; i += 8) {
			__m256i a[4];
			for (int p = 0; p < 4; p++) {
				a[p] = _mm256_setzero_si256();
			}
			for (int g = 0; g < np; g += 4) {
				const int32_t *w = wx + ((ptrdiff_t)(g / 4) * wstride + i) * 4;
				for (int p = 0; p < 4; p++) {
					uint32_t u0, u1;
					memcpy(&u0, s + start[i + 2 * p] + g, 4);
					memcpy(&u1, s + start[i + 2 * p + 1] + g, 4);
					__m256i v = _mm256_cvtepu8_epi32(_mm_insert_epi32(_mm_cvtsi32_si128((int)u0), (int)u1, 1));
					a[p] = _mm256_add_epi32(
					    a[p], _mm256_mullo_epi32(v, _mm256_loadu_si256((const __m256i *)(w + 8 * p))));
				}
			}
			// [o0 o2 o4 o6 | o1 o3 o5 o7]
			__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a[0], a[1]), _mm256_hadd_epi32(a[2], a[3]));
			h = _mm256_srai_epi32(_mm256_add_epi32(h, _mm256_set1_epi32(RS_HALF)), RS_BITS);
			h = _mm256_packs_epi32(h, h);
			h = _mm256_packus_epi16(h, h);
			h = _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
			__m128i q = _mm_shuffle_epi8(_mm256_castsi256_si128(h),
			                             _mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, -1, -1, -1, -1, -1, -1, -1, -1));
			_mm_storel_epi64((__m128i *)(d + i), q);
		}
		hrow_c(d, s, 1, start, k, n, i, out);
	}
}

static AVX2 void h1_avx2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, ptrdiff_t srclen,
                         int rows, const int32_t *start, const int32_t *k, int n, int out, const int32_t *wx,
                         ptrdiff_t wstride) {
	int np = (n + 3) & ~3;
	if (np == 4) {
		h1_rows(dst, dstride, src, sstride, srclen, rows, start, k, n, out, wx, wstride, 4);
	} else {
		h1_rows(dst, dstride, src, sstride, srclen, rows, start, k, n, out, wx, wstride, np);
	}
}

// Vertical pass: 32 bytes of a row per step, whatever the channel count.
// Each pair of taps interleaves its two rows into 16-bit pairs (four
// registers of eight lanes) for vpmaddwd by the pair's lo and hi weights
// (vw: per output row and pair, the two packed words).
AVX2_INLINE void v_block(uint8_t *d, const uint8_t *base, ptrdiff_t sstride, const int32_t *vw, int taps) {
	__m256i lo[4], hi[4];
	for (int i = 0; i < 4; i++) {
		lo[i] = _mm256_set1_epi32(RS_HALF);
		hi[i] = _mm256_setzero_si256();
	}
	const __m256i z = _mm256_setzero_si256();
	for (int j = 0; j < taps; j += 2) {
		const uint8_t *r0 = base + j * sstride;
		// An odd last tap pairs its row with itself, at weight 0.
		const uint8_t *r1 = j + 1 < taps ? r0 + sstride : r0;
		__m256i x0 = _mm256_loadu_si256((const __m256i *)r0), x1 = _mm256_loadu_si256((const __m256i *)r1);
		__m256i l8 = _mm256_unpacklo_epi8(x0, x1), h8 = _mm256_unpackhi_epi8(x0, x1);
		// Bytes 0-3|16-19, 4-7|20-23, 8-11|24-27, 12-15|28-31.
		__m256i x[4] = {_mm256_unpacklo_epi8(l8, z), _mm256_unpackhi_epi8(l8, z), _mm256_unpacklo_epi8(h8, z),
		                _mm256_unpackhi_epi8(h8, z)};
		__m256i wl = _mm256_set1_epi32(vw[j]), wh = _mm256_set1_epi32(vw[j + 1]);
		for (int i = 0; i < 4; i++) {
			lo[i] = _mm256_add_epi32(lo[i], _mm256_madd_epi16(x[i], wl));
			hi[i] = _mm256_add_epi32(hi[i], _mm256_madd_epi16(x[i], wh));
		}
	}
	__m256i a[4];
	for (int i = 0; i < 4; i++) {
		a[i] = _mm256_srai_epi32(_mm256_add_epi32(lo[i], _mm256_slli_epi32(hi[i], 15)), RS_BITS);
	}
	// The packs undo the interleaving: bytes come out in order.
	__m256i b = _mm256_packus_epi16(_mm256_packs_epi32(a[0], a[1]), _mm256_packs_epi32(a[2], a[3]));
	_mm256_storeu_si256((__m256i *)d, b);
}

AVX2_INLINE void v_rows(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, int n, int rows,
                        const int32_t *start, int first, const int32_t *k, int taps, const int32_t *vw) {
	int np = (taps + 1) & ~1;
	for (int y = 0; y < rows; y++) {
		const uint8_t *base = src + (ptrdiff_t)(start[y] - first) * sstride;
		uint8_t *d = dst + y * dstride;
		if (n < 32) {
			vrow_c(d, base, sstride, n, k + (ptrdiff_t)y * taps, taps);
			continue;
		}
		const int32_t *w = vw + (ptrdiff_t)y * np;
		int x = 0;
		for (; x + 32 <= n; x += 32) {
			v_block(d + x, base + x, sstride, w, taps);
		}
		if (x < n) {
			// The last step overlaps the one before: same bytes again.
			v_block(d + n - 32, base + n - 32, sstride, w, taps);
		}
	}
}

static AVX2 void v_avx2(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, int n, int rows,
                        const int32_t *start, int first, const int32_t *k, int taps, const int32_t *vw) {
	switch (taps) {
	case 2:
		v_rows(dst, dstride, src, sstride, n, rows, start, first, k, 2, vw);
		break;
	case 4:
		v_rows(dst, dstride, src, sstride, n, rows, start, first, k, 4, vw);
		break;
	default:
		v_rows(dst, dstride, src, sstride, n, rows, start, first, k, taps, vw);
		break;
	}
}

#endif // RS_X86

// --- entry points -----------------------------------------------------------

ptrdiff_t rs_wx_len(int kind, int n, int out) {
	int np = (n + 1) & ~1;
	switch (kind) {
	case RS_WX_V:
		return (ptrdiff_t)np * out;
	case RS_WX_H1:
		return (ptrdiff_t)((n + 3) & ~3) * out;
	case RS_WX_H34:
		return (ptrdiff_t)np * out * 4;
	}
	return 0;
}

// Layouts (taps past n weigh 0):
//   - RS_WX_V, for rs_vpass: per output y, per pair of taps, the lo halves
//     packed in one int32, then the hi halves.
//   - RS_WX_H1, for 1 channel: [group g of 4 taps][output i][tap 4g+t].
//   - RS_WX_H34, for 3 and 4: [pair p of taps][lo, hi][output i][the
//     packed halves, 4 times].
// For the horizontal ones, outputs i and i+1 of a group or pair are 32
// contiguous bytes, whatever i's parity, so that a call may start at any
// output.
void rs_wx_build(int32_t *wx, int kind, const int32_t *k, int n, int out) {
	int np = (n + 1) & ~1;
#define K(i, j) ((j) < n ? k[(ptrdiff_t)(i) * n + (j)] : 0)
	switch (kind) {
	case RS_WX_V:
		for (int i = 0; i < out; i++) {
			for (int j = 0; j < np; j += 2) {
				wx[(ptrdiff_t)i * np + j] = pairword(wlo(K(i, j)), wlo(K(i, j + 1)));
				wx[(ptrdiff_t)i * np + j + 1] = pairword(whi(K(i, j)), whi(K(i, j + 1)));
			}
		}
		break;
	case RS_WX_H1:
		for (int g = 0; g < (np + 3) / 4; g++) {
			for (int i = 0; i < out; i++) {
				for (int t = 0; t < 4; t++) {
					wx[((ptrdiff_t)g * out + i) * 4 + t] = K(i, 4 * g + t);
				}
			}
		}
		break;
	case RS_WX_H34:
		for (int j = 0; j < np; j += 2) {
			for (int i = 0; i < out; i++) {
				int32_t lo = pairword(wlo(K(i, j)), wlo(K(i, j + 1)));
				int32_t hi = pairword(whi(K(i, j)), whi(K(i, j + 1)));
				for (int l = 0; l < 4; l++) {
					wx[((ptrdiff_t)j * out + i) * 4 + l] = lo;
					wx[((ptrdiff_t)(j + 1) * out + i) * 4 + l] = hi;
				}
			}
		}
		break;
	}
#undef K
}

void rs_hpass(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, ptrdiff_t srclen, int rows,
              int c, const int32_t *start, const int32_t *k, int n, int out, const int32_t *wx, ptrdiff_t wstride) {
	(void)srclen, (void)wx, (void)wstride; // for the SIMD loops only
#ifdef RS_X86
	if (rs_level >= 1 && wx != NULL) {
		if (c == 1) {
			h1_avx2(dst, dstride, src, sstride, srclen, rows, start, k, n, out, wx, wstride);
			return;
		}
		if (c == 3 || c == 4) {
			h34_avx2(dst, dstride, src, sstride, srclen, rows, c, start, k, n, out, wx, wstride);
			return;
		}
	}
#endif
	for (int y = 0; y < rows; y++) {
		hrow_any(dst + y * dstride, src + y * sstride, c, start, k, n, 0, out);
	}
}

void rs_vpass(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, int n, int rows,
              const int32_t *start, int first, const int32_t *k, int taps, const int32_t *vw) {
	(void)vw; // for the SIMD loops only
#ifdef RS_X86
	if (rs_level >= 1 && vw != NULL) {
		v_avx2(dst, dstride, src, sstride, n, rows, start, first, k, taps, vw);
		return;
	}
#endif
	for (int y = 0; y < rows; y++) {
		vrow_c(dst + y * dstride, src + (ptrdiff_t)(start[y] - first) * sstride, sstride, n, k + (ptrdiff_t)y * taps,
		       taps);
	}
}

void rs_nearest(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, ptrdiff_t srclen, int c,
                const int32_t *ys, int rows, const int32_t *xs, int cols) {
	ptrdiff_t n = (ptrdiff_t)cols * c;
	// Columns that map one to one (the width does not change) copy rows.
	int same = 1;
	for (int x = 1; x < cols && same; x++) {
		same = xs[x] == xs[x - 1] + 1;
	}
	for (int y = 0; y < rows; y++) {
		uint8_t *d = dst + y * dstride;
		// Rows that repeat the one before (upscaling) are copied.
		if (y > 0 && ys[y] == ys[y - 1]) {
			memcpy(d, d - dstride, n);
			continue;
		}
		const uint8_t *s = src + (ptrdiff_t)ys[y] * sstride;
		ptrdiff_t avail = srclen - (ptrdiff_t)ys[y] * sstride;
		if (same) {
			memcpy(d, s + (ptrdiff_t)xs[0] * c, n);
			continue;
		}
		switch (c) {
		case 1:
			for (int x = 0; x < cols; x++) {
				d[x] = s[xs[x]];
			}
			break;
		case 3: {
			// 4-byte moves, the fourth byte overwritten by the next
			// pixel; the last pixel, and any whose fourth byte would be
			// past the source, move 3.
			int safe = cols - 1;
			while (safe > 0 && (ptrdiff_t)xs[safe - 1] * 3 + 4 > avail) {
				safe--;
			}
			int x = 0;
			for (; x + 4 <= safe; x += 4) {
				uint32_t v0, v1, v2, v3;
				memcpy(&v0, s + (ptrdiff_t)xs[x] * 3, 4);
				memcpy(&v1, s + (ptrdiff_t)xs[x + 1] * 3, 4);
				memcpy(&v2, s + (ptrdiff_t)xs[x + 2] * 3, 4);
				memcpy(&v3, s + (ptrdiff_t)xs[x + 3] * 3, 4);
				memcpy(d + 3 * x, &v0, 4);
				memcpy(d + 3 * x + 3, &v1, 4);
				memcpy(d + 3 * x + 6, &v2, 4);
				memcpy(d + 3 * x + 9, &v3, 4);
			}
			for (; x < safe; x++) {
				uint32_t v;
				memcpy(&v, s + (ptrdiff_t)xs[x] * 3, 4);
				memcpy(d + 3 * x, &v, 4);
			}
			for (; x < cols; x++) {
				memcpy(d + 3 * x, s + (ptrdiff_t)xs[x] * 3, 3);
			}
			break;
		}
		case 4:
			for (int x = 0; x < cols; x++) {
				uint32_t v;
				memcpy(&v, s + (ptrdiff_t)xs[x] * 4, 4);
				memcpy(d + 4 * x, &v, 4);
			}
			break;
		default:
			for (int x = 0; x < cols; x++) {
				memcpy(d + (ptrdiff_t)x * c, s + (ptrdiff_t)xs[x] * c, c);
			}
			break;
		}
	}
}
