// JPEG entropy decoding to DCT coefficients: jpegcoef.h.
// What makes it faster than libjpeg-turbo's (docs/perf.md, 2026-12-02): a
// 64-bit bit buffer filled eight bytes at a time where no 0xFF byte is
// among them; AC symbols whose code and value (in a refinement scan, the
// sign bit) fit 9 bits decoded with one lookup; and refinement scans
// driven by a per-block mask of the nonzero coefficients, so that the
// zero run a symbol skips is found with bit operations and the correction
// bits, random to a branch predictor, are applied without branches.
// Every read stays inside data; every write inside the caller's blocks.
//
// jpegcoef_bmi2.c compiles this file again for CPUs with BMI2 (its pdep
// finds a refinement symbol's place in one instruction, and its shifts
// take a count without a fixed register): on an H200's Xeon cores that
// decoded progressive JPEGs 1.26 times as fast (docs/perf.md, 2026-12-02
// 16:19 UTC). sl_coef_decode runs that copy where the CPU has BMI2.
#include "jpegcoef.h"

#include <limits.h>
#include <string.h>

// zigzag position -> natural order; past 63 (corrupt runs) stays on 63
static const uint8_t natural[80] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

#define FAST 9

typedef struct {
	int defined;
	uint16_t fast[1 << FAST]; // (length << 8) | symbol; 0: longer than FAST
	// AC: (value << 8) | (run << 4) | (code + value length); 0: not this way
	int16_t fastac[1 << FAST];
	int32_t maxcode[17], valptr[17], mincode[17];
	uint8_t vals[256];
} huff;

static int build(huff *h, const uint8_t *counts, const uint8_t *vals, int n) {
	int code = 0, k = 0;
	memset(h, 0, sizeof *h);
	for (int l = 1; l <= 16; l++) {
		h->valptr[l] = k;
		h->mincode[l] = code;
		for (int i = 0; i < counts[l - 1]; i++, k++) {
			if (k >= n || code >= (1 << l))
				return SL_COEF_BAD_TABLE;
			h->vals[k] = vals[k];
			if (l <= FAST)
				for (int j = 0; j < (1 << (FAST - l)); j++)
					h->fast[(code << (FAST - l)) + j] = (uint16_t)(l << 8 | vals[k]);
			code++;
		}
		h->maxcode[l] = counts[l - 1] ? code - 1 : -1;
		code <<= 1;
	}
	for (int i = 0; i < (1 << FAST); i++) {
		int f = h->fast[i], l = f >> 8, r = (f >> 4) & 15, s = f & 15;
		if (!f || !s || l + s > FAST)
			continue;
		int v = (i >> (FAST - l - s)) & ((1 << s) - 1);
		if (v < (1 << (s - 1)))
			v -= (1 << s) - 1;
		if (v >= -128 && v <= 127)
			h->fastac[i] = (int16_t)(v * 256 + (r << 4) + l + s);
	}
	h->defined = 1;
	return 0;
}

typedef struct {
	const uint8_t *p, *end;
	uint64_t buf; // valid bits from the top
	int bits;
	int marker; // a marker was met: zeros from here
	int padded; // zero bits put in the buffer past the data
} bits;

// short_data reports a scan (or restart interval) that used bits past its
// data: libjpeg warns "premature end of data segment" and decodes zeros,
// which the server makes an error; here the file goes to libjpeg, which
// names it.
static inline int short_data(const bits *b) { return b->padded > b->bits; }

static inline void fill(bits *b) {
	if (!b->marker && b->end - b->p >= 8) {
		uint64_t x;
		memcpy(&x, b->p, 8);
		uint64_t v = ~x; // a zero byte of v is a 0xFF byte of x
		if (!((v - 0x0101010101010101ULL) & ~v & 0x8080808080808080ULL)) {
			int n = (64 - b->bits) >> 3;
			b->buf |= __builtin_bswap64(x) >> b->bits;
			b->p += n;
			b->bits += n * 8;
			return;
		}
	}
	while (b->bits <= 56) {
		int c = 0, pad = 1;
		if (!b->marker && b->p < b->end) {
			c = *b->p, pad = 0;
			if (c == 0xFF) {
				int next = b->p + 1 < b->end ? b->p[1] : 0xD9;
				if (next == 0)
					b->p += 2;
				else {
					b->marker = next;
					c = 0, pad = 1;
				}
			} else
				b->p++;
		}
		b->padded += pad * 8;
		b->buf |= (uint64_t)c << (56 - b->bits);
		b->bits += 8;
	}
}

