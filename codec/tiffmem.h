// The C side of the TIFF decoder (tiffmem.c): libtiff over an in-memory
// buffer, its messages kept per handle. Every call opens and closes its own
// handle, so that no pointer to Go memory outlives the call.
#ifndef SLUICE_TIFFMEM_H
#define SLUICE_TIFFMEM_H

#include <stddef.h>
#include <stdint.h>

#include "hidden.h"

enum { SL_TIFF_MSG_LEN = 256 };

// What one call leaves for Go: the first error and warning texts, and an
// 8-bit palette's colour map (red, green, blue, 256 entries each).
typedef struct {
	char err[SL_TIFF_MSG_LEN];
	char warn[SL_TIFF_MSG_LEN];
	int nerr, nwarn;
	uint16_t cmap[3 * 256];
	// cap bounds the bytes libtiff may hold at once during one call of
	// sl_tiff_header or sl_tiff_decode (0: no bound; capalloc.h); cap_hit
	// says an allocation failed there, peak is the most the call held.
	int64_t cap, peak;
	int cap_hit;
} sl_tiff_state;

// The first directory's layout, as the header gives it.
typedef struct {
	int rc; // 0: read; 1: libtiff failed (see err)
	uint32_t width, height;
	int spp, bps, photometric, planar, compression, sampleformat;
	int extra;  // the first ExtraSamples value; -1 when there is none
	int nextra; // how many ExtraSamples there are
	int orientation;
	int tiled;
	uint32_t tw, th, rps;
	uint64_t strips;     // strips or tiles
	uint64_t tilepixels; // tiles: the image padded to whole tiles
	int truncated;       // a strip or tile lies past the end of the data
	int multipage;
} sl_tiff_info;

SL_HIDDEN sl_tiff_info sl_tiff_header(const unsigned char *src, size_t n, uint64_t maxalloc, sl_tiff_state *st);

// sl_tiff_decode reads the first image into dst as rows of width samples ×
// spp, each sample bps/8 bytes in host byte order; YCbCr JPEG comes out as
// 8-bit RGB. want is what the caller expects (its layout from
// sl_tiff_header); it fails when the file now says otherwise.
// Returns 0 on success, 1 when libtiff failed, 2 on a layout mismatch.
SL_HIDDEN int sl_tiff_decode(const unsigned char *src, size_t n, uint64_t maxalloc, const sl_tiff_info *want,
                   unsigned char *dst, size_t dstlen, sl_tiff_state *st);

#endif
