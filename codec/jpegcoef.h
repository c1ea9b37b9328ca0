// Entropy decoding of 8-bit Huffman-coded JPEGs, sequential (T.81 F.2.2)
// and progressive (G.1.2), to quantised DCT coefficients, for a route that
// runs the inverse DCT on the GPU.
// Everything it writes is in the caller's buffers, sized from
// sl_coef_frame first: it allocates nothing.
#ifndef SLUICE_JPEGCOEF_H
#define SLUICE_JPEGCOEF_H

#include <stddef.h>
#include <stdint.h>

#include "hidden.h"

enum { SL_COEF_MAX_COMPS = 4 };

// Results: 0, or one of these.
enum {
	SL_COEF_NOT_HUFFMAN = -1,     // not an 8-bit Huffman-coded JPEG (sequential or progressive) of 1..4 components
	SL_COEF_BAD_MARKER = -2,      // a marker segment too short, or past the data's end
	SL_COEF_BAD_FRAME = -3,       // the frame header's values
	SL_COEF_BAD_TABLE = -4,       // a Huffman or quantisation table
	SL_COEF_BAD_SCAN = -5,        // a scan header's values, or a table it names is not defined
	SL_COEF_BAD_DATA = -6,        // entropy-coded data that decodes to no symbol, or out of range
	SL_COEF_TOO_MANY_SCANS = -7,  // more scans than the caller allows
	SL_COEF_SMALL_BUFFER = -8,    // the caller's buffers hold fewer blocks than the frame needs
	SL_COEF_NO_END = -9,          // the data ends before its end-of-image marker
};

// sl_coef_comp is one component's blocks in the caller's buffer.
typedef struct {
	int32_t id, h, v; // component id and sampling factors (1x1 for a lone component: its blocks are its MCUs)
	int32_t tq;       // its quantisation table
	int32_t bw, bh;   // blocks holding image data (libjpeg's width_in_blocks, height_in_blocks)
	int32_t pw, ph;   // blocks stored: whole MCUs
	int32_t pxw, pxh; // its samples: the plane libjpeg's IDCT fills, before upsampling
	int64_t first;    // index of its first block in the buffer; row-major, pw blocks a row
	// Natural order, as the first scan that codes the component found it
	// (libjpeg latches it then); zeros if no scan codes the component.
	uint16_t quant[64];
} sl_coef_comp;

typedef struct {
	int32_t w, h, nc, hmax, vmax, mcux, mcuy;
	int32_t progressive; // else sequential
	int64_t blocks; // over all components: the coefficient buffer holds blocks*64 int16s, the mask buffer blocks uint64s
	sl_coef_comp c[SL_COEF_MAX_COMPS];
} sl_coef_frame;

// sl_coef_state is a decode's tables and state (20 kB: the caller
// allocates it, sl_coef_state_size bytes, rather than a thread's stack of
// a size the host process decides holding it).
typedef struct sl_coef_state sl_coef_state;
SL_HIDDEN size_t sl_coef_state_size(void);

// sl_coef_frame_of reads f from data's progressive frame header.
SL_HIDDEN int sl_coef_frame_of(const uint8_t *data, size_t size, sl_coef_frame *f);

// sl_coef_decode decodes, with st, data's scans into coef (blocks of 64
// coefficients in natural order, as f places them), with nz as scratch
// (a bit mask of each block's nonzero coefficients); both hold at least
// cap blocks; nz only for a progressive JPEG. f is read again from data and gains the components'
// quantisation tables. More than max_scans scans fail the decode. plain
// runs the build for any x86-64 CPU even where the BMI2 one would run
// (for tests: both must give the same).
SL_HIDDEN int sl_coef_decode(sl_coef_state *st, const uint8_t *data, size_t size, int max_scans, sl_coef_frame *f,
                             int16_t *coef, uint64_t *nz, int64_t cap, int plain);

#endif
