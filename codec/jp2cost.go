package codec

import (
	"encoding/binary"
	"fmt"
)

// The cost of a JPEG 2000 image is set by its marker segments, not its
// bytes: 102 bytes can claim 8192x8192 samples cut into 4x4 code-blocks,
// for which OpenJPEG allocates ~400 bytes a code-block before reading a
// packet (2 GB), and 6 kB can hold 999 quality layers whose packets each
// walk the inclusion tag-tree of every code-block (45 s). jp2Cost reads
// the main header (SIZ, COD, COC, QCD, QCC, POC) and each tile-part header
// (the same, found by hopping SOT to SOT), and estimates from them what
// OpenJPEG will allocate and do, before OpenJPEG sees the file.

// Structural limits, checked before the estimates.
const (
	// jp2MaxLayers: the standard allows 65535 quality layers; OpenJPEG's
	// own encoder stops at 100 (opj_cparameters_t.tcp_rates), real files
	// use 1 to ~20 (web viewers, archives: 5 to 12). 256 is twice as many as
	// any encoder we know makes, far below the attack's 999 (each layer
	// costs a walk over every code-block).
	jp2MaxLayers = 256
	// jp2MaxTileParts: OpenJPEG keeps an index entry per tile-part; real
	// files have 1 to a few per tile (one per resolution, layer or
	// component at most), and tiles are capped at jp2MaxTiles.
	jp2MaxTileParts = 16 * jp2MaxTiles
)

// What OpenJPEG 2.5 allocates, in bytes (sizeof on 64-bit, malloc's 16
// bytes of overhead added where it allocates per item). Checked against
// the peak RSS of decoding hostile.J2K shapes (4x4 code-blocks, 2x2 and
// 8x8 precincts, 256 layers, 4096 tiles) and opj_compress files: the
// estimates came within 10% of the measured peaks (2.01 GB for 1.97 GB at
// 8192x8192 of 4x4 code-blocks).
const (
	// jp2MemPerSample: the image's int32 samples (opj_image_comp_t.data);
	// they are brought to 8 bits a strip at a time (jp2StripSamples).
	jp2MemPerSample = 4
	// jp2MemPerTileSample: with more than one tile, each tile's int32
	// tile-component buffer beside the image.
	jp2MemPerTileSample = 4
	// jp2MemPerCblk: opj_tcd_cblk_dec_t (80) and its first
	// OPJ_J2K_DEFAULT_NB_SEGS (10) segments of 24 bytes, allocated for
	// every code-block whether or not a packet names it.
	jp2MemPerCblk = 80 + 10*24 + 16
	// jp2MemPerNode: a tag-tree node (24); each precinct has two trees
	// (inclusion, zero bit-planes).
	jp2MemPerNode = 24
	// jp2MemPerPrecinct: opj_tcd_precinct_t (56) per band and two
	// opj_tgt_tree_t (32) with their node arrays' malloc overhead.
	jp2MemPerPrecinct = 56 + 2*(32+16+16)
	// jp2MemPerTile: opj_tcp_t (5696) and its index of 100 markers, MCT
	// records and buffers, allocated for every tile by opj_read_header
	// (13 kB a tile measured with 4096 tiles), and its per-component
	// opj_tccp_t (1080).
	jp2MemPerTile, jp2MemPerTileComp = 13 << 10, 1080
	// jp2MemPerInputByte: the tile data OpenJPEG copies out of the stream.
	jp2MemPerInputByte = 1
	// jp2MemPerRecord: a code-block's contribution to a layer adds a data
	// chunk record (16 bytes) and may start a segment (24): at most one a
	// code-block and layer, and each takes 6 bits of packet header at the
	// least.
	jp2MemPerRecord, jp2BitsPerRecord = 40, 6
)

