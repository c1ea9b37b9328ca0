package codec

import (
	"encoding/binary"
	"fmt"
	"image/color"
	"strings"
	"testing"
)

// bmpSpec describes a BMP for makeBMP.
type bmpSpec struct {
	w, h     int
	bpp      int
	comp     uint32
	header   int // 12, 40, 108, 124
	topDown  bool
	masks    []uint32 // BI_BITFIELDS: in the header from 52 bytes on, else after it
	palette  []color.NRGBA
	colors   uint32
	pixels   []byte // the pixel array as stored
	offsetAt int    // when nonzero, the pixel-array offset to write instead
}

// makeBMP writes a BMP file; the specification, not Pillow, is its guide.
func makeBMP(s bmpSpec) []byte {
	le := binary.LittleEndian
	var info []byte
	if s.header == 12 {
		info = le.AppendUint32(nil, 12)
		info = le.AppendUint16(info, uint16(s.w))
		info = le.AppendUint16(info, uint16(s.h))
		info = le.AppendUint16(info, 1)
		info = le.AppendUint16(info, uint16(s.bpp))
	} else {
		h := int32(s.h)
		if s.topDown {
			h = -h
		}
		info = le.AppendUint32(nil, uint32(s.header))
		info = le.AppendUint32(info, uint32(s.w))
		info = le.AppendUint32(info, uint32(h))
		info = le.AppendUint16(info, 1)
		info = le.AppendUint16(info, uint16(s.bpp))
		info = le.AppendUint32(info, s.comp)
		info = le.AppendUint32(info, uint32(len(s.pixels)))
		info = le.AppendUint32(info, 2835)
		info = le.AppendUint32(info, 2835)
		info = le.AppendUint32(info, s.colors)
		info = le.AppendUint32(info, 0)
	}
	var after []byte
	if s.header > 40 {
		for _, m := range s.masks {
			info = le.AppendUint32(info, m)
		}
		info = append(info, make([]byte, s.header-len(info))...)
	} else {
		for _, m := range s.masks {
			after = le.AppendUint32(after, m)
		}
	}
	for _, c := range s.palette {
		after = append(after, c.B, c.G, c.R)
		if s.header != 12 {
			after = append(after, 0)
		}
	}
	off := 14 + len(info) + len(after)
	if s.offsetAt != 0 {
		off = s.offsetAt
	}
	out := []byte("BM")
	out = le.AppendUint32(out, uint32(off+len(s.pixels)))
	out = le.AppendUint32(out, 0)
	out = le.AppendUint32(out, uint32(off))
	out = append(out, info...)
	out = append(out, after...)
	return append(out, s.pixels...)
}

// storedRows pads rows to 4 bytes and orders them bottom-up unless topDown.
func storedRows(rows [][]byte, topDown bool) []byte {
	var out []byte
	for i := range rows {
		r := rows[len(rows)-1-i]
		if topDown {
			r = rows[i]
		}
		out = append(out, r...)
		out = append(out, make([]byte, (4-len(r)%4)%4)...)
	}
	return out
}

// testPalette has n distinct colours.
func testPalette(n int) []color.NRGBA {
	p := make([]color.NRGBA, n)
	for i := range p {
		p[i] = color.NRGBA{uint8(i * 37), uint8(255 - i*11), uint8(i*i + 5), 255}
	}
	return p
}

func TestBMPPalettes(t *testing.T) {
	const w, h = 13, 5
	for _, bpp := range []int{1, 2, 4, 8} {
		for _, topDown := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dbit/topdown=%v", bpp, topDown), func(t *testing.T) {
				n := 1 << bpp
				pal := testPalette(n)
				index := func(x, y int) int { return (x*3 + y*7) % n }
				rows := make([][]byte, h)
				for y := range rows {
					rows[y] = make([]byte, (w*bpp+7)/8)
					for x := 0; x < w; x++ {
						rows[y][x*bpp/8] |= byte(index(x, y) << (8 - bpp - x*bpp%8))
					}
				}
				src := makeBMP(bmpSpec{w: w, h: h, bpp: bpp, header: 40, topDown: topDown, palette: pal, pixels: storedRows(rows, topDown)})
				checkAllColors(t, src, w, h, func(x, y int) color.NRGBA { return pal[index(x, y)] })
			})
		}
	}
}

