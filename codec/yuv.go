package codec

/*
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

enum { SL_YUV_MSG_LEN = 200 };

// As jpeg.go's sl_msg: the text is thread-local in TurboJPEG 2.1, so it is
// copied within the call that failed.
static void sl_yuv_msg(tjhandle h, char *msg) {
	const char *m = tjGetErrorStr2(h);
	strncpy(msg, m ? m : "", SL_YUV_MSG_LEN - 1);
	msg[SL_YUV_MSG_LEN - 1] = 0;
}

typedef struct {
	int rc, width, height, subsamp, colorspace;
} sl_yuv_header;

static sl_yuv_header sl_yuv_read_header(tjhandle h, const unsigned char *src, unsigned long n, char *msg) {
	sl_yuv_header r;
	memset(&r, 0, sizeof r);
	r.rc = tjDecompressHeader3(h, src, n, &r.width, &r.height, &r.subsamp, &r.colorspace);
	if (r.rc != 0)
		sl_yuv_msg(h, msg);
	return r;
}

// sl_yuv_planes decodes to three planes whose rows are yw and cw bytes
// long: TurboJPEG writes tjPlaneWidth × tjPlaneHeight bytes per plane,
// which for Y exceeds the image when the size is odd and the chroma
// subsampled. Returns 0, 1 after warnings only, 2 after a fatal error. The
// flags are those of jpeg.go's decode, so the IDCT is the same.
static int sl_yuv_planes(tjhandle h, const unsigned char *src, unsigned long n,
                         unsigned char *y, unsigned char *cb, unsigned char *cr,
                         int width, int height, int yw, int cw, char *msg) {
	unsigned char *planes[3] = {y, cb, cr};
	int strides[3] = {yw, cw, cw};
	if (tjDecompressToYUVPlanes(h, src, n, planes, width, strides, height, TJFLAG_LIMITSCANS) == 0)
		return 0;
	int rc = tjGetErrorCode(h) == TJERR_WARNING ? 1 : 2;
	sl_yuv_msg(h, msg);
	return rc;
}

typedef struct {
	unsigned char *buf;
	unsigned long size;
	int rc;
} sl_jpeg_out;

static sl_jpeg_out sl_compress(const unsigned char *rgb, int width, int height, int subsamp,
                               int quality, char *msg) {
	sl_jpeg_out r;
	memset(&r, 0, sizeof r);
	tjhandle h = tjInitCompress();
	if (h == NULL) {
		sl_yuv_msg(NULL, msg);
		r.rc = -1;
		return r;
	}
	r.rc = tjCompress2(h, rgb, width, 0, height, TJPF_RGB, &r.buf, &r.size, subsamp, quality, 0);
	if (r.rc != 0) {
		sl_yuv_msg(h, msg);
		tjFree(r.buf);
		r.buf = NULL;
	}
	tjDestroy(h);
	return r;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// yuvSubsamp maps TurboJPEG's subsampling codes to the chroma planes'
// reduction across and down; only those the GPU's sluice_ycc handles.
var yuvSubsamp = map[C.int][2]int{
	C.TJSAMP_444: {1, 1},
	C.TJSAMP_422: {2, 1},
	C.TJSAMP_420: {2, 2},
	C.TJSAMP_440: {1, 2},
}

// DecodeYUVPlanes decodes a colour (YCbCr, three-component) JPEG to its Y,
// Cb and Cr planes as libjpeg-turbo's IDCT leaves them, before upsampling
// and colour conversion: Y is w×h, Cb and Cr cw×ch, each plane's rows
// packed (pitch = width). subX and subY (1 or 2) are the chroma
// subsampling. It is the reference for the GPU's YCbCr to RGB conversion:
// the IDCT is the one Decode uses, so converting these planes as libjpeg
// does gives Decode's RGB bytes exactly. Greyscale, CMYK, RGB-coded and
// unusually subsampled JPEGs are errors.
func DecodeYUVPlanes(src []byte) (planes [3][]byte, w, h, cw, ch int, subX, subY int, err error) {
	if len(src) == 0 {
		return planes, 0, 0, 0, 0, 0, 0, errors.New("codec: empty JPEG")
	}
	msg := (*C.char)(C.calloc(C.SL_YUV_MSG_LEN, 1))
	if msg == nil {
		return planes, 0, 0, 0, 0, 0, 0, errors.New("codec: out of C memory")
	}
	defer C.free(unsafe.Pointer(msg))
	message := func() string { return C.GoString(msg) }
	// A handle per call: simple, and a failed header leaves none behind
	// in a bad state (see jpegDecoder.reset).
	tj := C.tjInitDecompress()
	if tj == nil {
		C.sl_yuv_msg(nil, msg)
		return planes, 0, 0, 0, 0, 0, 0, fmt.Errorf("codec: cannot create a TurboJPEG decompressor: %s", message())
	}
	defer C.tjDestroy(tj)
	sp := (*C.uchar)(unsafe.Pointer(&src[0]))
	r := C.sl_yuv_read_header(tj, sp, C.ulong(len(src)), msg)
	if r.rc != 0 {
		return planes, 0, 0, 0, 0, 0, 0, fmt.Errorf("codec: JPEG header: %s", message())
	}
	sub, ok := yuvSubsamp[r.subsamp]
	if !ok || r.colorspace != C.TJCS_YCbCr {
		return planes, 0, 0, 0, 0, 0, 0, fmt.Errorf("codec: JPEG with colour space %d and subsampling %d has no YCbCr planes for the GPU",
			int(r.colorspace), int(r.subsamp))
	}
	w, h = int(r.width), int(r.height)
	subX, subY = sub[0], sub[1]
	// TurboJPEG's plane sizes: Y padded to whole chroma samples, the
	// chroma planes the image size over the subsampling rounded up
	// (libjpeg's downsampled size).
	yw, yh := int(C.tjPlaneWidth(0, r.width, r.subsamp)), int(C.tjPlaneHeight(0, r.height, r.subsamp))
	cw = int(C.tjPlaneWidth(1, r.width, r.subsamp))
	ch = int(C.tjPlaneHeight(1, r.height, r.subsamp))
	if w < 1 || h < 1 || yw < w || yh < h || cw != (w+subX-1)/subX || ch != (h+subY-1)/subY {
		return planes, 0, 0, 0, 0, 0, 0, fmt.Errorf("codec: JPEG %dx%d with planes %dx%d and %dx%d", w, h, yw, yh, cw, ch)
	}
	y := make([]byte, yw*yh)
	planes = [3][]byte{nil, make([]byte, cw*ch), make([]byte, cw*ch)}
	rc := C.sl_yuv_planes(tj, sp, C.ulong(len(src)), (*C.uchar)(unsafe.Pointer(&y[0])),
		(*C.uchar)(unsafe.Pointer(&planes[1][0])), (*C.uchar)(unsafe.Pointer(&planes[2][0])),
		r.width, r.height, C.int(yw), C.int(cw), msg)
	if rc == 2 {
		return [3][]byte{}, 0, 0, 0, 0, 0, 0, fmt.Errorf("codec: JPEG to YCbCr planes: %s", message())
	}
	// Y without TurboJPEG's padding.
	planes[0] = make([]byte, w*h)
	for row := range h {
		copy(planes[0][row*w:(row+1)*w], y[row*yw:])
	}
	// Warnings (a truncated or slightly corrupt file) still give whole
	// planes, as Decode gives whole images for them.
	return planes, w, h, cw, ch, subX, subY, nil
}

// EncodeJPEG compresses a packed w×h RGB image with TurboJPEG at quality
// 1..100 with chroma subsampled subX across and subY down (1 or 2 each).
// Tests use it: Go's encoder writes 4:2:0 only.
func EncodeJPEG(rgb []byte, w, h, quality, subX, subY int) ([]byte, error) {
	var ss C.int = -1
	for k, v := range yuvSubsamp {
		if v == [2]int{subX, subY} {
			ss = k
		}
	}
	switch {
	case ss < 0:
		return nil, fmt.Errorf("codec: chroma subsampling %dx%d", subX, subY)
	case w < 1 || h < 1 || len(rgb) < w*h*3:
		return nil, fmt.Errorf("codec: %d bytes for a %dx%d RGB image", len(rgb), w, h)
	case quality < 1 || quality > 100:
		return nil, fmt.Errorf("codec: JPEG quality %d", quality)
	}
	msg := (*C.char)(C.calloc(C.SL_YUV_MSG_LEN, 1))
	if msg == nil {
		return nil, errors.New("codec: out of C memory")
	}
	defer C.free(unsafe.Pointer(msg))
	r := C.sl_compress((*C.uchar)(unsafe.Pointer(&rgb[0])), C.int(w), C.int(h), ss, C.int(quality), msg)
	if r.rc != 0 {
		return nil, fmt.Errorf("codec: TurboJPEG compression: %s", C.GoString(msg))
	}
	defer C.tjFree(r.buf)
	return C.GoBytes(unsafe.Pointer(r.buf), C.int(r.size)), nil
}
