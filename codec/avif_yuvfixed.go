package codec

import "encoding/binary"

// YUV to 8-bit RGB in the fixed-point arithmetic libavif 1.x hands BT.601,
// BT.709 and BT.2020 images to (libyuv's, which Pillow's wheel bundles):
// chroma is upsampled to full size in integers, rounded (bilinear: 9:3:3:1
// weights for 4:2:0, 3:1 for 4:2:2), then each pixel converts with 6-bit
// fractional coefficients and truncates. Constants are libyuv's
// (coefficients × 64, YG the luma scale × 64 × 65536 / 257). Deeper
// samples take one of the routes below, which libavif picks by depth,
// alpha and layout (each measured bit-exact against Pillow 13).

// yuvFixed is one matrix and range's coefficients.
type yuvFixed struct {
	yg, yb, ub, ug, vg, vr int32
}

// yuvFixedOf is the libyuv coefficient set libavif picks for
// matrix_coefficients mc and the range, or ok false where libavif
// converts in floating point instead (identity and the rarer matrices).
// Unspecified takes BT.601's there.
func yuvFixedOf(mc uint16, full bool) (c yuvFixed, ok bool) {
	switch {
	case (mc == 5 || mc == 6 || mc == 2) && full:
		return yuvFixed{16320, 32, 113, 22, 46, 90}, true
	case mc == 5 || mc == 6 || mc == 2:
		return yuvFixed{18997, -1160, 128, 25, 52, 102}, true
	case mc == 1 && full:
		return yuvFixed{16320, 32, 119, 12, 30, 101}, true
	case mc == 1:
		return yuvFixed{18997, -1160, 128, 14, 34, 115}, true
	case mc == 9 && full:
		return yuvFixed{16320, 32, 120, 11, 37, 94}, true
	case mc == 9:
		return yuvFixed{19003, -1160, 128, 12, 42, 107}, true
	}
	return yuvFixed{}, false
}

// yuvRoute is how samples deeper than 8 bits reach the conversion.
type yuvRoute uint8

const (
	// yuvShift8: every plane is first cut to 8 bits (truncating, libyuv's
	// Convert16To8Plane), then converts as 8-bit. 8-bit images, and
	// most deeper ones.
	yuvShift8 yuvRoute = iota
	// yuvWide: luma widened to 16 bits by repeating its high bits,
	// chroma upsampled at full depth, then cut to 8 bits (libyuv's
	// 10- and 12-bit row functions).
	yuvWide
	// yuvWideNearest: yuvWide with chroma repeated, not interpolated.
	yuvWideNearest
)

// libyuvPath is the route libavif takes for frame f: 10-bit images with
// alpha or without chroma go through libyuv's 10-bit functions, 12-bit
// 4:2:0 with alpha through its 12-bit one, which does not interpolate.
func libyuvPath(f *av1Frame, alpha bool) yuvRoute {
	switch {
	case f.bpc == 10 && (alpha || f.mono):
		return yuvWide
	case f.bpc == 12 && alpha && f.subY == 1:
		return yuvWideNearest
	}
	return yuvShift8
}

func clampShift6(v int32) byte {
	v >>= 6
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return byte(v)
}

// load reads n samples into dst, shifted right by cut.
func (s avifSamples) load(dst []int32, n, cut int) {
	dst = dst[:n]
	if !s.wide {
		for i := range dst {
			dst[i] = int32(s.b[i])
		}
		return
	}
	for i := range dst {
		dst[i] = int32(int(binary.LittleEndian.Uint16(s.b[2*i:]))&s.mask) >> cut
	}
}

// yuvRows is yuvToRGBAFixed's per-row scratch: a luma row, two rows of
// each chroma plane, and each column's horizontal chroma neighbour.
type yuvRows struct {
	y, u0, u1, v0, v1 []int32
	ax                []int
}