func TestBMPShortPaletteAndOS2(t *testing.T) {
	// Three colours of 256: other indices are opaque black, as in Pillow.
	pal := testPalette(3)
	rows := [][]byte{{0, 1, 2, 3, 200}, {2, 2, 1, 0, 9}}
	src := makeBMP(bmpSpec{w: 5, h: 2, bpp: 8, header: 40, palette: pal, colors: 3, pixels: storedRows(rows, false)})
	want := func(x, y int) color.NRGBA {
		if i := rows[y][x]; int(i) < len(pal) {
			return pal[i]
		}
		return color.NRGBA{A: 255}
	}
	checkAllColors(t, src, 5, 2, want)
	// OS/2 core header: 3-byte palette entries.
	full := testPalette(256)
	src = makeBMP(bmpSpec{w: 5, h: 2, bpp: 8, header: 12, palette: full, pixels: storedRows(rows, false)})
	checkAllColors(t, src, 5, 2, func(x, y int) color.NRGBA { return full[rows[y][x]] })
	// An offset pointing at the palette: the palette is skipped (Pillow).
	src = makeBMP(bmpSpec{w: 5, h: 2, bpp: 8, header: 40, palette: full, pixels: storedRows(rows, false), offsetAt: 54})
	checkAllColors(t, src, 5, 2, func(x, y int) color.NRGBA { return full[rows[y][x]] })
}

// rgbAt is a test colour with every 8-bit level in some pixel.
func rgbAt(x, y int) color.NRGBA {
	return color.NRGBA{uint8(x*19 + y), uint8(y*23 + 3*x), uint8(x * y), uint8(x*7 + y*31)}
}

