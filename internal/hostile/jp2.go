package hostile

import "encoding/binary"

// J2KSpec describes a raw JPEG 2000 codestream made by J2K: its headers
// say what a decoder must set up, and every packet is one byte, so the
// file stays tiny whatever the image claims.
type J2KSpec struct {
	Width, Height int
	// TileWidth, TileHeight: 0 means one tile.
	TileWidth, TileHeight int
	Comps                 int // 8-bit components, 1 if 0
	Levels                int // decomposition levels (resolutions - 1)
	Layers                int // quality layers, 1 if 0
	// CblkExp is log2 of the code-block width and height (2 to 10; 6,
	// the usual 64x64, if 0).
	CblkExp int
	// PrecinctExp is log2 of the precinct width and height at every
	// resolution (1 to 15); 0 leaves precincts at the maximum (one per
	// resolution of a tile under 32768 wide).
	PrecinctExp int
	// TileCblkExp, when set, puts a COD in every tile-part header that
	// sets this code-block size instead (the main header's stays CblkExp):
	// what a decoder sets up is in the tile-part headers too.
	TileCblkExp int
	// Packet is each packet's byte: 0x00 is an empty packet; 0x80 says
	// the packet has data, so that the decoder reads the inclusion
	// tag-tree of every code-block in it (from zero bits: none is
	// included).
	Packet byte
}

// J2K builds the codestream: SOC, SIZ, COD, QCD (no quantisation), then
// per tile one tile-part holding layers x resolutions x components x
// precincts one-byte packets, and EOC.
func J2K(s J2KSpec) []byte {
	comps, layers, cblk := max(s.Comps, 1), max(s.Layers, 1), s.CblkExp
	if cblk == 0 {
		cblk = 6
	}
	tw, th := s.TileWidth, s.TileHeight
	if tw == 0 || th == 0 {
		tw, th = s.Width, s.Height
	}
	be := binary.BigEndian
	seg := func(b []byte, marker uint16, body []byte) []byte {
		b = be.AppendUint16(b, marker)
		b = be.AppendUint16(b, uint16(len(body)+2))
		return append(b, body...)
	}
	b := []byte{0xff, 0x4f} // SOC

	siz := be.AppendUint16(nil, 0) // Rsiz
	for _, v := range []int{s.Width, s.Height, 0, 0, tw, th, 0, 0} {
		siz = be.AppendUint32(siz, uint32(v))
	}
	siz = be.AppendUint16(siz, uint16(comps))
	for range comps {
		siz = append(siz, 7, 1, 1) // 8-bit unsigned, not subsampled
	}
	b = seg(b, 0xff51, siz)

	scod := byte(0)
	if s.PrecinctExp > 0 {
		scod = 1
	}
	mct := byte(0)
	if comps >= 3 {
		mct = 1
	}
	cod := func(cblk int) []byte {
		c := []byte{scod, 0} // LRCP
		c = be.AppendUint16(c, uint16(layers))
		c = append(c, mct, byte(s.Levels), byte(cblk-2), byte(cblk-2), 0, 1) // 5-3 reversible
		if s.PrecinctExp > 0 {
			for range s.Levels + 1 {
				c = append(c, byte(s.PrecinctExp<<4|s.PrecinctExp))
			}
		}
		return c
	}
	b = seg(b, 0xff52, cod(cblk))
	var tileCOD []byte
	if s.TileCblkExp > 0 {
		tileCOD = seg(nil, 0xff52, cod(s.TileCblkExp))
	}

	qcd := []byte{2 << 5} // 2 guard bits, no quantisation
	for range 3*s.Levels + 1 {
		qcd = append(qcd, 9<<3)
	}
	b = seg(b, 0xff5c, qcd)

	tilesX, tilesY := (s.Width+tw-1)/tw, (s.Height+th-1)/th
	for t := 0; t < tilesX*tilesY; t++ {
		x0, y0 := t%tilesX*tw, t/tilesX*th
		x1, y1 := min(x0+tw, s.Width), min(y0+th, s.Height)
		packets := 0
		for r := 0; r <= s.Levels; r++ {
			packets += precincts(x0, y0, x1, y1, s.Levels-r, s.PrecinctExp)
		}
		packets *= comps * layers
		sot := be.AppendUint16(nil, uint16(t))
		sot = be.AppendUint32(sot, uint32(12+len(tileCOD)+2+packets))
		sot = append(sot, 0, 1)
		b = seg(b, 0xff90, sot)
		b = append(b, tileCOD...)
		b = append(b, 0xff, 0x93) // SOD
		for range packets {
			b = append(b, s.Packet)
		}
	}
	return append(b, 0xff, 0xd9) // EOC
}

// precincts counts the precincts of a tile's resolution at level
// decomposition levels down, with precincts of 2^exp (0: 2^15).
func precincts(x0, y0, x1, y1, level, exp int) int {
	if exp == 0 {
		exp = 15
	}
	div := func(v, n int) int { return (v + 1<<n - 1) >> n }
	rx0, ry0, rx1, ry1 := div(x0, level), div(y0, level), div(x1, level), div(y1, level)
	if rx0 == rx1 || ry0 == ry1 {
		return 0
	}
	pw := div(rx1, exp) - rx0>>exp
	ph := div(ry1, exp) - ry0>>exp
	return pw * ph
}

// JP2Spec describes a JP2 file made by JP2: a codestream (J2K's) inside
// the boxes of the JP2 format, with an optional palette.
type JP2Spec struct {
	Codestream J2KSpec
	// PaletteColumns, when set, adds a one-entry palette (pclr) of that
	// many 8-bit columns (1 to 255) and a component mapping (cmap) that
	// maps component 0 through every column: a decoder that applies it
	// makes that many image-sized planes from one.
	PaletteColumns int
	// ChannelDefs, when set, adds a channel definition box (cdef) of that
	// many entries, made so that a decoder applying it as OpenJPEG does
	// swaps two components at every entry (with more than one component)
	// and relabels every later entry each time; its last entries name the
	// other channels, as the box must.
	ChannelDefs int
}

