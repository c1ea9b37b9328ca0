package hostile

import (
	"encoding/binary"
	"slices"
)

func init() {
	Register(Case{
		Name:   "tiff-many-tags",
		Format: "TIFF",
		Row:    "TIFF, an 8x8 image with 4,000 unknown tags of 1 MiB each, all pointing at the same bytes (libtiff copies every tag's data)",
		Make: func() []byte {
			return TIFFManyTags(4000, 1<<20)
		},
		Refused: []string{"too large", "TIFF", "tags"},
	})
	Register(Case{
		Name:   "tiff-tag-data-500x1m",
		Format: "TIFF",
		Row:    "TIFF, an 8x8 image with 500 unknown tags of 1 MiB each on the same bytes: under the tag count, 500 MiB of tag data from a 1 MB file",
		Make: func() []byte {
			return TIFFManyTags(500, 1<<20)
		},
		Refused: []string{"too large", "TIFF", "tag data"},
	})
	Register(Case{
		Name:   "tiff-jpeg-8192-scans99",
		Format: "TIFF",
		Row:    "TIFF with JPEG compression, 8192x8192, 128 strips of 99 progressive scans each",
		Make: func() []byte {
			return TIFFJPEGScans(8192, 8192, 64, 99)
		},
		Refused: []string{"too large", "TIFF", "work limit"},
	})
}

// TIFF field types, as the directory writes them.
const (
	TIFFByte      = 1
	TIFFASCII     = 2
	TIFFShort     = 3
	TIFFLong      = 4
	TIFFUndefined = 7
)

// TIFFWriter assembles a little-endian classic TIFF of one directory: data
// first (Data), then the directory, which Bytes writes sorted by tag.
type TIFFWriter struct {
	b       []byte
	entries [][12]byte
}

// NewTIFF starts a TIFF; its header's directory offset is set by Bytes.
func NewTIFF() *TIFFWriter { return &TIFFWriter{b: []byte("II*\x00\x00\x00\x00\x00")} }

// Data appends p at an even offset and returns that offset.
func (t *TIFFWriter) Data(p []byte) uint32 {
	if len(t.b)%2 == 1 {
		t.b = append(t.b, 0)
	}
	off := uint32(len(t.b))
	t.b = append(t.b, p...)
	return off
}

// Entry adds a directory entry whose value field is v: the value itself
// when it fits in 4 bytes (a SHORT in the low half), else an offset.
func (t *TIFFWriter) Entry(tag, typ uint16, count, v uint32) {
	var e [12]byte
	le := binary.LittleEndian
	le.PutUint16(e[0:], tag)
	le.PutUint16(e[2:], typ)
	le.PutUint32(e[4:], count)
	if typ == TIFFShort && count == 1 {
		le.PutUint16(e[8:], uint16(v))
	} else {
		le.PutUint32(e[8:], v)
	}
	t.entries = append(t.entries, e)
}

// Short and Long add one-value entries.
func (t *TIFFWriter) Short(tag uint16, v uint16) { t.Entry(tag, TIFFShort, 1, uint32(v)) }
func (t *TIFFWriter) Long(tag uint16, v uint32)  { t.Entry(tag, TIFFLong, 1, v) }

// Shorts adds an array of SHORTs, in place when it fits.
func (t *TIFFWriter) Shorts(tag uint16, vs ...uint16) {
	var p []byte
	for _, v := range vs {
		p = binary.LittleEndian.AppendUint16(p, v)
	}
	if len(p) <= 4 {
		p = append(p, 0, 0, 0, 0)
		t.Entry(tag, TIFFShort, uint32(len(vs)), binary.LittleEndian.Uint32(p))
		return
	}
	t.Entry(tag, TIFFShort, uint32(len(vs)), t.Data(p))
}

// Longs adds an array of LONGs, in place when there is one.
func (t *TIFFWriter) Longs(tag uint16, vs ...uint32) {
	if len(vs) == 1 {
		t.Long(tag, vs[0])
		return
	}
	var p []byte
	for _, v := range vs {
		p = binary.LittleEndian.AppendUint32(p, v)
	}
	t.Entry(tag, TIFFLong, uint32(len(vs)), t.Data(p))
}

// Bytes writes the directory and returns the file.
func (t *TIFFWriter) Bytes() []byte {
	slices.SortStableFunc(t.entries, func(a, b [12]byte) int {
		return int(binary.LittleEndian.Uint16(a[:])) - int(binary.LittleEndian.Uint16(b[:]))
	})
	off := t.Data(nil)
	b := binary.LittleEndian.AppendUint16(t.b, uint16(len(t.entries)))
	for _, e := range t.entries {
		b = append(b, e[:]...)
	}
	b = binary.LittleEndian.AppendUint32(b, 0)
	binary.LittleEndian.PutUint32(b[4:], off)
	return b
}

// TIFFStrips adds the tags of a w×h image of spp 8-bit samples stored in
// the given strips of rps rows, compressed with comp, photometric ph.
func (t *TIFFWriter) TIFFStrips(w, h, rps uint32, spp, comp, ph uint16, strips [][]byte) {
	t.Long(256, w)
	t.Long(257, h)
	bps := make([]uint16, spp)
	for i := range bps {
		bps[i] = 8
	}
	t.Shorts(258, bps...)
	t.Short(259, comp)
	t.Short(262, ph)
	t.Short(277, spp)
	t.Long(278, rps)
	var offs, counts []uint32
	for _, s := range strips {
		offs = append(offs, t.Data(s))
		counts = append(counts, uint32(len(s)))
	}
	t.Longs(273, offs...)
	t.Longs(279, counts...)
}