func TestBMPTrueColor(t *testing.T) {
	const w, h = 11, 7
	pack := func(bpp int, f func(c color.NRGBA) uint32) [][]byte {
		rows := make([][]byte, h)
		for y := range rows {
			for x := 0; x < w; x++ {
				v := f(rgbAt(x, y))
				for k := 0; k < bpp/8; k++ {
					rows[y] = append(rows[y], byte(v>>(8*k)))
				}
			}
		}
		return rows
	}
	opaque := func(c color.NRGBA) color.NRGBA { c.A = 255; return c }
	expand := func(v uint8, bits int) uint8 { // v's top bits, scaled as Pillow scales them
		m := uint32(1)<<bits - 1
		return uint8((uint32(v) >> (8 - bits)) * 255 / m)
	}
	cases := []struct {
		name string
		spec bmpSpec
		want func(x, y int) color.NRGBA
	}{
		{"24", bmpSpec{bpp: 24, header: 40, pixels: storedRows(pack(24, func(c color.NRGBA) uint32 {
			return uint32(c.B) | uint32(c.G)<<8 | uint32(c.R)<<16
		}), false)}, func(x, y int) color.NRGBA { return opaque(rgbAt(x, y)) }},
		{"24topdown", bmpSpec{bpp: 24, header: 124, topDown: true, pixels: storedRows(pack(24, func(c color.NRGBA) uint32 {
			return uint32(c.B) | uint32(c.G)<<8 | uint32(c.R)<<16
		}), true)}, func(x, y int) color.NRGBA { return opaque(rgbAt(x, y)) }},
		// BI_RGB 32-bit: the fourth byte is not alpha (Pillow: BGRX).
		{"32rgb", bmpSpec{bpp: 32, header: 40, pixels: storedRows(pack(32, func(c color.NRGBA) uint32 {
			return uint32(c.B) | uint32(c.G)<<8 | uint32(c.R)<<16 | uint32(c.A)<<24
		}), false)}, func(x, y int) color.NRGBA { return opaque(rgbAt(x, y)) }},
		{"32bgra_v5", bmpSpec{bpp: 32, header: 124, comp: bmpBitfields, masks: []uint32{0xFF0000, 0xFF00, 0xFF, 0xFF000000},
			pixels: storedRows(pack(32, func(c color.NRGBA) uint32 {
				return uint32(c.B) | uint32(c.G)<<8 | uint32(c.R)<<16 | uint32(c.A)<<24
			}), false)}, rgbAt},
		{"32rgba_v4_topdown", bmpSpec{bpp: 32, header: 108, topDown: true, comp: bmpBitfields, masks: []uint32{0xFF, 0xFF00, 0xFF0000, 0xFF000000},
			pixels: storedRows(pack(32, func(c color.NRGBA) uint32 {
				return uint32(c.R) | uint32(c.G)<<8 | uint32(c.B)<<16 | uint32(c.A)<<24
			}), true)}, rgbAt},
		// A 40-byte header has no alpha mask: opaque.
		{"32xbgr_bitfields", bmpSpec{bpp: 32, header: 40, comp: bmpBitfields, masks: []uint32{0xFF000000, 0xFF0000, 0xFF00},
			pixels: storedRows(pack(32, func(c color.NRGBA) uint32 {
				return uint32(c.R)<<24 | uint32(c.G)<<16 | uint32(c.B)<<8 | 0x55
			}), false)}, func(x, y int) color.NRGBA { return opaque(rgbAt(x, y)) }},
		// 10-10-10 bits: any contiguous masks.
		{"32_1010102", bmpSpec{bpp: 32, header: 40, comp: bmpBitfields, masks: []uint32{0x3FF00000, 0xFFC00, 0x3FF},
			pixels: storedRows(pack(32, func(c color.NRGBA) uint32 {
				return uint32(c.R)<<22 | uint32(c.G)<<12 | uint32(c.B)<<2
			}), false)}, func(x, y int) color.NRGBA {
			c := rgbAt(x, y)
			f := func(v uint8) uint8 { return uint8(uint32(v) << 2 * 255 / 1023) }
			return color.NRGBA{f(c.R), f(c.G), f(c.B), 255}
		}},
		{"16_555", bmpSpec{bpp: 16, header: 40, pixels: storedRows(pack(16, func(c color.NRGBA) uint32 {
			return uint32(c.R>>3)<<10 | uint32(c.G>>3)<<5 | uint32(c.B>>3) | 0x8000 // top bit unused
		}), false)}, func(x, y int) color.NRGBA {
			c := rgbAt(x, y)
			return color.NRGBA{expand(c.R, 5), expand(c.G, 5), expand(c.B, 5), 255}
		}},
		{"16_565", bmpSpec{bpp: 16, header: 40, comp: bmpBitfields, masks: []uint32{0xF800, 0x7E0, 0x1F},
			pixels: storedRows(pack(16, func(c color.NRGBA) uint32 {
				return uint32(c.R>>3)<<11 | uint32(c.G>>2)<<5 | uint32(c.B>>3)
			}), false)}, func(x, y int) color.NRGBA {
			c := rgbAt(x, y)
			return color.NRGBA{expand(c.R, 5), expand(c.G, 6), expand(c.B, 5), 255}
		}},
		// A 16-bit alpha mask is ignored, as Pillow ignores it.
		{"16_1555_v5", bmpSpec{bpp: 16, header: 124, comp: bmpBitfields, masks: []uint32{0x7C00, 0x3E0, 0x1F, 0x8000},
			pixels: storedRows(pack(16, func(c color.NRGBA) uint32 {
				return uint32(c.R>>3)<<10 | uint32(c.G>>3)<<5 | uint32(c.B>>3)
			}), false)}, func(x, y int) color.NRGBA {
			c := rgbAt(x, y)
			return color.NRGBA{expand(c.R, 5), expand(c.G, 5), expand(c.B, 5), 255}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.w, tc.spec.h = w, h
			checkAllColors(t, makeBMP(tc.spec), w, h, tc.want)
		})
	}
}

func TestBMPRLE(t *testing.T) {
	pal := testPalette(16)
	// RLE8, 6x4, bottom-up: a run, a literal of odd length (padded), end
	// of line at a row's end (nothing to fill), a run cut at the row's end,
	// end of line filling a row, a delta, and an end of bitmap never
	// reached. The column only restarts at end of line or a delta (Pillow).
	rle8 := []byte{
		3, 1, 0, 3, 4, 5, 6, 0, 0, 0, // row 0 (bottom): 1 1 1 4 5 6
		9, 2, 0, 0, // row 1: 2 x6 (9 cut to 6)
		2, 7, 0, 2, 2, 1, // row 2: 7 7, then right 2 and up 1: row 3, column 4
		2, 3, // row 3: 3 3
		0, 1,
	}
	want8 := [][]byte{ // top row first
		{0, 0, 0, 0, 3, 3},
		{7, 7, 0, 0, 0, 0},
		{2, 2, 2, 2, 2, 2},
		{1, 1, 1, 4, 5, 6},
	}
	src := makeBMP(bmpSpec{w: 6, h: 4, bpp: 8, comp: bmpRLE8, header: 40, palette: pal, pixels: rle8})
	if (14+40+16*4)%2 != 0 {
		t.Fatal("the pixel array must start at an even offset for this stream")
	}
	checkAllColors(t, src, 6, 4, func(x, y int) color.NRGBA { return pal[want8[y][x]] })

	// RLE4, 5x2: runs alternate their two nibbles; literals pack two a byte.
	rle4 := []byte{
		5, 0x12, 0, 0, // row 0: 1 2 1 2 1
		0, 3, 0xAB, 0xC0, // row 1: A B C (2 bytes: already even)
		2, 0xEE, 0, 1, // E E, end
	}
	want4 := [][]byte{{0xA, 0xB, 0xC, 0xE, 0xE}, {1, 2, 1, 2, 1}}
	src = makeBMP(bmpSpec{w: 5, h: 2, bpp: 4, comp: bmpRLE4, header: 40, palette: pal, pixels: rle4})
	checkAllColors(t, src, 5, 2, func(x, y int) color.NRGBA { return pal[want4[y][x]] })

	// A literal run is not cut at its row's end: it goes on into the next
	// row, where end of line then fills the rest.
	wrap := []byte{0, 4, 1, 2, 3, 4, 7, 5, 0, 0}
	src = makeBMP(bmpSpec{w: 3, h: 2, bpp: 8, comp: bmpRLE8, header: 40, palette: pal, pixels: wrap})
	wantW := [][]byte{{4, 0, 0}, {1, 2, 3}} // the run of 5s starts past the row's end: cut to nothing
	checkAllColors(t, src, 3, 2, func(x, y int) color.NRGBA { return pal[wantW[y][x]] })
}

