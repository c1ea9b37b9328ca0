package hostile

import "encoding/binary"

// WebP cases: a lossless bitstream whose meta-Huffman image names 65,536
// Huffman groups (libwebp allocates every group's lookup tables before it
// decodes a pixel), and animations whose canvas is the largest the pixel
// limit allows behind a 1×1 frame.

func init() {
	Register(Case{
		Name: "webp-huffman-groups-65536", Format: "WebP",
		Row:     "lossless WebP 1 MP with 65,536 Huffman groups (colour cache 11 bits)",
		Make:    func() []byte { return WebPHuffmanGroups(1024, 1024, 2, 11) },
		Refused: []string{"too large", "Huffman groups", "memory"},
	})
	// Without a colour cache the same groups' tables (about 810 MB, 0.9 s
	// to build) fit the default per-image limits: decoded.
	Register(Case{
		Name: "webp-huffman-groups-65536-nocache", Format: "WebP",
		Row:  "lossless WebP 1 MP with 65,536 Huffman groups, no colour cache: within the default limits",
		Make: func() []byte { return WebPHuffmanGroups(1024, 1024, 2, 0) },
	})
	Register(Case{
		Name: "webp-canvas-8192-frame-1x1", Format: "WebP",
		Row:  "animated WebP, 8192x8192 canvas behind a 1x1 first frame: decodes as a 64 MP image",
		Make: func() []byte { return WebPAnimatedCanvas(8192, 8192, 1, 1, 3) },
	})
	Register(Case{
		Name: "webp-canvas-8192-x64", Format: "WebP",
		Row:        "64 animated WebPs with an 8192x8192 canvas in one request",
		Make:       func() []byte { return WebPAnimatedCanvas(8192, 8192, 1, 1, 3) },
		Refused:    []string{"request"},
		PerRequest: 64,
	})
}

// lsbWriter writes a VP8L bitstream: values least significant bit first.
type lsbWriter struct {
	b     []byte
	acc   uint64
	nbits uint
}

