package hostile

import (
	"bytes"
	"encoding/binary"
)

// AVIF cases: containers whose boxes cost the reader or the copy of item
// data far more than their bytes, and one whose ispe claims far more
// pixels than its AV1 data codes. The AV1 data is a real sequence header
// (a reduced still-picture header of the claimed or a small size) and a
// frame OBU of filler: every case is refused from the container and the
// OBU headers, before dav1d would read the filler.

func init() {
	Register(Case{
		Name:    "avif-ipma-1m",
		Format:  "AVIF",
		Row:     "AVIF 64x64 with a million extra ipma entries",
		Make:    func() []byte { return AVIFManyIPMA(1_000_000) },
		Refused: []string{"too large", "ipma"},
	})
	Register(Case{
		Name:    "avif-grid-45x45-shared-extents",
		Format:  "AVIF",
		Row:     "AVIF grid 45x45 whose tiles share one region through two extents",
		Make:    func() []byte { return AVIFSharedGrid(45, 45, 182) },
		Refused: []string{"too large", "extents"},
	})
	Register(Case{
		Name:    "avif-ispe-32768x2048",
		Format:  "AVIF",
		Row:     "AVIF whose ispe says 32768x2048 over a small image",
		Make:    func() []byte { return AVIFLyingISPE(32768, 2048, 64, 64) },
		Refused: []string{"ispe", "sequence header"},
	})
}

// AVIFManyIPMA is a 64×64 AVIF with 4095 metadata items beside its image
// and extra ipma entries (without properties) for the last of them: each
// entry made the reader look its item up among all the others.
func AVIFManyIPMA(extra int) []byte {
	const items = 4096
	var a avifBuilder
	a.item(1, "av01", a.data(av1Still(64, 64, 64)), a.prop(ispe(64, 64)), a.prop(av1C()))
	for id := 2; id <= items; id++ {
		a.item(id, "mime", nil)
	}
	entry := append(be16(nil, items), 0) // no properties
	a.ipmaExtra = func(b []byte) []byte { return append(b, bytes.Repeat(entry, extra)...) }
	a.ipmaCount = extra
	return a.file(1)
}

// AVIFSharedGrid is a cols×rows grid of tile×tile tiles whose every tile
// is two extents over one region of the file holding as many AV1 bytes as
// a tile may have, padded so that a tile's data fits in the file: a file
// of about a tile's bytes whose tiles, once joined, are cols×rows times
// larger.
func AVIFSharedGrid(cols, rows, tile int) []byte {
	region := (16*tile*tile + 64<<10) / 2 // half the AV1 bytes a tile may hold (avifBytesPerPixel, avifBytesSlack)
	var a avifBuilder
	w, h := cols*tile, rows*tile
	grid := []byte{0, 0, byte(rows - 1), byte(cols - 1)}
	grid = be16(be16(grid, w), h)
	a.item(1, "grid", a.idat(grid), a.prop(ispe(w, h)))
	shared := a.data(av1Still(tile, tile, region))
	ispeTile, config := a.prop(ispe(tile, tile)), a.prop(av1C())
	var tiles []int
	for i := 0; i < cols*rows; i++ {
		id := 2 + i
		a.item(id, "av01", [][2]int{shared[0], shared[0]}, ispeTile, config)
		tiles = append(tiles, id)
	}
	a.dimg = map[int][]int{1: tiles}
	a.pad = region + 1024
	return a.file(1)
}

// AVIFLyingISPE is an AVIF whose item's ispe says w×h while its AV1
// sequence header codes frames of at most seqW×seqH.
func AVIFLyingISPE(w, h, seqW, seqH int) []byte {
	var a avifBuilder
	a.item(1, "av01", a.data(av1Still(seqW, seqH, 256)), a.prop(ispe(w, h)), a.prop(av1C()))
	return a.file(1)
}

