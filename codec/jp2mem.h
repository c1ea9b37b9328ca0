// The C side of the JPEG 2000 decoder (jp2mem.c): OpenJPEG over an
// in-memory stream, its messages kept per codec. Every call makes and
// destroys its own codec and stream, so that no pointer to Go memory
// outlives the call.
#ifndef SLUICE_JP2MEM_H
#define SLUICE_JP2MEM_H

#include <stddef.h>
#include <stdint.h>

#include "hidden.h"

enum { SL_JP2_MSG_LEN = 256, SL_JP2_MAX_COMPS = 4 };

typedef struct {
	char err[SL_JP2_MSG_LEN];
	char warn[SL_JP2_MSG_LEN];
	int nerr, nwarn;
	void *img; // the decoded opj_image_t, between sl_jp2_decode and sl_jp2_release
	// cap bounds the bytes OpenJPEG may hold at once during one call of
	// sl_jp2_header or sl_jp2_decode (0: no bound); an allocation past it
	// fails, OpenJPEG reports its failure, and cap_hit says why. peak is
	// the most the call held.
	int64_t cap, peak;
	int cap_hit;
} sl_jp2_state;

// What opj_read_header found; per-component fields for the first
// SL_JP2_MAX_COMPS components.
typedef struct {
	int rc; // 0: read; 1: OpenJPEG failed (see err)
	uint32_t x0, y0, x1, y1;
	int comps, space;
	uint32_t prec[SL_JP2_MAX_COMPS], sgnd[SL_JP2_MAX_COMPS], dx[SL_JP2_MAX_COMPS], dy[SL_JP2_MAX_COMPS];
} sl_jp2_info;

// jp2 is 1 for a JP2 file, 0 for a raw codestream.
SL_HIDDEN sl_jp2_info sl_jp2_header(const unsigned char *src, size_t n, int jp2, sl_jp2_state *st);

// sl_jp2_decode decodes and keeps the image in st (C memory only) for
// sl_jp2_rows. Returns 0 on success, 1 when OpenJPEG failed, 2 when the
// image differs from want, 3 when a JP2 palette or channel definitions
// changed the component count; the image is kept only on success.
SL_HIDDEN int sl_jp2_decode(const unsigned char *src, size_t n, int jp2, const sl_jp2_info *want, sl_jp2_state *st);

// sl_jp2_rows writes rows y0 to y0+rows-1 of the kept image into dst as
// pixels of the image's 8-bit samples, each scaled to 8 bits as Pillow
// does: converted a strip at a time, so that no second copy of the whole
// image is made. Returns 0, or 1 when there is no such image or strip.
SL_HIDDEN int sl_jp2_rows(sl_jp2_state *st, uint32_t y0, uint32_t rows, unsigned char *dst, size_t dstlen);

// sl_jp2_release frees the kept image, if any.
SL_HIDDEN void sl_jp2_release(sl_jp2_state *st);

#endif