// Decode work, in work units (Limits.MaxWork). Terms proportional to the
// samples count sample visits as other formats do (the pixel limit bounds
// them); the terms a header can multiply without adding a pixel (code-
// blocks, layers, precincts, packets) are weighted by what they measured
// cost OpenJPEG, a unit being a third of a nanosecond.
const (
	// jp2WorkPerSample: the inverse wavelet transform (4/3 of the samples,
	// two lifting passes each way), colour transform, DC shift and output.
	jp2WorkPerSample = 8
	// Per sample and coded bit-plane (the three coding passes of a plane
	// visit each sample about once): the bit-planes come from QCD/QCC.
	jp2WorkPerSamplePlane = 1
	// jp2WorkPerCblk: setting up a code-block (its allocation, a Tier-1
	// job, its flags) whether or not it holds data: ~300 ns measured.
	jp2WorkPerCblk = 900
	// jp2WorkPerPrecinct: a precinct of a band: its two tag-trees'
	// allocation and set-up, ~400 ns measured.
	jp2WorkPerPrecinct = 1200
	// jp2WorkPerCblkLayerLevel: a packet with data decodes the inclusion
	// tag-tree of each of its code-blocks not yet included, a walk from
	// leaf to root (levels): ~30 ns for a 10-level walk over cache-cold
	// nodes, measured.
	jp2WorkPerCblkLayerLevel = 9
	// jp2WorkPerPacket: a packet's iteration and header, ~20 ns.
	jp2WorkPerPacket = 60
	// jp2WorkPerStep: a step of a position-first progression's iterator
	// (RPCL, PCRL, CPRL), one per smallest-precinct position, layer,
	// resolution and component.
	jp2WorkPerStep = 3
)

// jp2Comp is the worst coding style a component gets from any COD or COC
// (main or tile-part header): most levels, smallest code-blocks and
// precincts. Taking the worst of each over the whole file keeps the
// estimate an upper bound whatever order OpenJPEG applies them in.
type jp2Comp struct {
	levels     int
	cbw, cbh   int                      // log2 code-block size
	ppx, ppy   [jp2MaxResolutions]uint8 // log2 precinct size by resolution
	set        bool
	planes     int // most coded bit-planes (QCD/QCC)
	planesSeen bool
	roi        bool // an RGN shift, which adds bit-planes
}

// jp2MaxPlanes: OpenJPEG's Tier-1 refuses a code-block of 31 bit-planes
// or more, region-of-interest shift included.
const jp2MaxPlanes = 30

const jp2MaxResolutions = 33 // 32 decomposition levels + 1

// jp2Stream is what jp2Cost gathered from the marker segments.
type jp2Stream struct {
	comps     []jp2Comp
	layers    int
	pocs      int // progression order changes, main and tile-part
	tileParts int
}

// jp2Estimate is the cost jp2Cost found.
type jp2Estimate struct {
	memory, work int64
	cblks        int64 // code-blocks of the largest tile
	layers       int
}

func j2kErr(c Cause, format string, a ...any) *Error {
	return formatErr(c, "JPEG 2000", "JPEG 2000 "+format, a...)
}

// jp2Scan reads the marker segments of codestream cs after SIZ (ending at
// sizEnd): the main header up to the first SOT, then every tile-part's
// header, skipping tile data by Psot.
func jp2Scan(cs []byte, sizEnd int, ncomps int) (*jp2Stream, *Error) {
	st := &jp2Stream{comps: make([]jp2Comp, ncomps)}
	for i := range st.comps {
		c := &st.comps[i]
		c.cbw, c.cbh = 10, 10
		for r := range c.ppx {
			c.ppx[r], c.ppy[r] = 15, 15
		}
	}
	be := binary.BigEndian
	pos := sizEnd
	inTile := false
	for {
		if pos+2 > len(cs) {
			if inTile {
				return st, nil // OpenJPEG reports the truncation
			}
			return nil, j2kErr(Truncated, "data ends in the main header")
		}
		m := be.Uint16(cs[pos:])
		switch {
		case m == 0xffd9: // EOC
			return st, nil
		case m == 0xff93: // SOD: the tile-part's data, skipped by Psot
			return nil, j2kErr(Corrupt, "codestream has SOD outside a tile-part header")
		case m < 0xff30:
			if inTile {
				return st, nil // OpenJPEG reports what it makes of it
			}
			return nil, j2kErr(Corrupt, "main header has a bogus marker 0x%04x", m)
		}
		if pos+4 > len(cs) {
			return nil, j2kErr(Truncated, "data ends in a marker segment")
		}
		l := int(be.Uint16(cs[pos+2:]))
		if l < 2 || pos+2+l > len(cs) {
			return nil, j2kErr(Truncated, "data ends in marker segment 0x%04x", m)
		}
		body := cs[pos+4 : pos+2+l]
		if m == 0xff90 { // SOT
			if len(body) != 8 {
				return nil, j2kErr(Corrupt, "SOT segment has length %d", l)
			}
			if st.tileParts++; st.tileParts > jp2MaxTileParts {
				return nil, j2kErr(TooLarge, "codestream has over %d tile-parts, the limit", jp2MaxTileParts)
			}
			psot := int64(be.Uint32(body[2:]))
			end, err := st.tilePartHeader(cs, pos+2+l)
			if err != nil {
				return nil, err
			}
			if psot == 0 { // the last tile-part: runs to EOC
				return st, nil
			}
			if end < 0 || int64(pos)+psot > int64(len(cs)) {
				return st, nil // cut short: OpenJPEG reports it
			}
			if int64(pos)+psot < int64(end) {
				return nil, j2kErr(Corrupt, "tile-part length %d ends inside its header", psot)
			}
			pos += int(psot)
			inTile = true
			continue
		}
		if inTile { // not a tile-part: OpenJPEG stops or fails here too
			return st, nil
		}
		if err := st.segment(m, body, false); err != nil {
			return nil, err
		}
		pos += 2 + l
	}
}