// avifBuilder lays out ftyp, meta (hdlr, pitm, iinf, iloc, iref, iprp,
// idat) and mdat from items added to it.
type avifBuilder struct {
	items     []avifItem
	props     [][]byte
	mdat      []byte
	idatBuf   []byte
	dimg      map[int][]int
	pad       int                 // bytes of a free box after mdat
	ipmaExtra func([]byte) []byte // entries appended to ipma's
	ipmaCount int                 // how many ipmaExtra adds
}

type avifItem struct {
	id      int
	typ     string
	extents [][2]int // offset in mdat's payload (or idat), length
	idat    bool
	props   []int // 1-based ipco indices, marked essential
}

// data adds b to mdat; its single extent.
func (a *avifBuilder) data(b []byte) [][2]int {
	e := [2]int{len(a.mdat), len(b)}
	a.mdat = append(a.mdat, b...)
	return [][2]int{e}
}

// idat adds b to idat; its extent, marked by a negative length.
func (a *avifBuilder) idat(b []byte) [][2]int {
	e := [2]int{len(a.idatBuf), -len(b)}
	a.idatBuf = append(a.idatBuf, b...)
	return [][2]int{e}
}

// prop adds a property box to ipco; its index.
func (a *avifBuilder) prop(b []byte) int {
	a.props = append(a.props, b)
	return len(a.props)
}

func (a *avifBuilder) item(id int, typ string, extents [][2]int, props ...int) {
	it := avifItem{id: id, typ: typ, props: props}
	for _, e := range extents {
		if e[1] < 0 {
			it.idat, e[1] = true, -e[1]
		}
		it.extents = append(it.extents, e)
	}
	a.items = append(a.items, it)
}

// file lays the boxes out; primary is pitm's item.
func (a *avifBuilder) file(primary int) []byte {
	ftyp := box("ftyp", []byte("avif"), be32(nil, 0), []byte("avifmif1miaf"))
	meta := a.meta(primary, 0)
	mdatAt := len(ftyp) + len(meta) + 8 // mdat's payload
	var out []byte
	out = append(out, ftyp...)
	out = append(out, a.meta(primary, mdatAt)...)
	out = append(out, box("mdat", a.mdat)...)
	if a.pad > 0 {
		out = append(out, box("free", make([]byte, a.pad))...)
	}
	return out
}

func (a *avifBuilder) meta(primary, mdatAt int) []byte {
	var infe, iloc, ipma []byte
	located := 0
	for _, it := range a.items {
		infe = append(infe, fullBox("infe", 2, be16(nil, it.id), be16(nil, 0), []byte(it.typ), []byte{0})...)
		if len(it.extents) > 0 {
			located++
			method, base := 0, mdatAt
			if it.idat {
				method, base = 1, 0
			}
			iloc = be16(be16(be16(iloc, it.id), method), 0) // id, construction method, data_reference_index
			iloc = be16(be32(iloc, base), len(it.extents))
			for _, e := range it.extents {
				iloc = be32(be32(iloc, e[0]), e[1])
			}
		}
		if len(it.props) > 0 {
			ipma = append(be16(ipma, it.id), byte(len(it.props)))
			for _, p := range it.props {
				ipma = append(ipma, 0x80|byte(p))
			}
		}
	}
	entries := 0
	for _, it := range a.items {
		if len(it.props) > 0 {
			entries++
		}
	}
	if a.ipmaExtra != nil {
		ipma = a.ipmaExtra(ipma)
		entries += a.ipmaCount
	}
	boxes := [][]byte{
		fullBox("hdlr", 0, be32(nil, 0), []byte("pict"), make([]byte, 13)),
		fullBox("pitm", 0, be16(nil, primary)),
		fullBox("iinf", 0, be16(nil, len(a.items)), infe),
		// version 1: offset, length and base offset of 4 bytes, no index
		fullBox("iloc", 1, []byte{0x44, 0x40}, be16(nil, located), iloc),
	}
	if len(a.dimg) > 0 {
		var refs []byte
		for from, to := range a.dimg { // one grid in these cases
			r := be16(be16(nil, from), len(to))
			for _, id := range to {
				r = be16(r, id)
			}
			refs = append(refs, box("dimg", r)...)
		}
		boxes = append(boxes, fullBox("iref", 0, refs))
	}
	boxes = append(boxes, box("iprp", box("ipco", a.props...), fullBox("ipma", 0, be32(nil, entries), ipma)))
	if len(a.idatBuf) > 0 {
		boxes = append(boxes, box("idat", a.idatBuf))
	}
	return fullBox("meta", 0, boxes...)
}