static inline int get(bits *b, int n) { // 1 <= n <= 31
	if (b->bits < n)
		fill(b);
	int v = (int)(b->buf >> (64 - n));
	b->buf <<= n;
	b->bits -= n;
	return v;
}

static inline int extend(int v, int n) { return v < (1 << (n - 1)) ? v - (1 << n) + 1 : v; }

static inline int symbol(bits *b, const huff *h) {
	if (b->bits < 16)
		fill(b);
	int f = h->fast[b->buf >> (64 - FAST)];
	if (f) {
		b->buf <<= f >> 8;
		b->bits -= f >> 8;
		return f & 255;
	}
	int l = FAST + 1, code = (int)(b->buf >> (64 - l));
	while (code > h->maxcode[l]) {
		if (++l > 16)
			return -1;
		code = (int)(b->buf >> (64 - l));
	}
	if (code < h->mincode[l])
		return -1;
	b->buf <<= l;
	b->bits -= l;
	return h->vals[h->valptr[l] + code - h->mincode[l]];
}

// correct reads one correction bit for each coefficient in ones (zigzag
// positions, in order) and adds it below the bits already there: up to 32
// at a time from the buffer, without counting them first.
static inline void correct(bits *b, int16_t *k, uint64_t ones, int p1) {
	while (ones) {
		if (b->bits < 32)
			fill(b);
		uint64_t v = b->buf;
		int used = 0;
		do {
			int16_t *q = &k[natural[__builtin_ctzll(ones)]];
			ones &= ones - 1;
			int c = *q, apply = -(int)((v >> 63) & ((c & p1) == 0));
			*q = (int16_t)(c + ((((c >> 15) | 1) * p1) & apply));
			v <<= 1;
		} while (ones && ++used < 32);
		used += !ones;
		b->buf <<= used;
		b->bits -= used;
	}
}

// dec is one decode's state: the frame's components, the tables defined
// so far and where the blocks go.
struct sl_coef_state {
	sl_coef_frame *f;
	int16_t *coef;
	uint64_t *nz;
	int restart, eobrun;
	int pred[SL_COEF_MAX_COMPS];
	const huff *dct[SL_COEF_MAX_COMPS], *act[SL_COEF_MAX_COMPS]; // the current scan's, by component
	int latched[SL_COEF_MAX_COMPS];
	int scanned[SL_COEF_MAX_COMPS]; // a scan coded the component (a sequential one: all its blocks)
	huff dc[4], ac[4];
	uint16_t quant[4][64];
	int qdefined[4];
};
typedef struct sl_coef_state dec;

#ifndef SL_COEF_BMI2
size_t sl_coef_state_size(void) { return sizeof(dec); }
#endif

static int dcblock(dec *d, bits *b, int ci, int16_t *k, int ah, int al) {
	if (ah) {
		if (get(b, 1))
			k[0] |= (int16_t)(1 << al);
		return 0;
	}
	int t = symbol(b, d->dct[ci]);
	if (t < 0 || t > 15)
		return SL_COEF_BAD_DATA;
	int diff = t ? extend(get(b, t), t) : 0, p = d->pred[ci];
	// libjpeg-turbo refuses a predictor that would overflow an int, too.
	if ((p >= 0 && diff > INT_MAX - p) || (p < 0 && diff < INT_MIN - p))
		return SL_COEF_BAD_DATA;
	d->pred[ci] = p + diff;
	k[0] = (int16_t)((unsigned)d->pred[ci] << al); // libjpeg's value, truncated as its JCOEF
	return 0;
}

