package codec

import "encoding/binary"

// j2kSIZ is what a JPEG 2000 codestream's SIZ marker segment says: read
// here, before OpenJPEG sees the input, because opj_read_header allocates
// per tile and per component from it.
type j2kSIZ struct {
	width, height int
	tiles         uint64
	comps         int
	// The grids, in reference grid coordinates, and where the segment
	// ends in the codestream.
	xsiz, ysiz, xo, yo, xt, yt, xto, yto uint64
	sizEnd                               int
}

// tileGrid is the number of tile columns and rows.
func (s j2kSIZ) tileGrid() (uint64, uint64) {
	return (s.xsiz - s.xto + s.xt - 1) / s.xt, (s.ysiz - s.yto + s.yt - 1) / s.yt
}

// tile is tile (i, j)'s area on the reference grid, clipped to the image.
func (s j2kSIZ) tile(i, j uint64) (x0, y0, x1, y1 int64) {
	x0, y0 = int64(max(s.xto+i*s.xt, s.xo)), int64(max(s.yto+j*s.yt, s.yo))
	x1, y1 = int64(min(s.xto+(i+1)*s.xt, s.xsiz)), int64(min(s.yto+(j+1)*s.yt, s.ysiz))
	return
}

const (
	jp2Magic = "\x00\x00\x00\x0cjP  \r\n\x87\n"
	j2kMagic = "\xff\x4f\xff\x51" // SOC, then SIZ
)

// jp2Codestream returns the codestream of a JP2 file: the contents of its
// first top-level "jp2c" box. On the way it reads the boxes OpenJPEG
// acts on after decoding (jp2Colour), so that what Sluice refuses anyway
// is refused before OpenJPEG decodes anything.
func jp2Codestream(b []byte) ([]byte, *Error) {
	for pos := uint64(0); ; {
		typ, body, next, err := jp2Box(b, pos)
		if err != nil {
			return nil, err
		}
		switch typ {
		case "jp2c":
			return body, nil
		case "jp2h":
			if err := jp2Header(body); err != nil {
				return nil, err
			}
		default:
			// OpenJPEG also reads a header box found outside jp2h.
			if err := jp2Colour(typ, body); err != nil {
				return nil, err
			}
		}
		pos = next
	}
}

// jp2Box reads the box at pos of a JP2 file: its type, its contents and
// where the next box starts. A length of 0 runs to the end; a "jp2c" box
// that runs past the end is cut short there (OpenJPEG reports it as
// truncated); any other box must fit.
func jp2Box(b []byte, pos uint64) (typ string, body []byte, next uint64, err *Error) {
	if pos+8 > uint64(len(b)) {
		return "", nil, 0, formatErr(Truncated, "JPEG 2000", "JPEG 2000 data ends before the codestream box")
	}
	n := uint64(binary.BigEndian.Uint32(b[pos:]))
	typ = string(b[pos+4 : pos+8])
	hdr := uint64(8)
	switch n {
	case 0: // to the end
		n = uint64(len(b)) - pos
	case 1:
		if pos+16 > uint64(len(b)) {
			return "", nil, 0, formatErr(Truncated, "JPEG 2000", "JPEG 2000 data ends in a box header")
		}
		n, hdr = binary.BigEndian.Uint64(b[pos+8:]), 16
	}
	if n < hdr {
		return "", nil, 0, formatErr(Corrupt, "JPEG 2000", "JPEG 2000 box %q has a bogus length %d", typ, n)
	}
	if n > uint64(len(b))-pos {
		if typ != "jp2c" {
			return "", nil, 0, formatErr(Truncated, "JPEG 2000", "JPEG 2000 data ends in box %q", typ)
		}
		n = uint64(len(b)) - pos
	}
	return typ, b[pos+hdr : pos+n], pos + n, nil
}

