package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Limits of a TIFF's first directory, checked by walking it in Go before
// libtiff reads it: libtiff copies the data of every tag it reads (known or
// not) and keeps it until the handle closes, with no cumulative cap, and
// tags may all point at the same bytes, so a 1 MB file can make it copy
// gigabytes.
const (
	// tiffMaxTags bounds the first directory's entries. Real files have
	// 10 to 40 (a camera's DNG about 100; EXIF and GPS tags sit in their
	// own directories, which are not read); libtiff itself takes up to
	// 4096, but registers each unknown tag by re-sorting its field table,
	// so reading the directory costs the square of their number: 2,000
	// tiny unknown tags take 0.2 s, 4,000 near a second.
	tiffMaxTags = 512

	// tiffMinTagData is the least total tag data (the bytes libtiff copies
	// out of the directory) allowed: the limit is the file's size or this,
	// whichever is more. Tags that do not overlap hold at most the file;
	// real files' largest tags (ICC profiles, XMP, Photoshop resources) are
	// a few MB. Only tags pointing at the same bytes exceed the file.
	tiffMinTagData = 16 << 20

	// tiffMaxStriles bounds the strips or tiles of the image: libtiff
	// keeps two 8-byte offsets for each, and decoding each has a fixed cost.
	// A 64 MP image in 16×16 tiles has 262,144; a strip per row of a
	// 65,535-row scan 65,535.
	tiffMaxStriles = 1 << 20

	// The fixed decode work of a strip or tile, beyond its samples
	// (measured: about 0.7 µs a strip for uncompressed or LZW, 10 µs
	// for a JPEG strip, which libjpeg sets up afresh).
	tiffStripWork     = 2 << 10
	tiffJPEGStripWork = 32 << 10
	// tiffJPEGByteWork is the work per byte of a JPEG strip's stream:
	// libjpeg reads a strip's bytes up to its EOI, and strips may overlap,
	// so their bytes add up past the file's. (About 0.5 ns a byte, what
	// libjpeg's marker search costs; scanJPEG's walk of them is faster.)
	tiffJPEGByteWork = 2

	// tiffJPEGMaxScans is the most scans a JPEG strip or tile may have:
	// libtiff's own limit (LIBTIFF_JPEG_MAX_ALLOWED_SCAN_NUMBER, 100 by
	// default), which stops a strip at scan 100 only after decoding the
	// 99 before it. Pillow's libtiff has it too.
	tiffJPEGMaxScans = 99

	// tiffEntryMemory is what libtiff keeps per directory entry beside
	// the data: the entry, an unknown tag's field definition and name,
	// the value's header.
	tiffEntryMemory = 128
)

// tiffEntry is one entry of a directory, as the file holds it.
type tiffEntry struct {
	tag, typ uint16
	count    uint32
	pos      int // where the value lies: in the entry itself or at its offset
	ok       bool
}

// tiffIFD is what the walk of the first directory found.
type tiffIFD struct {
	le           bool
	entries      int
	tagData      int64 // bytes of tag data libtiff copies and keeps
	maxTag       int64 // the largest tag's: read once more while being copied
	width        uint32
	height       uint32
	spp          uint32
	bps          uint32
	comp         uint32
	photometric  int // -1: absent
	planar       uint32
	rps          uint32
	hasRPS       bool
	tw, th       uint32
	tiled        bool
	striles      int64     // strips or tiles, as libtiff counts them
	offs, counts tiffEntry // of the strips or the tiles, as tiled says
	colorMap     tiffEntry
	strips       [2]tiffEntry // StripOffsets, StripByteCounts
	tiles        [2]tiffEntry // TileOffsets, TileByteCounts
}

func tiffTypeSize(typ uint16) int64 {
	switch typ {
	case 1, 2, 6, 7: // BYTE, ASCII, SBYTE, UNDEFINED
		return 1
	case 3, 8: // SHORT, SSHORT
		return 2
	case 4, 9, 11, 13: // LONG, SLONG, FLOAT, IFD
		return 4
	case 5, 10, 12, 16, 17, 18: // RATIONAL, SRATIONAL, DOUBLE, LONG8, SLONG8, IFD8
		return 8
	}
	return 0 // libtiff reads no data of an unknown type
}

