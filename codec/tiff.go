package codec

/*
#cgo CFLAGS: -I${SRCDIR}/../build/pic/include
#cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libtiff.a -l:libturbojpeg.a -l:libz.a -lm
#include <stdlib.h>
#include "tiffmem.h"
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/sluice-dev/sluice/internal/reuse"
)

func init() {
	Register(Format{
		Name: "TIFF",
		Match: func(b []byte) bool {
			return bytes.HasPrefix(b, []byte("II*\x00")) || bytes.HasPrefix(b, []byte("MM\x00*"))
		},
		New: newTIFFDecoder,
	})
}

// tiffKind is how a TIFF's samples become pixels.
type tiffKind uint8

const (
	tiffGray tiffKind = iota + 1
	tiffGrayAlpha
	tiffRGB
	tiffRGBA
	tiffPalette
)

// tiffLayout is the part of a TIFF header the conversion needs.
type tiffLayout struct {
	info       C.sl_tiff_info
	kind       tiffKind
	spp, bytes int  // samples per pixel as decoded, bytes per sample
	minIsWhite bool // grey 0 is white
	// cmap is a ColorMap that libtiff ignored for its count (N entries of
	// red, then green, then blue); nil when libtiff's is used.
	cmap []uint16
}

// tiffDecoder decodes TIFF through libtiff: the first page, 8 or 16 bits
// per sample, strips or tiles, uncompressed or LZW, Deflate, PackBits or
// JPEG; grey (either polarity), grey+alpha, RGB, RGBA and 8-bit palette.
// 16-bit samples keep their high byte, as for PNG and in Pillow.
type tiffDecoder struct {
	st      *C.sl_tiff_state // C memory: messages and the colour map
	raw     []byte           // decoded samples, as libtiff gives them
	row     []byte           // one row of 8-bit RGBA
	s8      []byte           // one row of 8-bit samples
	scratch []byte           // the converted image before orientation
}

func newTIFFDecoder() (FormatDecoder, error) {
	st := (*C.sl_tiff_state)(C.calloc(1, C.sizeof_sl_tiff_state))
	if st == nil {
		return nil, fmt.Errorf("codec: out of C memory")
	}
	return &tiffDecoder{st: st}, nil
}

func (d *tiffDecoder) Close() {
	if d.st != nil {
		C.free(unsafe.Pointer(d.st))
		d.st = nil
	}
	d.raw, d.row, d.s8, d.scratch = nil, nil, nil, nil
}

// tiffMaxAlloc bounds any single allocation libtiff makes: the decoded
// image at 8 bytes a pixel (4 samples of 16 bits), or twice the input
// (directories, tables), plus room for codec state. Reading the header
// passes 0 pixels: it allocates no pixel buffer, only what the directory
// holds, which the input bounds.
func tiffMaxAlloc(inputLen, pixels int) uint64 {
	return uint64(max(8*pixels, 2*inputLen)) + 1<<20
}

// failure is the error of a failed libtiff call: its first message, or
// the cap it ran into.
func (d *tiffDecoder) failure() *Error {
	if d.st.cap_hit != 0 {
		return capError("TIFF", int64(d.st.cap))
	}
	return tiffError(C.GoString(&d.st.err[0]))
}

func (d *tiffDecoder) Header(src []byte, lim Limits) (Header, error) {
	l, c, err := d.header(src, lim, true)
	if err != nil {
		return Header{}, err
	}
	o := int(l.info.orientation)
	if o < 1 || o > 8 {
		o = 1
	}
	w, h := int(l.info.width), int(l.info.height)
	// Beside the directory: the decoded samples, one tile, and libjpeg's
	// coefficients of a progressive strip.
	mem := c.mem + int64(w)*int64(h)*int64(l.spp*l.bytes)
	if l.info.tiled != 0 {
		mem += int64(l.info.tw) * int64(l.info.th) * int64(l.spp*l.bytes)
	}
	if e := lim.overMemory("TIFF", mem, func() string {
		return fmt.Sprintf("%dx%d, %d tags holding %d bytes of tag data, %d %s",
			w, h, c.ifd.entries, c.ifd.tagData, c.ifd.striles, c.ifd.strileName())
	}); e != nil {
		return Header{}, e
	}
	return Header{Width: w, Height: h, Orientation: o, Work: c.work, Memory: mem, Mode: l.kind.mode()}, nil
}

// mode is Pillow's mode for the kind, as far as Image.resize cares: "P"
// for a palette, "LA" and "RGBA" for alpha (unassociated: associated
// alpha is refused).
func (k tiffKind) mode() Mode {
	switch k {
	case tiffPalette:
		return ModeNearest
	case tiffGrayAlpha, tiffRGBA:
		return ModeAlpha
	}
	return ModeDirect
}

// tiffCosts is what header estimated before libtiff read the file.
type tiffCosts struct {
	ifd       tiffIFD
	work, mem int64
}

// header reads the layout of src's first image; with costs, it also
// checks and estimates what decoding would cost (Header does; Decode
// only repeats the structural checks).
func (d *tiffDecoder) header(src []byte, lim Limits, costs bool) (tiffLayout, tiffCosts, error) {
	var c tiffCosts
	if d.st == nil {
		return tiffLayout{}, c, fmt.Errorf("codec: TIFF decoder used after Close")
	}
	// Before libtiff reads the directory (and copies every tag's data).
	ifd, e := walkTIFF(src)
	if e != nil {
		return tiffLayout{}, c, e
	}
	c.ifd = ifd
	if e := tooLarge("TIFF", int(ifd.width), int(ifd.height), lim.MaxPixels); e != nil {
		return tiffLayout{}, c, e
	}
	if costs {
		if c.work, c.mem, e = ifd.checkLimits(src, lim); e != nil {
			return tiffLayout{}, c, e
		}
	}
	d.st.cap = C.int64_t(allocCap(c.mem))
	r := C.sl_tiff_header((*C.uchar)(unsafe.Pointer(&src[0])), C.size_t(len(src)),
		C.uint64_t(tiffMaxAlloc(len(src), 0)), d.st)
	if r.rc != 0 {
		return tiffLayout{}, c, d.failure()
	}
	w, h := int(r.width), int(r.height)
	if w <= 0 || h <= 0 {
		return tiffLayout{}, c, formatErr(Corrupt, "TIFF", "TIFF header gives an empty %dx%d image", w, h)
	}
	if err := TooLargeErr("TIFF", w, h, lim.MaxPixels); err != nil {
		return tiffLayout{}, c, err
	}
	l, err := tiffLayoutOf(r, &ifd, src)
	if err != nil {
		return tiffLayout{}, c, err
	}
	if r.tiled != 0 && uint64(r.tilepixels) > 4*uint64(w)*uint64(h)+256*256 {
		// Tiles are decoded whole: tiles much larger than the image would
		// make a small image cost a large one's work.
		return tiffLayout{}, c, formatErr(Unsupported, "TIFF", "TIFF tiles of %dx%d are too large for a %dx%d image",
			int(r.tw), int(r.th), w, h)
	}
	if r.truncated != 0 {
		return tiffLayout{}, c, formatErr(Truncated, "TIFF", "TIFF data ends early: a strip or tile lies past the end")
	}
	return l, c, nil
}

// tiffCompressions are the codecs supported, by TIFF compression number.
var tiffCompressions = map[int]string{1: "none", 5: "LZW", 8: "Deflate", 32946: "Deflate", 32773: "PackBits", 7: "JPEG"}

var tiffPhotometrics = map[int]string{
	0: "min-is-white", 1: "min-is-black", 2: "RGB", 3: "palette", 4: "mask", 5: "separated (CMYK)",
	6: "YCbCr", 8: "CIE L*a*b*", 9: "ICC L*a*b*", 10: "ITU L*a*b*", 32844: "LogL", 32845: "LogLuv",
}

// tiffLayoutOf decides how the samples of r become pixels, refusing what
// is not supported with the reason.
func tiffLayoutOf(r C.sl_tiff_info, ifd *tiffIFD, src []byte) (tiffLayout, error) {
	unsupported := func(format string, a ...any) (tiffLayout, error) {
		return tiffLayout{}, formatErr(Unsupported, "TIFF", "TIFF "+format+" is not supported", a...)
	}
	comp, ph, spp, bps := int(r.compression), int(r.photometric), int(r.spp), int(r.bps)
	if ph < 0 && spp == 1 {
		// No PhotometricInterpretation: Pillow takes 0, min-is-white (and
		// cannot open such files of more samples, which are refused below).
		ph = 0
	}
	var cmap []uint16
	if ifd.photometric == 3 && ph != 3 {
		// A palette image whose ColorMap libtiff ignored (its count is not
		// 3 × 256) and read as grey or RGB instead. Pillow uses the entries
		// there are: the count's thirds are red, green and blue, and the
		// indices past them are black.
		if spp != 1 || bps != 8 {
			return unsupported("palette of %d samples of %d bits", spp, bps)
		}
		var err error
		if cmap, err = ifd.readColorMap(src); err != nil {
			return tiffLayout{}, err
		}
		ph = 3
	}
	if _, ok := tiffCompressions[comp]; !ok {
		return unsupported("compression %d", comp)
	}
	if r.sampleformat != 1 {
		return unsupported("sample format %d (signed or floating point)", int(r.sampleformat))
	}
	if bps != 8 && bps != 16 {
		return unsupported("with %d bits per sample", bps)
	}
	if r.planar != 1 && spp > 1 {
		return unsupported("with separate colour planes")
	}
	l := tiffLayout{info: r, spp: spp, bytes: bps / 8, cmap: cmap}
	// extra is the first ExtraSamples value: 0 unspecified (ignored), 1
	// associated (premultiplied) alpha, 2 unassociated alpha; -1 none.
	extra := int(r.extra)
	switch {
	case (ph == 0 || ph == 1) && spp == 1:
		l.kind = tiffGray
	case (ph == 0 || ph == 1) && spp == 2 && extra == 0:
		l.kind = tiffGray
	case (ph == 0 || ph == 1) && spp == 2 && extra == 2:
		l.kind = tiffGrayAlpha
	case ph == 2 && spp == 3:
		l.kind = tiffRGB
	case ph == 2 && spp == 4 && extra == 0:
		l.kind = tiffRGB
	case ph == 2 && spp == 4 && extra != 1:
		// No ExtraSamples, or a bogus value: alpha, as Pillow reads it.
		l.kind = tiffRGBA
	case ph == 3 && spp == 1 && bps == 8:
		l.kind = tiffPalette
	case ph == 6 && comp == 7 && spp == 3 && bps == 8:
		l.kind = tiffRGB // libjpeg converts to RGB
	case extra == 1:
		return unsupported("with premultiplied alpha")
	case ph == 6:
		return unsupported("YCbCr without JPEG compression")
	case ph == 3:
		return unsupported("%d-bit palette", bps)
	case ph < 0:
		return tiffLayout{}, formatErr(Corrupt, "TIFF", "TIFF has no photometric interpretation (for %d samples per pixel)", spp)
	default:
		name := tiffPhotometrics[ph]
		if name == "" {
			name = fmt.Sprint(ph)
		}
		return unsupported("photometric %s with %d samples per pixel", name, spp)
	}
	l.minIsWhite = ph == 0
	return l, nil
}

func (d *tiffDecoder) Decode(dst, src []byte, h Header, o Options) error {
	l, _, err := d.header(src, Limits{}, false)
	if err != nil {
		return err
	}
	w, hh := int(l.info.width), int(l.info.height)
	if w != h.Width || hh != h.Height {
		return formatErr(Corrupt, "TIFF", "TIFF header changed from %dx%d to %dx%d", h.Width, h.Height, w, hh)
	}
	stride := w * l.spp * l.bytes
	d.raw = reuse.Room(d.raw, hh*stride)
	d.st.cap = C.int64_t(allocCap(h.Memory))
	rc := C.sl_tiff_decode((*C.uchar)(unsafe.Pointer(&src[0])), C.size_t(len(src)),
		C.uint64_t(tiffMaxAlloc(len(src), w*hh)), &l.info,
		(*C.uchar)(unsafe.Pointer(&d.raw[0])), C.size_t(len(d.raw)), d.st)
	switch rc {
	case 0:
	case 2:
		return formatErr(Corrupt, "TIFF", "TIFF layout is inconsistent (%s)", C.GoString(&d.st.err[0]))
	default:
		return d.failure()
	}
	c := o.color()
	out, orient := storedTarget(dst, &d.scratch, w*hh*c.Channels(), h, o)
	d.row = reuse.Room(d.row, 4*w)
	d.s8 = reuse.Room(d.s8, 4*w)
	var lut [256][4]byte
	if l.kind == tiffPalette {
		// 16-bit colour map entries keep their high byte, as in Pillow.
		if l.cmap != nil {
			n := len(l.cmap) / 3
			for i := range lut {
				lut[i] = [4]byte{0, 0, 0, 0xFF}
				if i < n {
					lut[i] = [4]byte{byte(l.cmap[i] >> 8), byte(l.cmap[n+i] >> 8), byte(l.cmap[2*n+i] >> 8), 0xFF}
				}
			}
		} else {
			for i := range lut {
				lut[i] = [4]byte{byte(d.st.cmap[i] >> 8), byte(d.st.cmap[256+i] >> 8), byte(d.st.cmap[512+i] >> 8), 0xFF}
			}
		}
	}
	ch := c.Channels()
	for y := 0; y < hh; y++ {
		tiffRow(out[y*w*ch:(y+1)*w*ch], d.raw[y*stride:(y+1)*stride], d.s8, d.row, &l, &lut, c)
	}
	if orient != 1 {
		Orient(dst, out, hh, w, ch, orient)
	}
	return nil
}

// tiffRow converts one row of decoded samples into dst in colour c,
// through s8 (the row as 8-bit pixels) and row (4*width bytes of scratch).
func tiffRow(dst, raw, s8, row []byte, l *tiffLayout, lut *[256][4]byte, c Color) {
	w := len(row) / 4
	n := 1 // samples per pixel out of s8
	switch l.kind {
	case tiffGrayAlpha:
		n = 2
	case tiffRGB:
		n = 3
	case tiffRGBA, tiffPalette:
		n = 4
	}
	s8 = s8[:n*w]
	if l.kind == tiffPalette {
		for x := 0; x < w; x++ {
			copy(s8[4*x:4*x+4], lut[raw[x]][:])
		}
		packSamples(dst, s8, row, n, c)
		return
	}
	// The first n samples of each pixel; extra samples after them (an
	// unspecified one) are dropped.
	spp := l.spp
	for x := 0; x < w; x++ {
		for k := 0; k < n; k++ {
			i := x*spp + k
			if l.bytes == 2 {
				// libtiff gives samples in host order; keep the high byte.
				s8[n*x+k] = byte(binary.NativeEndian.Uint16(raw[2*i:]) >> 8)
			} else {
				s8[n*x+k] = raw[i]
			}
		}
	}
	if l.minIsWhite {
		for x := 0; x < w; x++ {
			s8[n*x] ^= 0xFF
		}
	}
	packSamples(dst, s8, row, n, c)
}