// ac decodes the AC coefficients z..se of one block: a progressive first
// scan's band, where an end-of-band run also skips the next blocks, or a
// sequential block's 1..63, where an end of block ends just it (libjpeg
// reads any run-less symbol of size 0 there as one).
static inline int ac(dec *d, bits *b, const huff *h, int16_t *k, uint64_t *nz, int z, int se, int al,
                     int progressive) {
	while (z <= se) {
		if (b->bits < 16)
			fill(b);
		int f = h->fastac[b->buf >> (64 - FAST)], v;
		if (f) {
			b->buf <<= f & 15;
			b->bits -= f & 15;
			z += (f >> 4) & 15;
			v = f >> 8;
		} else {
			int rs = symbol(b, h);
			if (rs < 0)
				return SL_COEF_BAD_DATA;
			int r = rs >> 4, s = rs & 15;
			if (!s) {
				if (r == 15) {
					z += 16;
					continue;
				}
				if (progressive)
					d->eobrun = (1 << r) - 1 + (r ? get(b, r) : 0);
				return 0;
			}
			z += r;
			v = extend(get(b, s), s);
		}
		// libjpeg writes a run past the band into its last coefficient;
		// here the file goes to libjpeg instead, which gives the same.
		if (z > se)
			return SL_COEF_BAD_DATA;
		k[natural[z]] = (int16_t)(v * (1 << al));
		if (progressive)
			*nz |= 1ULL << z;
		z++;
	}
	return 0;
}

static int acfirst(dec *d, bits *b, int ci, int16_t *k, uint64_t *nz, int ss, int se, int al) {
	if (d->eobrun) {
		d->eobrun--;
		return 0;
	}
	return ac(d, b, d->act[ci], k, nz, ss, se, al, 1);
}

// seqblock decodes one block of a sequential scan: its DC difference and
// all its AC coefficients. Zeroing the block here, in cache, rather than
// the whole buffer before is most of why sequential JPEGs skip the
// upfront clear.
static int seqblock(dec *d, bits *b, int ci, int16_t *k) {
	memset(k, 0, 64 * sizeof *k);
	int err = dcblock(d, b, ci, k, 0, 0);
	return err ? err : ac(d, b, d->act[ci], k, NULL, 1, 63, 0, 0);
}

static int acrefine(dec *d, bits *b, int ci, int16_t *k, uint64_t *nzp, int ss, int se, int al) {
	const huff *h = d->act[ci];
	int p1 = 1 << al, z = ss;
	uint64_t nz = *nzp, upto = se == 63 ? ~0ULL : (2ULL << se) - 1;
	if (!d->eobrun) {
		while (z <= se) {
			int r, v = 0;
			if (b->bits < 16)
				fill(b);
			// A new coefficient is +-1 here: fastac's entry of a size-1
			// symbol carries its sign bit too.
			int f = h->fastac[b->buf >> (64 - FAST)];
			if (f >> 8 == 1 || f >> 8 == -1) {
				b->buf <<= f & 15;
				b->bits -= f & 15;
				r = (f >> 4) & 15;
				v = (f >> 8) * p1;
			} else {
				int rs = symbol(b, h);
				if (rs < 0)
					return SL_COEF_BAD_DATA;
				int s = rs & 15;
				r = rs >> 4;
				if (s)
					v = (get(b, 1) * 2 - 1) * p1; // no branch: the bit is as good as random
				else if (r != 15) {
					d->eobrun = (1 << r) + (r ? get(b, r) : 0);
					break;
				}
			}
			// The symbol's place: the (r+1)-th zero coefficient from z on;
			// the nonzero ones before it take a correction bit each.
			uint64_t zeros = ~nz & upto & (~0ULL << z);
#ifdef __BMI2__
			zeros = __builtin_ia32_pdep_di(1ULL << r, zeros);
#else
			for (int i = 0; i < r && zeros; i++)
				zeros &= zeros - 1;
#endif
			int t = zeros ? __builtin_ctzll(zeros) : se + 1;
			correct(b, k, nz & (~0ULL << z) & (t >= 64 ? ~0ULL : (1ULL << t) - 1), p1);
			if (t <= se && v) {
				k[natural[t]] = (int16_t)v;
				nz |= 1ULL << t;
			}
			z = t + 1;
		}
	}
	if (d->eobrun) {
		if (z <= se)
			correct(b, k, nz & upto & (~0ULL << z), p1);
		d->eobrun--;
	}
	*nzp = nz;
	return 0;
}

