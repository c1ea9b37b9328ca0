//go:build cgo

package kernels

/*
#cgo CFLAGS: -O2 -std=gnu11 -Wall -Wno-unused-function
#include <stdlib.h>
#include "huffman.cuh"

// sl_huff_emulate runs sluice_huffman on the CPU: each image's block, its
// threads in loops (in reverse when reverse is set: the round's thread k+1
// then runs before thread k records its start, where forward order lets
// it see it), one phase after the other as the barriers order them. It
// returns the most rounds an image took.
static int sl_huff_emulate(const sluice_huff_params *prm, int reverse) {
	huff_shared *sh = malloc(sizeof *sh);
	int most = 0;
	if (!sh)
		return -1;
	for (int img = 0; img < prm->n; img++) {
		const huff_ctx x = huff_context(prm, img);
#define EACH(call)                                                                                   \
	for (int i = 0; i < HUFF_THREADS; i++) {                                                     \
		const int tid = reverse ? HUFF_THREADS - 1 - i : i;                                  \
		call;                                                                                \
	}
		EACH(huff_init(&x, sh, tid, HUFF_THREADS));
		int rd = 1;
		for (;; rd++) {
			int wrote = 0;
			EACH(wrote |= huff_round(&x, rd, tid, HUFF_THREADS));
			if (!wrote)
				break;
		}
		most = rd > most ? rd : most;
		EACH(huff_scan_up_n(&x, sh, tid, HUFF_THREADS));
		for (int d = 1; d < HUFF_THREADS; d <<= 1) {
			EACH(huff_scan_read(sh, tid, d, 1));
			EACH(huff_scan_write(sh, tid, d, 1));
		}
		EACH(huff_scan_down_n(&x, sh, tid, HUFF_THREADS));
		EACH(huff_scan_up_dc(&x, sh, tid, HUFF_THREADS));
		for (int d = 1; d < HUFF_THREADS; d <<= 1) {
			EACH(huff_scan_read(sh, tid, d, 4));
			EACH(huff_scan_write(sh, tid, d, 4));
		}
		EACH(huff_scan_down_dc(&x, sh, tid, HUFF_THREADS));
		EACH(huff_write(&x, sh, tid, HUFF_THREADS));
		huff_finish(&x, sh, rd);
#undef EACH
	}
	free(sh);
	return most;
}

static size_t sl_huff_sizes(int i) {
	switch (i) {
	case 0: return sizeof(sluice_huff_table);
	case 1: return sizeof(sluice_huff_image);
	case 2: return sizeof(sluice_huff_seg);
	case 3: return sizeof(sluice_huff_sub);
	case 4: return sizeof(sluice_huff_params);
	}
	return 0;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// huffEmulated says the CPU emulation of sluice_huffman is built (cgo).
const huffEmulated = true

// emulateHuffman decodes the batch with the kernel's own code compiled for
// the CPU (huffman.cuh as C), into coefs (one buffer an image, in the
// order added, each of its Blocks×64 int16s), and returns each image's
// result and the most synchronisation rounds an image took. It checks the
// kernel's logic, its synchronisation included, without a GPU.
func emulateHuffman(b *huffBatch, coefs [][]int16, reverse bool) ([]int32, int, error) {
	n := len(b.images)
	if len(coefs) != n {
		return nil, 0, errors.New("kernels: a coefficient buffer an image")
	}
	o := b.offsets()
	subs := alignUp16(o.total)
	status := alignUp16(subs + o.subs*huffSubSize)
	size := status + 4*n
	sizes := 0
	for _, c := range coefs {
		sizes += alignUp16(2 * len(c))
	}
	// C memory: the kernel's pointers are addresses the C code follows.
	mem := C.calloc(C.size_t(size+sizes+16), 1)
	if mem == nil {
		return nil, 0, errors.New("kernels: out of C memory")
	}
	defer C.free(mem)
	buf := unsafe.Slice((*byte)(mem), size+sizes+16)
	base := alignUp16(int(uintptr(mem))) - int(uintptr(mem))
	buf = buf[base:]
	addr := uint64(uintptr(mem)) + uint64(base)
	b.fill(buf[:o.total], o)
	// A pattern where the coefficients go: one the decode fails to write
	// shows, where zeros would pass for its zeros.
	for i := size; i < len(buf); i++ {
		buf[i] = 0x5A
	}
	at := size
	for i := range n {
		im := (*huffImage)(unsafe.Pointer(&buf[o.images+i*int(unsafe.Sizeof(huffImage{}))]))
		im.Coef = addr + uint64(at)
		at += alignUp16(2 * len(coefs[i]))
	}
	p := C.sluice_huff_params{
		images: C.ulonglong(addr + uint64(o.images)), segs: C.ulonglong(addr + uint64(o.segs)),
		subseg: C.ulonglong(addr + uint64(o.subseg)), tables: C.ulonglong(addr + uint64(o.tables)),
		data: C.ulonglong(addr + uint64(o.data)), subs: C.ulonglong(addr + uint64(subs)),
		status: C.ulonglong(addr + uint64(status)), n: C.int(n),
	}
	rev := C.int(0)
	if reverse {
		rev = 1
	}
	rounds := int(C.sl_huff_emulate(&p, rev))
	if rounds < 0 {
		return nil, 0, errors.New("kernels: out of C memory")
	}
	st := make([]int32, n)
	copy(st, unsafe.Slice((*int32)(unsafe.Pointer(&buf[status])), n))
	at = size
	for i := range n {
		copy(coefs[i], unsafe.Slice((*int16)(unsafe.Pointer(&buf[at])), len(coefs[i])))
		at += alignUp16(2 * len(coefs[i]))
	}
	return st, rounds, nil
}

// huffCSizes are the C structs' sizes, for a test against the Go mirrors.
func huffCSizes() [5]uintptr {
	var s [5]uintptr
	for i := range s {
		s[i] = uintptr(C.sl_huff_sizes(C.int(i)))
	}
	return s
}
