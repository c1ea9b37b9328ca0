package codec

/*
// dav1d comes from build/pic as a static PIC archive (make pic-libs), so
// that binaries and the backend need only glibc at run time.
#cgo CFLAGS: -I${SRCDIR}/../build/pic/include
#cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libdav1d.a -lpthread -ldl -lm
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <dav1d/dav1d.h>

// One picture's layout, returned by value: no Go pointer to a local.
typedef struct {
	int rc; // 0: a picture; < 0: dav1d's error; 1: the data held no picture
	int w, h, layout, bpc, full, mtrx;
	const uint8_t *y, *u, *v;
	ptrdiff_t ystride, cstride;
} sl_dav1d_frame;

// sl_dav1d_open makes a one-thread decoder that shows one frame as soon as
// it is decoded, of operating point 0's highest layer only, refusing
// frames over limit pixels; dav1d logs nothing.
static Dav1dContext *sl_dav1d_open(unsigned limit, int *rc) {
	Dav1dSettings s;
	dav1d_default_settings(&s);
	s.n_threads = 1;
	s.max_frame_delay = 1;
	s.operating_point = 0;
	s.all_layers = 0;
	s.frame_size_limit = limit;
	s.logger.callback = NULL;
	Dav1dContext *c = NULL;
	*rc = dav1d_open(&c, &s);
	return *rc < 0 ? NULL : c;
}

static void sl_dav1d_close(Dav1dContext *c) { dav1d_close(&c); }

// sl_dav1d_decode copies n bytes of src into dav1d's own buffer (C keeps
// no Go pointer) and decodes until the first picture, which pic then
// holds until sl_dav1d_release. Data after that picture is never decoded.
static sl_dav1d_frame sl_dav1d_decode(Dav1dContext *c, const uint8_t *src, size_t n, Dav1dPicture *pic) {
	sl_dav1d_frame r;
	memset(&r, 0, sizeof r);
	memset(pic, 0, sizeof *pic);
	Dav1dData data;
	memset(&data, 0, sizeof data);
	uint8_t *buf = dav1d_data_create(&data, n);
	if (buf == NULL) {
		r.rc = DAV1D_ERR(ENOMEM);
		return r;
	}
	memcpy(buf, src, n);
	// dav1d makes progress on every call; the cap only guards this loop.
	for (int i = 0;; i++) {
		if (data.sz > 0) {
			int e = dav1d_send_data(c, &data);
			if (e < 0 && e != DAV1D_ERR(EAGAIN)) {
				r.rc = e;
				break;
			}
		}
		int e = dav1d_get_picture(c, pic);
		if (e == 0)
			break;
		if (e != DAV1D_ERR(EAGAIN)) {
			r.rc = e;
			break;
		}
		if (data.sz == 0 || i > 1 << 20) {
			r.rc = 1;
			break;
		}
	}
	dav1d_data_unref(&data);
	dav1d_flush(c);
	if (r.rc != 0)
		return r;
	r.w = pic->p.w;
	r.h = pic->p.h;
	r.layout = pic->p.layout;
	r.bpc = pic->p.bpc;
	r.full = pic->seq_hdr->color_range;
	r.mtrx = pic->seq_hdr->mtrx;
	r.y = pic->data[0];
	r.u = pic->data[1];
	r.v = pic->data[2];
	r.ystride = pic->stride[0];
	r.cstride = pic->stride[1];
	return r;
}

static void sl_dav1d_release(Dav1dPicture *pic) { dav1d_picture_unref(pic); }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// av1Frame is a decoded AV1 picture's planes, in dav1d's C memory, valid
// until release.
type av1Frame struct {
	w, h    int
	bpc     int // 8, 10 or 12
	subX    int // chroma subsampling shifts; mono for 4:0:0
	subY    int
	mono    bool
	full    bool   // full-range samples
	matrix  uint16 // the sequence header's matrix_coefficients
	y, u, v unsafe.Pointer
	ys, cs  int // strides in bytes
}

// sample is plane p's (0 Y, 1 U, 2 V) sample at (x, y), in that plane's
// own coordinates.
func (f *av1Frame) plane(p int) (base unsafe.Pointer, stride int) {
	switch p {
	case 1:
		return f.u, f.cs
	case 2:
		return f.v, f.cs
	}
	return f.y, f.ys
}

// row is plane p's row y as bytes (8-bit) or little-endian 16-bit
// samples, width samples long.
func (f *av1Frame) row(p, y, width int) []byte {
	base, stride := f.plane(p)
	bytes := width
	if f.bpc > 8 {
		bytes *= 2
	}
	return unsafe.Slice((*byte)(unsafe.Add(base, y*stride)), bytes)
}

// av1Decoder owns a dav1d context and the picture it last returned.
type av1Decoder struct {
	ctx   *C.Dav1dContext
	pic   *C.Dav1dPicture // C memory: dav1d keeps references in it
	held  bool
	limit int
}

func newAV1Decoder() (*av1Decoder, error) {
	pic := (*C.Dav1dPicture)(C.calloc(1, C.sizeof_Dav1dPicture))
	if pic == nil {
		return nil, fmt.Errorf("codec: out of C memory")
	}
	return &av1Decoder{pic: pic}, nil
}

// open (re)makes the context when the frame size limit changes.
func (d *av1Decoder) open(limit int) error {
	if d.ctx != nil && d.limit == limit {
		return nil
	}
	d.closeCtx()
	var rc C.int
	d.ctx = C.sl_dav1d_open(C.uint(limit), &rc)
	if d.ctx == nil {
		return formatErr(TooLarge, "AVIF", "AV1 decoder could not start (dav1d error %d)", int(rc))
	}
	d.limit = limit
	return nil
}

// decode decodes data's first picture, no larger than limit pixels.
// The frame is valid until the next decode or release.
func (d *av1Decoder) decode(data []byte, limit int) (av1Frame, error) {
	d.release()
	if len(data) == 0 {
		return av1Frame{}, formatErr(Corrupt, "AVIF", "AVIF image item holds no AV1 data")
	}
	if err := d.open(limit); err != nil {
		return av1Frame{}, err
	}
	r := C.sl_dav1d_decode(d.ctx, (*C.uint8_t)(unsafe.Pointer(&data[0])), C.size_t(len(data)), d.pic)
	if r.rc != 0 {
		if r.rc == 1 {
			return av1Frame{}, formatErr(Corrupt, "AVIF", "AVIF image item's AV1 data holds no picture")
		}
		if r.rc == -C.ERANGE {
			// dav1d's frame_size_limit: the frame is larger than its item.
			return av1Frame{}, formatErr(Corrupt, "AVIF", "AVIF item's AV1 frame is larger than its %d-pixel ispe size", limit)
		}
		return av1Frame{}, formatErr(Corrupt, "AVIF", "AVIF image item's AV1 data is corrupt (dav1d error %d)", -int(r.rc))
	}
	d.held = true
	f := av1Frame{w: int(r.w), h: int(r.h), bpc: int(r.bpc), full: r.full != 0, matrix: uint16(r.mtrx),
		y: unsafe.Pointer(r.y), u: unsafe.Pointer(r.u), v: unsafe.Pointer(r.v), ys: int(r.ystride), cs: int(r.cstride)}
	switch r.layout {
	case C.DAV1D_PIXEL_LAYOUT_I400:
		f.mono = true
	case C.DAV1D_PIXEL_LAYOUT_I420:
		f.subX, f.subY = 1, 1
	case C.DAV1D_PIXEL_LAYOUT_I422:
		f.subX = 1
	}
	return f, nil
}

// release hands the last picture back to dav1d.
func (d *av1Decoder) release() {
	if d.held {
		C.sl_dav1d_release(d.pic)
		d.held = false
	}
}

func (d *av1Decoder) closeCtx() {
	if d.ctx != nil {
		C.sl_dav1d_close(d.ctx)
		d.ctx = nil
	}
}

func (d *av1Decoder) Close() {
	d.release()
	d.closeCtx()
	if d.pic != nil {
		C.free(unsafe.Pointer(d.pic))
		d.pic = nil
	}
}