func TestBMPRLEErrors(t *testing.T) {
	pal := testPalette(4)
	mk := func(px []byte) []byte {
		return makeBMP(bmpSpec{w: 4, h: 2, bpp: 8, comp: bmpRLE8, header: 40, palette: pal, pixels: px})
	}
	_, err := Decode(mk([]byte{4, 1, 0, 1}), Options{})
	wantCause(t, err, Corrupt) // end of bitmap before every pixel
	_, err = Decode(mk([]byte{4, 1, 2}), Options{})
	wantCause(t, err, Truncated)
	_, err = Decode(makeBMP(bmpSpec{w: 4, h: 2, bpp: 4, comp: bmpRLE8, header: 40, palette: pal, pixels: []byte{8, 1}}), Options{})
	wantCause(t, err, Corrupt) // RLE8 needs 8 bits
	// A few bytes of RLE cannot stand for a huge image.
	_, err = Decode(makeBMP(bmpSpec{w: 5000, h: 5000, bpp: 8, comp: bmpRLE8, header: 40, palette: pal, pixels: []byte{0, 1}}), Options{})
	wantCause(t, err, Corrupt)
}

func TestBMPErrors(t *testing.T) {
	rows := [][]byte{make([]byte, 12), make([]byte, 12)}
	good := makeBMP(bmpSpec{w: 4, h: 2, bpp: 24, header: 40, pixels: storedRows(rows, false)})
	if _, err := Decode(good, Options{}); err != nil {
		t.Fatal(err)
	}
	set := func(b []byte, at int, v uint32) []byte {
		b = append([]byte{}, b...)
		binary.LittleEndian.PutUint32(b[at:], v)
		return b
	}
	cases := []struct {
		name string
		src  []byte
		want Cause
		msg  string
	}{
		{"short pixels", good[:len(good)-13], Truncated, "pixel array"},
		{"short header", good[:40], Truncated, "header"},
		{"offset past end", set(good, 10, 1<<30), Truncated, "before its pixel array"},
		{"jpeg", set(good, 30, bmpJPEG), Unsupported, "JPEG"},
		{"png", set(good, 30, bmpPNG), Unsupported, "PNG"},
		{"compression 9", set(good, 30, 9), Unsupported, "compression 9"},
		{"bits 7", set(good, 28, 7|1<<16), Unsupported, "7 bits"},
		{"zero width", set(good, 18, 0), Corrupt, "0x2"},
		{"negative width", set(good, 18, 0xFFFFFFF0), Corrupt, "-16x2"},
		{"header 16", set(good, 14, 16), Unsupported, "16 bytes"},
		{"gappy mask", makeBMP(bmpSpec{w: 4, h: 2, bpp: 32, header: 40, comp: bmpBitfields,
			masks: []uint32{0xF0F0, 0xF0000, 0xF00000}, pixels: make([]byte, 32)}), Unsupported, "mask"},
		{"16-bit mask past the pixel", makeBMP(bmpSpec{w: 4, h: 2, bpp: 16, header: 40, comp: bmpBitfields,
			masks: []uint32{0xF80000, 0x7E0, 0x1F}, pixels: make([]byte, 16)}), Unsupported, "mask"},
		{"bitfields palette", makeBMP(bmpSpec{w: 4, h: 2, bpp: 8, header: 40, comp: bmpBitfields,
			masks: []uint32{1, 2, 4}, pixels: make([]byte, 8)}), Corrupt, "bitfields"},
	}
	for _, tc := range cases {
		_, err := Decode(tc.src, Options{})
		wantCause(t, err, tc.want)
		if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "BMP") {
			t.Errorf("%s: %v does not say %q", tc.name, err, tc.msg)
		}
	}
}