func box(typ string, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	b := be32(nil, 8+len(body))
	return append(append(b, typ...), body...)
}

func fullBox(typ string, version byte, parts ...[]byte) []byte {
	return box(typ, append([]byte{version, 0, 0, 0}, bytes.Join(parts, nil)...))
}

func be16(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func be32(b []byte, v int) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

func ispe(w, h int) []byte { return fullBox("ispe", 0, be32(be32(nil, w), h)) }

// av1C is an AV1 codec configuration box for 8-bit 4:2:0 profile 0,
// without config OBUs.
func av1C() []byte { return box("av1C", []byte{0x81, 0x1F, 0x0C, 0x00}) }

// av1Still is an AV1 sample of n bytes: a sequence header OBU for w×h
// frames (a reduced still-picture header) and a frame OBU of filler.
func av1Still(w, h, n int) []byte {
	seq := obu(1, av1SequenceHeader(w, h))
	frame := n - len(seq) - 1 - 4 // the frame OBU's header and a 4-byte size
	if frame < 1 {
		frame = 1
	}
	filler := bytes.Repeat([]byte{0x10}, frame)
	out := append(seq, 0x32)                                                                        // frame OBU with a size field
	out = append(out, byte(frame)|0x80, byte(frame>>7)|0x80, byte(frame>>14)|0x80, byte(frame>>21)) // LEB128 in 4 bytes
	return append(out, filler...)
}

// obu is an OBU of type typ with a size field (one LEB128 byte: payloads
// here are under 128 bytes).
func obu(typ int, payload []byte) []byte {
	return append([]byte{byte(typ<<3 | 2), byte(len(payload))}, payload...)
}

// av1SequenceHeader is a sequence header OBU's payload (AV1 section 5.5):
// profile 0, still picture, reduced still-picture header, 16-bit frame
// size fields, 8-bit 4:2:0, no tools.
func av1SequenceHeader(w, h int) []byte {
	var bw msbWriter
	bw.put(0, 3)  // seq_profile
	bw.put(1, 1)  // still_picture
	bw.put(1, 1)  // reduced_still_picture_header
	bw.put(31, 5) // seq_level_idx[0]: no level's limits
	bw.put(15, 4) // frame_width_bits_minus_1
	bw.put(15, 4) // frame_height_bits_minus_1
	bw.put(uint32(w-1), 16)
	bw.put(uint32(h-1), 16)
	bw.put(0, 3) // use_128x128_superblock, enable_filter_intra, enable_intra_edge_filter
	bw.put(0, 3) // enable_superres, enable_cdef, enable_restoration
	bw.put(0, 4) // high_bitdepth, mono_chrome, color_description_present_flag, color_range
	bw.put(0, 2) // chroma_sample_position
	bw.put(0, 1) // separate_uv_delta_q
	bw.put(0, 1) // film_grain_params_present
	bw.put(1, 1) // trailing one bit
	return bw.bytes()
}

// msbWriter writes an AV1 bitstream: values most significant bit first.
type msbWriter struct {
	b []byte
	n int // bits written
}

func (w *msbWriter) put(v uint32, bits int) {
	for i := bits - 1; i >= 0; i-- {
		if w.n%8 == 0 {
			w.b = append(w.b, 0)
		}
		w.b[len(w.b)-1] |= byte(v>>i&1) << (7 - w.n%8)
		w.n++
	}
}

func (w *msbWriter) bytes() []byte { return w.b }
