package codec

/*
#cgo CFLAGS: -I${SRCDIR}/../build/pic/include
#cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libturbojpeg.a
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

// Message buffer size: libjpeg's JMSG_LENGTH_MAX.
enum { SL_MSG_LEN = 200 };

// sl_msg copies the last error text of h into msg. TurboJPEG 2.1 keeps
// libjpeg's messages in a thread-local buffer, and a goroutine may move to
// another thread between two cgo calls: the text must be read within the
// call that failed.
static void sl_msg(tjhandle h, char *msg) {
	const char *m = tjGetErrorStr2(h);
	strncpy(msg, m ? m : "", SL_MSG_LEN - 1);
	msg[SL_MSG_LEN - 1] = 0;
}

// Results come back by value: a Go pointer to a local passed to C would make
// the local escape to the heap, one allocation per call.
typedef struct {
	int rc, fatal, width, height, subsamp, colorspace;
} sl_header;

static sl_header sl_read_header(tjhandle h, const unsigned char *src, unsigned long n, char *msg) {
	sl_header r;
	memset(&r, 0, sizeof r);
	r.colorspace = -1; // 0 is TJCS_RGB
	r.rc = tjDecompressHeader3(h, src, n, &r.width, &r.height, &r.subsamp, &r.colorspace);
	if (r.rc != 0) {
		r.fatal = tjGetErrorCode(h) == TJERR_FATAL;
		sl_msg(h, msg);
	}
	return r;
}

// sl_decompress returns 0 on success, 1 after warnings (or an error that
// followed one), 2 after a fatal error. No TJFLAG_FASTDCT nor
// TJFLAG_FASTUPSAMPLE: decompression then uses libjpeg's accurate integer
// IDCT and fancy upsampling, bit-exact with Pillow. TJFLAG_LIMITSCANS
// rejects files with more than 500 scans once it has decoded 500 of them;
// the marker walk refuses those before (MaxJPEGScans), so the flag is a
// backstop.
static int sl_decompress(tjhandle h, const unsigned char *src, unsigned long n,
                         unsigned char *dst, int width, int height, int pf, char *msg) {
	if (tjDecompress2(h, src, n, dst, width, 0, height, pf, TJFLAG_LIMITSCANS) == 0)
		return 0;
	int rc = tjGetErrorCode(h) == TJERR_WARNING ? 1 : 2;
	sl_msg(h, msg);
	return rc;
}

static tjhandle sl_init(char *msg) {
	tjhandle h = tjInitDecompress();
	if (h == NULL)
		sl_msg(NULL, msg);
	return h;
}

// sl_eighths sets bit m of the result for every scaling factor m/8
// (m = 1..8) that tjGetScalingFactors lists.
static int sl_eighths(void) {
	int n = 0, mask = 0;
	tjscalingfactor *sf = tjGetScalingFactors(&n);
	for (int i = 0; sf != NULL && i < n; i++)
		for (int m = 1; m <= 8; m++)
			if (sf[i].num * 8 == m * sf[i].denom)
				mask |= 1 << m;
	return mask;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// jpegScalable: libjpeg-turbo lists every scaling factor m/8, m = 1..8
// (2.1 does). Were one missing, JPEGs would decode at full size only,
// rather than at a size Header.ScaledSize did not predict.
var jpegScalable = C.sl_eighths() == 0x1FE

func init() {
	Register(Format{
		Name:  "JPEG",
		Match: func(b []byte) bool { return len(b) >= 3 && b[0] == 0xFF && b[1] == mSOI && b[2] == 0xFF },
		New:   newJPEGDecoder,
	})
}

// jpegDecoder is one worker's TurboJPEG decompressor and scratch buffers.
type jpegDecoder struct {
	tj      C.tjhandle
	msg     *C.char // SL_MSG_LEN bytes of C memory for error texts
	scratch []byte  // decoded image before orientation
	cmyk    []byte  // CMYK samples before conversion
}

func newJPEGDecoder() (FormatDecoder, error) {
	d := &jpegDecoder{}
	if err := d.open(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *jpegDecoder) open() error {
	if d.msg == nil {
		if d.msg = (*C.char)(C.calloc(C.SL_MSG_LEN, 1)); d.msg == nil {
			return fmt.Errorf("codec: out of C memory")
		}
	}
	if d.tj == nil {
		d.tj = C.sl_init(d.msg)
		if d.tj == nil {
			return fmt.Errorf("codec: cannot create a TurboJPEG decompressor: %s", d.message())
		}
	}
	return nil
}

func (d *jpegDecoder) Close() {
	d.reset()
	if d.msg != nil {
		C.free(unsafe.Pointer(d.msg))
		d.msg = nil
	}
	d.scratch, d.cmyk = nil, nil
}

// reset drops the handle after a failed call; the next call makes a new
// one. TurboJPEG 2.1 leaves the decompressor mid-header when libjpeg bails
// out of tjDecompressHeader3 (it never calls jpeg_abort_decompress there):
// the next image is then read as the continuation of the broken one, and
// fails with "Bogus Huffman table definition", as does every later one.
// tjDecompress2 does abort, but a fresh handle costs little and failures
// are rare, so any failure but a harmless warning resets.
func (d *jpegDecoder) reset() {
	if d.tj != nil {
		C.tjDestroy(d.tj)
		d.tj = nil
	}
}

// message is the last error text, viewed in place without copying: it is
// valid until the next failing call.
func (d *jpegDecoder) message() string {
	return unsafe.String((*byte)(unsafe.Pointer(d.msg)), int(C.strlen(d.msg)))
}

func (d *jpegDecoder) Header(src []byte, lim Limits) (Header, error) {
	s, serr := scanJPEG(src, lim)
	if serr != nil {
		return Header{}, serr
	}
	if err := d.open(); err != nil {
		return Header{}, err
	}
	r := C.sl_read_header(d.tj, (*C.uchar)(unsafe.Pointer(&src[0])), C.ulong(len(src)), d.msg)
	h := Header{
		Width: s.width, Height: s.height, Orientation: s.orientation,
		Scalable: jpegScalable, jpeg: s.layout, Work: int64(s.work),
	}
	// Set even when the call failed harmlessly (a warning, or the
	// subsampling below): libjpeg had read the headers.
	h.jpeg.space = tjSpace(r.colorspace)
	if r.rc != 0 {
		msg := d.message()
		// 2.1 refuses unusual chroma layouts here although
		// tjDecompress2 decodes them (it never looks at the subsampling):
		// the marker walk already has what we need.
		subsampOnly := strings.Contains(msg, "Could not determine subsampling type")
		var err *Error
		if !subsampOnly {
			if v, e := classifyJPEG(msg, r.fatal != 0); v == jpegBad {
				err = e
			}
		}
		d.reset()
		if err != nil {
			return Header{}, err
		}
		return h, nil
	}
	if int(r.width) != s.width || int(r.height) != s.height {
		return Header{}, formatErr(Corrupt, "JPEG", "JPEG frame size %dx%d disagrees with libjpeg's %dx%d",
			s.width, s.height, int(r.width), int(r.height))
	}
	switch r.colorspace {
	case C.TJCS_CMYK, C.TJCS_YCCK:
		h.jpeg.components = 4
	}
	return h, nil
}

func (d *jpegDecoder) Decode(dst, src []byte, h Header, o Options) error {
	if err := d.open(); err != nil {
		return err
	}
	sh, sw := h.ScaledSize(o.scale())
	c := o.color()
	// Decode straight into dst when nothing follows; else into scratch.
	out, orient := storedTarget(dst, &d.scratch, sh*sw*c.Channels(), h, o)
	if h.jpeg.components == 4 {
		// libjpeg has no CMYK to RGB conversion: decode the inks, then
		// convert as Pillow does.
		d.cmyk = grow(d.cmyk, sh*sw*4)
		if err := d.decompress(d.cmyk, src, sw, sh, 4, C.TJPF_CMYK); err != nil {
			return err
		}
		cmykTo(out, d.cmyk, c)
	} else if err := d.decompress(out, src, sw, sh, c.Channels(), tjFormat(c)); err != nil {
		return err
	}
	if orient != 1 {
		Orient(dst, out, sh, sw, c.Channels(), orient)
	}
	return nil
}

// decompress decodes src into dst as w×h pixels of ps bytes in TurboJPEG
// pixel format pf.
func (d *jpegDecoder) decompress(dst, src []byte, w, h, ps int, pf C.int) error {
	if len(dst) < w*h*ps || w < 1 || h < 1 {
		// C writes w*h*ps bytes whatever dst holds: never let it overrun.
		return fmt.Errorf("codec: JPEG destination of %d bytes for %dx%dx%d", len(dst), w, h, ps)
	}
	rc := C.sl_decompress(d.tj, (*C.uchar)(unsafe.Pointer(&src[0])), C.ulong(len(src)),
		(*C.uchar)(unsafe.Pointer(&dst[0])), C.int(w), C.int(h), pf, d.msg)
	if rc == 0 {
		return nil
	}
	v, err := classifyJPEG(d.message(), rc == 2)
	if v == jpegHarmless {
		return nil
	}
	d.reset()
	return err
}

func tjSpace(cs C.int) ColorSpace {
	switch cs {
	case C.TJCS_GRAY:
		return SpaceGray
	case C.TJCS_YCbCr:
		return SpaceYCbCr
	case C.TJCS_RGB:
		return SpaceRGB
	case C.TJCS_CMYK:
		return SpaceCMYK
	case C.TJCS_YCCK:
		return SpaceYCCK
	}
	return SpaceUnknown
}

func tjFormat(c Color) C.int {
	switch c {
	case BGR:
		return C.TJPF_BGR
	case Gray:
		return C.TJPF_GRAY
	case RGBA:
		return C.TJPF_RGBA
	case BGRA:
		return C.TJPF_BGRA
	}
	return C.TJPF_RGB
}

// grow returns b resized to n bytes, reallocating only when it is too small.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n, n+n/4)
	}
	return b[:n]
}
