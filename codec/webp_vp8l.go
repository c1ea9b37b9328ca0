package codec

import (
	"encoding/binary"
	"fmt"
)

// A lossless (VP8L) bitstream read far enough to price its decode before
// libwebp sees it: the transforms, the colour cache, and the meta-Huffman
// (entropy) image, which says how many Huffman groups the image has.
// libwebp allocates the lookup tables of every group (up to 65,536, 12 to
// 20 kB each) and reads all their codes before it decodes a pixel, so a
// 1 MP file of a few hundred kB can make it allocate over a gigabyte and
// spend seconds; the group count is only known after the entropy image,
// which follows the transforms' own entropy-coded images, so this file
// decodes those sub-images' symbols as libwebp does (their pixel values
// are not needed, except the entropy image's). It follows libwebp 1.2.4's
// src/dec/vp8l_dec.c and src/utils/huffman_utils.c: what it accepts and
// rejects, and where its bit reader runs out.

// vp8lInfo is what the parse found.
type vp8lInfo struct {
	xsize, ysize int // the coded image (packed by a colour-indexing transform)
	cacheBits    int // the main image's colour cache, 0 for none
	// groupsRead is how many groups' codes libwebp reads (the largest
	// index in the entropy image, plus one), groups how many it builds
	// tables for (the distinct indices, when it remaps them).
	groupsRead, groups int
	subPixels          int64 // pixels of the transform and entropy images
}

// libwebp's constants (vp8l_dec.c): the lookup-table entries a group's five
// codes need at most, by colour-cache bits, and each HTreeGroup's size.
var vp8lTableSize = [12]int64{2954, 2956, 2958, 2962, 2970, 2986, 3018, 3082, 3212, 3468, 3980, 5004}

const (
	vp8lHTreeGroupBytes = 568 // 5 pointers, 4 ints, a 64-entry packed table of 8 bytes
	vp8lHuffmanCodeSize = 4   // HuffmanCode: uint8 bits, uint16 value
	// Work per alphabet symbol of every group's codes: libwebp clears,
	// counts and sorts each code's whole alphabet (the green one widened
	// by the colour cache) twice; measured 9-13 ns a symbol (65,536
	// groups: 0.9 s without a colour cache, 1.9 s with 11 bits).
	vp8lWorkPerGroupSymbol = 36
	// Work per pixel of a lossless decode: up to four symbols a pixel,
	// then up to four inverse transforms and the colour conversion.
	vp8lWorkPerPixel = 48
)

// alphabetSum is the symbols of one group's five codes.
func vp8lAlphabetSum(cacheBits int) int64 {
	s := int64(256 + 24 + 256*3 + 40)
	if cacheBits > 0 {
		s += 1 << cacheBits
	}
	return s
}

// memory estimates what libwebp allocates to decode the stream beyond a
// fixed part: the coded pixels, the sub-images, the tables and struct of
// every group but the first, the remapping of group indices. Not counted
// (they would dominate the small limits of small images, and are
// bounded): one group's tables and the colour cache (under 30 kB), the
// caches of 17 rows (4 bytes a pixel of width: at most 1.1 MB).
func (v *vp8lInfo) memory() int64 {
	m := 4 * (int64(v.xsize)*int64(v.ysize) + v.subPixels)
	m += v.tablesMemory()
	if v.groupsRead > 1 {
		m += 4 * int64(v.groupsRead)
	}
	return m
}

// tablesMemory is the groups' part of memory.
func (v *vp8lInfo) tablesMemory() int64 {
	return int64(v.groups-1) * (vp8lTableSize[v.cacheBits]*vp8lHuffmanCodeSize + vp8lHTreeGroupBytes)
}

// work estimates libwebp's decode work: reading every group's codes but
// the first's (a fixed part, as in memory), and the pixels.
func (v *vp8lInfo) work(pixels int64) int64 {
	return int64(v.groupsRead-1)*vp8lAlphabetSum(v.cacheBits)*vp8lWorkPerGroupSymbol + (pixels+v.subPixels)*vp8lWorkPerPixel
}

// detail names the groups for a message ("" for one group).
func (v *vp8lInfo) detail(what string) string {
	if v.groupsRead <= 1 {
		return ""
	}
	return fmt.Sprintf("%s: %d Huffman groups, colour cache of %d bits", what, v.groupsRead, v.cacheBits)
}

// vp8lError is a reason the parse stopped: the stream ran out (truncated)
// or broke a rule libwebp checks (corrupt).
type vp8lError struct {
	truncated bool
	what      string
}