func (w *lsbWriter) bits(v uint32, n uint) {
	w.acc |= uint64(v) << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.b = append(w.b, byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

func (w *lsbWriter) bytes() []byte {
	if w.nbits > 0 {
		w.b = append(w.b, byte(w.acc))
		w.acc, w.nbits = 0, 0
	}
	return w.b
}

// simpleCode writes a one-symbol "simple" Huffman code (sym < 256): it
// costs no bits per symbol read.
func (w *lsbWriter) simpleCode(sym uint32) {
	w.bits(1, 1) // simple
	w.bits(0, 1) // one symbol
	if sym < 2 {
		w.bits(0, 1)
		w.bits(sym, 1)
		return
	}
	w.bits(1, 1)
	w.bits(sym, 8)
}

// flat256Code writes a normal code giving symbols 0..255 all length 8 (a
// complete code: each symbol is its own 8 bits, reversed), of an alphabet
// of at least 256 symbols: a code-length code whose only symbol is 8
// (costing no bits), and max_symbol 256 so the rest are length 0.
func (w *lsbWriter) flat256Code() {
	w.bits(0, 1) // normal
	// The code-length code lengths, in the order 17, 18, 0, 1, ..., 16, 6,
	// 7, 8: 12 of them (4 + 8) reach symbol 8, the last, given length 1.
	w.bits(12-4, 4)
	for i := 0; i < 11; i++ {
		w.bits(0, 3)
	}
	w.bits(1, 3)
	w.bits(1, 1)     // max_symbol given
	w.bits(3, 3)     // length_nbits = 2 + 2*3 = 8
	w.bits(256-2, 8) // max_symbol = 256
}

// flat256Sym writes symbol s of a flat256Code.
func (w *lsbWriter) flat256Sym(s uint32) {
	// Canonical code s, 8 bits, read most significant bit first.
	for i := 7; i >= 0; i-- {
		w.bits(s>>uint(i)&1, 1)
	}
}

// vp8lFile wraps a VP8L bitstream (without its signature and header)
// into a RIFF WebP of w×h.
func vp8lFile(w, h int, body []byte, alpha bool) []byte {
	var hw lsbWriter
	hw.bits(0x2f, 8)
	hw.bits(uint32(w-1), 14)
	hw.bits(uint32(h-1), 14)
	a := uint32(0)
	if alpha {
		a = 1
	}
	hw.bits(a, 1)
	hw.bits(0, 3)
	stream := append(hw.bytes(), body...)
	return riff(WebPChunk(nil, "VP8L", stream))
}

// WebPChunk appends a RIFF chunk (tag, little-endian size, body, a pad
// byte to an even size) to b.
func WebPChunk(b []byte, tag string, body []byte) []byte {
	b = append(b, tag...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	if len(body)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func riff(chunks []byte) []byte {
	b := append([]byte("RIFF\x00\x00\x00\x00WEBP"), chunks...)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// WebPHuffmanGroups is a lossless w×h WebP whose meta-Huffman image (one
// pixel per 2^bits × 2^bits tile) gives every tile its own Huffman group,
// as many as there are tiles up to 65,536, each of five one-symbol codes
// (so the pixels themselves cost no bits: the file is its tables); the
// colour cache of cacheBits (0: none) widens each group's green alphabet,
// and so the tables libwebp allocates for it.
func WebPHuffmanGroups(w, h, bits, cacheBits int) []byte {
	return vp8lFile(w, h, WebPHuffmanGroupsStream(w, h, bits, cacheBits), false)
}

// WebPHuffmanGroupsStream is WebPHuffmanGroups' bitstream after the
// signature and size: what an ALPH chunk holds (after its method byte) as
// a lossy image's lossless alpha.
func WebPHuffmanGroupsStream(w, h, bits, cacheBits int) []byte {
	var bw lsbWriter
	bw.bits(0, 1) // no transform
	if cacheBits > 0 {
		bw.bits(1, 1)
		bw.bits(uint32(cacheBits), 4)
	} else {
		bw.bits(0, 1)
	}
	bw.bits(1, 1) // meta Huffman codes
	bw.bits(uint32(bits-2), 3)
	tw, th := (w+(1<<bits)-1)>>bits, (h+(1<<bits)-1)>>bits
	tiles := tw * th
	// The entropy image: group i is (red << 8 | green) = i mod 65536.
	bw.bits(0, 1)    // no colour cache
	bw.flat256Code() // green
	bw.flat256Code() // red
	bw.simpleCode(0) // blue
	bw.simpleCode(0) // alpha
	bw.simpleCode(0) // distance
	groups := min(tiles, 1<<16)
	for i := 0; i < tiles; i++ {
		g := uint32(i % groups)
		bw.flat256Sym(g & 0xff) // green, then red
		bw.flat256Sym(g >> 8)
	}
	// Each group: green (a literal, so no pixel costs a bit), red, blue,
	// alpha, distance.
	for i := 0; i < groups; i++ {
		bw.simpleCode(uint32(i) & 0xff)
		bw.simpleCode(uint32(i>>8) & 0xff)
		bw.simpleCode(0)
		bw.simpleCode(0xff)
		bw.simpleCode(0)
	}
	return bw.bytes()
}

// WebPLosslessSolid is a lossless w×h WebP of one colour, the smallest
// frame there is.
func WebPLosslessSolid(w, h int, argb uint32) []byte {
	var bw lsbWriter
	bw.bits(0, 1) // no transform
	bw.bits(0, 1) // no colour cache
	bw.bits(0, 1) // no meta codes
	bw.simpleCode(argb >> 8 & 0xff)
	bw.simpleCode(argb >> 16 & 0xff)
	bw.simpleCode(argb & 0xff)
	bw.simpleCode(argb >> 24)
	bw.simpleCode(0)
	return vp8lFile(w, h, bw.bytes(), argb>>24 != 0xff)
}

// WebPAnimatedCanvas is an animation on a cw×ch canvas of n frames, each a
// fw×fh solid lossless image at the origin.
func WebPAnimatedCanvas(cw, ch, fw, fh, n int) []byte {
	return WebPAnimatedCanvasAt(cw, ch, 0, 0, fw, fh, n)
}

// WebPAnimatedCanvasAt is WebPAnimatedCanvas with the frames at (x, y),
// both even (the format stores offsets halved).
func WebPAnimatedCanvasAt(cw, ch, x, y, fw, fh, n int) []byte {
	u24 := func(b []byte, v int) []byte { return append(b, byte(v), byte(v>>8), byte(v>>16)) }
	b := WebPChunk(nil, "VP8X", u24(u24([]byte{0x02 | 0x10, 0, 0, 0}, cw-1), ch-1))
	b = WebPChunk(b, "ANIM", []byte{0, 0, 0, 0, 0, 0})
	for i := 0; i < n; i++ {
		frame := WebPLosslessSolid(fw, fh, 0xff000000|uint32(0x102030*(i+1))&0xffffff)
		body := u24(u24(u24(u24(u24(nil, x/2), y/2), fw-1), fh-1), 100)
		body = append(body, 0x02) // no blending
		body = append(body, frame[12:]...)
		b = WebPChunk(b, "ANMF", body)
	}
	return riff(b)
}
