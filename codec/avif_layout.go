package codec

import "encoding/binary"

// From a parsed AVIF to what is to be decoded: the primary image's AV1
// items (one, or a grid's tiles), its alpha items, size, orientation and
// colour description.

// avifAlphaURNs are the auxiliary types that mark an alpha plane (AVIF's,
// and the HEVC one libavif also accepts).
var avifAlphaURNs = []string{"urn:mpeg:mpegB:cicp:systems:auxiliary:alpha", "urn:mpeg:hevc:2015:auxid:1"}

// avifNCLX is a colr box's nclx colour description.
type avifNCLX struct {
	primaries, transfer, matrix uint16
	full                        bool
}

// avifLayout is the image an AVIF's primary item describes.
type avifLayout struct {
	meta       *avifMeta
	w, h       int // output size
	cols, rows int // 1×1 unless a grid
	tileW      int
	tileH      int
	color      []*avifItem // cols·rows AV1 items, row-major
	alpha      []*avifItem // same layout, or nil
	orient     int         // irot/imir as the EXIF orientation
	tiles      int         // len(color)
	hasAlpha   bool        // alpha != nil
	nclx       *avifNCLX   // nil: take the AV1 sequence header's
}

// parseAVIF reads src's boxes and resolves its primary image; it reads no
// AV1 data.
func parseAVIF(src []byte) (*avifLayout, *Error) {
	boxes, err := bmffBoxes(src, true, avifMaxBoxes)
	if err != nil {
		return nil, err
	}
	var meta []byte
	moov := false
	for _, b := range boxes {
		switch b.typ {
		case "meta":
			if meta == nil {
				meta = b.body
			}
		case "moov":
			moov = true
		}
	}
	if meta == nil {
		if moov {
			return nil, formatErr(Unsupported, "AVIF", "AVIF image sequence without a still image is not supported")
		}
		return nil, avifCorrupt("no meta box")
	}
	m, err := parseAVIFMeta(meta)
	if err != nil {
		return nil, err
	}
	prim := m.item(m.primary)
	if prim == nil || prim.typ == "" {
		if moov {
			return nil, formatErr(Unsupported, "AVIF", "AVIF image sequence without a still image is not supported")
		}
		return nil, avifCorrupt("primary item %d is not described", m.primary)
	}
	l := &avifLayout{meta: m, orient: avifOrientation(m, prim)}
	if l.color, err = l.tileItems(prim, src, true); err != nil {
		return nil, err
	}
	l.tiles = len(l.color)
	if a := m.alphaOf(prim.id); a != nil {
		for _, id := range m.prem {
			if id == prim.id {
				// Pillow's libavif would divide the colour by alpha.
				return nil, formatErr(Unsupported, "AVIF", "AVIF premultiplied alpha ('prem') is not supported")
			}
		}
		if l.alpha, err = l.tileItems(a, src, false); err != nil {
			return nil, err
		}
		l.hasAlpha = true
	}
	l.nclx = m.nclx(prim)
	if l.nclx == nil {
		l.nclx = m.nclx(l.color[0])
	}
	return l, nil
}

