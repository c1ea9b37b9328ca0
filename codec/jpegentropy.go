package codec

// JPEG facts: what a decoder outside this package (the GPU's Huffman
// decoder in package kernels) needs of a sequential, Huffman-coded JPEG of
// one scan, read the way CoefDecoder reads it (jpegcoef.c's walk, frame and
// sos), so that whatever decodes from them gives CoefDecoder's
// coefficients: its frame and block layout, its quantisation and Huffman
// tables as the scan finds them, and where each restart interval's
// entropy-coded bytes lie.

import "bytes"

// JPEGEntropy is one sequential JPEG of one scan, as ReadJPEGEntropy reads it.
type JPEGEntropy struct {
	Width, Height int
	HMax, VMax    int // the largest sampling factors
	MCUX, MCUY    int // MCUs a row, MCU rows
	// Blocks is the coefficient buffer's size in blocks (CoefDecoder's
	// Frame): every component's Pitch × Rows, MCU padding included.
	Blocks int
	// Comps are the frame's components in frame order, laid out in the
	// buffer as CoefDecoder lays them out.
	Comps []JPEGComponent
	// ScanComps are the frame indexes of the scan's components, in the
	// order its MCUs code them (one component: its blocks are the MCUs).
	ScanComps []int
	// Restart is the restart interval in MCUs; 0 for none.
	Restart int
	// Segments are the entropy-coded bytes of each restart interval (one
	// for the whole scan without restarts), still byte-stuffed: interval
	// k codes MCUs k×Restart onwards.
	Segments []JPEGSegment
}

// JPEGComponent is one frame component: its place in the coefficient
// buffer (as CoefComponent's), and the tables its scan decodes it with.
type JPEGComponent struct {
	// CoefComponent is its place in the buffer, as CoefDecoder's
	// Component says it, and its quantisation table in natural order.
	CoefComponent
	ID   int
	Rows int // stored rows of blocks: whole MCUs
	// DC and AC are its Huffman tables as the scan names them (their
	// symbols slices of the source).
	DC, AC JPEGHuffman
	tq     int // its quantisation table's index
}

// JPEGHuffman is a Huffman table as a DHT segment gives it: the number of
// codes of each length 1..16, and the symbols in code order.
type JPEGHuffman struct {
	Counts  [16]uint8
	Symbols []uint8
}

// JPEGSegment is the half-open byte range [Start, End) of the source
// that one restart interval's entropy-coded data takes: from the byte
// after the SOS header or the RSTn marker to the first 0xFF byte not
// followed by a stuffed zero, where the decoder stops reading.
type JPEGSegment struct{ Start, End int }

// jpegFactsComps is CoefDecoder's limit (SL_COEF_MAX_COMPS).
const jpegFactsComps = 4

// jpegZigzag maps zigzag position to natural order.
var jpegZigzag = [64]uint8{
	0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48,
	41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
	30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63}

