package codec

import (
	"encoding/binary"
	"math/bits"

	"github.com/sluice-dev/sluice/internal/reuse"
)

// BMP decoding, written to agree with Pillow 13's BmpImagePlugin on every
// file Pillow reads (it is the reference of the accuracy tests):
//
//   - headers: OS/2 core (12 bytes), BITMAPINFOHEADER (40), V2 (52), V3
//     (56), OS/2 2.x (64, uncompressed or RLE), V4 (108) and V5 (124);
//   - 1, 2, 4 and 8-bit palettes, 16-bit (5-5-5 unless BI_BITFIELDS says
//     otherwise), 24 and 32-bit, bottom-up or top-down (negative height);
//   - RLE8 and RLE4 (bmprle.go);
//   - alpha only where Pillow keeps it: a 32-bit BI_BITFIELDS image with an
//     alpha mask (or with all-zero masks, which Pillow reads as BGRA). A
//     BI_RGB 32-bit image is BGRX, its fourth byte ignored, as Pillow and
//     Windows read it.
//
// Bitfield masks may be any contiguous masks (Pillow takes a fixed list of
// them) but none of red, green and blue empty; an n-bit field scales to 8 bits as v*255/(2^n-1), rounded down,
// which is Pillow's 5- and 6-bit expansion and the identity at 8 bits.

const (
	bmpRGB       = 0
	bmpRLE8      = 1
	bmpRLE4      = 2
	bmpBitfields = 3
	bmpJPEG      = 4
	bmpPNG       = 5
	bmpAlphaBF   = 6 // BI_ALPHABITFIELDS (Windows CE): masks with alpha
)

// rleMaxPixels is the most pixels an RLE pixel array of n bytes can
// stand for in a w-wide image: a 4-byte delta code skips up to 255 pixels
// right and 255 rows up (end-of-line and runs do less a byte), so no legal
// array is shorter. A forged header over a few bytes cannot claim more.
// The bound is that loose because legal files skip blank areas with
// end-of-line and delta codes, which a bound of so many pixels a byte,
// whatever the width, refuses.
func rleMaxPixels(n, w int64) int64 { return (n/4 + 1) * 255 * (w + 1) }

func init() {
	Register(Format{
		Name:  "BMP",
		Match: isBMP,
		New:   func() (FormatDecoder, error) { return &bmpDecoder{}, nil },
	})
}

// bmpDecoder keeps its scratch rows between images.
type bmpDecoder struct {
	info bmpInfo
	row  []byte // one row as 8-bit RGBA
	idx  []byte // RLE: the whole image as palette indices
}

func (d *bmpDecoder) Close() { d.row, d.idx = nil, nil }

// bmpInfo is what the headers say, checked against the input's length.
type bmpInfo struct {
	w, h    int
	bpp     int // bits per pixel
	comp    int
	topDown bool
	off     int // first byte of the pixel array
	stride  int // bytes per stored row, uncompressed
	masks   [4]uint32
	alpha   bool         // the alpha mask is used
	fields  [4]field     // from masks, for 16 to 32-bit pixels
	lut     [256][4]byte // palette as RGBA
	mode    Mode         // Pillow's, as far as Image.resize cares
}

func (d *bmpDecoder) Header(src []byte, lim Limits) (Header, error) {
	maxPixels := lim.MaxPixels
	if err := d.info.parse(src, maxPixels); err != nil {
		return Header{}, err
	}
	h := Header{Width: d.info.w, Height: d.info.h, Orientation: 1, Mode: d.info.mode}
	if d.info.comp == bmpRLE8 || d.info.comp == bmpRLE4 {
		h.Memory = int64(d.info.w) * int64(d.info.h) // the palette indices, decoded whole first
	}
	return h, nil
}

func bmpErr(c Cause, format string, a ...any) *Error { return formatErr(c, "BMP", format, a...) }