// vp8lBits reads the stream least significant bit first. Past the end it
// reads zeros; eos is libwebp's end-of-stream condition: more bits taken
// than the stream has, where a stream shorter than 8 bytes counts as 8
// (libwebp's reader window is 64 bits, zero-filled).
type vp8lBits struct {
	b     []byte
	pos   uint64 // bits consumed
	limit uint64
}

func newVP8LBits(b []byte) *vp8lBits {
	return &vp8lBits{b: b, limit: 8 * uint64(max(len(b), 8))}
}

func (r *vp8lBits) eos() bool { return r.pos > r.limit }

// peek returns the next 32 bits (zeros past the end) without consuming.
func (r *vp8lBits) peek() uint32 {
	i := r.pos >> 3
	var w uint64
	if i+8 <= uint64(len(r.b)) {
		w = binary.LittleEndian.Uint64(r.b[i:])
	} else {
		for k := uint64(0); k < 8 && i+k < uint64(len(r.b)); k++ {
			w |= uint64(r.b[i+k]) << (8 * k)
		}
	}
	return uint32(w >> (r.pos & 7))
}

func (r *vp8lBits) read(n uint) uint32 {
	if n == 0 {
		return 0
	}
	v := r.peek() & (1<<n - 1)
	r.pos += uint64(n)
	return v
}

// vp8lCode is one canonical Huffman code as a lookup table indexed by the
// next maxLen bits (reversed, as the stream stores codes): a symbol and
// its length a slot. A one-symbol code reads no bits.
type vp8lCode struct {
	maxLen uint
	table  []uint32 // symbol<<4 | length
}

func (c *vp8lCode) read(r *vp8lBits) int {
	if c.maxLen == 0 {
		return int(c.table[0] >> 4)
	}
	e := c.table[r.peek()&(1<<c.maxLen-1)]
	r.pos += uint64(e & 15)
	return int(e >> 4)
}

// build makes the code from its lengths, with libwebp's checks: lengths at
// most 15, not all zero; one used symbol makes a code of no bits, more
// must make a complete code (no length over-subscribed, no branch left
// open). It reuses c.table.
func (c *vp8lCode) build(lengths []uint8) bool {
	var count [16]int
	n, only, maxLen := 0, 0, 0
	for s, l := range lengths {
		if l > 15 {
			return false
		}
		if l > 0 {
			count[l]++
			n++
			only = s
			maxLen = max(maxLen, int(l))
		}
	}
	if n == 0 {
		return false
	}
	if n == 1 {
		c.maxLen = 0
		c.table = append(c.table[:0], uint32(only)<<4)
		return true
	}
	// Kraft: the lengths fill the code space exactly.
	left := 1
	for l := 1; l <= 15; l++ {
		left = left<<1 - count[l]
		if left < 0 {
			return false
		}
	}
	if left != 0 {
		return false
	}
	size := 1 << maxLen
	if cap(c.table) < size {
		c.table = make([]uint32, size)
	}
	c.table = c.table[:size]
	c.maxLen = uint(maxLen)
	// Canonical codes: by length, then symbol; each stored reversed.
	var next [16]int
	code := 0
	for l := 1; l <= 15; l++ {
		next[l] = code
		code = (code + count[l]) << 1
	}
	for s, l := range lengths {
		if l == 0 {
			continue
		}
		k := next[l]
		next[l]++
		rev := 0
		for i := 0; i < int(l); i++ {
			rev = rev<<1 | (k>>i)&1
		}
		for j := rev; j < size; j += 1 << l {
			c.table[j] = uint32(s)<<4 | uint32(l)
		}
	}
	return true
}

// vp8lParser holds the reader and scratch space.
type vp8lParser struct {
	r       *vp8lBits
	lengths []uint8
	clc     vp8lCode
	codes   [5]vp8lCode
}