// scan decodes one scan's entropy-coded data for components sc[0..ns).
static int scan(dec *d, bits *b, int ns, const int *sc, int ss, int se, int ah, int al) {
	const sl_coef_frame *f = d->f;
	const sl_coef_comp *c0 = &f->c[sc[0]];
	int64_t total = ns > 1 ? (int64_t)f->mcux * f->mcuy : (int64_t)c0->bw * c0->bh, since = 0;
	d->eobrun = 0;
	for (int i = 0; i < ns; i++)
		d->pred[sc[i]] = 0;
	for (int64_t m = 0; m < total; m++) {
		if (d->restart && since == d->restart) {
			// Restart: drop the buffered bits, pass the RSTn marker.
			if (short_data(b))
				return SL_COEF_BAD_DATA;
			while (!(b->p + 1 < b->end && b->p[0] == 0xFF && b->p[1] >= 0xD0 && b->p[1] <= 0xD7)) {
				if (b->p + 1 >= b->end)
					return SL_COEF_BAD_DATA;
				b->p++;
			}
			b->p += 2;
			b->buf = 0;
			b->bits = 0;
			b->marker = 0;
			b->padded = 0;
			since = 0;
			d->eobrun = 0;
			for (int i = 0; i < ns; i++)
				d->pred[sc[i]] = 0;
		}
		since++;
		int err;
		if (ns > 1) {
			int64_t mx = m % f->mcux, my = m / f->mcux;
			for (int i = 0; i < ns; i++) {
				const sl_coef_comp *c = &f->c[sc[i]];
				for (int y = 0; y < c->v; y++)
					for (int x = 0; x < c->h; x++) {
						int64_t at = c->first + (my * c->v + y) * c->pw + mx * c->h + x;
						int16_t *k = d->coef + at * 64;
						if ((err = f->progressive ? dcblock(d, b, sc[i], k, ah, al) : seqblock(d, b, sc[i], k)))
							return err;
					}
			}
			continue;
		}
		int64_t at = c0->first + (m / c0->bw) * c0->pw + m % c0->bw;
		int16_t *k = d->coef + at * 64;
		err = !f->progressive ? seqblock(d, b, sc[0], k)
		      : ss == 0 ? dcblock(d, b, sc[0], k, ah, al)
		      : ah == 0 ? acfirst(d, b, sc[0], k, &d->nz[at], ss, se, al)
		                : acrefine(d, b, sc[0], k, &d->nz[at], ss, se, al);
		if (err)
			return err;
	}
	return short_data(b) ? SL_COEF_BAD_DATA : 0;
}

static int u16(const uint8_t *p) { return p[0] << 8 | p[1]; }

// frame reads the frame header of marker m (the segment after its
// length).
static int frame(sl_coef_frame *f, int m, const uint8_t *s, int len) {
	memset(f, 0, sizeof *f);
	f->progressive = m == 0xC2;
	if (len < 6 || s[5] < 1 || s[5] > SL_COEF_MAX_COMPS || len < 6 + 3 * s[5])
		return SL_COEF_BAD_FRAME;
	f->h = u16(s + 1), f->w = u16(s + 3), f->nc = s[5];
	if (s[0] != 8)
		return SL_COEF_NOT_HUFFMAN;
	if (f->w < 1 || f->h < 1)
		return SL_COEF_BAD_FRAME;
	f->hmax = f->vmax = 1;
	for (int i = 0; i < f->nc; i++) {
		sl_coef_comp *c = &f->c[i];
		c->id = s[6 + 3 * i], c->h = s[7 + 3 * i] >> 4, c->v = s[7 + 3 * i] & 15, c->tq = s[8 + 3 * i];
		if (c->h < 1 || c->h > 4 || c->v < 1 || c->v > 4 || c->tq > 3)
			return SL_COEF_BAD_FRAME;
		if (f->nc == 1)
			c->h = c->v = 1; // one component: its blocks are the MCUs whatever the factors
		f->hmax = c->h > f->hmax ? c->h : f->hmax;
		f->vmax = c->v > f->vmax ? c->v : f->vmax;
	}
	f->mcux = (f->w + 8 * f->hmax - 1) / (8 * f->hmax);
	f->mcuy = (f->h + 8 * f->vmax - 1) / (8 * f->vmax);
	for (int i = 0; i < f->nc; i++) {
		sl_coef_comp *c = &f->c[i];
		c->pxw = (f->w * c->h + f->hmax - 1) / f->hmax;
		c->pxh = (f->h * c->v + f->vmax - 1) / f->vmax;
		c->bw = (c->pxw + 7) / 8, c->bh = (c->pxh + 7) / 8;
		c->pw = f->mcux * c->h, c->ph = f->mcuy * c->v;
		c->first = f->blocks;
		f->blocks += (int64_t)c->pw * c->ph;
	}
	return 0;
}

