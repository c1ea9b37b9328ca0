package codec

// Parsing an AVIF's meta box (HEIF, ISO/IEC 23008-12): items, where their
// data lies, their references and properties. Every count a forged file
// could inflate is capped here, and every lookup is by a map, so that the
// parse costs time and memory linear in the meta box, and a file over a
// cap is refused from the count it declares, before the entries are read.

const (
	// avifMaxTiles caps a grid's tiles. A 16384×16384 image (libavif's
	// default limit) of 256×256 tiles has 4096; avifenc's grids of
	// images under the pixel limit have far fewer.
	avifMaxTiles = 4096
	// avifMaxItems caps items (infe, iloc and ipma entries each name one):
	// a colour grid, an alpha grid of as many tiles, their two grid items
	// and room for metadata (Exif, XMP, thumbnails).
	avifMaxItems = 2*avifMaxTiles + 64
	// avifMaxAssocs caps ipma's cost: each entry counts 1, with or without
	// properties, and each property it associates 1 more. Coded items
	// carry 3 to 6 properties (av1C, ispe, pixi, colr, irot, imir...);
	// 8 an item on average leaves room without bounding anything real.
	avifMaxAssocs = 8 * avifMaxItems
	// avifMaxRefs caps iref's references: a grid's dimg lists one per
	// tile, alpha grids as many again, then auxl, prem, cdsc.
	avifMaxRefs = avifMaxItems
	// avifMaxProps caps ipco's properties (ipma indexes them in 15 bits;
	// real files hold a few dozen, shared by the items).
	avifMaxProps = 4096
	// avifMaxExtents caps one item's extents (encoders write 1; splitting
	// an item gains nothing but amplification), avifMaxExtentsTotal all
	// of the file's (ones without offset or length fields take no bytes).
	avifMaxExtents      = 64
	avifMaxExtentsTotal = 4 * avifMaxItems
	// avifMaxBoxes caps the boxes in one container.
	avifMaxBoxes = 8192
)

// avifKnownProps are the property types libavif parses (so Pillow's
// decoder knows them): marked essential they are decoded or, where this
// decoder ignores them as Pillow does (clap, pasp, clli, a1op, lsel),
// harmless. An item citing any other type as essential is not decodable
// (ISO/IEC 23008-12 section 10.2.1), as in libavif.
var avifKnownProps = map[string]bool{
	"ispe": true, "auxC": true, "colr": true, "av1C": true, "pasp": true, "clap": true, "irot": true,
	"imir": true, "pixi": true, "a1op": true, "lsel": true, "a1lx": true, "clli": true,
}

// avifExtent is a run of an item's bytes: in the file (construction
// method 0) or in idat (method 1).
type avifExtent struct {
	off, n uint64 // n 0: no bytes (libavif's reading, and Pillow's)
}

type avifItem struct {
	id       uint32
	typ      string // "av01", "grid", "Exif", ...
	located  bool
	idat     bool // construction method 1
	ipmaSeen bool
	extents  []avifExtent
	props    []uint16 // ipco indices, 1-based, in association order
	// unknownEssential is the first property type the item cites as
	// essential that is not in avifKnownProps ("" when none).
	unknownEssential string
}

// avifMeta is the parsed meta box.
type avifMeta struct {
	primary uint32
	items   []avifItem
	index   map[uint32]int // item id → index in items
	props   []bmffBox
	auxl    [][2]uint32 // {from, to}: from is an auxiliary image of to
	dimg    map[uint32][]uint32
	prem    []uint32 // items whose colour is premultiplied by their alpha
	idat    []byte
	extents int // in all of iloc
}

func (m *avifMeta) item(id uint32) *avifItem {
	if i, ok := m.index[id]; ok {
		return &m.items[i]
	}
	return nil
}

