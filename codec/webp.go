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

// sl_webp_frame is an animation's first frame as the demuxer finds it:
// where its image data (ALPH and VP8, or VP8L) lies in the file, and its
// place on the canvas.
typedef struct {
	int ok, canvas_width, canvas_height, x, y, width, height;
	size_t offset, size;
} sl_webp_frame;

static sl_webp_frame sl_webp_first_frame_info(const uint8_t *src, size_t n) {
	sl_webp_frame f;
	memset(&f, 0, sizeof f);
	WebPData data = {src, n};
	WebPDemuxer *d = WebPDemux(&data);
	if (d == NULL) return f;
	WebPIterator it;
	if (WebPDemuxGetFrame(d, 1, &it)) {
		f.ok = 1;
		f.canvas_width = (int)WebPDemuxGetI(d, WEBP_FF_CANVAS_WIDTH);
		f.canvas_height = (int)WebPDemuxGetI(d, WEBP_FF_CANVAS_HEIGHT);
		f.x = it.x_offset;
		f.y = it.y_offset;
		f.width = it.width;
		f.height = it.height;
		f.offset = (size_t)(it.fragment.bytes - src);
		f.size = it.fragment.size;
		WebPDemuxReleaseIterator(&it);
	}
	WebPDemuxDelete(d);
	return f;
}
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/sluice-dev/sluice/internal/reuse"
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
// Bounds, checked in Header before libwebp allocates: the pixel limit
// (a still's size, an animation's canvas); and the work and memory
// estimates, which are linear in the pixels (lossy: per 16×16 macroblock;
// lossless: per pixel, its backward references copying at most the pixels
// they produce) except for a lossless stream's Huffman groups (the main
// image's, or a lossy image's lossless alpha's): libwebp builds every
// group's tables before any pixel, so Header reads the stream up to them
// (webp_vp8l.go) and prices them. An animation costs its first frame's
// decode, the canvas it is written on (the output itself) and the
// demuxer's record of each chunk: Decode composes that frame as libwebp's
// animation decoder does (the canvas cleared to transparent black, the
// frame written at its offset, no blending for a first frame), without
// that decoder's two canvases of 4 bytes a pixel.
type webpDecoder struct {
	// rgba: the image (or an animation's first frame) as RGBA before its
	// conversion to GRAY: libwebp has no grey output.
	rgba []byte
}

func (d *webpDecoder) Close() {}

// Memory and work of what is not a lossless stream: the demuxer's record
// of a chunk (a frame's or another chunk's, with malloc's overhead); a
// lossy pixel's work (its share of a macroblock's prediction, inverse
// transforms, loop filter and colour conversion). The lossy decoder's own
// buffers are rows (16 and the loop filter's, about 64 bytes a pixel of
// width: at most 1 MB at WebP's width limit), not counted, as a lossless
// stream's row caches are not.
const (
	webpDemuxMemoryPerChunk = 112
	webpLossyWorkPerPixel   = 32
)

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
	w, h := int(f.width), int(f.height)
	if err := TooLargeErr("WebP", w, h, maxPixels); err != nil {
		return Header{}, err
	}
	hd := Header{Width: w, Height: h, Orientation: 1, animated: f.has_animation != 0}
	if f.has_alpha != 0 {
		hd.Mode = ModeAlpha // Pillow opens it "RGBA", else "RGB"
	}
	// The RGBA copy a GRAY decode goes through (Header does not know the
	// colour), allocated beside the output.
	stage := 4 * int64(w) * int64(h)
	var c webpCost
	var err error
	if hd.animated {
		c, stage, err = webpAnimationCost(src, w, h, lim)
	} else {
		c, err = webpStillCost(src, lim)
	}
	if err != nil {
		return Header{}, err
	}
	hd.Work = c.work + int64(w)*int64(h)*baseWorkPerPixel
	hd.Memory = c.memory + stage
	size := func() string {
		if d := c.detail(); d != "" {
			return fmt.Sprintf("%dx%d, %s", w, h, d)
		}
		return fmt.Sprintf("%dx%d", w, h)
	}
	if e := lim.overWork("WebP", hd.Work, size); e != nil {
		return Header{}, e
	}
	if e := lim.overMemory("WebP", hd.Memory, size); e != nil {
		return Header{}, e
	}
	return hd, nil
}

