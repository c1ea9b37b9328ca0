// OpenJPEG over a memory buffer, for jp2.go; see jp2mem.h.
#include <stdio.h>
#include <string.h>
#include <openjpeg.h>

#include "capalloc.h"
#include "jp2mem.h"

typedef struct {
	const unsigned char *p;
	uint64_t n, pos;
} sl_jmem;

static OPJ_SIZE_T sl_jread(void *buf, OPJ_SIZE_T size, void *ud) {
	sl_jmem *m = (sl_jmem *)ud;
	if (m->pos >= m->n)
		return (OPJ_SIZE_T)-1; // OpenJPEG's end of stream
	uint64_t k = m->n - m->pos;
	if ((uint64_t)size < k)
		k = size;
	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	return (OPJ_SIZE_T)k;
}

static OPJ_OFF_T sl_jskip(OPJ_OFF_T off, void *ud) {
	sl_jmem *m = (sl_jmem *)ud;
	if (off < 0) {
		if ((uint64_t)-off > m->pos)
			return -1;
		m->pos -= (uint64_t)-off;
		return off;
	}
	// Skipping past the end fails at the next read, as for a file.
	if ((uint64_t)off > m->n - (m->pos < m->n ? m->pos : m->n))
		m->pos = m->n;
	else
		m->pos += (uint64_t)off;
	return off;
}

static OPJ_BOOL sl_jseek(OPJ_OFF_T off, void *ud) {
	sl_jmem *m = (sl_jmem *)ud;
	if (off < 0 || (uint64_t)off > m->n)
		return OPJ_FALSE;
	m->pos = (uint64_t)off;
	return OPJ_TRUE;
}

static void sl_jkeep(char *dst, int *count, const char *msg) {
	if ((*count)++ > 0 || msg == NULL)
		return; // the first message is the cause
	snprintf(dst, SL_JP2_MSG_LEN, "%s", msg);
	size_t k = strlen(dst);
	while (k > 0 && (dst[k - 1] == '\n' || dst[k - 1] == ' '))
		dst[--k] = 0;
}

static void sl_jerror(const char *msg, void *ud) {
	sl_jp2_state *st = (sl_jp2_state *)ud;
	sl_jkeep(st->err, &st->nerr, msg);
}

static void sl_jwarning(const char *msg, void *ud) {
	sl_jp2_state *st = (sl_jp2_state *)ud;
	sl_jkeep(st->warn, &st->nwarn, msg);
}

static void sl_jquiet(const char *msg, void *ud) { (void)msg, (void)ud; }

// sl_jopen makes a stream over m and a decoder with its messages kept in
// st, and reads the header into *img. Returns 0 on success; the caller
// destroys what is not NULL.
static int sl_jopen(sl_jmem *m, int jp2, sl_jp2_state *st, opj_stream_t **s, opj_codec_t **c, opj_image_t **img) {
	sl_jp2_release(st);
	int64_t cap = st->cap;
	memset(st, 0, sizeof *st);
	st->cap = cap;
	sl_cap_begin(cap);
	*s = opj_stream_create(64 << 10, OPJ_TRUE);
	*c = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
	*img = NULL;
	if (*s == NULL || *c == NULL) {
		snprintf(st->err, SL_JP2_MSG_LEN, "out of memory");
		return 1;
	}
	opj_stream_set_read_function(*s, sl_jread);
	opj_stream_set_skip_function(*s, sl_jskip);
	opj_stream_set_seek_function(*s, sl_jseek);
	opj_stream_set_user_data(*s, m, NULL);
	opj_stream_set_user_data_length(*s, m->n);
	opj_set_error_handler(*c, sl_jerror, st);
	opj_set_warning_handler(*c, sl_jwarning, st);
	opj_set_info_handler(*c, sl_jquiet, NULL);
	opj_dparameters_t p;
	opj_set_default_decoder_parameters(&p);
	p.cp_reduce = 0; // full resolution
	if (!opj_setup_decoder(*c, &p))
		return 1;
	// Strict: a truncated codestream is an error, not a partial image.
	opj_decoder_set_strict_mode(*c, OPJ_TRUE);
	// No thread of its own: the workers are the parallelism, and the
	// budget counts the calling thread's allocations.
	opj_codec_set_threads(*c, 0);
	if (!opj_read_header(*s, *c, img)) {
		if (st->nerr == 0)
			snprintf(st->err, SL_JP2_MSG_LEN, "cannot read the header");
		return 1;
	}
	return 0;
}

static void sl_jclose(sl_jp2_state *st, opj_stream_t *s, opj_codec_t *c, opj_image_t *img) {
	if (img != NULL)
		opj_image_destroy(img);
	if (c != NULL)
		opj_destroy_codec(c);
	if (s != NULL)
		opj_stream_destroy(s);
	st->peak = sl_cap_end(&st->cap_hit);
}