// addItem returns the item with id, made when missing. Pointers it
// returns are valid until the next addItem.
func (m *avifMeta) addItem(id uint32, box string) (*avifItem, *Error) {
	if id == 0 {
		// libavif refuses item ID 0 (reserved for the file's primary resource).
		return nil, avifCorrupt("%s box names item ID 0", box)
	}
	if it := m.item(id); it != nil {
		return it, nil
	}
	if len(m.items) >= avifMaxItems {
		return nil, avifTooMany(box, "items", len(m.items)+1, avifMaxItems)
	}
	m.index[id] = len(m.items)
	m.items = append(m.items, avifItem{id: id})
	return &m.items[len(m.items)-1], nil
}

func avifCorrupt(format string, a ...any) *Error {
	return formatErr(Corrupt, "AVIF", "AVIF file is corrupt: "+format, a...)
}

// avifTooMany is the TooLarge error of a structural limit: box declares
// or holds n of what, over limit.
func avifTooMany(box, what string, n, limit int) *Error {
	return formatErr(TooLarge, "AVIF", "AVIF %s box has %d %s, over the limit of %d", box, n, what, limit)
}

// parseAVIFMeta reads a meta box's payload.
func parseAVIFMeta(body []byte) (*avifMeta, *Error) {
	r := bmffReader{b: body}
	r.fullBox()
	if r.bad {
		return nil, avifCorrupt("meta box too short")
	}
	boxes, err := bmffBoxes(r.b, false, avifMaxBoxes)
	if err != nil {
		return nil, err
	}
	m := &avifMeta{dimg: map[uint32][]uint32{}, index: map[uint32]int{}}
	var hdlr string
	for _, b := range boxes {
		var err *Error
		switch b.typ {
		case "hdlr":
			br := bmffReader{b: b.body}
			br.fullBox()
			br.u32() // pre_defined
			hdlr = br.fourcc()
		case "pitm":
			br := bmffReader{b: b.body}
			if v, _ := br.fullBox(); v == 0 {
				m.primary = br.u16()
			} else {
				m.primary = br.u32()
			}
			if br.bad {
				err = avifCorrupt("pitm box too short")
			}
		case "iinf":
			err = m.parseIINF(b.body)
		case "iloc":
			err = m.parseILOC(b.body)
		case "iref":
			err = m.parseIREF(b.body)
		case "iprp":
			err = m.parseIPRP(b.body)
		case "idat":
			m.idat = b.body
		}
		if err != nil {
			return nil, err
		}
	}
	if hdlr != "pict" {
		return nil, avifCorrupt("meta handler is %q, not 'pict'", hdlr)
	}
	return m, nil
}

func (m *avifMeta) parseIINF(body []byte) *Error {
	r := bmffReader{b: body}
	var count uint32
	if v, _ := r.fullBox(); v == 0 {
		count = r.u16()
	} else {
		count = r.u32()
	}
	if r.bad {
		return avifCorrupt("iinf box too short")
	}
	if count > avifMaxItems {
		return avifTooMany("iinf", "items", int(count), avifMaxItems)
	}
	boxes, err := bmffBoxes(r.b, false, avifMaxItems)
	if err != nil {
		return err
	}
	for _, b := range boxes {
		if b.typ != "infe" {
			continue
		}
		br := bmffReader{b: b.body}
		v, _ := br.fullBox()
		if v < 2 {
			continue // no item type: not an image item
		}
		var id uint32
		if v == 2 {
			id = br.u16()
		} else {
			id = br.u32()
		}
		br.u16() // item_protection_index
		typ := br.fourcc()
		if br.bad {
			return avifCorrupt("infe box too short")
		}
		it, err := m.addItem(id, "iinf")
		if err != nil {
			return err
		}
		it.typ = typ
	}
	return nil
}

