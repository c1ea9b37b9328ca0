package codec

// Pricing an AV1 item before dav1d decodes it. dav1d's work is the area
// of the frames it decodes, however few bytes code them. dav1d refuses
// any frame over the item's own size (frame_size_limit), and we stop at
// the first shown picture, but hidden frames before it are decoded too:
// so the item's frames are counted here (OBU headers, AV1 specification
// section 5.3) and each is priced at the item's size.

const (
	obuFrameHeader = 3
	obuFrame       = 6
	obuTileList    = 8
)

// av1FrameCount counts the frame headers in an AV1 item's OBUs (a
// frame's redundant copies are not counted: they decode nothing). ok is
// false where the OBU structure does not parse.
func av1FrameCount(b []byte) (n int, ok bool) {
	for len(b) > 0 {
		h := b[0]
		if h&0x80 != 0 {
			return n, false // forbidden bit
		}
		typ, ext, hasSize := int(h>>3&15), h&4 != 0, h&2 != 0
		hdr := 1
		if ext {
			hdr = 2
		}
		if len(b) < hdr {
			return n, false
		}
		size := uint64(len(b) - hdr)
		if hasSize {
			v, k := leb128(b[hdr:])
			if k == 0 {
				return n, false
			}
			hdr += k
			if v > uint64(len(b)-hdr) {
				return n, false
			}
			size = v
		}
		switch typ {
		case obuFrameHeader, obuFrame:
			n++
		case obuTileList:
			return n, false // large-scale tile decoding: not an image
		}
		b = b[uint64(hdr)+size:]
	}
	return n, true
}

// leb128 reads an unsigned LEB128 (section 4.10.5) of at most 8 bytes;
// k is the bytes read, 0 when malformed.
func leb128(b []byte) (v uint64, k int) {
	for i := 0; i < 8 && i < len(b); i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