// The pixel limit is checked from the header, before the palette or the
// pixel array are looked at: a forged 2-gigapixel header fails TooLarge
// with nothing behind it.
func TestBMPPixelLimitFirst(t *testing.T) {
	src := makeBMP(bmpSpec{w: 50000, h: 40000, bpp: 24, header: 40})
	d := NewDecoder()
	defer d.Close()
	_, err := d.Header(src, LimitsFor(1<<20))
	wantCause(t, err, TooLarge)
	_, err = d.Header(src, Limits{}) // no limit: the missing pixel array shows
	wantCause(t, err, Truncated)
	h, err := d.Header(makeBMP(bmpSpec{w: 3, h: 2, bpp: 24, header: 40, pixels: make([]byte, 24)}), LimitsFor(6))
	if err != nil || h.Format != "BMP" || h.Width != 3 || h.Height != 2 {
		t.Fatalf("%+v %v", h, err)
	}
}

// BenchmarkDecodeBMP decodes a 1024×768 photo-sized BMP into RGB, per
// layout, with one reused decoder and destination (a worker's steady state).
func BenchmarkDecodeBMP(b *testing.B) {
	const w, h = 1024, 768
	rows := make([][]byte, h)
	for y := range rows {
		rows[y] = make([]byte, 4*w)
		for x := range rows[y] {
			rows[y][x] = byte(x*7 + y)
		}
	}
	rle := make([]byte, 0, h*(w/64*2+2))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x += 64 {
			rle = append(rle, 64, byte(x+y))
		}
		rle = append(rle, 0, 0)
	}
	for _, tc := range []struct {
		name string
		spec bmpSpec
	}{
		{"24bit", bmpSpec{bpp: 24, header: 40, pixels: storedRows(trimRows(rows, 3*w), false)}},
		{"32bit_bitfields_alpha", bmpSpec{bpp: 32, header: 124, comp: bmpBitfields, masks: []uint32{0xFF0000, 0xFF00, 0xFF, 0xFF000000},
			pixels: storedRows(rows, false)}},
		{"8bit_palette", bmpSpec{bpp: 8, header: 40, palette: testPalette(256), pixels: storedRows(trimRows(rows, w), false)}},
		{"rle8", bmpSpec{bpp: 8, header: 40, comp: bmpRLE8, palette: testPalette(256), pixels: rle}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tc.spec.w, tc.spec.h = w, h
			benchDecode(b, makeBMP(tc.spec), w, h)
		})
	}
}

func trimRows(rows [][]byte, n int) [][]byte {
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = r[:n]
	}
	return out
}

// benchDecode decodes src into RGB again and again with one decoder.
func benchDecode(b *testing.B, src []byte, w, h int) {
	d := NewDecoder()
	defer d.Close()
	dst := make([]byte, w*h*3)
	b.SetBytes(int64(w * h))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		hd, err := d.Header(src, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Decode(dst, src, hd, Options{Color: RGB}); err != nil {
			b.Fatal(err)
		}
	}
}

// pillowRefuses reports whether Pillow fails to open and load src.
func pillowRefuses(t *testing.T, src []byte) bool {
	t.Helper()
	out := pillowScript(t, `
import io, sys
from PIL import Image
try:
    Image.open(io.BytesIO(sys.stdin.buffer.read())).convert("RGB")
    print("ok")
except Exception as e:
    print("refused", e)
`, nil, src)
	return strings.HasPrefix(string(out), "refused")
}

