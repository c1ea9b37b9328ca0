package codec

import (
	"encoding/binary"
	"fmt"
)

// ISOBMFF box reading for AVIF (ISO/IEC 14496-12 section 4.2). Every read
// is checked against the bytes at hand: a box never reaches past its
// parent, and nothing is allocated from a size field. Boxes are read along
// fixed paths, never recursively (the deepest, meta/iprp/ipco/prop, is 4
// deep), so nesting needs no cap of its own.

// bmffBox is one box: its type and its payload (after the header).
type bmffBox struct {
	typ  string
	body []byte
}

// bmffReader reads big-endian fields from a box payload; a read past the
// end sets bad and yields zeros, so that parsers check once at the end.
type bmffReader struct {
	b   []byte
	bad bool
}

func (r *bmffReader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *bmffReader) u8() uint32 {
	if p := r.take(1); p != nil {
		return uint32(p[0])
	}
	return 0
}

func (r *bmffReader) u16() uint32 {
	if p := r.take(2); p != nil {
		return uint32(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (r *bmffReader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

// uintN reads an n-byte unsigned field, n in {0, 4, 8} as iloc allows
// (0 reads as 0).
func (r *bmffReader) uintN(n int) uint64 {
	switch n {
	case 0:
		return 0
	case 4:
		return uint64(r.u32())
	case 8:
		if p := r.take(8); p != nil {
			return binary.BigEndian.Uint64(p)
		}
		return 0
	}
	r.bad = true
	return 0
}

// fourcc reads a four-character code.
func (r *bmffReader) fourcc() string { return string(r.take(4)) }

// fullBox reads a FullBox's version and flags.
func (r *bmffReader) fullBox() (version uint32, flags uint32) {
	v := r.u32()
	return v >> 24, v & 0xFFFFFF
}

// cstring reads a NUL-terminated string (the rest of the box when the
// NUL is missing).
func (r *bmffReader) cstring() string {
	for i, c := range r.b {
		if c == 0 {
			s := string(r.b[:i])
			r.b = r.b[i+1:]
			return s
		}
	}
	s := string(r.b)
	r.b = nil
	return s
}

// bmffBoxes splits b into its boxes. A box whose size runs past b is
// truncated when b ends the file (atEOF), else corrupt; size 0 means "to
// the end of b". It stops after max boxes (too many is corrupt).
func bmffBoxes(b []byte, atEOF bool, max int) ([]bmffBox, *Error) {
	var out []bmffBox
	for len(b) > 0 {
		if len(out) >= max {
			return nil, formatErr(TooLarge, "AVIF", "AVIF file has over %d boxes in one container, the limit", max)
		}
		if len(b) < 8 {
			return nil, avifShort(atEOF, "box header")
		}
		size := uint64(binary.BigEndian.Uint32(b))
		typ := string(b[4:8])
		hdr := uint64(8)
		switch size {
		case 0:
			size = uint64(len(b))
		case 1:
			if len(b) < 16 {
				return nil, avifShort(atEOF, "box header")
			}
			size, hdr = binary.BigEndian.Uint64(b[8:]), 16
		}
		if size < hdr {
			return nil, formatErr(Corrupt, "AVIF", "AVIF box %q has size %d, under its header", typ, size)
		}
		if size > uint64(len(b)) {
			return nil, avifShort(atEOF, fmt.Sprintf("box %q", typ))
		}
		out = append(out, bmffBox{typ: typ, body: b[hdr:size]})
		b = b[size:]
	}
	return out, nil
}

// avifShort is the error for data running past its container: the input
// was cut short when the container is the file itself, else the box sizes
// disagree.
func avifShort(atEOF bool, what string) *Error {
	if atEOF {
		return formatErr(Truncated, "AVIF", "AVIF data ends early (in a %s)", what)
	}
	return formatErr(Corrupt, "AVIF", "AVIF %s runs past its parent box", what)
}
