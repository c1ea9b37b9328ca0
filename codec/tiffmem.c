// libtiff over a memory buffer, for tiff.go; see tiffmem.h.
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

#include "capalloc.h"
#include "tiffmem.h"

typedef struct {
	const unsigned char *p;
	uint64_t n, pos;
} sl_mem;

static tmsize_t sl_mem_read(thandle_t h, void *buf, tmsize_t size) {
	sl_mem *m = (sl_mem *)h;
	if (size <= 0 || m->pos >= m->n)
		return 0;
	uint64_t k = m->n - m->pos;
	if ((uint64_t)size < k)
		k = (uint64_t)size;
	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	return (tmsize_t)k;
}

static tmsize_t sl_mem_write(thandle_t h, void *buf, tmsize_t size) {
	(void)h, (void)buf, (void)size;
	return -1; // read only
}

static toff_t sl_mem_seek(thandle_t h, toff_t off, int whence) {
	sl_mem *m = (sl_mem *)h;
	uint64_t base = whence == SEEK_CUR ? m->pos : whence == SEEK_END ? m->n : 0;
	if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END)
		return (toff_t)-1;
	// Past the end is allowed, as for files; reads there return nothing.
	if (off > UINT64_MAX - base)
		return (toff_t)-1;
	m->pos = base + off;
	return m->pos;
}

static int sl_mem_close(thandle_t h) {
	(void)h;
	return 0;
}

static toff_t sl_mem_size(thandle_t h) { return ((sl_mem *)h)->n; }

// Mapping lets libtiff read strips in place instead of copying them; it
// copies before changing bytes (bit reversal), so src stays untouched.
static int sl_mem_map(thandle_t h, void **base, toff_t *size) {
	sl_mem *m = (sl_mem *)h;
	*base = (void *)m->p;
	*size = m->n;
	return 1;
}

static void sl_mem_unmap(thandle_t h, void *base, toff_t size) { (void)h, (void)base, (void)size; }

static void sl_keep(char *dst, int *count, const char *module, const char *fmt, va_list ap) {
	if ((*count)++ > 0)
		return; // the first message is the cause; later ones follow from it
	int k = 0;
	if (module != NULL && *module)
		k = snprintf(dst, SL_TIFF_MSG_LEN, "%s: ", module);
	if (k < 0 || k >= SL_TIFF_MSG_LEN)
		k = 0;
	vsnprintf(dst + k, SL_TIFF_MSG_LEN - k, fmt, ap);
}

// Returning 1 keeps libtiff from also calling the global handlers.
static int sl_on_error(TIFF *tif, void *ud, const char *module, const char *fmt, va_list ap) {
	(void)tif;
	sl_tiff_state *st = (sl_tiff_state *)ud;
	sl_keep(st->err, &st->nerr, module, fmt, ap);
	return 1;
}

static int sl_on_warning(TIFF *tif, void *ud, const char *module, const char *fmt, va_list ap) {
	(void)tif;
	sl_tiff_state *st = (sl_tiff_state *)ud;
	sl_keep(st->warn, &st->nwarn, module, fmt, ap);
	return 1;
}

// The global handlers print to stderr; the few messages that libtiff
// still sends there (not through a handle) are dropped instead.
static void sl_quiet_globals(void) {
	TIFFSetErrorHandler(NULL);
	TIFFSetWarningHandler(NULL);
	TIFFSetErrorHandlerExt(NULL);
	TIFFSetWarningHandlerExt(NULL);
}

static pthread_once_t sl_quiet_once = PTHREAD_ONCE_INIT;

static TIFF *sl_open(sl_mem *m, uint64_t maxalloc, sl_tiff_state *st) {
	pthread_once(&sl_quiet_once, sl_quiet_globals);
	memset(st->err, 0, sizeof st->err);
	memset(st->warn, 0, sizeof st->warn);
	st->nerr = st->nwarn = 0;
	TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
	if (opts == NULL) {
		snprintf(st->err, SL_TIFF_MSG_LEN, "out of memory");
		st->nerr = 1;
		return NULL;
	}
	TIFFOpenOptionsSetMaxSingleMemAlloc(opts, (tmsize_t)maxalloc);
	TIFFOpenOptionsSetErrorHandlerExtR(opts, sl_on_error, st);
	TIFFOpenOptionsSetWarningHandlerExtR(opts, sl_on_warning, st);
	// "O": strip and tile offsets are read on demand, so a header that
	// claims millions of strips costs no array of them.
	TIFF *tif = TIFFClientOpenExt("TIFF", "rO", (thandle_t)m, sl_mem_read, sl_mem_write, sl_mem_seek,
	                              sl_mem_close, sl_mem_size, sl_mem_map, sl_mem_unmap, opts);
	TIFFOpenOptionsFree(opts);
	if (tif == NULL && st->nerr == 0) {
		snprintf(st->err, SL_TIFF_MSG_LEN, "cannot read the TIFF header");
		st->nerr = 1;
	}
	return tif;
}