// TIFFManyTags is an 8×8 grey image whose directory also holds n unknown
// tags (60000 up) of size bytes each, all pointing at the same data: a
// file of about size + 12n bytes from which libtiff copies n × size.
func TIFFManyTags(n, size int) []byte {
	t := NewTIFF()
	data := t.Data(make([]byte, size))
	t.TIFFStrips(8, 8, 8, 1, 1, 1, [][]byte{make([]byte, 64)})
	for i := 0; i < n; i++ {
		t.Entry(uint16(60000+i%5000), TIFFUndefined, uint32(size), data)
	}
	return t.Bytes()
}

// TIFFJPEGScans is a w×h grey TIFF with JPEG compression (7), in strips
// of rps rows, each strip a progressive JPEG of the given number of scans
// (a DC scan, then one-coefficient AC scans) whose data is near empty:
// every AC scan is a single end-of-band run. The tables are in
// JPEGTables, as libtiff writes them. Its cost is scans × pixels, its size
// about a bit per 8×8 block (the DC scan).
func TIFFJPEGScans(w, h, rps uint32, scans int) []byte {
	t := NewTIFF()
	var strips [][]byte
	for y := uint32(0); y < h; y += rps {
		strips = append(strips, jpegStrip(int(w), int(min(rps, h-y)), scans))
	}
	t.TIFFStrips(w, h, rps, 1, 7, 1, strips)
	tables := TIFFJPEGTables()
	t.Entry(347, TIFFUndefined, uint32(len(tables)), t.Data(tables))
	return t.Bytes()
}

// TIFFJPEGTables is an abbreviated JPEG holding the tables jpegStrip's scans
// use: a flat quantization table, a DC table of the one category 0 (code
// "0"), and an AC table of the end-of-band runs EOB0..EOB14 (4-bit codes).
func TIFFJPEGTables() []byte {
	b := []byte{0xFF, 0xD8}
	q := []byte{0xFF, 0xDB, 0, 67, 0}
	for i := 0; i < 64; i++ {
		q = append(q, 1)
	}
	b = append(b, q...)
	dc := []byte{0xFF, 0xC4, 0, 0, 0x00, 1}
	dc = append(dc, make([]byte, 15)...)
	dc = append(dc, 0)
	dc[3] = byte(len(dc) - 2)
	b = append(b, dc...)
	ac := []byte{0xFF, 0xC4, 0, 0, 0x10, 0, 0, 0, 15}
	ac = append(ac, make([]byte, 12)...)
	for r := 0; r <= 14; r++ {
		ac = append(ac, byte(r<<4))
	}
	ac[3] = byte(len(ac) - 2)
	b = append(b, ac...)
	return append(b, 0xFF, 0xD9)
}

// jpegBits writes entropy-coded bits MSB first, stuffing 0x00 after 0xFF.
type jpegBits struct {
	b    []byte
	acc  uint32
	nacc uint
}

func (w *jpegBits) put(v uint32, n uint) {
	for n > 0 {
		n--
		w.acc = w.acc<<1 | (v>>n)&1
		w.nacc++
		if w.nacc == 8 {
			w.b = append(w.b, byte(w.acc))
			if byte(w.acc) == 0xFF {
				w.b = append(w.b, 0)
			}
			w.acc, w.nacc = 0, 0
		}
	}
}

func (w *jpegBits) flush() []byte {
	for w.nacc != 0 {
		w.put(1, 1)
	}
	return w.b
}

// jpegStrip is one strip's progressive grey JPEG (tables omitted), w×h.
func jpegStrip(w, h, scans int) []byte {
	b := []byte{0xFF, 0xD8, 0xFF, 0xC2, 0, 11, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 1, 1, 0x11, 0}
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	sos := func(ss, se, ahal byte) {
		b = append(b, 0xFF, 0xDA, 0, 8, 1, 1, 0x00, ss, se, ahal)
	}
	// DC first: every block's difference is category 0.
	sos(0, 0, 0)
	var dc jpegBits
	for i := 0; i < blocks; i++ {
		dc.put(0, 1)
	}
	b = append(b, dc.flush()...)
	// Then AC scans of one coefficient each, in pairs: the first pass of
	// its high bits (Al 1) and the refinement of its last bit, so that the
	// image is complete when the count is odd. Past coefficient 63 the
	// pairs repeat (libjpeg warns and decodes them all).
	for s := 1; s < scans; s++ {
		k := byte(1 + (s-1)/2%63)
		ahal := byte(0x01)
		if (s-1)%2 == 1 {
			ahal = 0x10
		}
		sos(k, k, ahal)
		var ac jpegBits
		for left := blocks; left > 0; {
			run := min(left, 32767)
			r := uint(0)
			for 1<<(r+1) <= run {
				r++
			}
			ac.put(uint32(r), 4) // EOBr's code is r in 4 bits
			ac.put(uint32(run-1<<r), r)
			left -= run
		}
		b = append(b, ac.flush()...)
	}
	return append(b, 0xFF, 0xD9)
}