// yuvToRGBAFixed is yuvToRGBA in libyuv's arithmetic, by route r.
func yuvToRGBAFixed(out []byte, stride int, f *av1Frame, k yuvFixed, cw, ch int, r yuvRoute) {
	mask, wide := 1<<f.bpc-1, f.bpc > 8
	// cut shifts samples to 8 bits as they are read (yuvShift8), or
	// after luma widening and chroma upsampling (the wide routes).
	cut, late := f.bpc-8, 0
	if r != yuvShift8 {
		cut, late = 0, f.bpc-8
	}
	cwid := (f.w + f.subX) >> f.subX
	chgt := (f.h + f.subY) >> f.subY
	b := yuvRows{y: make([]int32, cw), u0: make([]int32, cwid), u1: make([]int32, cwid),
		v0: make([]int32, cwid), v1: make([]int32, cwid), ax: make([]int, cw)}
	for x := range b.ax {
		cx := x >> f.subX
		ax := cx // the horizontal neighbour on this column's side
		if f.subX == 1 && r != yuvWideNearest {
			// libyuv repeats the edge chroma at both ends, and takes an
			// odd width's last column from its own sample alone.
			if x&1 == 0 {
				if x != f.w-1 {
					ax = max(cx-1, 0)
				}
			} else {
				ax = min(cx+1, cwid-1)
			}
		}
		b.ax[x] = ax
	}
	for y := 0; y < ch; y++ {
		avifSamples{f.row(0, y, f.w), wide, mask}.load(b.y, cw, cut)
		o := out[y*stride : y*stride+4*cw]
		if f.mono {
			for x, yv := range b.y {
				g := clampShift6(yuvLuma(yv, late, k))
				o[4*x], o[4*x+1], o[4*x+2] = g, g, g
			}
			continue
		}
		cy := y >> f.subY
		ay := cy // the vertical neighbour on this row's side
		if f.subY == 1 && r != yuvWideNearest {
			if y&1 == 0 {
				ay = max(cy-1, 0)
			} else {
				ay = min(cy+1, chgt-1)
			}
		}
		avifSamples{f.row(1, cy, cwid), wide, mask}.load(b.u0, cwid, cut)
		avifSamples{f.row(1, ay, cwid), wide, mask}.load(b.u1, cwid, cut)
		avifSamples{f.row(2, cy, cwid), wide, mask}.load(b.v0, cwid, cut)
		avifSamples{f.row(2, ay, cwid), wide, mask}.load(b.v1, cwid, cut)
		for x, yv := range b.y {
			y1 := yuvLuma(yv, late, k)
			cx, ax := x>>f.subX, b.ax[x]
			// Where the neighbours are the sample itself (4:2:2 rows,
			// 4:4:4, edges) this is libyuv's 3:1 filter or a copy.
			u := (9*b.u0[cx] + 3*b.u0[ax] + 3*b.u1[cx] + b.u1[ax] + 8) >> 4
			v := (9*b.v0[cx] + 3*b.v0[ax] + 3*b.v1[cx] + b.v1[ax] + 8) >> 4
			ui, vi := min(u>>late, 255)-128, min(v>>late, 255)-128
			o[4*x] = clampShift6(y1 + vi*k.vr)
			o[4*x+1] = clampShift6(y1 - (ui*k.ug + vi*k.vg))
			o[4*x+2] = clampShift6(y1 + ui*k.ub)
		}
	}
}

// yuvLuma is a luma sample's scaled contribution: widened to 16 bits
// (8-bit samples by repeating the byte, deeper ones their high bits),
// times YG, plus the bias.
func yuvLuma(yv int32, late int, k yuvFixed) int32 {
	var y32 uint32
	switch late {
	case 0:
		y32 = uint32(yv) * 0x0101
	case 2:
		y32 = uint32(yv<<6 | yv>>4)
	default:
		y32 = uint32(yv<<4 | yv>>8)
	}
	return int32(y32*uint32(k.yg)>>16) + k.yb
}