var vp8lCodeOrder = [19]uint8{17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// readCode reads one Huffman code of alphabet size n into c.
func (p *vp8lParser) readCode(c *vp8lCode, n int) *vp8lError {
	r := p.r
	if cap(p.lengths) < n {
		p.lengths = make([]uint8, n)
	}
	lengths := p.lengths[:n]
	clear(lengths)
	if r.read(1) == 1 { // simple: one or two symbols of 1 or 8 bits
		two := r.read(1) == 1
		s := int(r.read(1 + 7*uint(r.read(1))))
		if s < n { // a symbol past the alphabet (distance codes: 40) counts for none
			lengths[s] = 1
		}
		if two {
			if s := int(r.read(8)); s < n {
				lengths[s] = 1
			}
		}
	} else {
		var cl [19]uint8
		k := int(r.read(4)) + 4
		for i := 0; i < k; i++ {
			cl[vp8lCodeOrder[i]] = uint8(r.read(3))
		}
		if !p.clc.build(cl[:]) {
			return &vp8lError{what: "a code-length code is not a valid prefix code"}
		}
		maxSym := n
		if r.read(1) == 1 {
			maxSym = 2 + int(r.read(2+2*uint(r.read(3))))
			if maxSym > n {
				return &vp8lError{what: "a Huffman code has more lengths than symbols"}
			}
		}
		prev := uint8(8)
		for s := 0; s < n; {
			if maxSym == 0 {
				break
			}
			maxSym--
			v := p.clc.read(r)
			if v < 16 {
				lengths[s] = uint8(v)
				s++
				if v != 0 {
					prev = uint8(v)
				}
				continue
			}
			extra := [3]uint{2, 3, 7}[v-16]
			rep := int(r.read(extra)) + [3]int{3, 3, 11}[v-16]
			if s+rep > n {
				return &vp8lError{what: "a Huffman code's lengths repeat past its alphabet"}
			}
			l := uint8(0)
			if v == 16 {
				l = prev
			}
			for ; rep > 0; rep-- {
				lengths[s] = l
				s++
			}
		}
	}
	if r.eos() {
		return &vp8lError{truncated: true, what: "ends within a Huffman code"}
	}
	if !c.build(lengths) {
		return &vp8lError{what: "a Huffman code is not a valid prefix code"}
	}
	return nil
}

func vp8lSub(size, bits int) int { return (size + 1<<bits - 1) >> bits }

var vp8lCodeToPlane = [120]uint8{
	0x18, 0x07, 0x17, 0x19, 0x28, 0x06, 0x27, 0x29, 0x16, 0x1a,
	0x26, 0x2a, 0x38, 0x05, 0x37, 0x39, 0x15, 0x1b, 0x36, 0x3a,
	0x25, 0x2b, 0x48, 0x04, 0x47, 0x49, 0x14, 0x1c, 0x35, 0x3b,
	0x46, 0x4a, 0x24, 0x2c, 0x58, 0x45, 0x4b, 0x34, 0x3c, 0x03,
	0x57, 0x59, 0x13, 0x1d, 0x56, 0x5a, 0x23, 0x2d, 0x44, 0x4c,
	0x55, 0x5b, 0x33, 0x3d, 0x68, 0x02, 0x67, 0x69, 0x12, 0x1e,
	0x66, 0x6a, 0x22, 0x2e, 0x54, 0x5c, 0x43, 0x4d, 0x65, 0x6b,
	0x32, 0x3e, 0x78, 0x01, 0x77, 0x79, 0x53, 0x5d, 0x11, 0x1f,
	0x64, 0x6c, 0x42, 0x4e, 0x76, 0x7a, 0x21, 0x2f, 0x75, 0x7b,
	0x31, 0x3f, 0x63, 0x6d, 0x52, 0x5e, 0x00, 0x74, 0x7c, 0x41,
	0x4f, 0x10, 0x20, 0x62, 0x6e, 0x30, 0x73, 0x7d, 0x51, 0x5f,
	0x40, 0x72, 0x7e, 0x61, 0x6f, 0x50, 0x71, 0x7f, 0x60, 0x70,
}

// prefixValue is a length or distance from its prefix symbol and extra bits.
func (p *vp8lParser) prefixValue(sym int) int {
	if sym < 4 {
		return sym + 1
	}
	extra := uint(sym-2) >> 1
	return (2+sym&1)<<extra + int(p.r.read(extra)) + 1
}

// subImage reads an entropy-coded image of xs×ys without meta codes (a
// transform's data, or the entropy image): its colour cache, its five
// codes, its pixels. keep, when not nil, receives the pixels (the entropy
// image's); otherwise only the symbols are followed, as no later bit
// depends on their values.
func (p *vp8lParser) subImage(xs, ys int, keep []uint32) *vp8lError {
	r := p.r
	cacheBits := 0
	if r.read(1) == 1 {
		cacheBits = int(r.read(4))
		if cacheBits < 1 || cacheBits > 11 {
			return &vp8lError{what: "a colour cache size is out of range"}
		}
	}
	cacheSize := 0
	if cacheBits > 0 {
		cacheSize = 1 << cacheBits
	}
	for j, n := range [5]int{256 + 24 + cacheSize, 256, 256, 256, 40} {
		if e := p.readCode(&p.codes[j], n); e != nil {
			return e
		}
	}
	var cache []uint32
	if keep != nil && cacheBits > 0 {
		cache = make([]uint32, cacheSize)
	}
	insert := func(from, to int) {
		for ; from < to; from++ {
			cache[(keep[from]*0x1e35a7bd)>>(32-cacheBits)] = keep[from]
		}
	}
	total := xs * ys
	for pos := 0; pos < total; {
		code := p.codes[0].read(r)
		switch {
		case code < 256:
			red := p.codes[1].read(r)
			blue := p.codes[2].read(r)
			alpha := p.codes[3].read(r)
			if keep != nil {
				keep[pos] = uint32(alpha)<<24 | uint32(red)<<16 | uint32(code)<<8 | uint32(blue)
				if cache != nil {
					insert(pos, pos+1)
				}
			}
			pos++
		case code < 280:
			length := p.prefixValue(code - 256)
			dc := p.prefixValue(p.codes[4].read(r))
			dist := dc - 120
			if dc <= 120 {
				d := vp8lCodeToPlane[dc-1]
				dist = max(int(d>>4)*xs+8-int(d&15), 1)
			}
			if r.eos() {
				return &vp8lError{truncated: true, what: "ends within an entropy-coded image"}
			}
			if pos < dist || total-pos < length {
				return &vp8lError{what: "a backward reference reaches outside its image"}
			}
			if keep != nil {
				for i := 0; i < length; i++ {
					keep[pos+i] = keep[pos+i-dist]
				}
				if cache != nil {
					insert(pos, pos+length)
				}
			}
			pos += length
		default: // a colour-cache index: the alphabet has no other symbol
			if keep != nil {
				keep[pos] = cache[code-280]
			}
			pos++
		}
		if r.eos() {
			return &vp8lError{truncated: true, what: "ends within an entropy-coded image"}
		}
	}
	return nil
}

// parseVP8L reads the stream (from its signature byte when header is
// true; an alpha stream has none and is w×h) up to the first group's
// codes.
func parseVP8L(b []byte, header bool, w, h int) (*vp8lInfo, *vp8lError) {
	p := &vp8lParser{r: newVP8LBits(b)}
	r := p.r
	if header {
		if r.read(8) != 0x2f {
			return nil, &vp8lError{what: "no lossless signature"}
		}
		w, h = int(r.read(14))+1, int(r.read(14))+1
		r.read(1)
		if r.read(3) != 0 {
			return nil, &vp8lError{what: "unknown lossless version"}
		}
	}
	v := &vp8lInfo{xsize: w, ysize: h}
	seen := 0
	for r.read(1) == 1 {
		t := int(r.read(2))
		if seen&(1<<t) != 0 {
			return nil, &vp8lError{what: "a transform is repeated"}
		}
		seen |= 1 << t
		switch t {
		case 0, 1: // predictor, cross-colour: a sub-image of tiles
			bits := int(r.read(3)) + 2
			sw, sh := vp8lSub(v.xsize, bits), vp8lSub(v.ysize, bits)
			v.subPixels += int64(sw) * int64(sh)
			if e := p.subImage(sw, sh, nil); e != nil {
				return nil, e
			}
		case 3: // colour indexing: a palette, and pixels packed 2, 4 or 8 a byte
			n := int(r.read(8)) + 1
			bits := 0
			switch {
			case n <= 2:
				bits = 3
			case n <= 4:
				bits = 2
			case n <= 16:
				bits = 1
			}
			v.subPixels += int64(n)
			if e := p.subImage(n, 1, nil); e != nil {
				return nil, e
			}
			v.xsize = vp8lSub(v.xsize, bits)
		}
		if r.eos() {
			return nil, &vp8lError{truncated: true, what: "ends within its transforms"}
		}
	}
	if r.read(1) == 1 {
		v.cacheBits = int(r.read(4))
		if v.cacheBits < 1 || v.cacheBits > 11 {
			return nil, &vp8lError{what: "a colour cache size is out of range"}
		}
	}
	v.groupsRead, v.groups = 1, 1
	if r.read(1) == 1 {
		bits := int(r.read(3)) + 2
		hw, hh := vp8lSub(v.xsize, bits), vp8lSub(v.ysize, bits)
		v.subPixels += int64(hw) * int64(hh)
		img := make([]uint32, hw*hh)
		if e := p.subImage(hw, hh, img); e != nil {
			return nil, e
		}
		top := 0
		for _, px := range img {
			top = max(top, int(px>>8&0xffff))
		}
		v.groupsRead, v.groups = top+1, top+1
		// libwebp remaps the indices to the ones used when there are
		// many, or more than pixels, and builds only those.
		if top+1 > 1000 || top+1 > v.xsize*v.ysize {
			used := make([]bool, top+1)
			n := 0
			for _, px := range img {
				if g := px >> 8 & 0xffff; !used[g] {
					used[g] = true
					n++
				}
			}
			v.groups = n
		}
	}
	if r.eos() {
		return nil, &vp8lError{truncated: true, what: "ends within its header"}
	}
	return v, nil
}