// jp2Header reads the boxes of a JP2 header box. One that does not parse
// is left to OpenJPEG, which refuses the file for it.
func jp2Header(b []byte) *Error {
	for pos := uint64(0); pos+8 <= uint64(len(b)); {
		if n := binary.BigEndian.Uint32(b[pos:]); n == 0 {
			return nil // OpenJPEG: "Cannot handle box of undefined sizes"
		}
		typ, body, next, err := jp2Box(b, pos)
		if err != nil {
			return nil
		}
		if err := jp2Colour(typ, body); err != nil {
			return err
		}
		pos = next
	}
	return nil
}

// jp2Colour refuses the header boxes whose effect OpenJPEG applies after
// the decode. A palette (pclr, with cmap) makes one image-sized plane per
// palette column, up to 255 of them from a 1.7 kB file (a 3072x3072 grey
// codestream: 9.7 GB and 24 s), and Sluice refuses the paletted result
// anyway; a channel definition (cdef) of more entries than the 4
// components Sluice decodes can make OpenJPEG swap components at each
// entry and relabel every later one (60,000 entries of a 64x64 image:
// 0.9 s, against 7 ms for the same list that swaps nothing).
func jp2Colour(typ string, body []byte) *Error {
	switch typ {
	case "pclr":
		cols := 0
		if len(body) >= 3 {
			cols = int(body[2])
		}
		return formatErr(Unsupported, "JPEG 2000", "JPEG 2000 with a palette (%d columns) is not supported", cols)
	case "cdef":
		if len(body) >= 2 {
			if n := int(binary.BigEndian.Uint16(body)); n > jp2MaxComps {
				return formatErr(Unsupported, "JPEG 2000", "JPEG 2000 channel definitions list %d channels, over the %d supported",
					n, jp2MaxComps)
			}
		}
	}
	return nil
}

// parseSIZ reads the SIZ segment at the start of codestream cs.
func parseSIZ(cs []byte) (j2kSIZ, *Error) {
	if len(cs) < 4 || string(cs[:4]) != j2kMagic {
		return j2kSIZ{}, formatErr(Corrupt, "JPEG 2000", "JPEG 2000 codestream does not start with SOC and SIZ")
	}
	const fixed = 2 + 2 + 8*4 + 2 // Lsiz, Rsiz, 8 sizes, Csiz
	if len(cs) < 4+fixed {
		return j2kSIZ{}, formatErr(Truncated, "JPEG 2000", "JPEG 2000 data ends in the SIZ segment")
	}
	u32 := func(i int) uint64 { return uint64(binary.BigEndian.Uint32(cs[4+4+4*i:])) }
	xsiz, ysiz, xo, yo, xt, yt, xto, yto := u32(0), u32(1), u32(2), u32(3), u32(4), u32(5), u32(6), u32(7)
	comps := int(binary.BigEndian.Uint16(cs[4+fixed-2:]))
	if lsiz := int(binary.BigEndian.Uint16(cs[4:])); lsiz != 38+3*comps {
		return j2kSIZ{}, formatErr(Corrupt, "JPEG 2000", "JPEG 2000 SIZ segment is %d bytes for %d components", lsiz, comps)
	}
	if xo >= xsiz || yo >= ysiz || xt == 0 || yt == 0 || xto > xo || yto > yo || xto+xt <= xo || yto+yt <= yo {
		return j2kSIZ{}, formatErr(Corrupt, "JPEG 2000", "JPEG 2000 SIZ gives an invalid image or tile grid")
	}
	s := j2kSIZ{
		width: int(xsiz - xo), height: int(ysiz - yo), comps: comps,
		xsiz: xsiz, ysiz: ysiz, xo: xo, yo: yo, xt: xt, yt: yt, xto: xto, yto: yto,
		sizEnd: 2 + 2 + int(binary.BigEndian.Uint16(cs[4:])),
	}
	tx, ty := s.tileGrid()
	s.tiles = tx * ty
	return s, nil
}
