package codec

/*
#cgo CFLAGS: -I${SRCDIR}/../build/pic/include
#cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libwebpdemux.a -l:libwebp.a -lm
#include <string.h>
#include <webp/decode.h>
#include <webp/demux.h>

// Results come back by value, so no Go pointer to a local crosses into C.
typedef struct {
	int status, width, height, has_alpha, has_animation;
} sl_webp_features;

static sl_webp_features sl_webp_features_of(const uint8_t *src, size_t n) {
	WebPBitstreamFeatures f;
	sl_webp_features r;
	memset(&r, 0, sizeof r);
	r.status = WebPGetFeatures(src, n, &f);
	if (r.status == VP8_STATUS_OK) {
		r.width = f.width;
		r.height = f.height;
		r.has_alpha = f.has_alpha;
		r.has_animation = f.has_animation;
	}
	return r;
}

// sl_webp_decode decodes src into dst (size bytes, rows of stride bytes) in
// colour mode mode. It is WebPDecodeRGBInto and its siblings, through the
// advanced API, which also says why a decode failed (truncated data or a
// bad bitstream); libwebp checks that dst is large enough.
static int sl_webp_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t size, int stride, int mode) {
	WebPDecoderConfig c;
	if (!WebPInitDecoderConfig(&c)) return VP8_STATUS_INVALID_PARAM;
	c.output.colorspace = (WEBP_CSP_MODE)mode;
	c.output.is_external_memory = 1;
	c.output.u.RGBA.rgba = dst;
	c.output.u.RGBA.stride = stride;
	c.output.u.RGBA.size = size;
	int s = WebPDecode(src, n, &c);
	WebPFreeDecBuffer(&c.output); // frees nothing of dst: external memory
	return s;
}

// sl_webp_first_frame writes an animated WebP's first frame, composed on
// its canvas as the demuxer's animation decoder does (what Pillow shows),
// into dst as RGBA: canvas width × height × 4 bytes. 0 on success, else 1
// (the file's frames could not be read) or 2 (the frame did not decode).
static int sl_webp_first_frame(const uint8_t *src, size_t n, uint8_t *dst, size_t size) {
	WebPAnimDecoderOptions o;
	if (!WebPAnimDecoderOptionsInit(&o)) return 1;
	o.color_mode = MODE_RGBA;
	o.use_threads = 0;
	WebPData data = {src, n};
	WebPAnimDecoder *d = WebPAnimDecoderNew(&data, &o);
	if (d == NULL) return 1;
	WebPAnimInfo info;
	uint8_t *buf;
	int ts, r = 2;
	if (WebPAnimDecoderGetInfo(d, &info) && (size_t)info.canvas_width * info.canvas_height * 4 == size &&
	    WebPAnimDecoderGetNext(d, &buf, &ts)) {
		memcpy(dst, buf, size);
		r = 0;
	}
	WebPAnimDecoderDelete(d);
	return r;
}
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

func init() {
	Register(Format{
		Name: "WebP",
		Match: func(b []byte) bool {
			return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
		},
		New: func() (FormatDecoder, error) { return &webpDecoder{}, nil },
	})
}

// webpDecoder decodes WebP images (lossy, lossless, with or without alpha)
// with libwebp; of an animated one, the first frame, as Pillow does.
//
// Work bound: libwebp's decode work and its own allocations are linear in
// the pixel count (lossy: per 16×16 macroblock; lossless: per pixel, its
// backward references copying at most the pixels they produce), so the
// pixel limit Header checks bounds both; there is no amplification beyond
// it. An animation's first frame lies within the canvas Header checks, and
// the demuxer decodes no other frame for it (two canvases of 4 bytes a
// pixel are what it holds).
type webpDecoder struct {
	// rgba: the image as RGBA before its conversion to GRAY (libwebp has
	// no grey output), or an animation's first frame before conversion to
	// any colour but RGBA.
	rgba []byte
}

func (d *webpDecoder) Close() {}

func (d *webpDecoder) Header(src []byte, lim Limits) (Header, error) {
	maxPixels := lim.MaxPixels
	if len(src) < 12 {
		return Header{}, formatErr(Truncated, "WebP", "WebP data ends early, within the RIFF header")
	}
	// The RIFF size covers the whole file: a shorter input lost its end,
	// which libwebp would only find after the pixel buffer is allocated.
	if riff := 8 + uint64(binary.LittleEndian.Uint32(src[4:])); uint64(len(src)) < riff {
		return Header{}, formatErr(Truncated, "WebP", "WebP data ends early: %d of the %d bytes the RIFF header gives",
			len(src), riff)
	}
	f := C.sl_webp_features_of((*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)))
	if f.status != C.VP8_STATUS_OK {
		return Header{}, webpError(f.status, "header")
	}
	if err := TooLargeErr("WebP", int(f.width), int(f.height), maxPixels); err != nil {
		return Header{}, err
	}
	return Header{Width: int(f.width), Height: int(f.height), Orientation: 1, animated: f.has_animation != 0}, nil
}

func (d *webpDecoder) Decode(dst, src []byte, h Header, o Options) error {
	c := o.color()
	if h.animated {
		return d.firstFrame(dst, src, h, c)
	}
	if c == Gray {
		// Pillow's convert("L"): the luma, alpha ignored.
		d.rgba = grow(d.rgba, h.Pixels()*4)
		if err := d.decode(d.rgba, src, h, RGBA); err != nil {
			return err
		}
		packRGBA(dst, d.rgba[:h.Pixels()*4], Gray)
		return nil
	}
	return d.decode(dst, src, h, c)
}

// decode writes the image into dst in colour c, which is not Gray. libwebp
// writes RGB(A) unpremultiplied, alpha 255 where the image has none, and
// drops alpha for RGB and BGR: what Pillow's convert gives.
func (d *webpDecoder) decode(dst, src []byte, h Header, c Color) error {
	var mode C.int
	switch c {
	case RGB:
		mode = C.MODE_RGB
	case BGR:
		mode = C.MODE_BGR
	case RGBA:
		mode = C.MODE_RGBA
	case BGRA:
		mode = C.MODE_BGRA
	default:
		return fmt.Errorf("codec: WebP output colour %v", c)
	}
	stride := h.Width * c.Channels()
	if len(dst) < stride*h.Height {
		return fmt.Errorf("codec: WebP destination of %d bytes for %dx%dx%d", len(dst), h.Width, h.Height, c.Channels())
	}
	s := C.sl_webp_decode((*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)),
		(*C.uint8_t)(unsafe.Pointer(&dst[0])), C.size_t(stride*h.Height), C.int(stride), mode)
	if s != C.VP8_STATUS_OK {
		return webpError(s, "image data")
	}
	return nil
}

// firstFrame decodes an animation's first frame as RGBA, then converts it
// to c as Pillow converts its RGBA image (alpha dropped, or luma), as PNG's
// RGBA rows are.
func (d *webpDecoder) firstFrame(dst, src []byte, h Header, c Color) error {
	n := h.Pixels()
	rgba := dst
	if c != RGBA {
		d.rgba = grow(d.rgba, 4*n)
		rgba = d.rgba
	}
	if len(rgba) < 4*n || len(dst) < n*c.Channels() {
		return fmt.Errorf("codec: WebP destination of %d bytes for %dx%dx%d", len(dst), h.Width, h.Height, c.Channels())
	}
	switch C.sl_webp_first_frame((*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)),
		(*C.uint8_t)(unsafe.Pointer(&rgba[0])), C.size_t(4*n)) {
	case 1:
		return formatErr(Corrupt, "WebP", "animated WebP: its frames cannot be read")
	case 2:
		return formatErr(Corrupt, "WebP", "animated WebP: the first frame does not decode")
	}
	if c != RGBA {
		packRGBA(dst, rgba[:4*n], c)
	}
	return nil
}

// webpError classifies libwebp's status codes.
func webpError(s C.int, where string) error {
	switch s {
	case C.VP8_STATUS_NOT_ENOUGH_DATA, C.VP8_STATUS_SUSPENDED:
		return formatErr(Truncated, "WebP", "WebP %s ends early", where)
	case C.VP8_STATUS_BITSTREAM_ERROR:
		return formatErr(Corrupt, "WebP", "WebP %s is corrupt (libwebp: bitstream error)", where)
	case C.VP8_STATUS_UNSUPPORTED_FEATURE:
		return formatErr(Unsupported, "WebP", "WebP %s uses a feature libwebp does not support", where)
	case C.VP8_STATUS_OUT_OF_MEMORY:
		return formatErr(TooLarge, "WebP", "WebP decoder ran out of memory for the %s", where)
	}
	// INVALID_PARAM, USER_ABORT: not the input's doing.
	return fmt.Errorf("codec: libwebp failed on the WebP %s with status %d", where, int(s))
}