func (d *tiffIFD) u16(b []byte, i int) uint32 {
	if d.le {
		return uint32(binary.LittleEndian.Uint16(b[i:]))
	}
	return uint32(binary.BigEndian.Uint16(b[i:]))
}

func (d *tiffIFD) u32(b []byte, i int) uint32 {
	if d.le {
		return binary.LittleEndian.Uint32(b[i:])
	}
	return binary.BigEndian.Uint32(b[i:])
}

// value is the i-th value of an integer entry (SHORT, LONG, LONG8, BYTE),
// false when it is not in the file.
func (d *tiffIFD) value(b []byte, e tiffEntry, i int) (uint64, bool) {
	if !e.ok || i < 0 || uint32(i) >= e.count {
		return 0, false
	}
	sz := int(tiffTypeSize(e.typ))
	p := e.pos + i*sz
	if sz == 0 || p < 0 || p+sz > len(b) {
		return 0, false
	}
	switch e.typ {
	case 1:
		return uint64(b[p]), true
	case 3:
		return uint64(d.u16(b, p)), true
	case 4:
		return uint64(d.u32(b, p)), true
	case 16:
		if d.le {
			return binary.LittleEndian.Uint64(b[p:]), true
		}
		return binary.BigEndian.Uint64(b[p:]), true
	}
	return 0, false
}

// walkTIFF reads the first directory of a classic TIFF the way libtiff
// will, and refuses it when the directory itself is over the limits
// above. A directory that cannot be read is left for libtiff to report
// (zero tiffIFD, nil error).
func walkTIFF(b []byte) (tiffIFD, *Error) {
	d := tiffIFD{photometric: -1, spp: 1, bps: 1, comp: 1, planar: 1}
	if len(b) < 8 {
		return d, nil
	}
	d.le = b[0] == 'I'
	if d.u16(b, 2) != 42 {
		return d, nil
	}
	off := int64(d.u32(b, 4))
	if off+2 > int64(len(b)) {
		return d, nil
	}
	n := int(d.u16(b, int(off)))
	if n > tiffMaxTags {
		return d, formatErr(TooLarge, "TIFF", "TIFF directory has %d tags, over the limit of %d", n, tiffMaxTags)
	}
	p := int(off) + 2
	seen := map[uint16]bool{} // libtiff reads the first of duplicate tags
	for i := 0; i < n && p+12 <= len(b); i, p = i+1, p+12 {
		e := tiffEntry{tag: uint16(d.u16(b, p)), typ: uint16(d.u16(b, p+2)), count: d.u32(b, p+4), pos: p + 8, ok: true}
		d.entries++
		sz := tiffTypeSize(e.typ) * int64(e.count)
		if sz > 4 {
			e.pos = int(d.u32(b, p+8))
		}
		inFile := sz <= 4 || int64(e.pos)+sz <= int64(len(b))
		first := !seen[e.tag]
		seen[e.tag] = true
		switch {
		case !first:
		case e.tag == 256:
			d.width = d.first(b, e)
		case e.tag == 257:
			d.height = d.first(b, e)
		case e.tag == 258:
			d.bps = d.first(b, e)
		case e.tag == 259:
			d.comp = d.first(b, e)
		case e.tag == 262:
			d.photometric = int(d.first(b, e))
		case e.tag == 277:
			d.spp = d.first(b, e)
		case e.tag == 278:
			v, ok := d.value(b, e, 0)
			d.rps, d.hasRPS = uint32(v), ok
		case e.tag == 284:
			d.planar = d.first(b, e)
		case e.tag == 320:
			d.colorMap = e
		case e.tag == 322:
			d.tw, d.tiled = d.first(b, e), true
		case e.tag == 323:
			d.th, d.tiled = d.first(b, e), true
		}
		// Strip and tile offsets and byte counts: libtiff keeps them as
		// 8 bytes a strip or tile, counted by memory().
		switch e.tag {
		case 273, 279, 324, 325:
			if first {
				switch e.tag {
				case 273:
					d.strips[0] = e
				case 279:
					d.strips[1] = e
				case 324:
					d.tiles[0] = e
				case 325:
					d.tiles[1] = e
				}
			}
			continue
		}
		if !inFile {
			continue // libtiff fails to read it, and keeps nothing
		}
		// libtiff widens some known tags' values (BYTE or SHORT to double
		// or float); those hold at most 65,535 values, and are never ASCII
		// or UNDEFINED (the types of the large ones: ICC profiles,
		// JPEGTables; XMP is BYTE, within the count when small).
		if e.count <= 65535 && e.typ != 2 && e.typ != 7 {
			sz = max(sz, 8*int64(e.count))
		}
		d.tagData += sz
		d.maxTag = max(d.maxTag, sz)
	}
	if limit := max(int64(tiffMinTagData), int64(len(b))); d.tagData > limit {
		return d, formatErr(TooLarge, "TIFF",
			"TIFF directory's %d tags hold %d bytes of tag data (libtiff copies every tag's), over the limit of %d (the file's size, at least %d)",
			d.entries, d.tagData, limit, tiffMinTagData)
	}
	d.offs, d.counts = d.strips[0], d.strips[1]
	if d.tiled {
		d.offs, d.counts = d.tiles[0], d.tiles[1]
	}
	if d.hasRPS && d.rps == 0 && !d.tiled {
		// libtiff refuses it ("Bad value 0"), as does Pillow.
		return d, formatErr(Corrupt, "TIFF", "TIFF RowsPerStrip is 0")
	}
	switch {
	case d.width == 0 || d.height == 0:
	case d.tiled && d.tw > 0 && d.th > 0:
		d.striles = ceilDiv(d.width, d.tw) * ceilDiv(d.height, d.th)
	case !d.tiled:
		rps := d.height
		if d.hasRPS && d.rps < d.height {
			rps = d.rps
		}
		d.striles = ceilDiv(d.height, rps)
	}
	if d.planar == 2 {
		d.striles *= int64(d.spp)
	}
	if n := max(d.striles, int64(d.offs.count), int64(d.counts.count)); n > tiffMaxStriles {
		return d, formatErr(TooLarge, "TIFF", "TIFF has %d %s, over the limit of %d", n, d.strileName(), tiffMaxStriles)
	}
	return d, nil
}

