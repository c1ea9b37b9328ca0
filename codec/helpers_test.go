package codec

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

// Test images are made in the tests, so that the unit tests need nothing
// but a fresh clone.

const blockSize = 16 // solid blocks survive JPEG nearly unchanged at their centres

// blockColor is the colour of block (by, bx) of a block image: distinct for
// every block, so that any flip or rotation shows.
func blockColor(by, bx int) color.RGBA {
	return color.RGBA{R: uint8(30 + 70*bx), G: uint8(30 + 70*by), B: uint8(220 - 50*((bx+2*by)%4)), A: 0xFF}
}

// blockImage is an image of bh×bw solid blocks.
func blockImage(bh, bw int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, bw*blockSize, bh*blockSize))
	for y := 0; y < bh*blockSize; y++ {
		for x := 0; x < bw*blockSize; x++ {
			img.SetRGBA(x, y, blockColor(y/blockSize, x/blockSize))
		}
	}
	return img
}

// gradientImage is a smooth, asymmetric w×h image.
func gradientImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, color.RGBA{uint8(40 + 150*x/w), uint8(40 + 150*y/h), uint8(120 + 60*(x+y)/(w+h)), 0xFF})
		}
	}
	return img
}

func encodeJPEG(t testing.TB, img image.Image, quality int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// exifPayload is an APP1 payload ("Exif\0\0" + TIFF) whose IFD0 holds one
// SHORT orientation tag, in either byte order.
func exifPayload(orientation int, bigEndian bool) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	tiff := []byte("II*\x00")
	if bigEndian {
		bo, tiff = binary.BigEndian, []byte("MM\x00*")
	}
	tiff = bo.AppendUint32(tiff, 8) // IFD0 offset
	tiff = bo.AppendUint16(tiff, 1) // one entry
	tiff = bo.AppendUint16(tiff, tagOrientation)
	tiff = bo.AppendUint16(tiff, 3) // SHORT
	tiff = bo.AppendUint32(tiff, 1) // count
	tiff = bo.AppendUint16(tiff, uint16(orientation))
	tiff = append(tiff, 0, 0)       // rest of the value field
	tiff = bo.AppendUint32(tiff, 0) // no next IFD
	return append([]byte("Exif\x00\x00"), tiff...)
}

// withAPP1 inserts an APP1 segment right after a JPEG's SOI.
func withAPP1(jpg, payload []byte) []byte {
	out := append([]byte{}, jpg[:2]...)
	out = append(out, 0xFF, 0xE1)
	out = binary.BigEndian.AppendUint16(out, uint16(len(payload)+2))
	out = append(out, payload...)
	return append(out, jpg[2:]...)
}

// pngChunk is one PNG chunk with its CRC.
func pngChunk(typ string, data []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	out = append(out, typ...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(append([]byte(typ), data...)))
}

func pngIHDR(w, h int, depth, colorType, interlace byte) []byte {
	d := binary.BigEndian.AppendUint32(nil, uint32(w))
	d = binary.BigEndian.AppendUint32(d, uint32(h))
	return pngChunk("IHDR", append(d, depth, colorType, 0, 0, interlace))
}

func zlibBytes(t testing.TB, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zlib.NewWriter(&b)
	if _, err := z.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// interlacedPNG writes img as an Adam7-interlaced 8-bit RGBA PNG, which
// Go's encoder cannot produce.
func interlacedPNG(t testing.TB, img *image.NRGBA) []byte {
	t.Helper()
	w, h := img.Rect.Dx(), img.Rect.Dy()
	passes := []struct{ x0, y0, dx, dy int }{
		{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2},
	}
	var raw []byte
	for _, p := range passes {
		if p.x0 >= w || p.y0 >= h {
			continue // empty pass: no rows at all
		}
		for y := p.y0; y < h; y += p.dy {
			raw = append(raw, 0) // filter: none
			for x := p.x0; x < w; x += p.dx {
				raw = append(raw, img.Pix[img.PixOffset(x, y):img.PixOffset(x, y)+4]...)
			}
		}
	}
	out := []byte(pngMagic)
	out = append(out, pngIHDR(w, h, 8, 6, 1)...)
	out = append(out, pngChunk("IDAT", zlibBytes(t, raw))...)
	return append(out, pngChunk("IEND", nil)...)
}

// absDiff is |a-b| for bytes.
func absDiff(a, b byte) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func mustDecode(t testing.TB, src []byte, o Options) *Image {
	t.Helper()
	img, err := Decode(src, o)
	if err != nil {
		t.Fatalf("decode %v: %v", o, err)
	}
	return img
}

func wantCause(t testing.TB, err error, want Cause) {
	t.Helper()
	if got := causeOf(err); got != want {
		t.Fatalf("got error %v (cause %q), want cause %q", err, got, want)
	}
}

// wantRefused checks that err is TooLarge and names every word.
func wantRefused(t *testing.T, name string, err error, words ...string) {
	t.Helper()
	wantCause(t, err, TooLarge)
	if err == nil {
		return
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", name, err, w)
		}
	}
}
