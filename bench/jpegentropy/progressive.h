// A progressive JPEG entropy decoder to DCT coefficients, written to find
// out how much faster than libjpeg-turbo's such a decoder can be (see
// main.c's "ours" mode, which checks every file's coefficients against
// libjpeg-turbo's before timing it). Not hardened for hostile input beyond
// bounds checks: a benchmark, not a decoder the server runs.
#ifndef SLUICE_PROGRESSIVE_H
#define SLUICE_PROGRESSIVE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	int id, h, v;     // component id, sampling factors
	int bw, bh;       // blocks wide and high (as libjpeg's width_in_blocks, height_in_blocks)
	int pw, ph;       // blocks allocated: padded to whole MCUs
	int16_t *coef;    // pw*ph blocks of 64 coefficients, natural order
	uint64_t *nz;     // per block: bit z set when the coefficient at zigzag position z >= 1 is nonzero
	int dc, ac, pred; // the current scan's tables and DC predictor
} prog_comp;

typedef struct prog_huff prog_huff;

typedef struct {
	int w, h, nc, hmax, vmax, mcux, mcuy, restart, eobrun;
	prog_comp c[4];
	prog_huff *dc, *ac; // 4 tables each
} prog;

// prog_decode decodes data's entropy-coded scans into d's coefficients;
// 0 on success, -1 (with d freed) on data it does not take.
int prog_decode(prog *d, const uint8_t *data, size_t size);
void prog_free(prog *d);

static inline int16_t *prog_block(const prog_comp *c, int bx, int by) {
	return c->coef + ((size_t)by * c->pw + bx) * 64;
}

#endif