// tilePartHeader reads the marker segments from pos to SOD; it returns
// the position after SOD, or -1 when the data ends first.
func (st *jp2Stream) tilePartHeader(cs []byte, pos int) (int, *Error) {
	be := binary.BigEndian
	for {
		if pos+2 > len(cs) {
			return -1, nil
		}
		m := be.Uint16(cs[pos:])
		if m == 0xff93 {
			return pos + 2, nil
		}
		if m < 0xff30 || pos+4 > len(cs) {
			return -1, nil // OpenJPEG reports it
		}
		l := int(be.Uint16(cs[pos+2:]))
		if l < 2 || pos+2+l > len(cs) {
			return -1, nil
		}
		if err := st.segment(m, cs[pos+4:pos+2+l], true); err != nil {
			return -1, err
		}
		pos += 2 + l
	}
}

// segment takes what a main or tile-part header segment says about cost.
func (st *jp2Stream) segment(m uint16, b []byte, tile bool) *Error {
	ncomps := len(st.comps)
	compIdx := func() (int, []byte, bool) { // Ccoc / Cqcc: 1 byte, 2 from 257 components
		n := 1
		if ncomps > 256 {
			n = 2
		}
		if len(b) < n {
			return 0, nil, false
		}
		c := int(b[0])
		if n == 2 {
			c = int(binary.BigEndian.Uint16(b))
		}
		return c, b[n:], c < ncomps
	}
	switch m {
	case 0xff52: // COD: Scod, progression, layers, MCT, then SPcod
		if len(b) < 10 {
			return j2kErr(Corrupt, "COD segment is %d bytes", len(b)+2)
		}
		layers := int(binary.BigEndian.Uint16(b[2:]))
		if layers > jp2MaxLayers {
			return j2kErr(TooLarge, "image has %d quality layers, over the limit of %d", layers, jp2MaxLayers)
		}
		st.layers = max(st.layers, layers)
		for i := range st.comps {
			if err := st.comps[i].style(b[0]&1 != 0, b[5:]); err != nil {
				return err
			}
		}
	case 0xff53: // COC: Ccoc, Scoc, SPcoc
		c, rest, ok := compIdx()
		if !ok || len(rest) < 1 {
			return j2kErr(Corrupt, "COC segment names no valid component")
		}
		return st.comps[c].style(rest[0]&1 != 0, rest[1:])
	case 0xff5c: // QCD: Sqcd, SPqcd
		for i := range st.comps {
			st.comps[i].quant(b)
		}
	case 0xff5d: // QCC: Cqcc, Sqcc, SPqcc
		c, rest, ok := compIdx()
		if !ok {
			return j2kErr(Corrupt, "QCC segment names no valid component")
		}
		st.comps[c].quant(rest)
	case 0xff5e: // RGN: Crgn, Srgn, SPrgn, a shift that adds bit-planes
		if c, _, ok := compIdx(); ok {
			st.comps[c].roi = true
		}
	case 0xff5f: // POC: 7 or 9 bytes a change
		n := 7
		if ncomps > 256 {
			n = 9
		}
		st.pocs += len(b) / n
	}
	return nil
}

