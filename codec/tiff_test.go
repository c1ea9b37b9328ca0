package codec

import (
	"encoding/binary"
	"image/color"
	"strings"
	"testing"
)

func TestTIFFLossless(t *testing.T) {
	for _, name := range []string{
		"rgb_raw.tif", "rgb_tiff_lzw.tif", "rgb_tiff_adobe_deflate.tif", "rgb_packbits.tif",
		"rgb_tiled.tif", "pages.tif", "rgb16_raw.tif", "rgb16_lzw.tif", "rgb16_bigendian.tif",
	} {
		t.Run(name, func(t *testing.T) {
			checkAllColors(t, readFormatFile(t, name), patternW, patternH, func(x, y int) color.NRGBA { return pattern8(x, y) })
		})
	}
}

func TestTIFFGray(t *testing.T) {
	// gray_miniswhite.tif stores 255 - R of the pattern, min-is-white.
	for _, name := range []string{"gray_lzw.tif", "gray16_lzw.tif", "gray_miniswhite.tif"} {
		t.Run(name, func(t *testing.T) {
			src := readFormatFile(t, name)
			want := func(x, y int) color.NRGBA { return pattern8(x, y) }
			if name == "gray_lzw.tif" {
				want = func(x, y int) color.NRGBA { return grayOf(pattern8(x, y)) }
			} else {
				want = func(x, y int) color.NRGBA { v := pattern8(x, y).R; return color.NRGBA{v, v, v, 0xFF} }
			}
			checkAllColors(t, src, patternW, patternH, want)
		})
	}
}

func TestTIFFAlpha(t *testing.T) {
	checkAllColors(t, readFormatFile(t, "rgba_deflate.tif"), patternW, patternH, func(x, y int) color.NRGBA {
		n := pattern8(x, y)
		n.A = n.R
		return n
	})
}

func TestTIFFJPEG(t *testing.T) {
	for _, name := range []string{"rgb_jpeg.tif", "ycbcr_jpeg.tif"} {
		// Quality 90 of a pattern with sharp edges (and, for YCbCr,
		// chroma halved): close on average, not exact.
		worst, mean := patternDiff(t, readFormatFile(t, name), asIs)
		t.Logf("%s: max difference %d, mean %.2f", name, worst, mean)
		if mean > 12 { // Pillow: 10.9 for ycbcr_jpeg.tif
			t.Errorf("%s: mean difference %.2f from the source", name, mean)
		}
	}
}

func TestTIFFOrientation(t *testing.T) {
	src := readFormatFile(t, "rgb_orient6.tif")
	d := NewDecoder()
	defer d.Close()
	h, err := d.Header(src, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Orientation != 6 || h.Width != patternW || h.Height != patternH {
		t.Fatalf("header %+v", h)
	}
	img := mustDecode(t, src, Options{Orient: true})
	if img.Width != patternH || img.Height != patternW {
		t.Fatalf("oriented %dx%d", img.Width, img.Height)
	}
	// Orientation 6: stored (x, y) shows at (H-1-y, x).
	for y := 0; y < patternH; y++ {
		for x := 0; x < patternW; x++ {
			n := pattern8(x, y)
			p := img.Pix[3*(x*patternH+patternH-1-y):]
			if p[0] != n.R || p[1] != n.G || p[2] != n.B {
				t.Fatalf("(%d,%d): got %v, want %v", x, y, p[:3], n)
			}
		}
	}
}

func TestTIFFPalette(t *testing.T) {
	// quantize(32) of the pattern: near it, and every pixel one of 32
	// colours.
	src := readFormatFile(t, "palette_packbits.tif")
	img := mustDecode(t, src, Options{})
	colours := map[[3]byte]bool{}
	for i := 0; i < len(img.Pix); i += 3 {
		colours[[3]byte(img.Pix[i:i+3])] = true
	}
	if len(colours) < 2 || len(colours) > 32 {
		t.Fatalf("%d colours", len(colours))
	}
}

func TestTIFFRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Cause
	}{
		{"cmyk.tif", Unsupported},
		{"bilevel.tif", Unsupported},
	} {
		_, err := Decode(readFormatFile(t, tc.name), Options{})
		wantCause(t, err, tc.want)
		t.Logf("%s: %v", tc.name, err)
	}
}

func TestTIFFBad(t *testing.T) {
	src := readFormatFile(t, "rgb_tiff_lzw.tif")
	_, err := Decode(src, Options{Limits: LimitsFor(patternW*patternH - 1)})
	wantCause(t, err, TooLarge)
	// Pillow writes the directory after the strips: cutting the file loses
	// it, and libtiff finds no image.
	for _, n := range []int{8, len(src) / 2, len(src) - 10} {
		if _, err := Decode(src[:n], Options{}); err == nil {
			t.Errorf("cut to %d bytes: decoded", n)
		} else {
			checkFuzzErr(t, err)
			t.Logf("cut to %d: %v", n, err)
		}
	}
	// Strip data cut short, the directory intact: corrupt the strip
	// offsets' target by truncating the data area in a copy with tiled data.
	tiled := readFormatFile(t, "rgb_tiled.tif")
	bad := append([]byte(nil), tiled...)
	for i := 8; i < 600 && i < len(bad); i++ {
		bad[i] ^= 0x5A
	}
	if _, err := Decode(bad, Options{}); err == nil {
		t.Errorf("garbled LZW tiles decoded")
	} else {
		checkFuzzErr(t, err)
		t.Logf("garbled: %v", err)
	}
}

// forgedTIFF is a little-endian TIFF whose one directory claims a w×h
// 8-bit RGB image in one uncompressed strip of n bytes at offset 8 (which
// the file holds only when n is small).
func forgedTIFF(w, h uint32, n uint32) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32([]byte("II*\x00"), 8+n)
	b = append(b, make([]byte, min(n, 64))...)
	type entry struct {
		tag, typ uint16
		v        uint32
	}
	entries := []entry{{256, 4, w}, {257, 4, h}, {258, 3, 8}, {259, 3, 1}, {262, 3, 2}, {273, 4, 8}, {277, 3, 3}, {278, 4, h}, {279, 4, n}}
	b = le.AppendUint16(b[:8+min(n, 64)], uint16(len(entries)))
	for _, e := range entries {
		b = le.AppendUint16(b, e.tag)
		b = le.AppendUint16(b, e.typ)
		b = le.AppendUint32(b, 1)
		b = le.AppendUint32(b, e.v) // SHORTs sit in the low half, little-endian
	}
	return le.AppendUint32(b, 0)
}

// TestTIFFLimits: forged headers fail before the image is allocated.
func TestTIFFLimits(t *testing.T) {
	limit := 64 << 20
	var err error
	n := allocated(func() { _, err = Decode(forgedTIFF(60000, 60000, 64), Options{Limits: LimitsFor(limit)}) })
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "3600000000") || n > 1<<20 {
		t.Errorf("%v, %d bytes allocated", err, n)
	}
	// Under the limit, but the strip lies past the end of the input.
	n = allocated(func() { _, err = Decode(forgedTIFF(8000, 8000, 3*8000*8000), Options{Limits: LimitsFor(limit)}) })
	wantCause(t, err, Truncated)
	if n > 1<<20 {
		t.Errorf("rejecting %v allocated %d bytes", err, n)
	}
	// A strip that is there decodes.
	img, err := Decode(forgedTIFF(4, 5, 60), Options{})
	if err != nil || img.Width != 4 || img.Height != 5 {
		t.Fatalf("small forged TIFF: %v", err)
	}
}
