package codec

// Pricing an AV1 item before dav1d decodes it. dav1d's work is the area
// of the frames it decodes, however few bytes code them. dav1d refuses
// any frame over the item's own size (frame_size_limit), and we stop at
// the first shown picture, but hidden frames before it are decoded too:
// so the item's frames are counted here (OBU headers, AV1 specification
// section 5.3) and each is priced at the item's size. The first sequence
// header's largest frame size is read too: an item whose ispe claims more
// than its AV1 data can code is refused before its pixels are allocated.

const (
	obuSequenceHeader = 1
	obuFrameHeader    = 3
	obuFrame          = 6
	obuTileList       = 8
)

// av1SeqMax is the most of a sequence header OBU that is read: it holds
// the maximum frame size after at most 32 operating points of a few
// bytes each.
const av1SeqMax = 1024

// av1Info is what av1Scan learns of an item's AV1 data.
type av1Info struct {
	frames     int // frame headers (a frame's redundant copies do not count)
	seq        bool
	seqW, seqH int // the first sequence header's max_frame_width/height
}

// partCursor reads an item's bytes across its extents without joining
// them.
type partCursor struct {
	parts [][]byte
	i     int // current part
	off   int // in parts[i]
	left  int // bytes from here to the end
}

func newPartCursor(parts [][]byte, total int) partCursor {
	return partCursor{parts: parts, left: total}
}

// peek copies up to len(buf) bytes from the cursor, without moving it.
func (c *partCursor) peek(buf []byte) []byte {
	n, i, off := 0, c.i, c.off
	for n < len(buf) && i < len(c.parts) {
		k := copy(buf[n:], c.parts[i][off:])
		n += k
		i, off = i+1, 0
	}
	return buf[:n]
}

// skip moves the cursor n ≤ c.left bytes on.
func (c *partCursor) skip(n int) {
	c.left -= n
	for n > 0 {
		k := min(n, len(c.parts[c.i])-c.off)
		n -= k
		if c.off += k; c.off == len(c.parts[c.i]) {
			c.i, c.off = c.i+1, 0
		}
	}
}

// av1Scan walks an item's OBUs. ok is false where the OBU structure does
// not parse.
func av1Scan(parts [][]byte, total int) (info av1Info, ok bool) {
	c := newPartCursor(parts, total)
	var hb [10]byte
	var seq []byte
	for c.left > 0 {
		b := c.peek(hb[:])
		h := b[0]
		if h&0x80 != 0 {
			return info, false // forbidden bit
		}
		typ, ext, hasSize := int(h>>3&15), h&4 != 0, h&2 != 0
		hdr := 1
		if ext {
			hdr = 2
		}
		if c.left < hdr {
			return info, false
		}
		size := uint64(c.left - hdr)
		if hasSize {
			v, k := leb128(b[hdr:])
			if k == 0 {
				return info, false
			}
			hdr += k
			if v > uint64(c.left-hdr) {
				return info, false
			}
			size = v
		}
		switch typ {
		case obuSequenceHeader:
			if !info.seq {
				c.skip(hdr)
				seq = c.peek(make([]byte, min(int(size), av1SeqMax)))
				c.skip(int(size))
				info.seq = true
				if info.seqW, info.seqH, ok = av1SeqFrameSize(seq); !ok {
					return info, false
				}
				continue
			}
		case obuFrameHeader, obuFrame:
			info.frames++
		case obuTileList:
			return info, false // large-scale tile decoding: not an image
		}
		c.skip(hdr + int(size))
	}
	return info, true
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

// av1Bits reads a sequence header's fields, most significant bit first;
// past the end sets bad.
type av1Bits struct {
	b   []byte
	pos int // in bits
	bad bool
}

func (r *av1Bits) f(n int) uint32 {
	v := uint32(0)
	for ; n > 0; n-- {
		if r.pos>>3 >= len(r.b) {
			r.bad = true
			return 0
		}
		v = v<<1 | uint32(r.b[r.pos>>3]>>(7-r.pos&7)&1)
		r.pos++
	}
	return v
}

// uvlc is section 4.10.3's variable-length code; its value is not needed.
func (r *av1Bits) uvlc() {
	zeros := 0
	for !r.bad && r.f(1) == 0 {
		if zeros++; zeros >= 32 {
			return
		}
	}
	r.f(zeros)
}

// av1SeqFrameSize reads a sequence header OBU's payload (section 5.5) up
// to max_frame_width_minus_1 and max_frame_height_minus_1.
func av1SeqFrameSize(b []byte) (w, h int, ok bool) {
	r := av1Bits{b: b}
	r.f(3)           // seq_profile
	r.f(1)           // still_picture
	if r.f(1) == 1 { // reduced_still_picture_header
		r.f(5) // seq_level_idx[0]
	} else {
		decoderModel, bufferDelayLen := false, 0
		if r.f(1) == 1 { // timing_info_present_flag
			r.f(32)          // num_units_in_display_tick
			r.f(32)          // time_scale
			if r.f(1) == 1 { // equal_picture_interval
				r.uvlc() // num_ticks_per_picture_minus_1
			}
			if decoderModel = r.f(1) == 1; decoderModel {
				bufferDelayLen = int(r.f(5)) + 1
				r.f(32) // num_units_in_decoding_tick
				r.f(5)  // buffer_removal_time_length_minus_1
				r.f(5)  // frame_presentation_time_length_minus_1
			}
		}
		displayDelay := r.f(1) == 1
		points := int(r.f(5)) + 1
		for i := 0; i < points && !r.bad; i++ {
			r.f(12)         // operating_point_idc
			if r.f(5) > 7 { // seq_level_idx
				r.f(1) // seq_tier
			}
			if decoderModel && r.f(1) == 1 {
				r.f(bufferDelayLen) // decoder_buffer_delay
				r.f(bufferDelayLen) // encoder_buffer_delay
				r.f(1)              // low_delay_mode_flag
			}
			if displayDelay && r.f(1) == 1 {
				r.f(4) // initial_display_delay_minus_1
			}
		}
	}
	wb, hb := int(r.f(4))+1, int(r.f(4))+1
	w, h = int(r.f(wb))+1, int(r.f(hb))+1
	return w, h, !r.bad
}
