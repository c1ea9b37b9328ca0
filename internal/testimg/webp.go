package testimg

/*
#cgo CFLAGS: -I${SRCDIR}/../../build/pic/include
#cgo LDFLAGS: -L${SRCDIR}/../../build/pic/lib -l:libwebp.a -lm
#include <webp/encode.h>

// sl_webp_encode encodes w×h packed pixels of ch (3 or 4) channels: lossy
// at quality q, or lossless when q < 0. It returns the size of *out (0 on
// failure), which the caller frees with WebPFree.
static size_t sl_webp_encode(const uint8_t *pix, int w, int h, int ch, float q, uint8_t **out) {
	int stride = w * ch;
	if (q < 0) {
		return ch == 4 ? WebPEncodeLosslessRGBA(pix, w, h, stride, out)
		               : WebPEncodeLosslessRGB(pix, w, h, stride, out);
	}
	return ch == 4 ? WebPEncodeRGBA(pix, w, h, stride, q, out) : WebPEncodeRGB(pix, w, h, stride, q, out);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// WebP encodes w×h packed RGB (channels 3) or RGBA (4) pixels with libwebp's
// encoder (the statically linked libwebp.a): lossy at quality 0-100, or
// lossless when quality is negative.
func WebP(pix []byte, w, h, channels int, quality float32) ([]byte, error) {
	if w < 1 || h < 1 || (channels != 3 && channels != 4) || len(pix) != w*h*channels {
		return nil, fmt.Errorf("testimg: %d bytes for %dx%dx%d", len(pix), w, h, channels)
	}
	var out *C.uint8_t
	n := C.sl_webp_encode((*C.uint8_t)(unsafe.Pointer(&pix[0])), C.int(w), C.int(h), C.int(channels), C.float(quality), &out)
	if n == 0 {
		return nil, fmt.Errorf("testimg: libwebp could not encode %dx%dx%d", w, h, channels)
	}
	defer C.WebPFree(unsafe.Pointer(out))
	return C.GoBytes(unsafe.Pointer(out), C.int(n)), nil
}
