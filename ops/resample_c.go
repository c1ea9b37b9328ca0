package ops

// #cgo CFLAGS: -O3
// #include "resample.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/sluice-dev/sluice/internal/reuse"
)

// The resampler's passes run in C (resample.c), one call per pass per
// image: AVX2 where the CPU has it, portable C otherwise. The wrappers
// check every bound the C loops rely on, so that a bug here panics rather
// than corrupting memory.

func init() { C.rs_init() }

// simdLevel is the C loops' level: 0 portable, 1 AVX2.
func simdLevel() int { return int(C.rs_simd()) }

// setSIMD sets the level, at most the CPU's, for tests of every path; it
// returns the previous one. Not safe while passes run.
func setSIMD(level int) int {
	old := simdLevel()
	C.rs_set_simd(C.int(level))
	return old
}

func u8p(b []byte) *C.uint8_t   { return (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b))) }
func i32p(s []int32) *C.int32_t { return (*C.int32_t)(unsafe.Pointer(unsafe.SliceData(s))) }

// simdWeights returns the table's weights in the layout of the SIMD loops
// for kind (C.RS_WX_*), built once and kept, or nil when the portable loops
// run.
func (t *axisTable) simdWeights(kind C.int) []int32 {
	if simdLevel() == 0 {
		return nil
	}
	l := &t.hw
	if kind == C.RS_WX_V {
		l = &t.vw
	}
	if l.kind != int(kind)+1 {
		n := int(C.rs_wx_len(kind, C.int(t.taps), C.int(t.out)))
		l.w = reuse.Len(l.w, n)
		C.rs_wx_build(i32p(l.w), kind, i32p(t.k), C.int(t.taps), C.int(t.out))
		l.kind = int(kind) + 1
	}
	return l.w
}

// hpass resamples rows rows of src (sstride bytes apart) horizontally into
// dst (dstride apart) with outputs x0..x0+n of table t.
func hpass(dst []byte, dstride int, src []byte, sstride int, rows, c int, t *axisTable, x0, n int) {
	if rows <= 0 || n <= 0 {
		return
	}
	if x0 < 0 || x0+n > t.out || len(src) < (rows-1)*sstride+t.in*c || len(dst) < (rows-1)*dstride+n*c {
		panic(fmt.Sprintf("ops: hpass out of bounds: %d rows, %d/%d bytes, table %v, outputs %d+%d", rows, len(src), len(dst), t, x0, n))
	}
	var wx *C.int32_t
	kind := C.int(C.RS_WX_H34)
	if c == 1 {
		kind = C.RS_WX_H1
	}
	if c != 2 {
		if w := t.simdWeights(kind); w != nil {
			wx = i32p(w[x0*4:])
		}
	}
	C.rs_hpass(u8p(dst), C.ptrdiff_t(dstride), u8p(src), C.ptrdiff_t(sstride), C.ptrdiff_t(len(src)),
		C.int(rows), C.int(c), i32p(t.start[x0:]), i32p(t.k[x0*t.taps:]), C.int(t.taps), C.int(n),
		wx, C.ptrdiff_t(t.out))
}

// vpass resamples vertically rows rows from output y0 of table t into dst
// (dstride apart), n bytes each. Input row j of the table starts at
// src[(j-first)*sstride].
func vpass(dst []byte, dstride int, src []byte, sstride, n int, t *axisTable, y0, rows, first int) {
	if rows <= 0 || n <= 0 {
		return
	}
	lo, hi := int(t.start[y0])-first, int(t.start[y0+rows-1])-first+t.taps
	if y0 < 0 || y0+rows > t.out || lo < 0 || len(src) < (hi-1)*sstride+n || len(dst) < (rows-1)*dstride+n {
		panic(fmt.Sprintf("ops: vpass out of bounds: rows %d+%d of %v from %d, %d/%d bytes", y0, rows, t, first, len(src), len(dst)))
	}
	var vw *C.int32_t
	if w := t.simdWeights(C.RS_WX_V); w != nil {
		vw = i32p(w[y0*((t.taps+1)&^1):])
	}
	C.rs_vpass(u8p(dst), C.ptrdiff_t(dstride), u8p(src), C.ptrdiff_t(sstride), C.int(n), C.int(rows),
		i32p(t.start[y0:]), C.int(first), i32p(t.k[y0*t.taps:]), C.int(t.taps), vw)
}

// nearestPass copies pixel tx.start[x0+x] of source row ty.start[y0+y] to
// pixel (y, x) of dst, for a window of rows×cols.
func nearestPass(dst []byte, dstride int, src []byte, sstride, c int, ty *axisTable, y0, rows int, tx *axisTable, x0, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if y0 < 0 || y0+rows > ty.out || x0 < 0 || x0+cols > tx.out || len(src) < (ty.in-1)*sstride+tx.in*c || len(dst) < (rows-1)*dstride+cols*c {
		panic(fmt.Sprintf("ops: nearest out of bounds: %v %d+%d, %v %d+%d, %d/%d bytes", ty, y0, rows, tx, x0, cols, len(src), len(dst)))
	}
	C.rs_nearest(u8p(dst), C.ptrdiff_t(dstride), u8p(src), C.ptrdiff_t(sstride), C.ptrdiff_t(len(src)), C.int(c),
		i32p(ty.start[y0:]), C.int(rows), i32p(tx.start[x0:]), C.int(cols))
}
