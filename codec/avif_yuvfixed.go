package codec

// YUV to 8-bit RGB in the fixed-point arithmetic libavif 1.x hands BT.601,
// BT.709 and BT.2020 images to (libyuv's, which Pillow's wheel bundles):
// chroma is upsampled bilinearly to full size in integers, rounded
// (9:3:3:1 weights for 4:2:0, 3:1 for 4:2:2), then each pixel converts
// with 6-bit fractional coefficients and truncates. 10- and 12-bit chroma
// is cut to 8 bits first, luma widened to 16. Constants are libyuv's
// (coefficients × 64, YG the luma scale × 64 × 65536 / 257).

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

// luma16 widens a sample of depth bits to 16 (replicating high bits).
func luma16(v, depth int) uint32 {
	switch depth {
	case 10:
		return uint32(v<<6 | v>>4)
	case 12:
		return uint32(v<<4 | v>>8)
	}
	return uint32(v * 0x0101)
}

// chroma8 cuts a chroma sample of depth bits to 8.
func chroma8(v, depth int) int32 {
	return int32(min(v>>(depth-8), 255))
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

// yuvToRGBAFixed is yuvToRGBA in libyuv's arithmetic.
func yuvToRGBAFixed(out []byte, stride int, f *av1Frame, k yuvFixed, cw, ch int) {
	mask := 1<<f.bpc - 1
	wide := f.bpc > 8
	cwid := (f.w + f.subX) >> f.subX
	chgt := (f.h + f.subY) >> f.subY
	for y := 0; y < ch; y++ {
		ys := avifSamples{f.row(0, y, f.w), wide, mask}
		var u0, v0, u1, v1 avifSamples
		if !f.mono {
			cy := y >> f.subY
			ay := cy
			if f.subY == 1 {
				if y&1 == 0 {
					ay = max(cy-1, 0)
				} else {
					ay = min(cy+1, chgt-1)
				}
			}
			u0, v0 = avifSamples{f.row(1, cy, cwid), wide, mask}, avifSamples{f.row(2, cy, cwid), wide, mask}
			u1, v1 = avifSamples{f.row(1, ay, cwid), wide, mask}, avifSamples{f.row(2, ay, cwid), wide, mask}
		}
		o := out[y*stride : y*stride+4*cw]
		for x := 0; x < cw; x++ {
			y1 := int32(luma16(ys.at(x), f.bpc)*uint32(k.yg)>>16) + k.yb
			if f.mono {
				g := clampShift6(y1)
				o[4*x], o[4*x+1], o[4*x+2] = g, g, g
				continue
			}
			cx := x >> f.subX
			ax := cx
			if f.subX == 1 {
				// libyuv repeats the edge chroma at both ends, and takes
				// an odd width's last column from its own sample alone.
				if x&1 == 0 {
					if x != f.w-1 {
						ax = max(cx-1, 0)
					}
				} else {
					ax = min(cx+1, cwid-1)
				}
			}
			var u, v int
			switch {
			case f.subY == 1:
				u = (9*u0.at(cx) + 3*u0.at(ax) + 3*u1.at(cx) + u1.at(ax) + 8) >> 4
				v = (9*v0.at(cx) + 3*v0.at(ax) + 3*v1.at(cx) + v1.at(ax) + 8) >> 4
			case f.subX == 1:
				u = (3*u0.at(cx) + u0.at(ax) + 2) >> 2
				v = (3*v0.at(cx) + v0.at(ax) + 2) >> 2
			default:
				u, v = u0.at(cx), v0.at(cx)
			}
			ui, vi := chroma8(u, f.bpc)-128, chroma8(v, f.bpc)-128
			o[4*x] = clampShift6(y1 + vi*k.vr)
			o[4*x+1] = clampShift6(y1 - (ui*k.ug + vi*k.vg))
			o[4*x+2] = clampShift6(y1 + ui*k.ub)
		}
	}
}