static int huffman_tables(dec *d, const uint8_t *s, int len) {
	for (const uint8_t *q = s, *end = s + len; q < end;) {
		if (end - q < 17 || (q[0] >> 4) > 1 || (q[0] & 15) > 3)
			return SL_COEF_BAD_TABLE;
		int n = 0;
		for (int i = 0; i < 16; i++)
			n += q[1 + i];
		if (n > 256 || end - q < 17 + n)
			return SL_COEF_BAD_TABLE;
		int err = build(((q[0] >> 4) ? d->ac : d->dc) + (q[0] & 15), q + 1, q + 17, n);
		if (err)
			return err;
		q += 17 + n;
	}
	return 0;
}

// quant_tables reads a DQT segment: 8- or 16-bit values in zigzag order.
static int quant_tables(dec *d, const uint8_t *s, int len) {
	for (const uint8_t *q = s, *end = s + len; q < end;) {
		int wide = q[0] >> 4, t = q[0] & 15, n = 1 + 64 * (wide ? 2 : 1);
		if (wide > 1 || t > 3 || end - q < n)
			return SL_COEF_BAD_TABLE;
		for (int z = 0; z < 64; z++)
			d->quant[t][natural[z]] = (uint16_t)(wide ? u16(q + 1 + 2 * z) : q[1 + z]);
		d->qdefined[t] = 1;
		q += n;
	}
	return 0;
}

// sos reads a scan header and decodes the scan; *next is where the scan's
// data ends.
static int sos(dec *d, const uint8_t *s, int len, const uint8_t *end, const uint8_t **next) {
	sl_coef_frame *f = d->f;
	int ns = len > 0 ? s[0] : 0, sc[SL_COEF_MAX_COMPS];
	if (!f->nc)
		return SL_COEF_BAD_SCAN;
	if (ns < 1 || ns > f->nc || len < 4 + 2 * ns)
		return SL_COEF_BAD_SCAN;
	const uint8_t *t = s + 1 + 2 * ns;
	int ss = t[0], se = t[1], ah = t[2] >> 4, al = t[2] & 15;
	if (!f->progressive)
		ss = 0, se = 63, ah = al = 0; // what a sequential scan codes, whatever it says (libjpeg's rule)
	else if (se > 63 || ss > se || (ss == 0) != (se == 0) || (ns > 1 && ss) || al > 13 || ah > 13)
		return SL_COEF_BAD_SCAN;
	for (int i = 0; i < ns; i++) {
		sc[i] = -1;
		for (int j = 0; j < f->nc; j++)
			if (f->c[j].id == s[1 + 2 * i])
				sc[i] = j;
		if (sc[i] < 0)
			return SL_COEF_BAD_SCAN;
		for (int j = 0; j < i; j++)
			if (sc[j] == sc[i])
				return SL_COEF_BAD_SCAN;
		const huff *dct = &d->dc[s[2 + 2 * i] >> 4 & 3], *act = &d->ac[s[2 + 2 * i] & 3];
		if (!(ss == 0 ? ah || dct->defined : act->defined) || (!f->progressive && !act->defined))
			return SL_COEF_BAD_SCAN;
		d->scanned[sc[i]] = 1;
		d->dct[sc[i]] = dct, d->act[sc[i]] = act;
		sl_coef_comp *c = &f->c[sc[i]];
		if (!d->latched[sc[i]]) {
			// libjpeg takes a component's table as the first scan that
			// codes it finds it, and fails if there is none.
			if (!d->qdefined[c->tq])
				return SL_COEF_BAD_SCAN;
			memcpy(c->quant, d->quant[c->tq], sizeof c->quant);
			d->latched[sc[i]] = 1;
		}
	}
	bits b = {.p = s + len, .end = end};
	int err = scan(d, &b, ns, sc, ss, se, ah, al);
	if (err)
		return err;
	// on to the marker after the scan's data
	const uint8_t *q = b.p;
	while (end - q >= 2 && !(q[0] == 0xFF && q[1] != 0 && !(q[1] >= 0xD0 && q[1] <= 0xD7)))
		q++;
	*next = q;
	return 0;
}

