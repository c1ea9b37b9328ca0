package testimg

/*
#cgo CFLAGS: -I${SRCDIR}/../../build/pic/include
#cgo LDFLAGS: -L${SRCDIR}/../../build/pic/lib -l:libturbojpeg.a
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

// libjpeg's default error handler calls exit(); this one jumps back to
// sl_encode with the message.
typedef struct {
	struct jpeg_error_mgr pub;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
} sl_err;

static void sl_error_exit(j_common_ptr c) {
	sl_err *e = (sl_err *)c->err;
	(*c->err->format_message)(c, e->msg);
	longjmp(e->jump, 1);
}

typedef struct {
	unsigned char *buf;
	unsigned long size;
} sl_out;

// sl_encode compresses w×h RGB pixels at quality q; rgb_space codes them
// as RGB rather than YCbCr, grey as their luma alone, arith with
// arithmetic coding; restart > 0 sets a restart interval of that many
// MCUs; a non-NULL scans sets the scan script. On failure it returns an
// empty buffer and the message in msg.
static sl_out sl_encode(const unsigned char *rgb, int w, int h, int q, int rgb_space, int grey, int arith, int restart,
                        int luma_h, int luma_v, const jpeg_scan_info *scans, int nscans, char *msg) {
	struct jpeg_compress_struct c;
	sl_err e;
	sl_out out = {NULL, 0};
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = sl_error_exit;
	if (setjmp(e.jump)) {
		strncpy(msg, e.msg, JMSG_LENGTH_MAX - 1);
		jpeg_destroy_compress(&c);
		free(out.buf);
		out.buf = NULL;
		out.size = 0;
		return out;
	}
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &out.buf, &out.size);
	c.image_width = w;
	c.image_height = h;
	c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	if (rgb_space)
		jpeg_set_colorspace(&c, JCS_RGB);
	if (grey)
		jpeg_set_colorspace(&c, JCS_GRAYSCALE);
	c.restart_interval = restart;
	jpeg_set_quality(&c, q, TRUE);
	if (luma_h > 0) {
		c.comp_info[0].h_samp_factor = luma_h;
		c.comp_info[0].v_samp_factor = luma_v;
	}
	c.arith_code = arith;
	if (scans != NULL) {
		c.scan_info = scans;
		c.num_scans = nscans;
	}
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row = (JSAMPROW)(rgb + (size_t)c.next_scanline * w * 3);
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	return out;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Scan is one scan of a JPEG's scan script, as libjpeg's jpeg_scan_info:
// the components it codes (frame indexes) and its spectral selection
// (Ss..Se) and successive approximation (Ah, Al) parameters.
type Scan struct {
	Comps          []int
	Ss, Se, Ah, Al int
}

// LibJPEGOptions say how LibJPEG encodes.
type LibJPEGOptions struct {
	Quality int // 1-100
	// RGB codes the R, G, B channels as they are, as libjpeg's
	// jpeg_set_colorspace(JCS_RGB) does: an Adobe marker with transform 0,
	// components named 'R', 'G', 'B', no chroma subsampling. Otherwise
	// YCbCr 4:2:0 with a JFIF marker.
	RGB bool
	// Grey codes the pixels' luma alone: a one-component JPEG.
	Grey bool
	// Arithmetic codes with arithmetic coding rather than Huffman's.
	Arithmetic bool
	// Restart is the restart interval in MCUs; 0 for none.
	Restart int
	// Luma is the luma's sampling factors (horizontal, vertical) against
	// chroma's 1×1: {1, 1} is 4:4:4, {2, 1} 4:2:2, {1, 2} 4:4:0; zero
	// leaves libjpeg's default, 4:2:0 for YCbCr.
	Luma [2]int
	// Scans is the scan script (libjpeg checks it); nil is one
	// sequential scan.
	Scans []Scan
}

// LibJPEG encodes w×h packed RGB pixels with libjpeg (the libjpeg API of
// the statically linked libjpeg-turbo), which can write what Go's encoder
// and TurboJPEG's cannot: RGB-coded JPEGs, arithmetic coding and custom
// scan scripts.
func LibJPEG(rgb []byte, w, h int, o LibJPEGOptions) ([]byte, error) {
	if w < 1 || h < 1 || len(rgb) != w*h*3 {
		return nil, fmt.Errorf("testimg: %d bytes for %dx%d RGB", len(rgb), w, h)
	}
	var scans []C.jpeg_scan_info
	for _, s := range o.Scans {
		if len(s.Comps) < 1 || len(s.Comps) > C.MAX_COMPS_IN_SCAN {
			return nil, fmt.Errorf("testimg: scan of %d components", len(s.Comps))
		}
		si := C.jpeg_scan_info{comps_in_scan: C.int(len(s.Comps)),
			Ss: C.int(s.Ss), Se: C.int(s.Se), Ah: C.int(s.Ah), Al: C.int(s.Al)}
		for i, c := range s.Comps {
			si.component_index[i] = C.int(c)
		}
		scans = append(scans, si)
	}
	var sp *C.jpeg_scan_info
	if len(scans) > 0 {
		sp = &scans[0]
	}
	var msg [C.JMSG_LENGTH_MAX]C.char
	out := C.sl_encode((*C.uchar)(unsafe.Pointer(&rgb[0])), C.int(w), C.int(h), C.int(o.Quality),
		cbool(o.RGB), cbool(o.Grey), cbool(o.Arithmetic), C.int(o.Restart), C.int(o.Luma[0]), C.int(o.Luma[1]), sp, C.int(len(scans)), &msg[0])
	if out.buf == nil {
		return nil, fmt.Errorf("testimg: libjpeg: %s", C.GoString(&msg[0]))
	}
	defer C.free(unsafe.Pointer(out.buf))
	return C.GoBytes(unsafe.Pointer(out.buf), C.int(out.size)), nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
