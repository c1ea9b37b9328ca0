// Inner loops of the resampler (resample.go), in C for SIMD. See resample.c.

#include <stddef.h>
#include <stdint.h>

// rs_init detects the CPU's SIMD level once; rs_simd reports the level in
// use, rs_set_simd sets it, at most the CPU's (tests run every path).
// 0: portable C, 1: AVX2.
void rs_init(void);
int rs_simd(void);
void rs_set_simd(int level);

// rs_hpass resamples rows rows horizontally. Row y reads src + y*sstride
// (srclen bytes are readable from src) and writes out pixels of c bytes at
// dst + y*dstride: pixel i sums the n pixels from start[i] on, times
// k[i*n + j]. wx is NULL (portable loops) or the weights in the layout
// RS_WX_H1 (c = 1) or RS_WX_H34 (c = 3, 4), offset to output 0 of this call
// (x0*4 int32 further when the call starts at output x0 of the table), with
// wstride the table's output count.
void rs_hpass(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, ptrdiff_t srclen,
              int rows, int c, const int32_t *start, const int32_t *k, int n, int out, const int32_t *wx,
              ptrdiff_t wstride);

// The SIMD loops read a table's weights in layouts of their own, one per
// kind of pass. rs_wx_len is the length in int32 of the layout of a table
// of out outputs and n taps, rs_wx_build fills it from k.
enum { RS_WX_V, RS_WX_H1, RS_WX_H34 };
ptrdiff_t rs_wx_len(int kind, int n, int out);
void rs_wx_build(int32_t *wx, int kind, const int32_t *k, int n, int out);

// rs_vpass resamples vertically: output row y (y < rows), n bytes at
// dst + y*dstride, sums the n-byte rows src + (start[y]-first+j)*sstride,
// j < taps, times k[y*taps + j]. vw is NULL (portable loops) or the weights
// in the layout RS_WX_V, offset to row 0 of this call.
void rs_vpass(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, int n, int rows,
              const int32_t *start, int first, const int32_t *k, int taps, const int32_t *vw);

// rs_nearest copies pixel xs[x] of source row ys[y] (of c bytes) to pixel x
// of output row y; srclen bytes are readable from src.
void rs_nearest(uint8_t *dst, ptrdiff_t dstride, const uint8_t *src, ptrdiff_t sstride, ptrdiff_t srclen, int c,
                const int32_t *ys, int rows, const int32_t *xs, int cols);
