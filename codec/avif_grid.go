package codec

import (
	"unsafe"

	"github.com/sluice-dev/sluice/internal/reuse"
)

// avifCanvas assembles a grid's decoded tiles into one YUV image, so that
// the whole image converts to RGB at once: chroma upsampling then blends
// across tile edges, as libavif's conversion of the assembled image does.
type avifCanvas struct {
	buf []byte
	f   av1Frame // the canvas, its planes in buf
	set bool
}

// start lays the canvas out for a w×h image of tiles like t.
func (c *avifCanvas) start(t *av1Frame, w, h, tileW, tileH int) error {
	if (t.subX == 1 && tileW%2 != 0) || (t.subY == 1 && tileH%2 != 0) {
		return formatErr(Unsupported, "AVIF", "AVIF grid of %dx%d tiles with subsampled chroma (odd tile sizes) is not supported", tileW, tileH)
	}
	bps := 1
	if t.bpc > 8 {
		bps = 2
	}
	cw, ch := (w+t.subX)>>t.subX, (h+t.subY)>>t.subY
	ysize, csize := w*h*bps, cw*ch*bps
	if t.mono {
		csize = 0
	}
	c.buf = reuse.Room(c.buf, ysize+2*csize) // at most 6 bytes a pixel of the image
	c.f = *t
	c.f.w, c.f.h, c.f.ys, c.f.cs = w, h, w*bps, cw*bps
	c.f.y = unsafe.Pointer(&c.buf[0])
	if !t.mono {
		c.f.u, c.f.v = unsafe.Pointer(&c.buf[ysize]), unsafe.Pointer(&c.buf[ysize+csize])
	}
	c.set = true
	return nil
}

// place copies tile t's planes to (x0, y0), cropped to the canvas. Every
// tile must be coded alike (depth, layout, range).
func (c *avifCanvas) place(t *av1Frame, x0, y0 int) error {
	if t.bpc != c.f.bpc || t.subX != c.f.subX || t.subY != c.f.subY || t.mono != c.f.mono || t.full != c.f.full {
		return formatErr(Corrupt, "AVIF", "AVIF grid tiles differ in depth, chroma layout or range")
	}
	planes := 3
	if t.mono {
		planes = 1
	}
	for p := 0; p < planes; p++ {
		sx, sy := 0, 0
		if p > 0 {
			sx, sy = t.subX, t.subY
		}
		tw, th := (t.w+sx)>>sx, (t.h+sy)>>sy
		cw, ch := (c.f.w+sx)>>sx, (c.f.h+sy)>>sy
		px, py := x0>>sx, y0>>sy
		n, rows := min(tw, cw-px), min(th, ch-py)
		bps := 1
		if t.bpc > 8 {
			bps = 2
		}
		for y := 0; y < rows; y++ {
			dst := c.f.row(p, py+y, cw)[px*bps:]
			copy(dst[:n*bps], t.row(p, y, tw))
		}
	}
	return nil
}