// tileItems resolves an image item into its AV1 items: itself, or a grid's
// tiles. The colour image sets the layout; alpha must share it.
func (l *avifLayout) tileItems(it *avifItem, src []byte, color bool) ([]*avifItem, *Error) {
	m := l.meta
	cols, rows, w, h := 1, 1, 0, 0
	tiles := []*avifItem{it}
	switch it.typ {
	case "av01":
		var err *Error
		if w, h, err = m.ispe(it); err != nil {
			return nil, err
		}
	case "grid":
		parts, total, err := m.parts(it, src)
		if err != nil {
			return nil, err
		}
		c := newPartCursor(parts, total)
		g := c.peek(make([]byte, 12)) // an ImageGrid is 8 or 12 bytes
		if len(g) < 8 || g[0] != 0 {
			return nil, avifCorrupt("grid item %d has a bad ImageGrid", it.id)
		}
		rows, cols = int(g[2])+1, int(g[3])+1
		if rows*cols > avifMaxTiles {
			return nil, formatErr(TooLarge, "AVIF", "AVIF grid item %d has %dx%d = %d tiles, over the limit of %d",
				it.id, cols, rows, rows*cols, avifMaxTiles)
		}
		if g[1]&1 == 0 {
			w, h = int(binary.BigEndian.Uint16(g[4:])), int(binary.BigEndian.Uint16(g[6:]))
		} else if len(g) >= 12 {
			w, h = int(binary.BigEndian.Uint32(g[4:])), int(binary.BigEndian.Uint32(g[8:]))
		} else {
			return nil, avifCorrupt("grid item %d has a bad ImageGrid", it.id)
		}
		ids := m.dimg[it.id]
		if len(ids) != rows*cols {
			return nil, avifCorrupt("grid item %d is %dx%d tiles but references %d", it.id, cols, rows, len(ids))
		}
		tiles = make([]*avifItem, len(ids)) // at most avifMaxItems: refs are capped
		for i, id := range ids {
			if tiles[i] = m.item(id); tiles[i] == nil || tiles[i].typ != "av01" {
				return nil, avifCorrupt("grid item %d's tile %d is not an AV1 image item", it.id, id)
			}
		}
	default:
		return nil, formatErr(Unsupported, "AVIF", "AVIF primary item of type %q is not supported", it.typ)
	}
	if w < 1 || h < 1 {
		return nil, avifCorrupt("item %d has an empty size %dx%d", it.id, w, h)
	}
	if err := avifSideLimit(w, h); err != nil {
		return nil, err
	}
	tw, th := w, h
	if it.typ == "grid" {
		var err *Error
		if tw, th, err = m.ispe(tiles[0]); err != nil {
			return nil, err
		}
		for _, t := range tiles[1:] {
			if w2, h2, err := m.ispe(t); err != nil || w2 != tw || h2 != th {
				return nil, avifCorrupt("grid item %d's tiles differ in size", it.id)
			}
		}
		// Tiles must cover the output with less than a tile to spare, as
		// in libavif; that also bounds the tiles' total area (work) to
		// under 4 times the output's, with 1×N grids held to the same.
		if tw*(cols-1) >= w || tw*cols < w || th*(rows-1) >= h || th*rows < h ||
			uint64(tw*th)*uint64(len(tiles)) > 4*uint64(w)*uint64(h) {
			return nil, avifCorrupt("grid item %d's %dx%d tiles of %dx%d do not fit its %dx%d output", it.id, cols, rows, tw, th, w, h)
		}
	}
	for _, t := range append(tiles, it) {
		if t.unknownEssential != "" {
			// libavif skips such an item; as the primary image or a tile
			// of it, Pillow has nothing to decode.
			return nil, formatErr(Unsupported, "AVIF", "AVIF item %d has an essential %q property, which is not supported", t.id, t.unknownEssential)
		}
	}
	for _, t := range tiles {
		if m.prop(t, "av1C") == nil {
			return nil, avifCorrupt("AV1 item %d has no av1C property", t.id)
		}
	}
	if color {
		l.w, l.h, l.cols, l.rows, l.tileW, l.tileH = w, h, cols, rows, tw, th
	} else if w != l.w || h != l.h || cols != l.cols || rows != l.rows || tw != l.tileW || th != l.tileH {
		return nil, formatErr(Unsupported, "AVIF", "AVIF alpha plane laid out unlike the colour image (%dx%d in %dx%d tiles, colour %dx%d in %dx%d)",
			w, h, cols, rows, l.w, l.h, l.cols, l.rows)
	}
	return tiles, nil
}

// ispe is the item's image spatial extents, which AVIF requires.
func (m *avifMeta) ispe(it *avifItem) (w, h int, err *Error) {
	p := m.prop(it, "ispe")
	r := bmffReader{b: p}
	r.fullBox()
	w, h = int(r.u32()), int(r.u32())
	if p == nil || r.bad {
		return 0, 0, avifCorrupt("item %d has no ispe size", it.id)
	}
	if w < 1 || h < 1 {
		return 0, 0, avifCorrupt("item %d has an empty size %dx%d", it.id, w, h)
	}
	return w, h, avifSideLimit(w, h)
}

// avifSideLimit refuses sizes over avifMaxSide a side, early: it keeps
// every product of sizes and counts here far from overflow.
func avifSideLimit(w, h int) *Error {
	if w > avifMaxSide || h > avifMaxSide {
		return formatErr(TooLarge, "AVIF", "AVIF image or tile of %dx%d is over %d pixels a side", w, h, avifMaxSide)
	}
	return nil
}

// alphaOf is the item that is an alpha plane of item id, or nil.
func (m *avifMeta) alphaOf(id uint32) *avifItem {
	for _, ref := range m.auxl {
		if ref[1] != id {
			continue
		}
		a := m.item(ref[0])
		if a == nil || a.unknownEssential != "" {
			continue // libavif ignores items it cannot decode
		}
		r := bmffReader{b: m.prop(a, "auxC")}
		r.fullBox()
		urn := r.cstring()
		for _, u := range avifAlphaURNs {
			if !r.bad && urn == u {
				return a
			}
		}
	}
	return nil
}

// nclx is the item's colr nclx description, or nil (ICC profiles are not
// applied).
func (m *avifMeta) nclx(it *avifItem) *avifNCLX {
	for _, i := range it.props {
		if int(i) > len(m.props) || m.props[i-1].typ != "colr" {
			continue
		}
		r := bmffReader{b: m.props[i-1].body}
		if r.fourcc() != "nclx" {
			continue
		}
		c := avifNCLX{primaries: uint16(r.u16()), transfer: uint16(r.u16()), matrix: uint16(r.u16()), full: r.u8()&0x80 != 0}
		if !r.bad {
			return &c
		}
	}
	return nil
}

// avifOrientation is the EXIF orientation equivalent to the item's irot
// (anticlockwise quarter turns) then imir, as Pillow 13 reports it (and
// writes it): imir 1 swaps left and right, 0 top and bottom (measured by
// saving each EXIF orientation with Pillow and reading it back).
func avifOrientation(m *avifMeta, it *avifItem) int {
	rot := 0
	if p := m.prop(it, "irot"); len(p) > 0 {
		rot = int(p[0] & 3)
	}
	p := m.prop(it, "imir")
	if p == nil {
		return [4]int{1, 8, 3, 6}[rot]
	}
	if len(p) > 0 && p[0]&1 == 1 {
		return [4]int{2, 7, 4, 5}[rot]
	}
	return [4]int{4, 5, 2, 7}[rot]
}