func (b *bmpInfo) parse(src []byte, maxPixels int) error {
	*b = bmpInfo{}
	if len(src) < 18 {
		return bmpErr(Truncated, "BMP data ends early, in the file header")
	}
	le := binary.LittleEndian
	off := int64(le.Uint32(src[10:]))
	hsize := int(le.Uint32(src[14:]))
	if 14+hsize > len(src) {
		return bmpErr(Truncated, "BMP data ends early, in its %d-byte header", hsize)
	}
	hd := src[14 : 14+hsize]
	palEntry := 4
	var w, h int64
	switch hsize {
	case 12: // OS/2 1.x / BITMAPCOREHEADER: unsigned 16-bit sizes, bottom-up
		w, h = int64(le.Uint16(hd[4:])), int64(le.Uint16(hd[6:]))
		b.bpp = int(le.Uint16(hd[10:]))
		palEntry = 3
	case 40, 52, 56, 64, 108, 124:
		w, h = int64(int32(le.Uint32(hd[4:]))), int64(int32(le.Uint32(hd[8:])))
		b.bpp = int(le.Uint16(hd[14:]))
		b.comp = int(le.Uint32(hd[16:]))
		if h < 0 {
			h, b.topDown = -h, true
		}
	default:
		return bmpErr(Unsupported, "BMP header of %d bytes is not supported", hsize)
	}
	if w <= 0 || h <= 0 || w > 1<<31-1 {
		return bmpErr(Corrupt, "BMP header gives a %dx%d image", w, h)
	}
	b.w, b.h = int(w), int(h)
	if err := TooLargeErr("BMP", b.w, b.h, maxPixels); err != nil {
		return err
	}
	pos := 14 + hsize // where the masks or the palette start
	if err := b.layout(src, hd, &pos); err != nil {
		return err
	}
	if b.alpha {
		b.mode = ModeAlpha // Pillow opens it "RGBA"
	}
	if b.bpp > 8 {
		for i, m := range b.masks {
			b.fields[i].set(m)
		}
	}
	colors := 0
	if b.bpp <= 8 {
		colors = 1 << b.bpp
		if hsize >= 40 {
			if n := int(le.Uint32(hd[32:])); n != 0 {
				colors = n
			}
		}
		// Indices of at most 8 bits address 256 entries; Pillow refuses a
		// longer palette ("invalid palette size"), and so do we.
		if colors > 256 {
			return bmpErr(Corrupt, "BMP palette of %d colours: more than the 256 an index can address", colors)
		}
		b.mode = ModeNearest // "P", or "1" for two colours
		if n := b.readPalette(src, pos, palEntry, colors); n == colors && colors != 2 && b.greyRamp(colors) {
			b.mode = ModeDirect // "L": Pillow drops a palette of grey i at index i
		}
		// A pixel-array offset pointing at the palette means the palette
		// was not counted: Pillow skips it, and so do we.
		if off == int64(14+hsize) {
			off += int64(palEntry * colors)
		}
		pos += palEntry * colors
	}
	if off == 0 { // no offset given: the pixels follow what was read
		off = int64(pos)
	}
	if off >= int64(len(src)) {
		return bmpErr(Truncated, "BMP data ends before its pixel array (at byte %d of %d)", off, len(src))
	}
	b.off = int(off)
	data := int64(len(src)) - off
	switch b.comp {
	case bmpRLE8, bmpRLE4:
		if w*h > rleMaxPixels(data, w) {
			return bmpErr(Corrupt, "BMP RLE data (%d bytes) is too short for %dx%d pixels, even all in delta codes", data, w, h)
		}
	default:
		// The last row's padding may be missing (Pillow reads such files).
		b.stride = int(((w*int64(b.bpp) + 31) / 32) * 4)
		need := int64(b.stride)*(h-1) + (w*int64(b.bpp)+7)/8
		if need > data {
			return bmpErr(Truncated, "BMP pixel array is %d bytes, %dx%d at %d bits needs %d", data, w, h, b.bpp, need)
		}
	}
	return nil
}