// first is an entry's first value, 0 when unreadable.
func (d *tiffIFD) first(b []byte, e tiffEntry) uint32 {
	v, _ := d.value(b, e, 0)
	return uint32(v)
}

func (d *tiffIFD) strileName() string {
	if d.tiled {
		return "tiles"
	}
	return "strips"
}

// memory is what libtiff keeps of the directory: the tag data (and one
// more copy of the largest tag while it is being set), the entries, and
// the strip or tile offsets and byte counts.
func (d *tiffIFD) memory() int64 {
	return d.tagData + d.maxTag + int64(d.entries)*tiffEntryMemory + 16*d.striles
}

// stripBytes is the total length of the strips or tiles, as far as they
// lie in the file.
func (d *tiffIFD) stripBytes(b []byte) int64 {
	var total int64
	for i := 0; int64(i) < d.striles; i++ {
		off, ok1 := d.value(b, d.offs, i)
		n, ok2 := d.value(b, d.counts, i)
		if ok1 && ok2 && off < uint64(len(b)) {
			total += int64(min(n, uint64(len(b))-off))
		}
	}
	return total
}

// tiffJPEGCost is what the JPEG streams of a JPEG-compressed TIFF's strips
// or tiles cost to decode.
type tiffJPEGCost struct {
	work     int64 // of all scans, as scanJPEG counts it
	scans    int   // in all strips
	most     int   // scans in one strip
	coefs    int64 // the largest progressive strip's coefficient buffer
	walked   int   // strips walked
	tooLarge *Error
}