// style takes SPcod/SPcoc: levels, code-block width and height, style,
// transform, then the precinct sizes when precincts is set.
func (c *jp2Comp) style(precincts bool, b []byte) *Error {
	if len(b) < 5 {
		return j2kErr(Corrupt, "coding style segment is %d bytes", len(b))
	}
	levels, xcb, ycb := int(b[0]), int(b[1])+2, int(b[2])+2
	if levels > jp2MaxResolutions-1 || xcb > 10 || ycb > 10 || xcb+ycb > 12 {
		return j2kErr(Corrupt, "coding style gives %d levels and %dx%d code-blocks", levels, 1<<min(xcb, 31), 1<<min(ycb, 31))
	}
	c.levels = max(c.levels, levels)
	c.cbw, c.cbh = min(c.cbw, xcb), min(c.cbh, ycb)
	c.set = true
	if precincts {
		pp := b[5:]
		if len(pp) < levels+1 {
			return j2kErr(Corrupt, "coding style lists %d precinct sizes for %d resolutions", len(pp), levels+1)
		}
		for r := 0; r <= levels; r++ {
			c.ppx[r], c.ppy[r] = min(c.ppx[r], pp[r]&15), min(c.ppy[r], pp[r]>>4)
		}
	}
	return nil
}

// quant takes Sqcd/Sqcc and the exponents: the most bit-planes a
// code-block of the component can code is an exponent plus the guard
// bits, minus one.
func (c *jp2Comp) quant(b []byte) {
	if len(b) < 1 {
		return
	}
	guard := int(b[0] >> 5)
	most := 0
	switch b[0] & 31 {
	case 0: // no quantisation: a byte per band, exponent in the top 5 bits
		for _, v := range b[1:] {
			most = max(most, int(v>>3))
		}
	default: // two bytes per band (one for scalar derived), exponent on top
		for i := 1; i+1 < len(b); i += 2 {
			most = max(most, int(b[i]>>3))
		}
	}
	c.planes = max(c.planes, most+guard-1)
	c.planesSeen = true
}

// jp2Cost estimates the memory and work of decoding codestream cs whose
// SIZ says siz (its segment ending at sizEnd), and checks them against
// lim. The estimate follows OpenJPEG's opj_tcd_init_tile: per tile and
// component, per resolution a grid of precincts, per band and precinct a
// grid of code-blocks no larger than the band's precinct.
func jp2Cost(cs []byte, siz j2kSIZ, lim Limits) (jp2Estimate, *Error) {
	st, err := jp2Scan(cs, siz.sizEnd, siz.comps)
	if err != nil {
		return jp2Estimate{}, err
	}
	layers := max(st.layers, 1)
	var e jp2Estimate
	e.layers = layers
	samples := int64(siz.width) * int64(siz.height) * int64(siz.comps)
	e.memory = samples*jp2MemPerSample + jp2StripSamples + int64(siz.width)*int64(siz.comps) + int64(len(cs))*jp2MemPerInputByte +
		int64(siz.tiles)*(jp2MemPerTile+int64(siz.comps)*jp2MemPerTileComp)
	work := samples * jp2WorkPerSample
	// OpenJPEG sets up one tile at a time, reusing the structures: the
	// memory is the largest tile's; the work is every tile's.
	var tileMem, cblks, precincts, packets, steps, walk int64
	maxTileMem := int64(0)
	tx, ty := siz.tileGrid()
	for j := uint64(0); j < ty; j++ {
		for i := uint64(0); i < tx; i++ {
			x0, y0, x1, y1 := siz.tile(i, j)
			tileMem = 0
			var maxRes, maxPrec int64
			if siz.tiles > 1 {
				tileMem = (x1 - x0) * (y1 - y0) * int64(siz.comps) * jp2MemPerTileSample
			}
			for k := range st.comps {
				c := &st.comps[k]
				tc := c.tileComp(x0, y0, x1, y1)
				planes := jp2MaxPlanes // without QCD/QCC, or shifted by RGN
				if c.planesSeen && !c.roi {
					planes = min(max(c.planes, 1), jp2MaxPlanes)
				}
				work += (x1 - x0) * (y1 - y0) * int64(planes) * jp2WorkPerSamplePlane
				tileMem += tc.cblks*(jp2MemPerCblk+2*jp2MemPerNode*4/3) + tc.bandPrecincts*jp2MemPerPrecinct
				maxRes, maxPrec = max(maxRes, int64(c.levels+1)), max(maxPrec, tc.maxPrecincts)
				cblks += tc.cblks
				precincts += tc.bandPrecincts
				packets += int64(layers) * tc.precincts
				steps += int64(layers) * tc.steps
				walk += int64(layers) * tc.walk
			}
			// The packet iterator's include flags: an int16 per layer (and
			// one more), resolution, component and precinct.
			tileMem += int64(layers+1) * maxRes * int64(siz.comps) * maxPrec * 2
			maxTileMem = max(maxTileMem, tileMem)
		}
	}
	e.memory += maxTileMem + min(cblks*int64(layers), int64(len(cs))*8/jp2BitsPerRecord)*jp2MemPerRecord
	pocs := int64(st.pocs + 1) // each progression change iterates its range again
	work += cblks*jp2WorkPerCblk + precincts*jp2WorkPerPrecinct + walk*jp2WorkPerCblkLayerLevel +
		pocs*(packets*jp2WorkPerPacket+steps*jp2WorkPerStep)
	e.work = work
	e.cblks = cblks
	detail := func() string {
		return fmt.Sprintf("%dx%d, %d components, %d tiles, %d code-blocks, %d precincts, %d layers",
			siz.width, siz.height, siz.comps, siz.tiles, cblks, precincts, layers)
	}
	if err := lim.overMemory("JPEG 2000", e.memory, detail); err != nil {
		return e, err
	}
	if err := lim.overWork("JPEG 2000", e.work, detail); err != nil {
		return e, err
	}
	return e, nil
}