func (m *avifMeta) parseILOC(body []byte) *Error {
	r := bmffReader{b: body}
	v, _ := r.fullBox()
	if v > 2 {
		return formatErr(Unsupported, "AVIF", "AVIF iloc box version %d is not supported", v)
	}
	sizes := r.u16()
	offSize, lenSize, baseSize, idxSize := int(sizes>>12), int(sizes>>8&15), int(sizes>>4&15), int(sizes&15)
	if v == 0 {
		idxSize = 0
	}
	var count uint32
	if v < 2 {
		count = r.u16()
	} else {
		count = r.u32()
	}
	if !r.bad && count > avifMaxItems {
		return avifTooMany("iloc", "items", int(count), avifMaxItems)
	}
	for i := uint32(0); i < count && !r.bad; i++ {
		var id uint32
		if v < 2 {
			id = r.u16()
		} else {
			id = r.u32()
		}
		method := uint32(0)
		if v > 0 {
			method = r.u16() & 15
		}
		r.u16() // data_reference_index
		base := r.uintN(baseSize)
		n := r.u16()
		if r.bad {
			break
		}
		if method > 1 {
			return formatErr(Unsupported, "AVIF", "AVIF item %d uses iloc construction method %d", id, method)
		}
		if n > avifMaxExtents {
			return formatErr(TooLarge, "AVIF", "AVIF iloc box gives item %d %d extents, over the limit of %d", id, n, avifMaxExtents)
		}
		if m.extents += int(n); m.extents > avifMaxExtentsTotal {
			return avifTooMany("iloc", "extents", m.extents, avifMaxExtentsTotal)
		}
		it, err := m.addItem(id, "iloc")
		if err != nil {
			return err
		}
		if it.located {
			return avifCorrupt("iloc box locates item %d twice", id) // as libavif
		}
		it.located, it.idat = true, method == 1
		it.extents = make([]avifExtent, 0, n)
		for j := uint32(0); j < n; j++ {
			r.uintN(idxSize)
			off, ln := r.uintN(offSize), r.uintN(lenSize)
			if base+off < base {
				return avifCorrupt("item %d extent offset overflows", id)
			}
			it.extents = append(it.extents, avifExtent{off: base + off, n: ln})
		}
	}
	if r.bad {
		return avifCorrupt("iloc box too short")
	}
	return nil
}

func (m *avifMeta) parseIREF(body []byte) *Error {
	r := bmffReader{b: body}
	v, _ := r.fullBox()
	if r.bad {
		return avifCorrupt("iref box too short")
	}
	boxes, err := bmffBoxes(r.b, false, avifMaxRefs)
	if err != nil {
		return err
	}
	refs := 0
	for _, b := range boxes {
		br := bmffReader{b: b.body}
		id := func() uint32 {
			if v == 0 {
				return br.u16()
			}
			return br.u32()
		}
		from := id()
		n := br.u16()
		if refs += int(n); !br.bad && refs > avifMaxRefs {
			return avifTooMany("iref", "references", refs, avifMaxRefs)
		}
		for i := uint32(0); i < n && !br.bad; i++ {
			to := id()
			if br.bad {
				break
			}
			switch b.typ {
			case "auxl":
				m.auxl = append(m.auxl, [2]uint32{from, to})
			case "dimg":
				m.dimg[from] = append(m.dimg[from], to)
			case "prem":
				m.prem = append(m.prem, from)
			}
		}
		if br.bad {
			return avifCorrupt("iref %q box too short", b.typ)
		}
	}
	return nil
}