static uint16_t sl_u16(TIFF *tif, ttag_t tag, uint16_t def) {
	uint16_t v = def;
	if (!TIFFGetFieldDefaulted(tif, tag, &v))
		return def;
	return v;
}

static void sl_info(TIFF *tif, uint64_t n, sl_tiff_info *r) {
	TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &r->width);
	TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &r->height);
	r->spp = sl_u16(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
	r->bps = sl_u16(tif, TIFFTAG_BITSPERSAMPLE, 1);
	r->photometric = -1;
	uint16_t ph;
	if (TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &ph))
		r->photometric = ph;
	r->planar = sl_u16(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
	r->compression = sl_u16(tif, TIFFTAG_COMPRESSION, COMPRESSION_NONE);
	r->sampleformat = sl_u16(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_UINT);
	r->orientation = sl_u16(tif, TIFFTAG_ORIENTATION, ORIENTATION_TOPLEFT);
	uint16_t nextra = 0, *extra = NULL;
	r->extra = -1;
	if (TIFFGetField(tif, TIFFTAG_EXTRASAMPLES, &nextra, &extra) && nextra > 0 && extra != NULL)
		r->extra = extra[0];
	r->nextra = nextra;
	r->tiled = TIFFIsTiled(tif);
	if (r->tiled) {
		TIFFGetField(tif, TIFFTAG_TILEWIDTH, &r->tw);
		TIFFGetField(tif, TIFFTAG_TILELENGTH, &r->th);
		r->strips = TIFFNumberOfTiles(tif);
		if (r->tw > 0 && r->th > 0) {
			uint64_t across = (r->width + (uint64_t)r->tw - 1) / r->tw;
			uint64_t down = (r->height + (uint64_t)r->th - 1) / r->th;
			r->tilepixels = across * r->tw * down * r->th;
		}
	} else {
		r->rps = r->height;
		TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &r->rps);
		r->strips = TIFFNumberOfStrips(tif);
	}
	// The data of every strip or tile must lie within the input. Reading
	// the offsets costs one pass over a table no larger than the input.
	for (uint64_t i = 0; i < r->strips && i < UINT32_MAX; i++) {
		int err = 0;
		uint64_t off = TIFFGetStrileOffsetWithErr(tif, (uint32_t)i, &err);
		uint64_t len = err ? 0 : TIFFGetStrileByteCountWithErr(tif, (uint32_t)i, &err);
		if (err || off > n || len > n - off) {
			r->truncated = 1;
			break;
		}
	}
	r->multipage = !TIFFLastDirectory(tif);
}

sl_tiff_info sl_tiff_header(const unsigned char *src, size_t n, uint64_t maxalloc, sl_tiff_state *st) {
	sl_tiff_info r;
	memset(&r, 0, sizeof r);
	sl_mem m = {src, n, 0};
	sl_cap_begin(st->cap);
	TIFF *tif = sl_open(&m, maxalloc, st);
	if (tif == NULL) {
		r.rc = 1;
	} else {
		sl_info(tif, n, &r);
		TIFFClose(tif);
	}
	st->peak = sl_cap_end(&st->cap_hit);
	return r;
}

static int sl_same(const sl_tiff_info *a, const sl_tiff_info *b) {
	return a->width == b->width && a->height == b->height && a->spp == b->spp && a->bps == b->bps &&
	       a->photometric == b->photometric && a->planar == b->planar && a->compression == b->compression &&
	       a->tiled == b->tiled && a->tw == b->tw && a->th == b->th && a->rps == b->rps && a->strips == b->strips;
}