// ReadJPEGEntropy reads src's facts. It fails wherever CoefDecoder's Decode
// fails before the entropy-coded data (a damaged marker, frame, table or
// scan header; the data ending before EOI; a restart marker missing), and
// refuses (Unsupported) what it does not describe: a progressive JPEG, a
// sequential one of more than one scan, an MCU of more than 10 blocks.
// Damage inside the entropy-coded data is left to the decoder, which
// reports it as CoefDecoder would.
func ReadJPEGEntropy(src []byte) (*JPEGEntropy, error) {
	if len(src) < 4 || src[0] != 0xFF || src[1] != 0xD8 {
		return nil, formatErr(Unsupported, "JPEG", "not an 8-bit Huffman-coded JPEG")
	}
	var (
		f        JPEGEntropy
		framed   bool
		scanned  bool
		restart  int
		dc, ac   [4]JPEGHuffman
		dcSet    [4]bool
		acSet    [4]bool
		quant    [4][64]uint16
		quantSet [4]bool
	)
	p, end := 2, len(src)
	for end-p >= 2 {
		if src[p] != 0xFF || src[p+1] == 0xFF {
			p++ // junk, or a fill byte before a marker
			continue
		}
		m := src[p+1]
		if m == 0 || m == 0x01 || (m >= 0xD0 && m <= 0xD7) {
			p += 2
			continue
		}
		if m == mEOI {
			if !framed {
				return nil, formatErr(Truncated, "JPEG", "a marker segment runs past the end of the data")
			}
			if !scanned {
				return nil, formatErr(Corrupt, "JPEG", "no scan")
			}
			return &f, nil
		}
		if end-p < 4 {
			break
		}
		n := int(src[p+2])<<8 | int(src[p+3]) - 2
		s := p + 4
		if n < 0 || end-s < n {
			return nil, formatErr(Truncated, "JPEG", "a marker segment runs past the end of the data")
		}
		seg := src[s : s+n]
		p = s + n
		switch {
		case m == 0xC0 || m == 0xC1 || m == 0xC2:
			if framed {
				return nil, formatErr(Corrupt, "JPEG", "bad frame header")
			}
			if err := f.frame(m, seg); err != nil {
				return nil, err
			}
			framed = true
		case m >= 0xC0 && m <= 0xCF && m != mDHT && m != 0xC8 && m != mDAC:
			return nil, formatErr(Unsupported, "JPEG", "not an 8-bit Huffman-coded JPEG")
		case m == mDHT:
			for q := seg; len(q) > 0; {
				if len(q) < 17 || q[0]>>4 > 1 || q[0]&15 > 3 {
					return nil, formatErr(Corrupt, "JPEG", "bad Huffman or quantisation table")
				}
				var h JPEGHuffman
				total := 0
				for i := range 16 {
					h.Counts[i] = q[1+i]
					total += int(q[1+i])
				}
				if total > 256 || len(q) < 17+total {
					return nil, formatErr(Corrupt, "JPEG", "bad Huffman or quantisation table")
				}
				h.Symbols = q[17 : 17+total]
				if !h.valid() {
					return nil, formatErr(Corrupt, "JPEG", "bad Huffman or quantisation table")
				}
				if q[0]>>4 == 1 {
					ac[q[0]&15], acSet[q[0]&15] = h, true
				} else {
					dc[q[0]&15], dcSet[q[0]&15] = h, true
				}
				q = q[17+total:]
			}
		case m == 0xDB:
			for q := seg; len(q) > 0; {
				wide, t := int(q[0]>>4), int(q[0]&15)
				size := 1 + 64
				if wide != 0 {
					size = 1 + 128
				}
				if wide > 1 || t > 3 || len(q) < size {
					return nil, formatErr(Corrupt, "JPEG", "bad Huffman or quantisation table")
				}
				for z := range 64 {
					v := uint16(q[1+z])
					if wide != 0 {
						v = uint16(q[1+2*z])<<8 | uint16(q[2+2*z])
					}
					quant[t][jpegZigzag[z]] = v
				}
				quantSet[t] = true
				q = q[size:]
			}
		case m == 0xDD:
			if n < 2 {
				return nil, formatErr(Truncated, "JPEG", "a marker segment runs past the end of the data")
			}
			restart = int(seg[0])<<8 | int(seg[1])
		case m == mSOS:
			if !framed || len(f.Comps) == 0 {
				return nil, formatErr(Corrupt, "JPEG", "bad scan header, or a scan names a table not defined")
			}
			if scanned {
				return nil, formatErr(Unsupported, "JPEG", "a sequential JPEG of more than one scan")
			}
			scanned = true
			if err := f.scan(seg, &dc, &ac, &dcSet, &acSet, &quant, &quantSet); err != nil {
				return nil, err
			}
			f.Restart = restart
			next, err := f.segments(src, p)
			if err != nil {
				return nil, err
			}
			p = next
		}
	}
	return nil, formatErr(Truncated, "JPEG", "data ends before the end-of-image marker")
}

// frame reads a frame header as jpegcoef.c's frame does.
func (f *JPEGEntropy) frame(m byte, s []byte) error {
	if len(s) < 6 || s[5] < 1 || int(s[5]) > jpegFactsComps || len(s) < 6+3*int(s[5]) {
		return formatErr(Corrupt, "JPEG", "bad frame header")
	}
	if s[0] != 8 {
		return formatErr(Unsupported, "JPEG", "not an 8-bit Huffman-coded JPEG")
	}
	f.Height, f.Width = int(s[1])<<8|int(s[2]), int(s[3])<<8|int(s[4])
	nc := int(s[5])
	if f.Width < 1 || f.Height < 1 {
		return formatErr(Corrupt, "JPEG", "bad frame header")
	}
	f.Comps = make([]JPEGComponent, nc)
	f.HMax, f.VMax = 1, 1
	for i := range f.Comps {
		c := &f.Comps[i]
		c.ID, c.H, c.V = int(s[6+3*i]), int(s[7+3*i]>>4), int(s[7+3*i]&15)
		if c.H < 1 || c.H > 4 || c.V < 1 || c.V > 4 || s[8+3*i] > 3 {
			return formatErr(Corrupt, "JPEG", "bad frame header")
		}
		c.tq = int(s[8+3*i])
		if nc == 1 {
			c.H, c.V = 1, 1 // one component: its blocks are the MCUs whatever the factors
		}
		f.HMax, f.VMax = max(f.HMax, c.H), max(f.VMax, c.V)
	}
	if m == 0xC2 {
		return formatErr(Unsupported, "JPEG", "a progressive JPEG")
	}
	f.MCUX = (f.Width + 8*f.HMax - 1) / (8 * f.HMax)
	f.MCUY = (f.Height + 8*f.VMax - 1) / (8 * f.VMax)
	for i := range f.Comps {
		c := &f.Comps[i]
		c.W = (f.Width*c.H + f.HMax - 1) / f.HMax
		c.Height = (f.Height*c.V + f.VMax - 1) / f.VMax
		c.BlocksW, c.BlocksH = (c.W+7)/8, (c.Height+7)/8
		c.Pitch, c.Rows = f.MCUX*c.H, f.MCUY*c.V
		c.First = f.Blocks
		f.Blocks += c.Pitch * c.Rows
	}
	return nil
}