func (m *avifMeta) parseIPRP(body []byte) *Error {
	boxes, err := bmffBoxes(body, false, avifMaxBoxes)
	if err != nil {
		return err
	}
	assoc := 0 // over every ipma box
	for _, b := range boxes {
		switch b.typ {
		case "ipco":
			if m.props, err = bmffBoxes(b.body, false, avifMaxProps); err != nil {
				return err
			}
		case "ipma":
			if err := m.parseIPMA(b.body, &assoc); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseIPMA reads one ipma box, as libavif does: item IDs increasing, each
// at most once, property indices within ipco (parsed before it), essential
// flags where AVIF and MIAF require them.
func (m *avifMeta) parseIPMA(body []byte, assoc *int) *Error {
	r := bmffReader{b: body}
	v, flags := r.fullBox()
	count := r.u32()
	if r.bad {
		return avifCorrupt("ipma box too short")
	}
	if count > avifMaxItems {
		return avifTooMany("ipma", "entries", int(count), avifMaxItems)
	}
	prev := uint32(0)
	for i := uint32(0); i < count && !r.bad; i++ {
		var id uint32
		if v < 1 {
			id = r.u16()
		} else {
			id = r.u32()
		}
		n := r.u8()
		if r.bad {
			break
		}
		if *assoc += 1 + int(n); *assoc > avifMaxAssocs {
			return avifTooMany("ipma", "entries and property associations", *assoc, avifMaxAssocs)
		}
		if id <= prev && i > 0 {
			return avifCorrupt("ipma box item IDs are not in increasing order (%d after %d)", id, prev)
		}
		prev = id
		it, err := m.addItem(id, "ipma")
		if err != nil {
			return err
		}
		if it.ipmaSeen {
			return avifCorrupt("ipma boxes list item %d twice", id)
		}
		it.ipmaSeen = true
		for j := uint32(0); j < n; j++ {
			var idx uint32
			var essential bool
			if flags&1 != 0 {
				idx = r.u16()
				essential, idx = idx&0x8000 != 0, idx&0x7FFF
			} else {
				idx = r.u8()
				essential, idx = idx&0x80 != 0, idx&0x7F
			}
			if r.bad {
				break
			}
			if idx == 0 {
				if essential {
					return avifCorrupt("ipma box marks item %d's property index 0 essential", id)
				}
				continue
			}
			if int(idx) > len(m.props) {
				return avifCorrupt("ipma box gives item %d property %d, past the %d of ipco", id, idx, len(m.props))
			}
			if err := avifCheckEssential(id, m.props[idx-1].typ, essential); err != nil {
				return err
			}
			typ := m.props[idx-1].typ
			if essential && !avifKnownProps[typ] && it.unknownEssential == "" {
				it.unknownEssential = typ
			}
			it.props = append(it.props, uint16(idx))
		}
	}
	if r.bad {
		return avifCorrupt("ipma box too short")
	}
	return nil
}

// avifCheckEssential applies the essential flags AVIF (a1op, a1lx), HEIF
// (lsel) and MIAF (transformative properties) require, as libavif does.
func avifCheckEssential(id uint32, typ string, essential bool) *Error {
	switch typ {
	case "a1lx":
		if essential {
			return avifCorrupt("item %d's a1lx property is marked essential, which AVIF forbids", id)
		}
	case "a1op", "lsel", "clap", "irot", "imir":
		if !essential {
			return avifCorrupt("item %d's %s property is not marked essential, which it must be", id, typ)
		}
	}
	return nil
}

// prop is the item's first associated property of type typ, or nil.
func (m *avifMeta) prop(it *avifItem, typ string) []byte {
	for _, i := range it.props {
		if m.props[i-1].typ == typ {
			return m.props[i-1].body
		}
	}
	return nil
}

// parts is the item's bytes as slices of src or idat, one an extent,
// without copying, and their total. Zero-length extents add nothing, as
// in libavif (ISO BMFF's "to the end" reading would let one extent name
// the whole file); an item of no bytes is corrupt.
func (m *avifMeta) parts(it *avifItem, src []byte) ([][]byte, int, *Error) {
	if !it.located || len(it.extents) == 0 {
		return nil, 0, avifCorrupt("item %d has no location", it.id)
	}
	from, where := src, "file"
	if it.idat {
		from, where = m.idat, "idat box"
	}
	parts := make([][]byte, 0, len(it.extents))
	total := 0
	for _, e := range it.extents {
		if e.off > uint64(len(from)) || e.n > uint64(len(from))-e.off {
			return nil, 0, avifShortItem(it.idat, it.id, where)
		}
		if e.n == 0 {
			continue
		}
		parts = append(parts, from[e.off:e.off+e.n])
		total += int(e.n) // ≤ len(from) each, at most 64 of them
	}
	if total == 0 {
		return nil, 0, avifCorrupt("item %d's extents hold no bytes (zero-length extents)", it.id)
	}
	return parts, total, nil
}

// avifShortItem: item data past the file's end is a cut upload; past idat,
// a corrupt file.
func avifShortItem(inIdat bool, id uint32, where string) *Error {
	if !inIdat {
		return formatErr(Truncated, "AVIF", "AVIF data ends early (item %d lies past the end of the file)", id)
	}
	return avifCorrupt("item %d lies past the end of its %s", id, where)
}
