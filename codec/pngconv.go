package codec

import (
	"image"
	"image/color"
)

// convertImage writes img into dst as packed pixels of colour c, matching
// Pillow's Image.convert: 16-bit samples keep their high byte, alpha is
// dropped for RGB, BGR and GRAY (not composited) and kept for RGBA and
// BGRA, grey from colour is ITU-R 601 luma, and grey to colour replicates.
//
// Each concrete type image/png returns has its own row loop, so there is no
// interface call per pixel; rows go through row, a scratch of 4*width
// bytes of non-premultiplied RGBA, except for grey sources.
func convertImage(dst []byte, img image.Image, c Color, row []byte) {
	b := img.Bounds()
	w, h, ch := b.Dx(), b.Dy(), c.Channels()
	out := func(y int) []byte { return dst[y*w*ch : (y+1)*w*ch] }
	switch m := img.(type) {
	case *image.Gray:
		for y := 0; y < h; y++ {
			packGray(out(y), m.Pix[y*m.Stride:y*m.Stride+w], c)
		}
		return
	case *image.Gray16:
		g := row[:w]
		for y := 0; y < h; y++ {
			p := m.Pix[y*m.Stride:]
			for x := range g {
				g[x] = p[2*x] // high byte of big-endian samples
			}
			packGray(out(y), g, c)
		}
		return
	case *image.Paletted:
		var lut [256][4]byte
		paletteLUT(&lut, m.Palette)
		row = row[:4*w]
		for y := 0; y < h; y++ {
			p := m.Pix[y*m.Stride : y*m.Stride+w]
			for x, i := range p {
				copy(row[4*x:4*x+4], lut[i][:])
			}
			packRGBA(out(y), row, c)
		}
		return
	}
	row = row[:4*w]
	for y := 0; y < h; y++ {
		rgbaRow(row, img, b.Min.X, b.Min.Y+y)
		packRGBA(out(y), row, c)
	}
}

// rgbaRow fills row with image row y as 8-bit non-premultiplied RGBA.
func rgbaRow(row []byte, img image.Image, x0, y int) {
	w := len(row) / 4
	switch m := img.(type) {
	case *image.NRGBA:
		copy(row, m.Pix[m.PixOffset(x0, y):])
	case *image.RGBA:
		// Premultiplied; image/png only makes opaque ones, but be exact.
		copy(row, m.Pix[m.PixOffset(x0, y):])
		for x := 0; x < w; x++ {
			if a := row[4*x+3]; a != 0xFF {
				p := row[4*x : 4*x+3 : 4*x+3]
				a16 := uint32(a) * 0x101
				for i := range p {
					p[i] = unpremul(uint32(p[i])*0x101, a16)
				}
			}
		}
	case *image.NRGBA64:
		p := m.Pix[m.PixOffset(x0, y):]
		for x := 0; x < 4*w; x++ {
			row[x] = p[2*x]
		}
	case *image.RGBA64:
		p := m.Pix[m.PixOffset(x0, y):]
		for x := 0; x < w; x++ {
			q := p[8*x : 8*x+8 : 8*x+8]
			a16 := uint32(q[6])<<8 | uint32(q[7])
			for i := 0; i < 3; i++ {
				v := uint32(q[2*i])<<8 | uint32(q[2*i+1])
				if a16 == 0xFFFF {
					row[4*x+i] = q[2*i]
				} else {
					row[4*x+i] = unpremul(v, a16)
				}
			}
			row[4*x+3] = q[6]
		}
	default:
		// Not made by image/png; correct but slow.
		for x := 0; x < w; x++ {
			c := color.NRGBAModel.Convert(img.At(x0+x, y)).(color.NRGBA)
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, c.A
		}
	}
}

// unpremul undoes premultiplication of a 16-bit sample by a 16-bit alpha
// as color.NRGBAModel does, keeping the high byte.
func unpremul(v, a uint32) byte {
	if a == 0 {
		return 0
	}
	return byte((v * 0xFFFF / a) >> 8)
}

// paletteLUT fills lut with the palette's non-premultiplied RGBA; indices
// past the palette are opaque black, as image/png pads them.
func paletteLUT(lut *[256][4]byte, pal color.Palette) {
	for i := range lut {
		n := color.NRGBA{A: 0xFF}
		if i < len(pal) {
			n = color.NRGBAModel.Convert(pal[i]).(color.NRGBA)
		}
		lut[i] = [4]byte{n.R, n.G, n.B, n.A}
	}
}

// packRGBA writes one row of RGBA pixels to dst in colour c.
func packRGBA(dst, row []byte, c Color) {
	n := len(row) / 4
	switch c {
	case RGB:
		for x := 0; x < n; x++ {
			dst[3*x], dst[3*x+1], dst[3*x+2] = row[4*x], row[4*x+1], row[4*x+2]
		}
	case BGR:
		for x := 0; x < n; x++ {
			dst[3*x], dst[3*x+1], dst[3*x+2] = row[4*x+2], row[4*x+1], row[4*x]
		}
	case Gray:
		for x := 0; x < n; x++ {
			dst[x] = Luma(row[4*x], row[4*x+1], row[4*x+2])
		}
	case RGBA:
		copy(dst, row)
	case BGRA:
		for x := 0; x < n; x++ {
			dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = row[4*x+2], row[4*x+1], row[4*x], row[4*x+3]
		}
	}
}

// packGray writes one row of grey samples to dst in colour c.
func packGray(dst, g []byte, c Color) {
	switch c {
	case Gray:
		copy(dst, g)
	case RGB, BGR:
		for x, v := range g {
			dst[3*x], dst[3*x+1], dst[3*x+2] = v, v, v
		}
	case RGBA, BGRA:
		for x, v := range g {
			dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = v, v, v, 0xFF
		}
	}
}