// jpegCost walks every strip's JPEG stream (libtiff feeds JPEGTables to
// libjpeg first, but tables carry no scans: the strip's own stream holds
// all the work) and sums the work of its scans; lim.MaxPixels bounds each
// stream's frame. A strip over tiffJPEGMaxScans or the pixel limit is
// refused, as libtiff and libjpeg would find out only while decoding;
// other faults are left to libjpeg, and the walk counts what came before
// them.
func (d *tiffIFD) jpegCost(b []byte, lim Limits) tiffJPEGCost {
	var c tiffJPEGCost
	for i := 0; int64(i) < d.striles; i++ {
		off, ok1 := d.value(b, d.offs, i)
		n, ok2 := d.value(b, d.counts, i)
		if !ok1 || !ok2 || off > uint64(len(b)) || n > uint64(len(b))-off {
			continue // libtiff reports the strip missing
		}
		s := b[off : off+n]
		if !bytes.HasPrefix(s, []byte{0xFF, 0xD8, 0xFF}) {
			continue // libjpeg refuses it at once
		}
		js, err := scanJPEG(s, Limits{MaxPixels: lim.MaxPixels})
		if js.scans > tiffJPEGMaxScans {
			c.tooLarge = formatErr(TooLarge, "TIFF", "TIFF %s %d: %s JPEG has %d scans, over libtiff's limit of %d",
				d.strileName()[:len(d.strileName())-1], i, js.layout.process(), js.scans, tiffJPEGMaxScans)
			return c
		}
		if err != nil && err.Cause == TooLarge {
			c.tooLarge = formatErr(TooLarge, "TIFF", "TIFF %s %d: %s", d.strileName()[:len(d.strileName())-1], i, err.Msg)
			return c
		}
		c.walked++
		c.work = min(c.work+int64(js.work), 1<<62)
		c.scans += js.scans
		c.most = max(c.most, js.scans)
		if progressive(js.layout.SOF) {
			// libjpeg keeps every coefficient of a progressive image: 2
			// bytes each, 64 a block, MCU padding aside.
			blocks := int64((js.width+7)/8) * int64((js.height+7)/8)
			c.coefs = max(c.coefs, blocks*int64(js.layout.Components)*128)
		}
	}
	return c
}

// checkLimits checks d against lim before libtiff reads the directory: the
// memory its tags and offsets take, and the work of its strips; it
// returns the estimates for Header.
func (d *tiffIFD) checkLimits(b []byte, lim Limits) (work, mem int64, err *Error) {
	mem = d.memory()
	if e := lim.overMemory("TIFF", mem, func() string {
		return fmt.Sprintf("%d tags holding %d bytes of tag data, %d %s",
			d.entries, d.tagData, d.striles, d.strileName())
	}); e != nil {
		return 0, 0, e
	}
	per := int64(tiffStripWork)
	if d.comp == 7 {
		per = tiffJPEGStripWork
	}
	work = d.striles * per
	if d.comp == 7 {
		// The strips' bytes first: overlapping strips could make the walk
		// below read the file many times over.
		n := d.stripBytes(b)
		work = min(work+n*tiffJPEGByteWork, 1<<62)
		if e := lim.overWork("TIFF", work, func() string {
			return fmt.Sprintf("JPEG in %d %s of %d bytes in all, before their scans",
				d.striles, d.strileName(), n)
		}); e != nil {
			return 0, 0, e
		}
		c := d.jpegCost(b, lim)
		if c.tooLarge != nil {
			return 0, 0, c.tooLarge
		}
		work = min(work+c.work, 1<<62)
		mem += c.coefs
		if e := lim.overWork("TIFF", work, func() string {
			return fmt.Sprintf("JPEG in %d %s, %d scans in all, at most %d in one",
				d.striles, d.strileName(), c.scans, c.most)
		}); e != nil {
			return 0, 0, e
		}
	} else if e := lim.overWork("TIFF", work, func() string { return fmt.Sprintf("%d %s", d.striles, d.strileName()) }); e != nil {
		return 0, 0, e
	}
	return work, mem, nil
}

// readColorMap reads a ColorMap of other than 3 × 256 SHORTs, as Pillow
// does: count/3 entries (a remainder ignored), at most 256.
func (d *tiffIFD) readColorMap(b []byte) ([]uint16, error) {
	e := d.colorMap
	if !e.ok || e.count == 0 {
		return nil, formatErr(Corrupt, "TIFF", "TIFF palette image has no ColorMap")
	}
	if e.typ != 3 {
		return nil, formatErr(Unsupported, "TIFF", "TIFF ColorMap of type %d (not SHORT) is not supported", e.typ)
	}
	n := int(e.count / 3)
	if n > 256 {
		return nil, formatErr(Corrupt, "TIFF", "TIFF ColorMap has %d entries, over the 256 of 8-bit samples", n)
	}
	cm := make([]uint16, 3*n)
	for i := range cm {
		v, ok := d.value(b, e, i)
		if !ok {
			return nil, formatErr(Truncated, "TIFF", "TIFF ColorMap lies past the end of the data")
		}
		cm[i] = uint16(v)
	}
	return cm, nil
}

func ceilDiv(a, b uint32) int64 { return (int64(a) + int64(b) - 1) / int64(b) }
