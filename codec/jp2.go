package codec

/*
#cgo CFLAGS: -I${SRCDIR}/../build/pic/include/openjpeg-2.5
#cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libopenjp2.a -lm
#include <stdlib.h>
#include <openjpeg.h>
#include "jp2mem.h"
*/
import "C"

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/sluice-dev/sluice/internal/reuse"
)

func init() {
	Register(Format{
		Name: "JPEG 2000",
		Match: func(b []byte) bool {
			return bytes.HasPrefix(b, []byte(jp2Magic)) || bytes.HasPrefix(b, []byte(j2kMagic))
		},
		New: newJP2Decoder,
	})
}

// Limits checked from the SIZ segment before OpenJPEG reads the header:
// it allocates a tile structure per tile there, so a tiny file claiming
// thousands of tiles would cost megabytes; and per component.
const (
	jp2MaxTiles = 4096
	// jp2MinTileArea: tiles must average this many pixels, so that the
	// per-tile overhead stays a fraction of the pixel work.
	jp2MinTileArea = 64
	// jp2MaxComps: grey, grey+alpha, RGB, RGBA (jp2mem.h's SL_JP2_MAX_COMPS).
	jp2MaxComps = C.SL_JP2_MAX_COMPS
)

// jp2Decoder decodes JPEG 2000 (JP2 files and raw codestreams) through
// OpenJPEG: 1 to 4 components (grey, grey+alpha, RGB, RGBA) of 1 to 16
// bits, all at full resolution (no subsampled components), in the sRGB,
// grey or an unspecified colour space. Samples become 8-bit as in Pillow
// (jp2mem.c's sl_jscale): shifted by their precision minus 8, rounded for
// colour images and truncated for grey (Pillow's "I;16", high byte kept).
type jp2Decoder struct {
	st  *C.sl_jp2_state // C memory: messages
	pix []byte          // a strip of decoded pixels, comps bytes each
	row []byte          // one row of 8-bit RGBA
}

func newJP2Decoder() (FormatDecoder, error) {
	st := (*C.sl_jp2_state)(C.calloc(1, C.sizeof_sl_jp2_state))
	if st == nil {
		return nil, fmt.Errorf("codec: out of C memory")
	}
	return &jp2Decoder{st: st}, nil
}

func (d *jp2Decoder) Close() {
	if d.st != nil {
		C.sl_jp2_release(d.st)
		C.free(unsafe.Pointer(d.st))
		d.st = nil
	}
	d.pix, d.row = nil, nil
}

func (d *jp2Decoder) Header(src []byte, lim Limits) (Header, error) {
	info, est, err := d.header(src, lim, true)
	if err != nil {
		return Header{}, err
	}
	h := Header{Width: int(info.x1 - info.x0), Height: int(info.y1 - info.y0), Orientation: 1,
		Work: est.work, Memory: est.memory}
	if info.comps == 2 || info.comps == 4 {
		h.Mode = ModeAlpha // Pillow opens it "LA" or "RGBA" by its count of components
	}
	return h, nil
}

var jp2Spaces = map[C.int]string{C.OPJ_CLRSPC_SYCC: "sYCC", C.OPJ_CLRSPC_EYCC: "e-YCC", C.OPJ_CLRSPC_CMYK: "CMYK"}