// walk goes through data's markers: to the frame header when d is NULL,
// else to the end of the image, decoding every scan.
static int walk(const uint8_t *data, size_t size, int max_scans, sl_coef_frame *f, dec *d) {
	if (size < 4 || data[0] != 0xFF || data[1] != 0xD8)
		return SL_COEF_NOT_HUFFMAN;
	const uint8_t *p = data + 2, *end = data + size;
	int framed = 0, scans = 0;
	while (end - p >= 2) {
		if (p[0] != 0xFF || p[1] == 0xFF) {
			p++; // junk, or a fill byte before a marker
			continue;
		}
		int m = p[1];
		if (m == 0 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
			p += 2; // a stuffed zero or a marker without a segment, out of place
			continue;
		}
		if (m == 0xD9)
			return framed ? 0 : SL_COEF_BAD_MARKER;
		if (end - p < 4)
			break;
		int len = u16(p + 2) - 2;
		const uint8_t *s = p + 4;
		if (len < 0 || end - s < len)
			return SL_COEF_BAD_MARKER;
		p = s + len;
		if (m == 0xC0 || m == 0xC1 || m == 0xC2) {
			if (framed)
				return SL_COEF_BAD_FRAME;
			int err = frame(f, m, s, len);
			if (err || !d)
				return err;
			framed = 1;
		} else if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
			return SL_COEF_NOT_HUFFMAN;
		} else if (!d) {
			continue;
		} else if (m == 0xC4) {
			int err = huffman_tables(d, s, len);
			if (err)
				return err;
		} else if (m == 0xDB) {
			int err = quant_tables(d, s, len);
			if (err)
				return err;
		} else if (m == 0xDD) {
			if (len < 2)
				return SL_COEF_BAD_MARKER;
			d->restart = u16(s);
		} else if (m == 0xDA) {
			if (++scans > max_scans)
				return SL_COEF_TOO_MANY_SCANS;
			int err = sos(d, s, len, end, &p);
			if (err)
				return err;
		}
	}
	return d ? SL_COEF_NO_END : SL_COEF_NOT_HUFFMAN;
}

#ifdef SL_COEF_BMI2
#define DECODE SL_HIDDEN int sl_coef_decode_bmi2
#else
int sl_coef_frame_of(const uint8_t *data, size_t size, sl_coef_frame *f) {
	memset(f, 0, sizeof *f);
	return walk(data, size, 0, f, NULL);
}

static int decode_plain(sl_coef_state *d, const uint8_t *data, size_t size, int max_scans, sl_coef_frame *f,
                        int16_t *coef, uint64_t *nz, int64_t cap);

#if defined(__x86_64__) || defined(__i386__)
SL_HIDDEN int sl_coef_decode_bmi2(sl_coef_state *d, const uint8_t *data, size_t size, int max_scans, sl_coef_frame *f,
                                  int16_t *coef, uint64_t *nz, int64_t cap);
#endif

int sl_coef_decode(sl_coef_state *d, const uint8_t *data, size_t size, int max_scans, sl_coef_frame *f,
                   int16_t *coef, uint64_t *nz, int64_t cap, int plain) {
#if defined(__x86_64__) || defined(__i386__)
	static int bmi2 = -1; // threads race only to store the same value
	if (bmi2 < 0) {
		__builtin_cpu_init();
		bmi2 = __builtin_cpu_supports("bmi2") != 0;
	}
	if (bmi2 && !plain)
		return sl_coef_decode_bmi2(d, data, size, max_scans, f, coef, nz, cap);
#endif
	return decode_plain(d, data, size, max_scans, f, coef, nz, cap);
}
#define DECODE static int decode_plain
#endif

DECODE(sl_coef_state *d, const uint8_t *data, size_t size, int max_scans, sl_coef_frame *f, int16_t *coef,
           uint64_t *nz, int64_t cap) {
	memset(f, 0, sizeof *f);
	int err = walk(data, size, 0, f, NULL);
	if (err)
		return err;
	if (f->blocks > cap)
		return SL_COEF_SMALL_BUFFER;
	memset(d, 0, sizeof *d);
	d->f = f, d->coef = coef, d->nz = nz;
	if (f->progressive) {
		memset(coef, 0, (size_t)f->blocks * 64 * sizeof *coef);
		memset(nz, 0, (size_t)f->blocks * sizeof *nz);
	}
	err = walk(data, size, max_scans, f, d);
	// A sequential scan writes every block of its components that holds
	// image data; a component no scan codes is cleared, as no earlier
	// image's coefficients may show through.
	for (int i = 0; !err && !f->progressive && i < f->nc; i++)
		if (!d->scanned[i])
			memset(coef + f->c[i].first * 64, 0, (size_t)f->c[i].pw * f->c[i].ph * 64 * sizeof *coef);
	return err;
}