// webpCost is an estimate of decoding one image stream.
type webpCost struct {
	work, memory int64
	// The lossless stream that dominates it and what it is ("lossless",
	// "lossless alpha"), named in a refusal's message; nil for none.
	lossless *vp8lInfo
	what     string
}

// detail names what dominates the cost, "" when nothing does.
func (c webpCost) detail() string {
	if c.lossless == nil {
		return ""
	}
	return c.lossless.detail(c.what)
}

// webpChunkAt reads the chunk header at b[off:]: its tag, the payload's
// start and end, and where the next chunk starts (payloads are padded to
// even sizes). ok is false when the header or payload runs past b.
func webpChunkAt(b []byte, off int) (tag string, start, end, next int, ok bool) {
	if off+8 > len(b) {
		return "", 0, 0, 0, false
	}
	n := int(binary.LittleEndian.Uint32(b[off+4:]))
	start = off + 8
	if n > len(b)-start {
		return "", 0, 0, 0, false
	}
	end = start + n
	return string(b[off : off+4]), start, end, min(end+n&1, len(b)), true
}

// webpStillCost finds a still image's bitstream as libwebp does (after
// RIFF, a VP8/VP8L chunk, or VP8X and optional chunks up to it, the last
// ALPH among them holding a lossy image's alpha) and prices it.
// WebPGetFeatures has accepted src.
func webpStillCost(src []byte, lim Limits) (webpCost, error) {
	off := 12
	var alph []byte
	if string(src[12:16]) == "VP8X" {
		for off = 30; ; {
			tag, start, end, next, ok := webpChunkAt(src, off)
			if !ok {
				return webpCost{}, formatErr(Truncated, "WebP", "WebP data ends early, within a chunk")
			}
			if tag == "VP8 " || tag == "VP8L" {
				break
			}
			if tag == "ALPH" {
				alph = src[start:end]
			}
			off = next
		}
	}
	// libwebp's lossless reader runs to the end of the input.
	return webpStreamCost(src, off, len(src), alph, lim)
}

// webpStreamCost prices the VP8 or VP8L chunk at src[off:] (its bit
// reader stopping at end), with alph the ALPH payload beside a VP8 one.
func webpStreamCost(src []byte, off, end int, alph []byte, lim Limits) (webpCost, error) {
	tag, start, _, _, ok := webpChunkAt(src[:end], off)
	if !ok && off+8 <= end {
		tag, start = string(src[off:off+4]), off+8
	}
	switch tag {
	case "VP8L":
		v, err := webpLosslessInfo(src[start:end], true, 0, 0, lim)
		if err != nil {
			return webpCost{}, err
		}
		px := int64(v.xsize) * int64(v.ysize)
		return webpCost{work: v.work(px), memory: v.memory(), lossless: v, what: "lossless"}, nil
	case "VP8 ":
		if start+10 > end {
			return webpCost{}, formatErr(Truncated, "WebP", "WebP data ends early, within the VP8 frame header")
		}
		w := int(binary.LittleEndian.Uint16(src[start+6:]) & 0x3fff)
		h := int(binary.LittleEndian.Uint16(src[start+8:]) & 0x3fff)
		px := int64(w) * int64(h)
		c := webpCost{work: px * webpLossyWorkPerPixel}
		if len(alph) > 0 {
			c.memory += px // the alpha plane
			if alph[0]&3 == 1 {
				v, err := webpLosslessInfo(alph[1:], false, w, h, lim)
				if err != nil {
					return webpCost{}, err
				}
				c.work += v.work(px)
				c.memory += v.memory()
				c.lossless, c.what = v, "lossless alpha"
			}
		}
		return c, nil
	}
	return webpCost{}, formatErr(Corrupt, "WebP", "WebP image chunk %q is neither VP8 nor VP8L", tag)
}