// JP2 builds the file: signature, file type, header (ihdr, colr sRGB,
// pclr, cmap and cdef when asked), then the codestream box.
func JP2(s JP2Spec) []byte {
	be := binary.BigEndian
	box := func(b []byte, typ string, body []byte) []byte {
		b = be.AppendUint32(b, uint32(8+len(body)))
		return append(append(b, typ...), body...)
	}
	cs := J2K(s.Codestream)
	comps := max(s.Codestream.Comps, 1)
	b := box(nil, "jP  ", []byte{0x0d, 0x0a, 0x87, 0x0a})
	b = box(b, "ftyp", []byte("jp2 \x00\x00\x00\x00jp2 "))
	ihdr := be.AppendUint32(nil, uint32(s.Codestream.Height))
	ihdr = be.AppendUint32(ihdr, uint32(s.Codestream.Width))
	ihdr = be.AppendUint16(ihdr, uint16(comps))
	ihdr = append(ihdr, 7, 7, 0, 0) // 8-bit unsigned, JPEG 2000 coded, colour space known, no IPR
	hdr := box(nil, "ihdr", ihdr)
	hdr = box(hdr, "colr", []byte{1, 0, 0, 0, 0, 0, 16}) // enumerated: sRGB
	if n := s.PaletteColumns; n > 0 {
		pclr := []byte{0, 1, byte(n)} // one entry, n columns
		for range n {
			pclr = append(pclr, 7) // 8-bit unsigned
		}
		for i := range n {
			pclr = append(pclr, byte(i))
		}
		hdr = box(hdr, "pclr", pclr)
		var cmap []byte
		for i := range n {
			cmap = append(cmap, 0, 0, 1, byte(i)) // component 0, palette column i
		}
		hdr = box(hdr, "cmap", cmap)
	}
	if n := s.ChannelDefs; n > 0 {
		cdef := be.AppendUint16(nil, uint16(n))
		entry := func(cn, asoc int) {
			cdef = be.AppendUint16(cdef, uint16(cn))
			cdef = be.AppendUint16(cdef, 0) // a colour channel
			cdef = be.AppendUint16(cdef, uint16(asoc))
		}
		// label[c]: what an entry written as channel c reads as by the
		// time the decoder reaches it (each swap exchanges two labels).
		label := make([]int, comps)
		for c := range label {
			label[c] = c
		}
		for i := range n {
			if i >= n-(comps-1) { // channels 1.. once each, no association
				entry(i-(n-comps), 0)
				continue
			}
			cur := label[0]
			other := (cur + 1) % comps
			entry(0, other+1)
			for c := range label {
				switch label[c] {
				case cur:
					label[c] = other
				case other:
					label[c] = cur
				}
			}
		}
		hdr = box(hdr, "cdef", cdef)
	}
	b = box(b, "jp2h", hdr)
	return box(b, "jp2c", cs)
}

// jp2Tiny8192 is a 102-byte codestream of 8192x8192 grey samples in 4x4
// code-blocks with empty packets: OpenJPEG would allocate about 2 GB.
func jp2Tiny8192() []byte {
	return J2K(J2KSpec{Width: 8192, Height: 8192, Levels: 5, CblkExp: 2})
}

func init() {
	Register(Case{
		Name:    "jp2-8192-cblk4",
		Format:  "JPEG 2000",
		Row:     "JPEG 2000 codestream 8192x8192 grey, 4x4 code-blocks, empty packets",
		Make:    jp2Tiny8192,
		Refused: []string{"too large", "JPEG 2000", "memory limit"},
	})
	Register(Case{
		Name:   "jp2-8192-cblk4-x16",
		Format: "JPEG 2000",
		Row:    "16 of the 8192x8192 4x4-code-block codestreams in one request",
		Make:   jp2Tiny8192,
		// Each is refused alone; the request's own budget may refuse first.
		Refused:    []string{"too large", "JPEG 2000"},
		PerRequest: 16,
	})
	Register(Case{
		Name:   "jp2-palette-255",
		Format: "JPEG 2000",
		Row:    "JP2 file of 3072x3072 grey through a 255-column palette: OpenJPEG would make 255 planes (9.6 GB)",
		Make: func() []byte {
			return JP2(JP2Spec{Codestream: J2KSpec{Width: 3072, Height: 3072, Levels: 5}, PaletteColumns: 255})
		},
		Refused: []string{"unsupported", "JPEG 2000", "palette"},
	})
	Register(Case{
		Name:   "jp2-cdef-60000",
		Format: "JPEG 2000",
		Row:    "JP2 file of 64x64 RGB whose channel definition lists 60,000 channels (OpenJPEG swaps components and walks the later entries at each)",
		Make: func() []byte {
			return JP2(JP2Spec{Codestream: J2KSpec{Width: 64, Height: 64, Comps: 3, Levels: 2}, ChannelDefs: 60000})
		},
		Refused: []string{"unsupported", "JPEG 2000", "channel definitions"},
	})
	Register(Case{
		Name:   "jp2-4096-layers999",
		Format: "JPEG 2000",
		Row:    "JPEG 2000 4096x4096, 999 quality layers of one-byte packets",
		Make: func() []byte {
			return J2K(J2KSpec{Width: 4096, Height: 4096, Levels: 5, Layers: 999, CblkExp: 2, Packet: 0x80})
		},
		Refused: []string{"too large", "JPEG 2000", "layers"},
	})
}