// layout checks bit depth and compression and reads the bitfield masks,
// advancing pos past masks stored after a 40-byte header.
func (b *bmpInfo) layout(src, hd []byte, pos *int) error {
	le := binary.LittleEndian
	switch b.bpp {
	case 1, 2, 4, 8, 16, 24, 32:
	default:
		return bmpErr(Unsupported, "BMP of %d bits per pixel is not supported", b.bpp)
	}
	switch b.comp {
	case bmpRGB:
		switch b.bpp {
		case 16:
			b.masks = [4]uint32{0x7C00, 0x3E0, 0x1F, 0}
		case 24, 32:
			b.masks = [4]uint32{0xFF0000, 0xFF00, 0xFF, 0}
		}
		return nil
	case bmpRLE8, bmpRLE4:
		if want := map[int]int{bmpRLE8: 8, bmpRLE4: 4}[b.comp]; b.bpp != want {
			return bmpErr(Corrupt, "BMP RLE%d image has %d bits per pixel", want, b.bpp)
		}
		// Windows forbids top-down RLE; Pillow reads it top-down, as do we.
		return nil
	case bmpBitfields, bmpAlphaBF:
		if len(hd) == 64 {
			return bmpErr(Unsupported, "OS/2 BMP compression %d (Huffman 1D) is not supported", b.comp)
		}
		if b.bpp < 16 {
			return bmpErr(Corrupt, "BMP bitfields with %d bits per pixel", b.bpp)
		}
		n := 3
		if b.comp == bmpAlphaBF {
			n = 4
		}
		var m []byte
		switch {
		case len(hd) >= 56:
			m, n = hd[40:56], 4
		case len(hd) >= 52:
			m, n = hd[40:52], 3 // V2: no alpha mask, whatever the compression
		default: // masks follow a 40-byte header
			if *pos+4*n > len(src) {
				return bmpErr(Truncated, "BMP data ends early, in its bitfield masks")
			}
			m = src[*pos : *pos+4*n]
			*pos += 4 * n
		}
		for i := 0; i < n; i++ {
			b.masks[i] = le.Uint32(m[4*i:])
		}
		if b.bpp == 32 && b.masks == [4]uint32{} {
			b.masks = [4]uint32{0xFF0000, 0xFF00, 0xFF, 0xFF000000} // Pillow: BGRA
		}
		// Otherwise an empty colour mask is no layout (Pillow refuses it:
		// "Unsupported BMP bitfields layout"), not a black channel.
		if b.masks[0] == 0 || b.masks[1] == 0 || b.masks[2] == 0 {
			return bmpErr(Unsupported, "BMP bitfield masks (%#x, %#x, %#x) leave a colour channel empty",
				b.masks[0], b.masks[1], b.masks[2])
		}
		if b.bpp != 32 {
			b.masks[3] = 0 // Pillow keeps alpha of 32-bit images only
		}
		b.alpha = b.masks[3] != 0
		for i, m := range b.masks {
			if m != 0 && (bits.OnesCount64(uint64(m>>bits.TrailingZeros32(m))+1) != 1 || (b.bpp < 32 && m>>b.bpp != 0)) {
				return bmpErr(Unsupported, "BMP bitfield mask %d (%#x) is not a run of bits within the pixel", i, m)
			}
		}
		return nil
	case bmpJPEG:
		if len(hd) == 64 {
			return bmpErr(Unsupported, "OS/2 BMP compression 4 (RLE24) is not supported")
		}
		return bmpErr(Unsupported, "BMP with an embedded JPEG is not supported")
	case bmpPNG:
		return bmpErr(Unsupported, "BMP with an embedded PNG is not supported")
	}
	return bmpErr(Unsupported, "BMP compression %d is not supported", b.comp)
}

// readPalette fills the lookup table: entries are B, G, R (and a reserved
// byte). Entries the file lacks, and indices past the palette, are opaque
// black, as in Pillow. It returns how many entries the file holds.
func (b *bmpInfo) readPalette(src []byte, pos, entry, colors int) int {
	for i := range b.lut {
		b.lut[i] = [4]byte{0, 0, 0, 0xFF}
	}
	for i := 0; i < min(colors, 256); i++ {
		p := pos + i*entry
		if p+3 > len(src) {
			return i
		}
		b.lut[i] = [4]byte{src[p+2], src[p+1], src[p], 0xFF}
	}
	return min(colors, 256)
}

// greyRamp reports a palette whose entry i is grey i for every index:
// Pillow then opens the image as "L" rather than "P".
func (b *bmpInfo) greyRamp(colors int) bool {
	for i := range colors {
		if b.lut[i] != [4]byte{byte(i), byte(i), byte(i), 0xFF} {
			return false
		}
	}
	return true
}