// RLE files that skip blank areas with end-of-line and delta codes (far
// more pixels a byte than runs give) decode as Pillow decodes them.
func TestBMPRLESkipsPillow(t *testing.T) {
	pal := testPalette(256)
	// RLE8, 1000x300: a run, end of line; a delta 10 right and 255 rows
	// up; runs and end-of-lines to the last row, which a run fills.
	rle8 := []byte{5, 7, 0, 0, 0, 2, 10, 255, 3, 9, 0, 0}
	for y := 257; y < 299; y++ {
		rle8 = append(rle8, 2, byte(y), 0, 0)
	}
	rle8 = append(rle8, 250, 1, 250, 2, 250, 3, 250, 4, 0, 1)
	pal16 := testPalette(16)
	// RLE4, 4000x4: a run, end of line, a delta of one row, a literal,
	// end of line; the last row a delta to its last pixels and a run.
	rle4 := []byte{6, 0x12, 0, 0, 0, 2, 100, 1, 0, 3, 0x34, 0x50, 0, 0, 0, 2, 250, 0, 0, 2, 250, 0}
	for x := 500; x < 3996; x += 250 {
		rle4 = append(rle4, 0, 2, 250, 0)
	}
	rle4 = append(rle4, 4, 0xAB, 0, 1)
	for _, src := range [][]byte{
		makeBMP(bmpSpec{w: 1000, h: 300, bpp: 8, comp: bmpRLE8, header: 40, palette: pal, pixels: rle8}),
		makeBMP(bmpSpec{w: 4000, h: 4, bpp: 4, comp: bmpRLE4, header: 40, palette: pal16, pixels: rle4}),
	} {
		got := mustDecode(t, src, Options{Color: RGB})
		want, _, _ := pillowDecode(t, src, "RGB", false)
		if string(got.Pix) != string(want) {
			t.Errorf("%dx%d RLE decode differs from Pillow's", got.Width, got.Height)
		}
	}
}

// What Pillow refuses, refused clearly: a palette longer than 256 colours,
// bitfield masks that leave a colour channel empty (all zero but at 32
// bits, which both read as BGRA). A 4-bit image's palette of 100 colours
// is read by both.
func TestBMPPillowRefusals(t *testing.T) {
	px := []byte{0, 1, 2, 3, 5, 6, 7, 8}
	for _, tc := range []struct {
		name  string
		src   []byte
		cause Cause
		words string
	}{
		{"1000 colours", makeBMP(bmpSpec{w: 4, h: 2, bpp: 8, header: 40, palette: testPalette(256), colors: 1000, pixels: px}),
			Corrupt, "palette of 1000 colours"},
		{"257 colours", makeBMP(bmpSpec{w: 4, h: 2, bpp: 8, header: 40, palette: testPalette(256), colors: 257, pixels: px}),
			Corrupt, "palette of 257 colours"},
		{"16-bit zero masks", makeBMP(bmpSpec{w: 2, h: 2, bpp: 16, header: 40, comp: bmpBitfields, masks: []uint32{0, 0, 0},
			pixels: make([]byte, 8)}), Unsupported, "colour channel empty"},
		{"24-bit zero masks", makeBMP(bmpSpec{w: 2, h: 2, bpp: 24, header: 40, comp: bmpBitfields, masks: []uint32{0, 0, 0},
			pixels: make([]byte, 16)}), Unsupported, "colour channel empty"},
		{"16-bit no green", makeBMP(bmpSpec{w: 2, h: 2, bpp: 16, header: 40, comp: bmpBitfields, masks: []uint32{0x7C00, 0, 0x1F},
			pixels: make([]byte, 8)}), Unsupported, "colour channel empty"},
	} {
		_, err := Decode(tc.src, Options{})
		wantCause(t, err, tc.cause)
		if err != nil && !strings.Contains(err.Error(), tc.words) {
			t.Errorf("%s: %v does not say %q", tc.name, err, tc.words)
		}
		if !pillowRefuses(t, tc.src) {
			t.Errorf("%s: Pillow reads it", tc.name)
		}
	}
	// Read by both, alike.
	for _, src := range [][]byte{
		makeBMP(bmpSpec{w: 8, h: 2, bpp: 4, header: 40, palette: testPalette(100), colors: 100,
			pixels: []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}}),
		makeBMP(bmpSpec{w: 4, h: 2, bpp: 8, header: 40, palette: testPalette(256), colors: 256, pixels: px}),
		makeBMP(bmpSpec{w: 2, h: 2, bpp: 32, header: 40, comp: bmpBitfields, masks: []uint32{0, 0, 0},
			pixels: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}),
	} {
		got := mustDecode(t, src, Options{Color: RGBA})
		want, _, _ := pillowDecode(t, src, "RGBA", false)
		if string(got.Pix) != string(want) {
			t.Errorf("%dx%d: decode differs from Pillow's", got.Width, got.Height)
		}
	}
}
