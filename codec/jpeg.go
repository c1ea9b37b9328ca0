package codec

/*
#cgo CFLAGS: -I${SRCDIR}/../build/pic/include
#cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libturbojpeg.a
#include <stdlib.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <turbojpeg.h>
#include <jpeglib.h>
#include <jerror.h>

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

// The decoder proper uses the libjpeg API of the same library rather than
// tjDecompress2, for one thing TurboJPEG 2.1 cannot do: stop at the first
// warning that means damage. Without TJFLAG_STOPONWARNING tjDecompress2
// decodes the whole image before reporting the warning (seconds of work
// for a broken 64 MP progressive file); with it, it also stops at
// harmless ones (junk between markers), which must decode.
//
// sl_dec is one decompressor, reused across images (jpeg_abort_decompress
// makes it ready for the next after a failure).
typedef struct {
	struct jpeg_decompress_struct d;
	struct jpeg_error_mgr err;
	struct jpeg_progress_mgr progress;
	jmp_buf jump;
	char *msg; // SL_MSG_LEN bytes, owned by the Go decoder
} sl_dec;

// sl_harmless lists the libjpeg warnings that leave the pixels intact (the
// same as jpegmsg.go's harmless texts): junk between markers, odd JFIF or
// Adobe version fields, a bad ICC marker (ignored), sequential SOS fields
// that libjpeg ignores. Every other warning (bad Huffman or arithmetic
// code, data ending inside a scan or the file, lost restart sync, a bogus
// progression) means garbage pixels from there on.
static int sl_harmless(int code) {
	switch (code) {
	case JWRN_EXTRANEOUS_DATA:
	case JWRN_JFIF_MAJOR:
	case JWRN_ADOBE_XFORM:
	case JWRN_BOGUS_ICC:
	case JWRN_NOT_SEQUENTIAL:
		return 1;
	}
	return 0;
}

static void sl_error_exit(j_common_ptr c) {
	sl_dec *s = (sl_dec *)c->client_data;
	(*c->err->format_message)(c, s->msg);
	longjmp(s->jump, 2);
}

// sl_emit_message sees every trace message and warning (level -1): a
// harmful warning ends the decode there, with its text.
static void sl_emit_message(j_common_ptr c, int level) {
	if (level >= 0 || sl_harmless(c->err->msg_code))
		return;
	sl_dec *s = (sl_dec *)c->client_data;
	(*c->err->format_message)(c, s->msg);
	longjmp(s->jump, 1);
}

// sl_progress refuses a file's 501st scan, as TJFLAG_LIMITSCANS does (and
// with its text); the marker walk refuses such files before (MaxJPEGScans),
// so this is a backstop.
static void sl_progress(j_common_ptr c) {
	j_decompress_ptr d = (j_decompress_ptr)c;
	if (d->input_scan_number > 500) {
		sl_dec *s = (sl_dec *)c->client_data;
		snprintf(s->msg, SL_MSG_LEN, "Progressive JPEG image has more than 500 scans");
		longjmp(s->jump, 2);
	}
}

static sl_dec *sl_dec_new(char *msg) {
	sl_dec *s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->msg = msg;
	s->d.err = jpeg_std_error(&s->err);
	s->err.error_exit = sl_error_exit;
	s->err.emit_message = sl_emit_message;
	s->d.client_data = s;
	if (setjmp(s->jump)) {
		free(s);
		return NULL;
	}
	jpeg_create_decompress(&s->d);
	s->progress.progress_monitor = sl_progress;
	s->d.progress = &s->progress;
	return s;
}

static void sl_dec_free(sl_dec *s) {
	jpeg_destroy_decompress(&s->d);
	free(s);
}

// sl_decompress decodes src into dst, w×h pixels of ps bytes in colour
// space cs; it returns 0 on success, 1 when it stopped at a harmful
// warning, 2 after a fatal error, with the text in msg. It sets what
// tjDecompress2 sets, so that the pixels are the same: the output colour
// space and the first of TurboJPEG's scaling factors that fits w×h; no
// fast DCT (the accurate integer IDCT, libjpeg's default). fancy 1 keeps
// libjpeg's default fancy upsampling (bit-exact with Pillow); 0 replicates
// chroma samples, as TurboJPEG's TJFLAG_FASTUPSAMPLE does.
static int sl_decompress(sl_dec *s, const unsigned char *src, unsigned long n,
                         unsigned char *dst, int w, int h, int ps, int cs, int fancy) {
	int rc = setjmp(s->jump);
	if (rc != 0) {
		jpeg_abort_decompress(&s->d);
		return rc;
	}
	jpeg_mem_src(&s->d, src, n);
	jpeg_read_header(&s->d, TRUE);
	s->d.out_color_space = (J_COLOR_SPACE)cs;
	s->d.do_fancy_upsampling = fancy ? TRUE : FALSE;
	int nsf = 0;
	tjscalingfactor *sf = tjGetScalingFactors(&nsf);
	for (int i = 0; i < nsf; i++) {
		if (TJSCALED((int)s->d.image_width, sf[i]) <= w && TJSCALED((int)s->d.image_height, sf[i]) <= h) {
			s->d.scale_num = sf[i].num;
			s->d.scale_denom = sf[i].denom;
			break;
		}
	}
	jpeg_calc_output_dimensions(&s->d);
	if ((int)s->d.output_width != w || (int)s->d.output_height != h || s->d.output_components != ps) {
		// Never write past dst: the header check should make this impossible.
		snprintf(s->msg, SL_MSG_LEN, "libjpeg would decode %ux%ux%d, not the %dx%dx%d expected",
		         s->d.output_width, s->d.output_height, s->d.output_components, w, h, ps);
		jpeg_abort_decompress(&s->d);
		return 2;
	}
	jpeg_start_decompress(&s->d); // progressive: reads every scan here
	JSAMPROW rows[16];
	while (s->d.output_scanline < s->d.output_height) {
		int k = 0;
		for (; k < 16 && s->d.output_scanline + k < s->d.output_height; k++)
			rows[k] = dst + (size_t)(s->d.output_scanline + k) * w * ps;
		jpeg_read_scanlines(&s->d, rows, k);
	}
	jpeg_finish_decompress(&s->d);
	return 0;
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

	"github.com/sluice-dev/sluice/internal/reuse"
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

// jpegDecoder is one worker's decompressors (TurboJPEG's for headers,
// libjpeg's for decoding) and scratch buffers.
type jpegDecoder struct {
	tj      C.tjhandle
	dec     *C.sl_dec
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
	if d.dec == nil {
		if d.dec = C.sl_dec_new(d.msg); d.dec == nil {
			return fmt.Errorf("codec: cannot create a libjpeg decompressor: %s", d.message())
		}
	}
	return nil
}

func (d *jpegDecoder) Close() {
	d.reset()
	if d.dec != nil {
		C.sl_dec_free(d.dec)
		d.dec = nil
	}
	if d.msg != nil {
		C.free(unsafe.Pointer(d.msg))
		d.msg = nil
	}
	d.scratch, d.cmyk = nil, nil
}

// reset drops the TurboJPEG handle after a failed header read; the next
// call makes a new one. TurboJPEG 2.1 leaves the decompressor mid-header
// when libjpeg bails out of tjDecompressHeader3 (it never calls
// jpeg_abort_decompress there): the next image is then read as the
// continuation of the broken one, and fails with "Bogus Huffman table
// definition", as does every later one. (sl_decompress aborts its own
// decompressor on every failure.)
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
		Scalable: jpegScalable, jpeg: s.layout, Work: int64(s.work), Memory: s.coefBytes,
	}
	// Set even when the call failed harmlessly (a warning, or the
	// subsampling below): libjpeg had read the headers.
	h.jpeg.Space = tjSpace(r.colorspace)
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
		return withMode(h), nil
	}
	if int(r.width) != s.width || int(r.height) != s.height {
		return Header{}, formatErr(Corrupt, "JPEG", "JPEG frame size %dx%d disagrees with libjpeg's %dx%d",
			s.width, s.height, int(r.width), int(r.height))
	}
	switch r.colorspace {
	case C.TJCS_CMYK, C.TJCS_YCCK:
		h.jpeg.Components = 4
	}
	return withMode(h), nil
}

// withMode sets the mode Pillow opens a JPEG in: "CMYK" for four
// components (Decode's inks), else "L" or "RGB".
func withMode(h Header) Header {
	if h.jpeg.Components == 4 {
		h.Mode = ModeCMYK
	}
	return h
}

func (d *jpegDecoder) Decode(dst, src []byte, h Header, o Options) error {
	if err := d.open(); err != nil {
		return err
	}
	sh, sw := h.ScaledSize(o.scale())
	c := o.color()
	// Decode straight into dst when nothing follows; else into scratch.
	out, orient := storedTarget(dst, &d.scratch, sh*sw*c.Channels(), h, o)
	switch {
	case h.jpeg.Components == 4 && o.Inks && c.Channels() == 4:
		// Pillow's mode "CMYK" (its rawmode "CMYK;I"): the stored samples
		// inverted, unconverted.
		if err := d.decompress(out, src, sw, sh, 4, C.JCS_CMYK, o.FastUpsample); err != nil {
			return err
		}
		for i, v := range out[:sh*sw*4] {
			out[i] = 255 - v
		}
	case h.jpeg.Components == 4:
		// libjpeg has no CMYK to RGB conversion: decode the inks, then
		// convert by the options' rule.
		d.cmyk = reuse.Room(d.cmyk, sh*sw*4)
		if err := d.decompress(d.cmyk, src, sw, sh, 4, C.JCS_CMYK, o.FastUpsample); err != nil {
			return err
		}
		cmykTo(out, d.cmyk, c, o.CMYK)
	default:
		if err := d.decompress(out, src, sw, sh, c.Channels(), jpegOutSpace(c), o.FastUpsample); err != nil {
			return err
		}
	}
	if orient != 1 {
		Orient(dst, out, sh, sw, c.Channels(), orient)
	}
	return nil
}

// decompress decodes src into dst as w×h pixels of ps bytes in libjpeg
// colour space cs, replicating chroma samples when fast.
func (d *jpegDecoder) decompress(dst, src []byte, w, h, ps int, cs C.J_COLOR_SPACE, fast bool) error {
	if len(dst) < w*h*ps || w < 1 || h < 1 {
		// C writes w*h*ps bytes whatever dst holds: never let it overrun.
		return fmt.Errorf("codec: JPEG destination of %d bytes for %dx%dx%d", len(dst), w, h, ps)
	}
	fancy := 1
	if fast {
		fancy = 0
	}
	rc := C.sl_decompress(d.dec, (*C.uchar)(unsafe.Pointer(&src[0])), C.ulong(len(src)),
		(*C.uchar)(unsafe.Pointer(&dst[0])), C.int(w), C.int(h), C.int(ps), C.int(cs), C.int(fancy))
	if rc == 0 {
		return nil
	}
	v, err := classifyJPEG(d.message(), rc == 2)
	if v != jpegBad {
		// The decode stopped at a warning that sl_harmless and jpegmsg.go
		// disagree about: the pixels are incomplete whatever the text says.
		return formatErr(Corrupt, "JPEG", "JPEG decode stopped (%s)", d.message())
	}
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

func jpegOutSpace(c Color) C.J_COLOR_SPACE {
	switch c {
	case BGR:
		return C.JCS_EXT_BGR
	case Gray:
		return C.JCS_GRAYSCALE
	case RGBA:
		return C.JCS_EXT_RGBA
	case BGRA:
		return C.JCS_EXT_BGRA
	}
	return C.JCS_EXT_RGB
}
