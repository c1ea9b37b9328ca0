package codec

// cmykTo converts the CMYK samples libjpeg decodes from a 4-component JPEG
// into dst in colour c, the way Pillow's Image.open(f).convert("RGB") does,
// so that both agree exactly:
//
//   - Pillow reads every CMYK JPEG as "CMYK;I", assuming the Adobe
//     convention of inverted inks (Photoshop writes them so), i.e.
//     C' = 255 - C and likewise for M, Y, K;
//   - its cmyk2rgb then computes R = nk - MULDIV255(C', nk) with
//     nk = 255 - K', and MULDIV255(a, b) = (t + t>>8) >> 8, t = a*b + 128.
//
// Substituting, nk is the stored K and C' is 255 minus the stored C. Grey
// output is the luma of that RGB, as convert("L") computes it.
func cmykTo(dst, src []byte, c Color) {
	n := len(src) / 4
	switch c {
	case RGB, BGR:
		ri, bi := 0, 2
		if c == BGR {
			ri, bi = 2, 0
		}
		for i := 0; i < n; i++ {
			s := src[i*4 : i*4+4 : i*4+4]
			d := dst[i*3 : i*3+3 : i*3+3]
			k := uint32(s[3])
			d[ri], d[1], d[bi] = ink(s[0], k), ink(s[1], k), ink(s[2], k)
		}
	case RGBA, BGRA:
		ri, bi := 0, 2
		if c == BGRA {
			ri, bi = 2, 0
		}
		for i := 0; i < n; i++ {
			s := src[i*4 : i*4+4 : i*4+4]
			d := dst[i*4 : i*4+4 : i*4+4]
			k := uint32(s[3])
			d[ri], d[1], d[bi], d[3] = ink(s[0], k), ink(s[1], k), ink(s[2], k), 0xFF
		}
	case Gray:
		for i := 0; i < n; i++ {
			s := src[i*4 : i*4+4 : i*4+4]
			k := uint32(s[3])
			dst[i] = luma(ink(s[0], k), ink(s[1], k), ink(s[2], k))
		}
	}
}

// ink is one RGB channel from a stored (inverted) ink sample v and the
// stored K sample nk; see cmykTo.
func ink(v byte, nk uint32) byte {
	t := (255-uint32(v))*nk + 128
	return byte(nk - (t+t>>8)>>8)
}

// luma is ITU-R 601 luma as Pillow's convert("L") computes it from RGB.
func luma(r, g, b byte) byte {
	return byte((uint32(r)*19595 + uint32(g)*38470 + uint32(b)*7471 + 0x8000) >> 16)
}
