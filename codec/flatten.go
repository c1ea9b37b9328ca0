package codec

// flatten composites the RGBA pixels of src onto the opaque colour bg and
// writes them to dst in colour c (RGB, BGR or Gray), bit-exact with
// Pillow's Image.alpha_composite(Image.new("RGBA", size, bg), im) followed
// by convert("RGB") (and convert("L") for Gray, whose luma ignores alpha).
//
// Pillow's ImagingAlphaComposite works in integers with 7 extra bits: for
// a source alpha sa over a destination alpha da,
//
//	outa255 = sa*255 + da*(255-sa)
//	coef1   = sa*255*255*128 / outa255,  coef2 = 255*128 - coef1
//	t       = s*coef1 + d*coef2 + (0x80 << 7)
//	out     = (((t >> 8) + t) >> 8) >> 7          // t / 255, then the 7 bits off
//
// and a pixel with sa = 0 is the destination pixel itself. The background
// is opaque (da = 255), so outa255 = 65025 and coef1 = sa*128 exactly: no
// division is left.
func flatten(dst, src []byte, bg [3]byte, c Color) {
	n := len(src) / 4
	var px [3]byte
	for i := 0; i < n; i++ {
		p := src[4*i : 4*i+4 : 4*i+4]
		switch sa := uint32(p[3]); sa {
		case 0:
			px = bg
		default:
			c1 := sa << 7
			c2 := 255<<7 - c1
			for k := range px {
				t := uint32(p[k])*c1 + uint32(bg[k])*c2 + 0x80<<7
				px[k] = byte((((t >> 8) + t) >> 8) >> 7)
			}
		}
		switch c {
		case BGR:
			dst[3*i], dst[3*i+1], dst[3*i+2] = px[2], px[1], px[0]
		case Gray:
			dst[i] = luma(px[0], px[1], px[2])
		default:
			dst[3*i], dst[3*i+1], dst[3*i+2] = px[0], px[1], px[2]
		}
	}
}