// scan reads the scan header as jpegcoef.c's sos does for a sequential
// JPEG, latching each component's tables.
func (f *JPEGEntropy) scan(s []byte, dc, ac *[4]JPEGHuffman, dcSet, acSet *[4]bool, quant *[4][64]uint16, quantSet *[4]bool) error {
	bad := formatErr(Corrupt, "JPEG", "bad scan header, or a scan names a table not defined")
	ns := 0
	if len(s) > 0 {
		ns = int(s[0])
	}
	if ns < 1 || ns > len(f.Comps) || len(s) < 4+2*ns {
		return bad
	}
	f.ScanComps = make([]int, ns)
	for i := range ns {
		ci := -1
		for j := range f.Comps {
			if f.Comps[j].ID == int(s[1+2*i]) {
				ci = j
			}
		}
		if ci < 0 {
			return bad
		}
		for _, prev := range f.ScanComps[:i] {
			if prev == ci {
				return bad
			}
		}
		f.ScanComps[i] = ci
		td, ta := int(s[2+2*i]>>4&3), int(s[2+2*i]&3)
		if !dcSet[td] || !acSet[ta] {
			return bad
		}
		c := &f.Comps[ci]
		if !quantSet[c.tq] {
			return bad
		}
		c.Quant = quant[c.tq]
		c.DC, c.AC = dc[td], ac[ta]
	}
	if ns != len(f.Comps) {
		return formatErr(Unsupported, "JPEG", "a sequential JPEG of more than one scan")
	}
	units := 0
	for _, ci := range f.ScanComps {
		units += f.Comps[ci].H * f.Comps[ci].V
	}
	if units > 10 {
		return formatErr(Unsupported, "JPEG", "an MCU of %d blocks", units)
	}
	return nil
}

// segments finds the scan's restart intervals from data (the byte after
// its header) as jpegcoef.c's scan reads them: an interval's data ends at
// the first 0xFF byte not followed by a zero (a last 0xFF byte included),
// and the next starts after the first RSTn marker from there. It returns
// where the marker walk goes on: the first marker after the last
// interval's data that is not an RSTn.
func (f *JPEGEntropy) segments(src []byte, data int) (int, error) {
	mcus := f.MCUX * f.MCUY
	n := 1
	if f.Restart > 0 {
		n = (mcus + f.Restart - 1) / f.Restart
	}
	f.Segments = make([]JPEGSegment, 0, n)
	at := data
	for k := range n {
		// The segment ends at the first 0xFF that is not a stuffed one.
		// IndexByte skips the bytes between: walked one by one they are
		// the host's largest cost of the SMs' route, about 15 times
		// this (BenchmarkReadJPEGEntropy).
		e := at
		for e < len(src) {
			i := bytes.IndexByte(src[e:], 0xFF)
			if i < 0 {
				e = len(src)
				break
			}
			e += i
			if e+1 == len(src) || src[e+1] != 0 {
				break
			}
			e += 2 // a stuffed zero follows
		}
		f.Segments = append(f.Segments, JPEGSegment{at, e})
		if k == n-1 {
			at = e
			break
		}
		r := e
		for !(r+1 < len(src) && src[r] == 0xFF && src[r+1] >= 0xD0 && src[r+1] <= 0xD7) {
			if r+1 >= len(src) {
				return 0, formatErr(Corrupt, "JPEG", "corrupt entropy-coded data")
			}
			r++
		}
		at = r + 2
	}
	for len(src)-at >= 2 && !(src[at] == 0xFF && src[at+1] != 0 && !(src[at+1] >= 0xD0 && src[at+1] <= 0xD7)) {
		at++
	}
	return at, nil
}

// valid reports whether the table's code lengths fit (jpegcoef.c's build).
func (h *JPEGHuffman) valid() bool {
	code, k := 0, 0
	for l := 1; l <= 16; l++ {
		for range h.Counts[l-1] {
			if k >= len(h.Symbols) || code >= 1<<l {
				return false
			}
			code++
			k++
		}
		code <<= 1
	}
	return true
}
