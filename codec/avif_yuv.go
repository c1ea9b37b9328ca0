package codec

import (
	"encoding/binary"
	"math"
)

// YUV to 8-bit RGB as libavif's built-in conversion does it, for what
// libavif does not hand to libyuv (avif_yuvfixed.go): identity and the
// rarer matrices. Samples normalised by
// their range (limited: Y 16..235, chroma 16..240, scaled by the depth;
// full: 0..2^depth-1), the matrix's Kr and Kb (ITU-T H.273), results
// clamped to [0, 1] and rounded to 8 bits. Subsampled chroma is upsampled
// bilinearly, centred: each output sample weighs its own chroma sample
// 9/16, the horizontal and vertical neighbours on its side 3/16 each and
// the diagonal one 1/16 (3/4 and 1/4 for 4:2:2), edges repeated. That is
// libavif's default ("automatic") filter.

// avifMatrix is a colour matrix: Kr and Kb, or identity (G, B, R coded
// as Y, U, V).
type avifMatrix struct {
	kr, kb   float32
	identity bool
	ycgco    bool // YCgCo: U codes Cg, V codes Co
}

// avifMatrixOf maps matrix_coefficients (H.273 table 4) to Kr, Kb.
// Unspecified and reserved values take BT.709's, as libavif does; the
// chroma-derived, ICtCp and YCgCo-R variants are refused.
func avifMatrixOf(mc uint16) (avifMatrix, bool) {
	switch mc {
	case 0:
		return avifMatrix{identity: true}, true
	case 1, 2, 3:
		return avifMatrix{kr: 0.2126, kb: 0.0722}, true
	case 4:
		return avifMatrix{kr: 0.30, kb: 0.11}, true
	case 5, 6:
		return avifMatrix{kr: 0.299, kb: 0.114}, true
	case 7:
		return avifMatrix{kr: 0.212, kb: 0.087}, true
	case 8:
		return avifMatrix{ycgco: true}, true
	case 9, 10:
		return avifMatrix{kr: 0.2627, kb: 0.0593}, true
	}
	return avifMatrix{}, false
}

// avifTables are the normalised values of every sample code.
type avifTables struct {
	y, uv []float32
	depth int
}

func newAVIFTables(depth int, full bool) avifTables {
	max := 1<<depth - 1
	biasY, rangeY, rangeUV := 0.0, float64(max), float64(max)
	if !full {
		biasY, rangeY, rangeUV = float64(int(16)<<(depth-8)), float64(int(219)<<(depth-8)), float64(int(224)<<(depth-8))
	}
	half := float64(int(1) << (depth - 1))
	t := avifTables{y: make([]float32, max+1), uv: make([]float32, max+1), depth: depth}
	for i := range t.y {
		t.y[i] = float32((float64(i) - biasY) / rangeY)
		t.uv[i] = float32((float64(i) - half) / rangeUV)
	}
	return t
}

// avifSamples reads plane rows of 8- or 16-bit samples as ints, masked
// to the depth (dav1d's high bits are zero; the mask guards the tables).
type avifSamples struct {
	b    []byte
	wide bool
	mask int
}

func (s avifSamples) at(i int) int {
	if s.wide {
		return int(binary.LittleEndian.Uint16(s.b[2*i:])) & s.mask
	}
	return int(s.b[i])
}

// yuvToRGBA writes frame f's pixels as RGBA into out (rows of stride
// bytes, starting at its first byte), cw × ch pixels of it (the part of
// a tile inside the image); alpha is left as is.
func yuvToRGBA(out []byte, stride int, f *av1Frame, m avifMatrix, t *avifTables, cw, ch int) {
	mask := 1<<f.bpc - 1
	wide := f.bpc > 8
	cwid := (f.w + f.subX) >> f.subX
	chgt := (f.h + f.subY) >> f.subY
	kg := 1 - m.kr - m.kb
	for y := 0; y < ch; y++ {
		ys := avifSamples{f.row(0, y, f.w), wide, mask}
		var u0, v0, u1, v1 avifSamples
		if !f.mono {
			cy := y >> f.subY
			ay := cy // the vertical neighbour on this sample's side
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
			yv := t.y[ys.at(x)]
			var cb, cr float32
			if !f.mono {
				cx := x >> f.subX
				if f.subX == 0 && f.subY == 0 {
					cb, cr = t.uv[u0.at(cx)], t.uv[v0.at(cx)]
				} else {
					ax := cx
					if f.subX == 1 {
						if x&1 == 0 {
							ax = max(cx-1, 0)
						} else {
							ax = min(cx+1, cwid-1)
						}
					}
					cb = avifBilinear(t.uv, u0.at(cx), u0.at(ax), u1.at(cx), u1.at(ax), f.subX, f.subY)
					cr = avifBilinear(t.uv, v0.at(cx), v0.at(ax), v1.at(cx), v1.at(ax), f.subX, f.subY)
				}
			}
			var r, g, b float32
			switch {
			case f.mono:
				r, g, b = yv, yv, yv
			case m.identity:
				// Y, U and V code G, B and R at Y's scale.
				g, b, r = yv, t.y[u0.at(x)], t.y[v0.at(x)]
			case m.ycgco:
				t := yv - cb
				g, r, b = yv+cb, t+cr, t-cr
			default:
				r = yv + 2*(1-m.kr)*cr
				b = yv + 2*(1-m.kb)*cb
				g = yv - 2*(m.kr*(1-m.kr)*cr+m.kb*(1-m.kb)*cb)/kg
			}
			o[4*x], o[4*x+1], o[4*x+2] = unorm8(r), unorm8(g), unorm8(b)
		}
	}
}

// avifBilinear is the chroma value at a sample from its own chroma sample
// (c), the horizontal (h) and vertical (v) neighbours and the diagonal
// one (d), weighted 9:3:3:1 (4:2:0) or 3:1 (4:2:2).
func avifBilinear(t []float32, c, h, v, d, subX, subY int) float32 {
	if subY == 0 {
		return 0.75*t[c] + 0.25*t[h]
	}
	return 0.5625*t[c] + 0.1875*t[h] + 0.1875*t[v] + 0.0625*t[d]
}

// unorm8 rounds a [0, 1] value (clamped) to 8 bits.
func unorm8(v float32) byte {
	if v <= 0 {
		return 0
	}
	if v >= 1 {
		return 255
	}
	return byte(math.Round(float64(v * 255)))
}

// alphaToRGBA writes frame f's Y plane as the alpha of cw × ch RGBA
// pixels of out: limited range widened to full, deeper samples scaled to
// 8 bits.
func alphaToRGBA(out []byte, stride int, f *av1Frame, cw, ch int) {
	max := float32(int(1)<<f.bpc - 1)
	lo, span := float32(0), max
	if !f.full {
		lo, span = float32(int(16)<<(f.bpc-8)), float32(int(219)<<(f.bpc-8))
	}
	s := avifSamples{wide: f.bpc > 8, mask: 1<<f.bpc - 1}
	for y := 0; y < ch; y++ {
		s.b = f.row(0, y, f.w)
		o := out[y*stride:]
		for x := 0; x < cw; x++ {
			o[4*x+3] = unorm8((float32(s.at(x)) - lo) / span)
		}
	}
}
