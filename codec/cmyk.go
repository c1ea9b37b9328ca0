package codec

import "github.com/sluice-dev/sluice/internal/fixed"

// cmykTo converts the CMYK samples libjpeg decodes from a 4-component JPEG
// into dst in colour c by rule, so that it agrees exactly with the library
// the rule names. Both read the stored inks with the Adobe convention of
// inversion (Photoshop writes them so):
//
//   - Pillow reads every CMYK JPEG as "CMYK;I", i.e. C' = 255 - C and
//     likewise for M, Y, K; its cmyk2rgb then computes R = nk -
//     MULDIV255(C', nk) with nk = 255 - K', and MULDIV255(a, b) = (t +
//     t>>8) >> 8, t = a*b + 128. Substituting, nk is the stored K and C'
//     is 255 minus the stored C. Grey is the luma of that RGB, as
//     convert("L") computes it.
//   - OpenCV's CMYK-to-BGR computes R = K - ((255 - C) * K >> 8) from the
//     stored samples, and its grey (4899 R + 9617 G + 1868 B + 8192) >> 14.
func cmykTo(dst, src []byte, c Color, rule CMYKRule) {
	// Per pixel through a function value: CMYK JPEGs are rare, and one
	// loop per rule would repeat every layout.
	inkOf, grayOf := ink, Luma
	switch rule {
	case CMYKOpenCV:
		inkOf, grayOf = inkOpenCV, lumaOpenCV
	case cmykHeld:
		inkOf = inkHeld
	}
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
			d[ri], d[1], d[bi] = inkOf(s[0], k), inkOf(s[1], k), inkOf(s[2], k)
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
			d[ri], d[1], d[bi], d[3] = inkOf(s[0], k), inkOf(s[1], k), inkOf(s[2], k), 0xFF
		}
	case Gray:
		for i := 0; i < n; i++ {
			s := src[i*4 : i*4+4 : i*4+4]
			k := uint32(s[3])
			dst[i] = grayOf(inkOf(s[0], k), inkOf(s[1], k), inkOf(s[2], k))
		}
	}
}

// ink is one RGB channel from a stored (inverted) ink sample v and the
// stored K sample nk; see cmykTo.
func ink(v byte, nk uint32) byte {
	return byte(nk - fixed.MulDiv255(255-uint32(v), nk))
}

// inkHeld is ink from the samples as Pillow holds them, 255 minus the
// stored ones: Pillow's cmyk2rgb, CLIP8(nk - MULDIV255(v, nk)) with nk =
// 255 - k (never below 0: MULDIV255(v, nk) <= nk).
func inkHeld(v byte, k uint32) byte { return ink(255-v, 255-k) }

// Luma is ITU-R 601 luma as Pillow's convert("L") computes it from RGB
// (Convert.c's L24, 16-bit fixed point, rounded; grey v, v, v gives v).
func Luma(r, g, b byte) byte {
	return byte((uint32(r)*19595 + uint32(g)*38470 + uint32(b)*7471 + 0x8000) >> 16)
}

// inkOpenCV is ink by OpenCV's rule; see cmykTo.
func inkOpenCV(v byte, k uint32) byte {
	return byte(k - (255-uint32(v))*k>>8)
}

// lumaOpenCV is the grey OpenCV's CMYK-to-grey conversion computes from
// the RGB of inkOpenCV.
func lumaOpenCV(r, g, b byte) byte {
	return byte((uint32(r)*4899 + uint32(g)*9617 + uint32(b)*1868 + 8192) >> 14)
}
