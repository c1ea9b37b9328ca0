package codec

import (
	"image"
	"image/color"
	"testing"
)

// checkAllColors decodes src in every colour and checks each pixel against want,
// given as non-premultiplied RGBA.
func checkAllColors(t *testing.T, src []byte, w, h int, want func(x, y int) color.NRGBA) {
	t.Helper()
	for _, c := range []Color{RGB, BGR, Gray, RGBA, BGRA} {
		img := mustDecode(t, src, Options{Color: c})
		if img.Width != w || img.Height != h || len(img.Pix) != w*h*c.Channels() {
			t.Fatalf("%v: got %dx%d with %d bytes, want %dx%d", c, img.Width, img.Height, len(img.Pix), w, h)
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				n := want(x, y)
				var exp []byte
				switch c {
				case RGB:
					exp = []byte{n.R, n.G, n.B}
				case BGR:
					exp = []byte{n.B, n.G, n.R}
				case Gray:
					// Pillow's convert("L"), written out.
					exp = []byte{byte((int(n.R)*19595 + int(n.G)*38470 + int(n.B)*7471 + 0x8000) >> 16)}
				case RGBA:
					exp = []byte{n.R, n.G, n.B, n.A}
				case BGRA:
					exp = []byte{n.B, n.G, n.R, n.A}
				}
				i := (y*w + x) * len(exp)
				if got := img.Pix[i : i+len(exp)]; string(got) != string(exp) {
					t.Fatalf("%v (%d,%d): got %v, want %v", c, x, y, got, exp)
				}
			}
		}
	}
}

func TestDecodePNGGray8(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 13, 7))
	for i := range g.Pix {
		g.Pix[i] = uint8(i * 3)
	}
	checkAllColors(t, encodePNG(t, g), 13, 7, func(x, y int) color.NRGBA {
		v := g.GrayAt(x, y).Y
		return color.NRGBA{v, v, v, 255}
	})
}

func TestDecodePNGGray16(t *testing.T) {
	g := image.NewGray16(image.Rect(0, 0, 9, 5))
	for y := 0; y < 5; y++ {
		for x := 0; x < 9; x++ {
			g.SetGray16(x, y, color.Gray16{uint16(x*7000 + y*901)})
		}
	}
	checkAllColors(t, encodePNG(t, g), 9, 5, func(x, y int) color.NRGBA {
		v := uint8(g.Gray16At(x, y).Y >> 8) // the high byte, not rounding
		return color.NRGBA{v, v, v, 255}
	})
}

func TestDecodePNGPaletteTRNS(t *testing.T) {
	pal := color.Palette{
		color.NRGBA{255, 0, 0, 255},
		color.NRGBA{0, 200, 0, 128},
		color.NRGBA{10, 20, 250, 0},
		color.NRGBA{90, 90, 90, 255},
	}
	p := image.NewPaletted(image.Rect(0, 0, 11, 6), pal)
	for i := range p.Pix {
		p.Pix[i] = uint8(i % len(pal))
	}
	checkAllColors(t, encodePNG(t, p), 11, 6, func(x, y int) color.NRGBA {
		return pal[p.ColorIndexAt(x, y)].(color.NRGBA) // alpha from tRNS
	})
}

func TestDecodePNGRGBA(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 10, 8))
	for y := 0; y < 8; y++ {
		for x := 0; x < 10; x++ {
			m.SetNRGBA(x, y, color.NRGBA{uint8(x * 25), uint8(y * 30), 77, uint8(x*y*3 + 1)})
		}
	}
	// RGB drops alpha without compositing; RGBA keeps it.
	checkAllColors(t, encodePNG(t, m), 10, 8, func(x, y int) color.NRGBA { return m.NRGBAAt(x, y) })
}

func TestDecodePNGRGB16(t *testing.T) {
	m := image.NewNRGBA64(image.Rect(0, 0, 7, 9))
	for y := 0; y < 9; y++ {
		for x := 0; x < 7; x++ {
			m.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 9000), uint16(y*7000 + 255), 0xABCD, 0xFFFF})
		}
	}
	checkAllColors(t, encodePNG(t, m), 7, 9, func(x, y int) color.NRGBA {
		c := m.NRGBA64At(x, y)
		return color.NRGBA{uint8(c.R >> 8), uint8(c.G >> 8), uint8(c.B >> 8), uint8(c.A >> 8)}
	})
}

func TestDecodePNGRGBA16(t *testing.T) {
	m := image.NewNRGBA64(image.Rect(0, 0, 6, 4))
	for y := 0; y < 4; y++ {
		for x := 0; x < 6; x++ {
			m.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 9000), 0x1234, uint16(y * 20000), uint16(x*10000 + 1)})
		}
	}
	checkAllColors(t, encodePNG(t, m), 6, 4, func(x, y int) color.NRGBA {
		c := m.NRGBA64At(x, y)
		return color.NRGBA{uint8(c.R >> 8), uint8(c.G >> 8), uint8(c.B >> 8), uint8(c.A >> 8)}
	})
}

func TestDecodePNGInterlaced(t *testing.T) {
	// 13×11 leaves some Adam7 passes partial.
	m := image.NewNRGBA(image.Rect(0, 0, 13, 11))
	for y := 0; y < 11; y++ {
		for x := 0; x < 13; x++ {
			m.SetNRGBA(x, y, color.NRGBA{uint8(x * 19), uint8(y * 23), uint8(x ^ y), uint8(255 - x)})
		}
	}
	checkAllColors(t, interlacedPNG(t, m), 13, 11, func(x, y int) color.NRGBA { return m.NRGBAAt(x, y) })
}

func TestDecodePNGTruncated(t *testing.T) {
	src := encodePNG(t, gradientImage(40, 30))
	for _, n := range []int{8, 20, 33, len(src) / 2, len(src) - 12, len(src) - 1} {
		_, err := Decode(src[:n], Options{})
		if causeOf(err) != Truncated {
			t.Errorf("cut at %d of %d: got %v, want truncated", n, len(src), err)
		}
	}
}

func TestDecodePNGBadCRC(t *testing.T) {
	src := encodePNG(t, gradientImage(40, 30))
	bad := append([]byte{}, src...)
	bad[len(bad)-13] ^= 0x01 // last byte of the IDAT CRC
	_, err := Decode(bad, Options{})
	wantCause(t, err, Corrupt)
}
