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
	// The output order is chosen once, not per pixel: this runs over
	// every pixel of every image with alpha.
	r, b := 0, 2
	if c == BGR {
		r, b = 2, 0
	}
	n := len(src) / 4
	for i := 0; i < n; i++ {
		px := over(src[4*i:4*i+4:4*i+4], bg)
		if c == Gray {
			dst[i] = Luma(px[0], px[1], px[2])
			continue
		}
		d := dst[3*i : 3*i+3 : 3*i+3]
		d[r], d[1], d[b] = px[0], px[1], px[2]
	}
}

// over is one RGBA pixel p composited onto the opaque bg, as above.
func over(p []byte, bg [3]byte) [3]byte {
	sa := uint32(p[3])
	if sa == 0 {
		return bg
	}
	c1 := sa << 7
	c2 := 255<<7 - c1
	var px [3]byte
	for k := range px {
		t := uint32(p[k])*c1 + uint32(bg[k])*c2 + 0x80<<7
		px[k] = byte((((t >> 8) + t) >> 8) >> 7)
	}
	return px
}