// Decompression is bounded by the output: every strip or tile decodes into
// a buffer of the size the header gives it (rows × scanline, or the tile
// size), and codecs stop when that buffer is full. So the work is the
// pixel count (limited by the caller), the tile padding (limited by the
// caller) and the input's length, whatever the compression ratio.
static int sl_read(TIFF *tif, const sl_tiff_info *in, unsigned char *dst, size_t dstlen, sl_tiff_state *st) {
	tmsize_t line = TIFFScanlineSize(tif);
	if (line <= 0 || (uint64_t)line * in->height != dstlen) {
		snprintf(st->err, SL_TIFF_MSG_LEN, "rows of %lld bytes do not fill %zu bytes", (long long)line, dstlen);
		return 2;
	}
	if (!in->tiled) {
		uint32_t rps = in->rps == 0 || in->rps > in->height ? in->height : in->rps;
		for (uint32_t row = 0, s = 0; row < in->height; row += rps, s++) {
			uint32_t rows = in->height - row < rps ? in->height - row : rps;
			tmsize_t want = (tmsize_t)rows * line;
			tmsize_t got = TIFFReadEncodedStrip(tif, s, dst + (size_t)row * line, want);
			if (got != want) {
				if (st->nerr == 0)
					snprintf(st->err, SL_TIFF_MSG_LEN, "strip %u gave %lld of %lld bytes", s,
					         (long long)got, (long long)want);
				return 1;
			}
		}
		return 0;
	}
	tmsize_t tsize = TIFFTileSize(tif);
	tmsize_t trow = TIFFTileRowSize(tif);
	if (tsize <= 0 || trow <= 0 || (uint64_t)trow * in->th != (uint64_t)tsize) {
		snprintf(st->err, SL_TIFF_MSG_LEN, "bad tile size");
		return 2;
	}
	unsigned char *tile = malloc(tsize);
	if (tile == NULL) {
		snprintf(st->err, SL_TIFF_MSG_LEN, "out of memory for a tile of %lld bytes", (long long)tsize);
		return 1;
	}
	size_t pix = (size_t)line / in->width; // bytes per pixel
	int rc = 0;
	for (uint32_t y = 0; y < in->height && rc == 0; y += in->th) {
		for (uint32_t x = 0; x < in->width; x += in->tw) {
			uint32_t t = TIFFComputeTile(tif, x, y, 0, 0);
			if (TIFFReadEncodedTile(tif, t, tile, tsize) != tsize) {
				if (st->nerr == 0)
					snprintf(st->err, SL_TIFF_MSG_LEN, "tile %u is short", t);
				rc = 1;
				break;
			}
			uint32_t rows = in->height - y < in->th ? in->height - y : in->th;
			uint32_t cols = in->width - x < in->tw ? in->width - x : in->tw;
			for (uint32_t r = 0; r < rows; r++)
				memcpy(dst + (size_t)(y + r) * line + (size_t)x * pix, tile + (size_t)r * trow, cols * pix);
		}
	}
	free(tile);
	return rc;
}

// sl_tiff_decode_capped is sl_tiff_decode inside its cap.
static int sl_tiff_decode_capped(const unsigned char *src, size_t n, uint64_t maxalloc, const sl_tiff_info *want,
                                 unsigned char *dst, size_t dstlen, sl_tiff_state *st);

int sl_tiff_decode(const unsigned char *src, size_t n, uint64_t maxalloc, const sl_tiff_info *want,
                   unsigned char *dst, size_t dstlen, sl_tiff_state *st) {
	sl_cap_begin(st->cap);
	int rc = sl_tiff_decode_capped(src, n, maxalloc, want, dst, dstlen, st);
	st->peak = sl_cap_end(&st->cap_hit);
	return rc;
}

static int sl_tiff_decode_capped(const unsigned char *src, size_t n, uint64_t maxalloc, const sl_tiff_info *want,
                                 unsigned char *dst, size_t dstlen, sl_tiff_state *st) {
	sl_mem m = {src, n, 0};
	TIFF *tif = sl_open(&m, maxalloc, st);
	if (tif == NULL)
		return 1;
	sl_tiff_info got;
	memset(&got, 0, sizeof got);
	sl_info(tif, n, &got);
	if (!sl_same(&got, want)) {
		TIFFClose(tif);
		snprintf(st->err, SL_TIFF_MSG_LEN, "layout differs from the header read before");
		return 2;
	}
	if (want->photometric == PHOTOMETRIC_PALETTE) {
		uint16_t *r, *g, *b;
		if (!TIFFGetField(tif, TIFFTAG_COLORMAP, &r, &g, &b)) {
			TIFFClose(tif);
			if (st->nerr == 0)
				snprintf(st->err, SL_TIFF_MSG_LEN, "palette image without a colour map");
			return 1;
		}
		// 8-bit palettes only (tiff.go refuses others): 256 entries.
		memcpy(st->cmap, r, 256 * sizeof *r);
		memcpy(st->cmap + 256, g, 256 * sizeof *g);
		memcpy(st->cmap + 512, b, 256 * sizeof *b);
	}
	// As Pillow does: libjpeg converts YCbCr to RGB (and upsamples).
	if (want->compression == COMPRESSION_JPEG && want->photometric == PHOTOMETRIC_YCBCR)
		TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
	int rc = sl_read(tif, want, dst, dstlen, st);
	TIFFClose(tif);
	return rc;
}