// header checks src's SIZ against the limits, then (with cost) the
// estimated memory and work, all before OpenJPEG reads it, and then has
// OpenJPEG read the header.
func (d *jp2Decoder) header(src []byte, lim Limits, cost bool) (C.sl_jp2_info, jp2Estimate, error) {
	var none C.sl_jp2_info
	var est jp2Estimate
	if d.st == nil {
		return none, est, fmt.Errorf("codec: JPEG 2000 decoder used after Close")
	}
	jp2 := bytes.HasPrefix(src, []byte(jp2Magic))
	cs := src
	if jp2 {
		var err *Error
		if cs, err = jp2Codestream(src); err != nil {
			return none, est, err
		}
	}
	siz, serr := parseSIZ(cs)
	if serr != nil {
		return none, est, serr
	}
	if err := TooLargeErr("JPEG 2000", siz.width, siz.height, lim.MaxPixels); err != nil {
		return none, est, err
	}
	if siz.comps < 1 || siz.comps > jp2MaxComps {
		return none, est, formatErr(Unsupported, "JPEG 2000", "JPEG 2000 with %d components is not supported", siz.comps)
	}
	if siz.tiles > jp2MaxTiles || siz.tiles > 1+uint64(siz.width)*uint64(siz.height)/jp2MinTileArea {
		return none, est, formatErr(Unsupported, "JPEG 2000", "JPEG 2000 with %d tiles for %dx%d pixels is not supported",
			siz.tiles, siz.width, siz.height)
	}
	if cost {
		// Before OpenJPEG: opj_read_header already allocates per tile.
		var cerr *Error
		if est, cerr = jp2Cost(cs, siz, lim); cerr != nil {
			return none, est, cerr
		}
	}
	d.st.cap = C.int64_t(allocCap(est.memory))
	info := C.sl_jp2_header((*C.uchar)(unsafe.Pointer(&src[0])), C.size_t(len(src)), cBool(jp2), d.st)
	if info.rc != 0 {
		return none, est, d.failure()
	}
	w, h := int(info.x1)-int(info.x0), int(info.y1)-int(info.y0)
	if w != siz.width || h != siz.height || int(info.comps) != siz.comps {
		return none, est, formatErr(Corrupt, "JPEG 2000", "JPEG 2000 header (%dx%d, %d components) disagrees with SIZ (%dx%d, %d)",
			w, h, int(info.comps), siz.width, siz.height, siz.comps)
	}
	if name, ok := jp2Spaces[info.space]; ok {
		return none, est, formatErr(Unsupported, "JPEG 2000", "JPEG 2000 in the %s colour space is not supported", name)
	}
	for k := 0; k < int(info.comps); k++ {
		if info.prec[k] < 1 || info.prec[k] > 16 {
			return none, est, formatErr(Unsupported, "JPEG 2000", "JPEG 2000 with %d-bit samples is not supported", int(info.prec[k]))
		}
		if info.dx[k] != 1 || info.dy[k] != 1 {
			return none, est, formatErr(Unsupported, "JPEG 2000", "JPEG 2000 with subsampled components (%dx%d) is not supported",
				int(info.dx[k]), int(info.dy[k]))
		}
	}
	return info, est, nil
}

// failure is the error of a failed OpenJPEG call: its first message, or
// the cap it ran into.
func (d *jp2Decoder) failure() *Error {
	if d.st.cap_hit != 0 {
		return capError("JPEG 2000", int64(d.st.cap))
	}
	return jp2Error(C.GoString(&d.st.err[0]))
}

// jp2StripSamples: the decoded image is brought to 8 bits a strip of
// rows of about this many samples at a time (one row at the least), not
// as a whole second copy.
const jp2StripSamples = 1 << 18

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Decode: OpenJPEG's memory and work were estimated and checked by Header
// (jp2Cost: samples × bit-planes, code-blocks, precincts, layers × code-
// blocks for the packet headers, tiles); Decode reads the header again
// without the estimates. Decoding is at full resolution.
func (d *jp2Decoder) Decode(dst, src []byte, h Header, o Options) error {
	info, _, err := d.header(src, Limits{}, false)
	if err != nil {
		return err
	}
	w, hh, n := int(info.x1-info.x0), int(info.y1-info.y0), int(info.comps)
	if w != h.Width || hh != h.Height {
		return formatErr(Corrupt, "JPEG 2000", "JPEG 2000 header changed from %dx%d to %dx%d", h.Width, h.Height, w, hh)
	}
	jp2 := bytes.HasPrefix(src, []byte(jp2Magic))
	d.st.cap = C.int64_t(allocCap(h.Memory))
	rc := C.sl_jp2_decode((*C.uchar)(unsafe.Pointer(&src[0])), C.size_t(len(src)), cBool(jp2), &info, d.st)
	defer C.sl_jp2_release(d.st)
	msg := C.GoString(&d.st.err[0])
	switch rc {
	case 0:
	case 2:
		return formatErr(Corrupt, "JPEG 2000", "JPEG 2000 image is inconsistent (%s)", msg)
	case 3:
		return formatErr(Unsupported, "JPEG 2000", "JPEG 2000 with a palette or channel mapping is not supported (%s)", msg)
	default:
		return d.failure()
	}
	c := o.color()
	ch := c.Channels()
	d.row = reuse.Room(d.row, 4*w)
	strip := max(1, min(hh, jp2StripSamples/(w*n)))
	d.pix = reuse.Room(d.pix, strip*w*n)
	for y0 := 0; y0 < hh; y0 += strip {
		k := min(strip, hh-y0)
		if C.sl_jp2_rows(d.st, C.uint32_t(y0), C.uint32_t(k), (*C.uchar)(unsafe.Pointer(&d.pix[0])), C.size_t(k*w*n)) != 0 {
			return formatErr(Corrupt, "JPEG 2000", "JPEG 2000 image is inconsistent (rows %d to %d)", y0, y0+k)
		}
		for y := 0; y < k; y++ {
			packSamples(dst[(y0+y)*w*ch:(y0+y+1)*w*ch], d.pix[y*w*n:(y+1)*w*n], d.row, n, c)
		}
	}
	return nil
}
