package codec

// Parsing an AVIF's meta box (HEIF, ISO/IEC 23008-12): items, where their
// data lies, their references and properties. Counts are capped so that a
// forged file cannot make the parser allocate much: every slice grows by
// append from boxes that exist in the input.

const (
	avifMaxItems   = 4096 // items, references and associations per file
	avifMaxProps   = 4096 // properties in ipco
	avifMaxExtents = 64   // extents per item
	avifMaxBoxes   = 8192 // boxes in one container
)

// avifExtent is a run of an item's bytes: in the file (construction
// method 0) or in idat (method 1).
type avifExtent struct {
	off, n uint64 // n 0: to the end
}

type avifItem struct {
	id      uint32
	typ     string // "av01", "grid", "Exif", ...
	located bool
	idat    bool // construction method 1
	extents []avifExtent
	props   []uint16 // ipco indices, 1-based, in association order
}

// avifMeta is the parsed meta box.
type avifMeta struct {
	primary uint32
	items   []avifItem
	props   []bmffBox
	auxl    [][2]uint32 // {from, to}: from is an auxiliary image of to
	dimg    map[uint32][]uint32
	prem    []uint32 // items whose colour is premultiplied by their alpha
	idat    []byte
}

func (m *avifMeta) item(id uint32) *avifItem {
	for i := range m.items {
		if m.items[i].id == id {
			return &m.items[i]
		}
	}
	return nil
}

// addItem returns the item with id, made when missing.
func (m *avifMeta) addItem(id uint32) (*avifItem, *Error) {
	if it := m.item(id); it != nil {
		return it, nil
	}
	if len(m.items) >= avifMaxItems {
		return nil, avifCorrupt("over %d items", avifMaxItems)
	}
	m.items = append(m.items, avifItem{id: id})
	return &m.items[len(m.items)-1], nil
}

func avifCorrupt(format string, a ...any) *Error {
	return formatErr(Corrupt, "AVIF", "AVIF file is corrupt: "+format, a...)
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
	m := &avifMeta{dimg: map[uint32][]uint32{}}
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
	if v, _ := r.fullBox(); v == 0 {
		r.u16()
	} else {
		r.u32()
	}
	if r.bad {
		return avifCorrupt("iinf box too short")
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
		it, err := m.addItem(id)
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
			return avifCorrupt("item %d has %d extents, over %d", id, n, avifMaxExtents)
		}
		it, err := m.addItem(id)
		if err != nil {
			return err
		}
		it.located, it.idat, it.extents = true, method == 1, it.extents[:0]
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
	boxes, err := bmffBoxes(r.b, false, avifMaxItems)
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
		for i := uint32(0); i < n && !br.bad; i++ {
			to := id()
			if br.bad {
				break
			}
			if refs++; refs > avifMaxItems {
				return avifCorrupt("over %d item references", avifMaxItems)
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
	for _, b := range boxes {
		switch b.typ {
		case "ipco":
			if m.props, err = bmffBoxes(b.body, false, avifMaxProps); err != nil {
				return err
			}
		case "ipma":
			if err := m.parseIPMA(b.body); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *avifMeta) parseIPMA(body []byte) *Error {
	r := bmffReader{b: body}
	v, flags := r.fullBox()
	count := r.u32()
	assoc := 0
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
		it, err := m.addItem(id)
		if err != nil {
			return err
		}
		for j := uint32(0); j < n; j++ {
			var idx uint32
			if flags&1 != 0 {
				idx = r.u16() & 0x7FFF
			} else {
				idx = r.u8() & 0x7F
			}
			if r.bad {
				break
			}
			if assoc++; assoc > avifMaxItems {
				return avifCorrupt("over %d property associations", avifMaxItems)
			}
			if idx != 0 {
				it.props = append(it.props, uint16(idx))
			}
		}
	}
	if r.bad {
		return avifCorrupt("ipma box too short")
	}
	return nil
}

// prop is the item's first associated property of type typ, or nil.
func (m *avifMeta) prop(it *avifItem, typ string) []byte {
	for _, i := range it.props {
		if int(i) <= len(m.props) && m.props[i-1].typ == typ {
			return m.props[i-1].body
		}
	}
	return nil
}

// hasProp reports whether the item has a property of type typ.
func (m *avifMeta) hasProp(it *avifItem, typ string) bool {
	for _, i := range it.props {
		if int(i) <= len(m.props) && m.props[i-1].typ == typ {
			return true
		}
	}
	return false
}

// data is the item's bytes: a slice of src or idat for one extent, else a
// copy of its extents joined, at most len(src) bytes (more would mean
// extents repeating the file: amplification).
func (m *avifMeta) data(it *avifItem, src []byte) ([]byte, *Error) {
	if !it.located || len(it.extents) == 0 {
		return nil, avifCorrupt("item %d has no location", it.id)
	}
	from, where := src, "file"
	if it.idat {
		from, where = m.idat, "idat box"
	}
	parts := make([][]byte, 0, len(it.extents))
	total := uint64(0)
	for _, e := range it.extents {
		if e.off > uint64(len(from)) {
			return nil, avifShortItem(it.idat, it.id, where)
		}
		end := uint64(len(from))
		if e.n != 0 {
			if e.n > end-e.off {
				return nil, avifShortItem(it.idat, it.id, where)
			}
			end = e.off + e.n
		}
		parts = append(parts, from[e.off:end])
		total += end - e.off
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	if total > uint64(len(src)) {
		return nil, avifCorrupt("item %d's extents add up to %d bytes, over the file's %d", it.id, total, len(src))
	}
	out := make([]byte, 0, total)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// avifShortItem: item data past the file's end is a cut upload; past idat,
// a corrupt file.
func avifShortItem(inIdat bool, id uint32, where string) *Error {
	if !inIdat {
		return formatErr(Truncated, "AVIF", "AVIF data ends early (item %d lies past the end of the file)", id)
	}
	return avifCorrupt("item %d lies past the end of its %s", id, where)
}
