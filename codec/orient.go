package codec

import "github.com/sluice-dev/sluice/internal/reuse"

// OrientedDims is the size of an h×w image after EXIF orientation o:
// orientations 5 to 8 transpose.
func OrientedDims(h, w, o int) (oh, ow int) {
	if o >= 5 && o <= 8 {
		return w, h
	}
	return h, w
}

// orientTile is the side of the square blocks that transposing
// orientations copy, so that both the rows read and the rows written stay
// in cache.
const orientTile = 32

// Orient writes src, an h×w×c image as stored, into dst so that EXIF
// orientation o (1 to 8) becomes upright:
//
//	1 as is        2 mirror left-right   3 rotate 180     4 mirror top-bottom
//	5 transpose    6 rotate 90° cw       7 transverse     8 rotate 90° ccw
//
// (the stored image must be rotated by that much to be shown upright, as
// Pillow's ImageOps.exif_transpose does). dst must hold h*w*c bytes and not
// overlap src; other values of o copy.
func Orient(dst, src []byte, h, w, c, o int) {
	n := h * w * c
	dst, src = dst[:n], src[:n]
	if o < 2 || o > 8 {
		copy(dst, src)
		return
	}
	// Source pixel (y, x) goes to destination pixel base + y*dy + x*dx.
	var base, dy, dx int
	switch o {
	case 2:
		base, dy, dx = w-1, w, -1
	case 3:
		base, dy, dx = h*w-1, -w, -1
	case 4:
		base, dy, dx = (h-1)*w, -w, 1
	case 5:
		base, dy, dx = 0, 1, h
	case 6:
		base, dy, dx = h-1, -1, h
	case 7:
		base, dy, dx = w*h-1, -1, -h
	case 8:
		base, dy, dx = (w-1)*h, 1, -h
	}
	for y0 := 0; y0 < h; y0 += orientTile {
		y1 := min(y0+orientTile, h)
		for x0 := 0; x0 < w; x0 += orientTile {
			x1 := min(x0+orientTile, w)
			for y := y0; y < y1; y++ {
				copyRun(dst, src[(y*w+x0)*c:(y*w+x1)*c], base+y*dy+x0*dx, dx, c)
			}
		}
	}
}

// copyRun copies the pixels of row, c bytes each, to destination pixels
// d, d+dx, d+2dx... The cases for 1, 3 and 4 channels keep the inner loops
// free of a per-byte loop.
func copyRun(dst, row []byte, d, dx, c int) {
	switch c {
	case 1:
		for _, v := range row {
			dst[d] = v
			d += dx
		}
	case 3:
		for i := 0; i+2 < len(row); i += 3 {
			p := dst[d*3 : d*3+3 : d*3+3]
			p[0], p[1], p[2] = row[i], row[i+1], row[i+2]
			d += dx
		}
	case 4:
		for i := 0; i+3 < len(row); i += 4 {
			p := dst[d*4 : d*4+4 : d*4+4]
			p[0], p[1], p[2], p[3] = row[i], row[i+1], row[i+2], row[i+3]
			d += dx
		}
	default:
		for i := 0; i+c <= len(row); i += c {
			copy(dst[d*c:d*c+c], row[i:i+c])
			d += dx
		}
	}
}

// storedTarget is where a decoder writes an image as stored (n bytes), and
// the orientation to apply after (see Orient): dst itself and 1 when o keeps
// the image as stored, else *scratch, grown to n, and h's orientation.
func storedTarget(dst []byte, scratch *[]byte, n int, h Header, o Options) ([]byte, int) {
	if !o.Orient || h.Orientation == 1 {
		return dst, 1
	}
	*scratch = reuse.Room(*scratch, n)
	return *scratch, h.Orientation
}