func (d *bmpDecoder) Decode(dst, src []byte, h Header, o Options) error {
	b := &d.info
	if err := b.parse(src, 0); err != nil {
		return err
	}
	if b.w != h.Width || b.h != h.Height {
		return bmpErr(Corrupt, "BMP header changed between reads")
	}
	c := o.color()
	ch := c.Channels()
	d.row = reuse.Room(d.row, 4*b.w)
	if b.comp == bmpRLE8 || b.comp == bmpRLE4 {
		d.idx = reuse.Room(d.idx, b.w*b.h)
		if err := rleDecode(d.idx, src, b.off, b.w, b.comp == bmpRLE4); err != nil {
			return err
		}
	}
	for y := 0; y < b.h; y++ {
		sy := b.h - 1 - y // stored row of output row y
		if b.topDown {
			sy = y
		}
		if b.comp == bmpRLE8 || b.comp == bmpRLE4 {
			for x, i := range d.idx[sy*b.w : (sy+1)*b.w] {
				copy(d.row[4*x:4*x+4], b.lut[i][:])
			}
		} else {
			p := b.off + sy*b.stride
			b.unpackRow(d.row, src[p:min(p+b.stride, len(src))])
		}
		packRGBA(dst[y*b.w*ch:(y+1)*b.w*ch], d.row, c)
	}
	return nil
}

// unpackRow expands one stored row to RGBA.
func (b *bmpInfo) unpackRow(row, s []byte) {
	w := b.w
	switch b.bpp {
	case 1, 2, 4:
		per := 8 / b.bpp
		mask := byte(1<<b.bpp - 1)
		for x := 0; x < w; x++ {
			shift := 8 - b.bpp*(x%per+1)
			copy(row[4*x:4*x+4], b.lut[s[x/per]>>shift&mask][:])
		}
		return
	case 8:
		for x, i := range s[:w] {
			copy(row[4*x:4*x+4], b.lut[i][:])
		}
		return
	}
	bpp := b.bpp / 8
	if at, ok := b.byteFields(); ok {
		// Every field is one whole byte (BGR, BGRX, BGRA, RGBA, ...).
		for x := 0; x < w; x++ {
			p := s[bpp*x : bpp*x+bpp : bpp*x+bpp]
			r := row[4*x : 4*x+4 : 4*x+4]
			r[0], r[1], r[2], r[3] = p[at[0]], p[at[1]], p[at[2]], 0xFF
			if at[3] >= 0 {
				r[3] = p[at[3]]
			}
		}
		return
	}
	f := &b.fields
	for x := 0; x < w; x++ {
		var v uint32
		for k := bpp - 1; k >= 0; k-- {
			v = v<<8 | uint32(s[bpp*x+k])
		}
		r := row[4*x : 4*x+4 : 4*x+4]
		r[0], r[1], r[2], r[3] = f[0].get(v), f[1].get(v), f[2].get(v), 0xFF
		if b.alpha {
			r[3] = f[3].get(v)
		}
	}
}

// byteFields reports where each channel's byte is in a pixel when every
// mask is a whole byte (-1: no alpha).
func (b *bmpInfo) byteFields() (at [4]int, ok bool) {
	for i, m := range b.masks {
		at[i] = -1
		if m == 0 && (i == 3 || b.bpp == 16) {
			continue
		}
		k := bits.TrailingZeros32(m) / 8
		if m != 0xFF<<(8*k) || 8*k >= b.bpp {
			return at, false
		}
		at[i] = k
	}
	if !b.alpha {
		at[3] = -1
	}
	return at, at[0] >= 0 && at[1] >= 0 && at[2] >= 0
}

// field extracts one bitfield and scales it to 8 bits, through a table
// for fields of up to 8 bits.
type field struct {
	mask  uint32
	shift int
	max   uint32 // 2^n - 1 for an n-bit field; 0 for an absent one
	lut   [256]byte
}

func (f *field) set(m uint32) {
	*f = field{}
	if m == 0 {
		return
	}
	f.mask, f.shift = m, bits.TrailingZeros32(m)
	f.max = m >> f.shift
	if f.max <= 0xFF {
		for v := uint32(0); v <= f.max; v++ {
			f.lut[v] = byte(v * 255 / f.max)
		}
	}
}

func (f *field) get(v uint32) byte {
	switch {
	case f.max == 0:
		return 0
	case f.max <= 0xFF:
		return f.lut[(v&f.mask)>>f.shift]
	}
	return byte(uint64((v&f.mask)>>f.shift) * 255 / uint64(f.max))
}
