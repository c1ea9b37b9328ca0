package codec

/*
#include <stdlib.h>
#include "jpegcoef.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// CoefDecoder decodes 8-bit Huffman-coded JPEGs, sequential and
// progressive, to their quantised DCT coefficients, for a route whose
// inverse DCT runs elsewhere (the GPU executor's): on the files
// libjpeg-turbo decodes cleanly they are its coefficients and quantisation
// tables exactly (bench/jpegentropy checks every file it times;
// tests/test_jpegentropy.py runs that check), and it decodes progressive
// ones 1.3 to 2 times as fast as it (docs/perf.md). It writes only
// into the caller's buffers, sized from Frame, and allocates nothing per
// image. Not for concurrent use.
type CoefDecoder struct {
	st    *C.sl_coef_state
	f     *C.sl_coef_frame // C memory: a Go one passed to C would escape, one allocation a call
	plain C.int            // 1: the build for any CPU, not the BMI2 one (tests run both)
}

// NewCoefDecoder makes a decoder; Close frees it.
func NewCoefDecoder() (*CoefDecoder, error) {
	d := &CoefDecoder{
		st: (*C.sl_coef_state)(C.calloc(1, C.sl_coef_state_size())),
		f:  (*C.sl_coef_frame)(C.calloc(1, C.sizeof_sl_coef_frame)),
	}
	if d.st == nil || d.f == nil {
		d.Close()
		return nil, errors.New("codec: out of C memory for a coefficient decoder")
	}
	return d, nil
}

// Close frees the decoder; a second call does nothing.
func (d *CoefDecoder) Close() {
	if d == nil {
		return
	}
	C.free(unsafe.Pointer(d.st))
	C.free(unsafe.Pointer(d.f))
	d.st, d.f = nil, nil
}

// CoefBlock is the bytes of one block of coefficients: 64 int16s in
// natural (row-major) order.
const CoefBlock = 64 * 2

// CoefComponent is one component's blocks in a coefficient buffer and its
// plane, the samples libjpeg's IDCT fills before upsampling.
type CoefComponent struct {
	H, V             int // sampling factors (1x1 for a JPEG's lone component)
	BlocksW, BlocksH int // blocks that hold image data
	Pitch            int // blocks a stored row: whole MCUs, at least BlocksW
	First            int // index of its first block in the buffer
	W, Height        int // its plane's size in samples
	// Quant is its quantisation table in natural order, as the first scan
	// coding it found it; zeros for a component no scan codes (libjpeg
	// then decodes it flat mid-grey, as its IDCT of zeros does here).
	// Set by Decode.
	Quant [64]uint16
}

// Frame reads src's frame header: how many blocks a coefficient buffer
// for it holds (Decode wants that many). A JPEG that is not an 8-bit
// Huffman-coded one of 1 to 4 components is an error.
func (d *CoefDecoder) Frame(src []byte) (blocks int, err error) {
	if len(src) == 0 {
		return 0, formatErr(NotImage, "JPEG", "no data")
	}
	if rc := C.sl_coef_frame_of((*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)), d.f); rc != 0 {
		return 0, coefError(rc)
	}
	return int(d.f.blocks), nil
}

// Decode decodes src's coefficients into coef (at least blocks×CoefBlock
// bytes, 2-byte aligned), with nz (at least blocks; a sequential JPEG
// leaves it alone) as scratch. Decoding
// stops at the first damage (where libjpeg would warn and go on): the
// caller decodes such a file with libjpeg instead, which names it.
func (d *CoefDecoder) Decode(coef []byte, nz []uint64, src []byte) error {
	if len(src) == 0 {
		return formatErr(NotImage, "JPEG", "no data")
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(coef)))%2 != 0 {
		return errors.New("codec: coefficient buffer not 2-byte aligned")
	}
	capBlocks := min(len(coef)/CoefBlock, len(nz))
	var cp *C.int16_t
	var np *C.uint64_t
	if capBlocks > 0 {
		cp, np = (*C.int16_t)(unsafe.Pointer(&coef[0])), (*C.uint64_t)(unsafe.Pointer(&nz[0]))
	}
	rc := C.sl_coef_decode(d.st, (*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)), MaxJPEGScans, d.f, cp, np, C.int64_t(capBlocks), d.plain)
	if rc != 0 {
		return coefError(rc)
	}
	return nil
}

// Components is the number of components of the last Frame or Decode.
func (d *CoefDecoder) Components() int { return int(d.f.nc) }

// Component is component i (0 <= i < Components) of the last Frame or
// Decode.
func (d *CoefDecoder) Component(i int) CoefComponent {
	c := &d.f.c[i]
	out := CoefComponent{
		H: int(c.h), V: int(c.v), BlocksW: int(c.bw), BlocksH: int(c.bh), Pitch: int(c.pw),
		First: int(c.first), W: int(c.pxw), Height: int(c.pxh),
	}
	for k := range out.Quant {
		out.Quant[k] = uint16(c.quant[k])
	}
	return out
}

func coefError(rc C.int) error {
	switch rc {
	case C.SL_COEF_NOT_HUFFMAN:
		return formatErr(Unsupported, "JPEG", "not an 8-bit Huffman-coded JPEG of 1 to %d components", C.SL_COEF_MAX_COMPS)
	case C.SL_COEF_BAD_MARKER:
		return formatErr(Truncated, "JPEG", "a marker segment runs past the end of the data")
	case C.SL_COEF_BAD_FRAME:
		return formatErr(Corrupt, "JPEG", "bad frame header")
	case C.SL_COEF_BAD_TABLE:
		return formatErr(Corrupt, "JPEG", "bad Huffman or quantisation table")
	case C.SL_COEF_BAD_SCAN:
		return formatErr(Corrupt, "JPEG", "bad scan header, or a scan names a table not defined")
	case C.SL_COEF_BAD_DATA:
		return formatErr(Corrupt, "JPEG", "corrupt entropy-coded data")
	case C.SL_COEF_TOO_MANY_SCANS:
		return formatErr(TooLarge, "JPEG", "more than %d scans", MaxJPEGScans)
	case C.SL_COEF_NO_END:
		return formatErr(Truncated, "JPEG", "data ends before the end-of-image marker")
	case C.SL_COEF_SMALL_BUFFER:
		return errors.New("codec: coefficient buffer smaller than the frame's blocks")
	}
	return fmt.Errorf("codec: coefficient decoder result %d", int(rc))
}