// webpLosslessInfo parses a lossless stream (header: it has its own
// signature and size, else it is an alpha plane of w×h) and refuses, from
// its Huffman groups alone, one whose tables exceed the limits, before the
// caller adds the rest.
func webpLosslessInfo(b []byte, header bool, w, h int, lim Limits) (*vp8lInfo, error) {
	what := "WebP lossless data"
	if !header {
		what = "WebP lossless alpha data"
	}
	v, e := parseVP8L(b, header, w, h)
	if e != nil {
		if e.truncated {
			return nil, formatErr(Truncated, "WebP", "%s %s", what, e.what)
		}
		return nil, formatErr(Corrupt, "WebP", "%s is corrupt: %s", what, e.what)
	}
	if v.groupsRead > 1 {
		detail := func() string { return v.detail(what) }
		if e := lim.overMemory("WebP", v.tablesMemory(), detail); e != nil {
			return nil, e
		}
		if e := lim.overWork("WebP", v.work(0), detail); e != nil {
			return nil, e
		}
	}
	return v, nil
}

// webpAnimationCost prices an animation's first frame, as the demuxer
// finds it, and the demuxer's records; stage is the RGBA copy a GRAY
// decode of the frame goes through.
func webpAnimationCost(src []byte, cw, ch int, lim Limits) (c webpCost, stage int64, err error) {
	// The demuxer records every chunk: count them before it runs.
	chunks := int64(0)
	for off := 12; off < len(src); chunks++ {
		_, _, _, next, ok := webpChunkAt(src, off)
		if !ok {
			break // the demuxer refuses it below
		}
		off = next
	}
	demux := chunks * webpDemuxMemoryPerChunk
	if e := lim.overMemory("WebP", demux, func() string { return fmt.Sprintf("animation of %d chunks", chunks) }); e != nil {
		return webpCost{}, 0, e
	}
	fr := C.sl_webp_first_frame_info((*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)))
	if fr.ok == 0 {
		return webpCost{}, 0, formatErr(Corrupt, "WebP", "animated WebP: its frames cannot be read")
	}
	if int(fr.canvas_width) != cw || int(fr.canvas_height) != ch {
		return webpCost{}, 0, formatErr(Corrupt, "WebP", "animated WebP: the demuxer's canvas %dx%d is not the header's %dx%d",
			int(fr.canvas_width), int(fr.canvas_height), cw, ch)
	}
	// The frame's data: an ALPH chunk, maybe others, then VP8; or VP8L.
	lo, hi := int(fr.offset), int(fr.offset)+int(fr.size)
	var alph []byte
	off := lo
	for {
		tag, start, end, next, ok := webpChunkAt(src[:hi], off)
		if !ok || tag == "VP8 " || tag == "VP8L" {
			break
		}
		if tag == "ALPH" {
			alph = src[start:end]
		}
		off = next
	}
	c, err = webpStreamCost(src, off, hi, alph, lim)
	if err != nil {
		return webpCost{}, 0, err
	}
	c.work += chunks * 64
	c.memory += demux
	return c, 4 * int64(fr.width) * int64(fr.height), nil
}

func (d *webpDecoder) Decode(dst, src []byte, h Header, o Options) error {
	c := o.color()
	if h.animated {
		return d.firstFrame(dst, src, h, c)
	}
	if c == Gray {
		// Pillow's convert("L"): the luma, alpha ignored.
		d.rgba = reuse.Room(d.rgba, h.Pixels()*4)
		if err := d.decode(d.rgba, src, h.Width*4, h.Width, h.Height, RGBA); err != nil {
			return err
		}
		packRGBA(dst, d.rgba[:h.Pixels()*4], Gray)
		return nil
	}
	return d.decode(dst, src, h.Width*c.Channels(), h.Width, h.Height, c)
}