// jp2TileComp is one tile-component's share of the structures.
type jp2TileComp struct {
	cblks         int64 // code-blocks, over all resolutions and bands
	bandPrecincts int64 // precincts times bands
	precincts     int64 // precincts over the resolutions: packets a layer
	maxPrecincts  int64 // the most precincts of one resolution
	steps         int64 // a position-first iterator's positions a layer
	walk          int64 // code-blocks times tag-tree levels: a layer's walk
}

func ceilPow2(v int64, n int) int64  { return -((-v) >> n) }
func floorPow2(v int64, n int) int64 { return v >> n }

// tileComp counts what OpenJPEG's opj_tcd_init_tile sets up for the
// component of tile x0,y0,x1,y1 (components are not subsampled here).
func (c *jp2Comp) tileComp(x0, y0, x1, y1 int64) jp2TileComp {
	var t jp2TileComp
	L := c.levels
	minDX, minDY := 64, 64 // log2 of the smallest precinct, in tile samples
	for r := 0; r <= L; r++ {
		level := L - r
		rx0, ry0, rx1, ry1 := ceilPow2(x0, level), ceilPow2(y0, level), ceilPow2(x1, level), ceilPow2(y1, level)
		px, py := int(c.ppx[r]), int(c.ppy[r])
		minDX, minDY = min(minDX, px+level), min(minDY, py+level)
		var pw, ph int64
		if rx0 != rx1 && ry0 != ry1 {
			pw = ceilPow2(rx1, px) - floorPow2(rx0, px)
			ph = ceilPow2(ry1, py) - floorPow2(ry0, py)
		}
		np := pw * ph
		t.precincts += np
		t.maxPrecincts = max(t.maxPrecincts, np)
		bands, gx, gy := 1, px, py
		if r > 0 {
			bands, gx, gy = 3, max(px-1, 0), max(py-1, 0)
		}
		t.bandPrecincts += int64(bands) * np
		cw, ch := min(c.cbw, gx), min(c.cbh, gy)
		for b := 1; b <= bands; b++ {
			bx0, by0, bx1, by1 := rx0, ry0, rx1, ry1
			if r > 0 {
				xb, yb := int64(b&1), int64(b>>1)
				bx0, bx1 = ceilPow2(x0-xb<<level, level+1), ceilPow2(x1-xb<<level, level+1)
				by0, by1 = ceilPow2(y0-yb<<level, level+1), ceilPow2(y1-yb<<level, level+1)
			}
			if bx0 >= bx1 || by0 >= by1 || np == 0 {
				continue
			}
			cols := ceilPow2(bx1, cw) - floorPow2(bx0, cw)
			rows := ceilPow2(by1, ch) - floorPow2(by0, ch)
			n := cols * rows
			t.cblks += n
			// A precinct's tree has about log2 of its side in levels.
			side := max(min(cols, int64(1)<<(gx-cw)), min(rows, int64(1)<<(gy-ch)))
			levels := int64(1)
			for s := int64(1); s < side; s <<= 1 {
				levels++
			}
			t.walk += n * levels
		}
	}
	if minDX < 40 && minDY < 40 {
		t.steps = int64(L+1) * ceilPow2(x1-x0, minDX) * ceilPow2(y1-y0, minDY)
	}
	return t
}