static void sl_jinfo(const opj_image_t *img, sl_jp2_info *r) {
	r->x0 = img->x0, r->y0 = img->y0, r->x1 = img->x1, r->y1 = img->y1;
	r->comps = (int)img->numcomps;
	r->space = img->color_space;
	for (int i = 0; i < r->comps && i < SL_JP2_MAX_COMPS; i++) {
		r->prec[i] = img->comps[i].prec;
		r->sgnd[i] = img->comps[i].sgnd;
		r->dx[i] = img->comps[i].dx;
		r->dy[i] = img->comps[i].dy;
	}
}

sl_jp2_info sl_jp2_header(const unsigned char *src, size_t n, int jp2, sl_jp2_state *st) {
	sl_jp2_info r;
	memset(&r, 0, sizeof r);
	sl_jmem m = {src, n, 0};
	opj_stream_t *s;
	opj_codec_t *c;
	opj_image_t *img;
	if (sl_jopen(&m, jp2, st, &s, &c, &img) != 0)
		r.rc = 1;
	else
		sl_jinfo(img, &r);
	sl_jclose(st, s, c, img);
	return r;
}

// sl_jscale brings a sample of prec bits to 8 bits as Pillow does: signed
// samples are offset to unsigned, then shifted by prec - 8. Pillow rounds
// the downshift of colour images (2 to 4 components), round set here, and
// then wraps values that round past 255 to 0; this clips them to 255
// instead. One component over 8 bits is "I;16" in Pillow, of which the
// project keeps the high byte, as for 16-bit PNG: truncation.
static inline unsigned char sl_jscale(int32_t v, uint32_t prec, uint32_t sgnd, int round) {
	uint32_t u = (uint32_t)v + (sgnd ? 1u << (prec - 1) : 0);
	if (prec <= 8)
		return (unsigned char)(u << (8 - prec));
	if (round)
		u += 1u << (prec - 9);
	u >>= prec - 8;
	return (unsigned char)(u > 255 ? 255 : u);
}

int sl_jp2_decode(const unsigned char *src, size_t n, int jp2, const sl_jp2_info *want, sl_jp2_state *st) {
	sl_jmem m = {src, n, 0};
	opj_stream_t *s;
	opj_codec_t *c;
	opj_image_t *img;
	int rc = 0;
	if (sl_jopen(&m, jp2, st, &s, &c, &img) != 0) {
		rc = 1;
		goto done;
	}
	sl_jp2_info got;
	memset(&got, 0, sizeof got);
	sl_jinfo(img, &got);
	if (memcmp(&got, want, sizeof got) != 0) {
		snprintf(st->err, SL_JP2_MSG_LEN, "header differs from the one read before");
		rc = 2;
		goto done;
	}
	if (!opj_decode(c, s, img) || !opj_end_decompress(c, s)) {
		if (st->nerr == 0)
			snprintf(st->err, SL_JP2_MSG_LEN, "decode failed");
		rc = 1;
		goto done;
	}
	uint32_t w = want->x1 - want->x0, h = want->y1 - want->y0;
	int nc = want->comps;
	if ((int)img->numcomps != nc) {
		// A JP2 palette (pclr) or channel definitions changed the
		// components after the header.
		snprintf(st->err, SL_JP2_MSG_LEN, "%d components decoded to %u", nc, img->numcomps);
		rc = 3;
		goto done;
	}
	for (int k = 0; k < nc; k++) {
		const opj_image_comp_t *cp = &img->comps[k];
		if (cp->w != w || cp->h != h || cp->data == NULL || cp->prec < 1 || cp->prec > 16) {
			snprintf(st->err, SL_JP2_MSG_LEN, "component %d decoded to %ux%u, not %ux%u", k, cp->w, cp->h, w, h);
			rc = 2;
			goto done;
		}
	}
	st->img = img; // kept for sl_jp2_rows, released by sl_jp2_release
	img = NULL;
done:
	sl_jclose(st, s, c, img);
	return rc;
}

int sl_jp2_rows(sl_jp2_state *st, uint32_t y0, uint32_t rows, unsigned char *dst, size_t dstlen) {
	const opj_image_t *img = st->img;
	if (img == NULL)
		return 1;
	uint32_t w = img->comps[0].w, h = img->comps[0].h;
	int nc = (int)img->numcomps;
	if (y0 > h || rows > h - y0 || (uint64_t)w * rows * nc != dstlen)
		return 1;
	for (int k = 0; k < nc; k++) {
		const opj_image_comp_t *cp = &img->comps[k];
		const int32_t *d = cp->data + (uint64_t)y0 * w;
		unsigned char *o = dst + k;
		for (uint64_t i = 0, np = (uint64_t)w * rows; i < np; i++, o += nc)
			*o = sl_jscale(d[i], cp->prec, cp->sgnd, nc > 1);
	}
	return 0;
}

void sl_jp2_release(sl_jp2_state *st) {
	if (st->img != NULL)
		opj_image_destroy(st->img);
	st->img = NULL;
}