// webpMode is libwebp's output mode for c, which is not Gray. libwebp
// writes RGB(A) unpremultiplied, alpha 255 where the image has none, and
// drops alpha for RGB and BGR: what Pillow's convert gives.
func webpMode(c Color) (C.int, error) {
	switch c {
	case RGB:
		return C.MODE_RGB, nil
	case BGR:
		return C.MODE_BGR, nil
	case RGBA:
		return C.MODE_RGBA, nil
	case BGRA:
		return C.MODE_BGRA, nil
	}
	return 0, fmt.Errorf("codec: WebP output colour %v", c)
}

// decode writes the w×h image (or frame) src into dst, rows stride bytes
// apart, in colour c, which is not Gray.
func (d *webpDecoder) decode(dst, src []byte, stride, w, h int, c Color) error {
	mode, err := webpMode(c)
	if err != nil {
		return err
	}
	need := stride*(h-1) + w*c.Channels()
	if len(dst) < need || len(src) == 0 {
		return fmt.Errorf("codec: WebP destination of %d bytes for %dx%dx%d", len(dst), w, h, c.Channels())
	}
	s := C.sl_webp_decode((*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)),
		(*C.uint8_t)(unsafe.Pointer(&dst[0])), C.size_t(len(dst)), C.int(stride), mode)
	if s != C.VP8_STATUS_OK {
		return webpError(s, "image data")
	}
	return nil
}

// firstFrame writes an animation's first frame as libwebp's animation
// decoder composes it (what Pillow shows): a canvas of transparent black,
// the frame decoded onto it at its offset; then in colour c as Pillow
// converts RGBA (alpha dropped, or luma).
func (d *webpDecoder) firstFrame(dst, src []byte, h Header, c Color) error {
	if len(dst) < h.Pixels()*c.Channels() {
		return fmt.Errorf("codec: WebP destination of %d bytes for %dx%dx%d", len(dst), h.Width, h.Height, c.Channels())
	}
	fr := C.sl_webp_first_frame_info((*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)))
	x, y, w, fh := int(fr.x), int(fr.y), int(fr.width), int(fr.height)
	if fr.ok == 0 || int(fr.canvas_width) != h.Width || int(fr.canvas_height) != h.Height ||
		x < 0 || y < 0 || w < 1 || fh < 1 || x+w > h.Width || y+fh > h.Height {
		return formatErr(Corrupt, "WebP", "animated WebP: its frames cannot be read")
	}
	frame := src[int(fr.offset) : int(fr.offset)+int(fr.size)]
	dst = dst[:h.Pixels()*c.Channels()]
	clear(dst)
	var err error
	if c == Gray {
		d.rgba = reuse.Room(d.rgba, 4*w*fh)
		if err = d.decode(d.rgba, frame, 4*w, w, fh, RGBA); err == nil {
			for r := 0; r < fh; r++ {
				packRGBA(dst[(y+r)*h.Width+x:], d.rgba[4*w*r:4*w*(r+1)], Gray)
			}
		}
	} else {
		ch := c.Channels()
		err = d.decode(dst[(y*h.Width+x)*ch:], frame, h.Width*ch, w, fh, c)
	}
	if err != nil {
		return formatErr(Corrupt, "WebP", "animated WebP: the first frame does not decode (%v)", err)
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

// webpLibHeader is the header libwebp alone gives src, without Header's
// estimates: for tests that check that what Header's parse refuses,
// libwebp refuses too.
func webpLibHeader(src []byte) (Header, bool) {
	if len(src) == 0 {
		return Header{}, false
	}
	f := C.sl_webp_features_of((*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)))
	if f.status != C.VP8_STATUS_OK {
		return Header{}, false
	}
	return Header{Format: "WebP", Width: int(f.width), Height: int(f.height), Orientation: 1, animated: f.has_animation != 0}, true
}
