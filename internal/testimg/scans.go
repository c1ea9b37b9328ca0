package testimg

import (
	"encoding/binary"
	"slices"
)

// MaxScans is the most scans ManyScans can write: one DC scan, then each
// of the 63 AC coefficients coded alone with successive approximation from
// bit 13 down to bit 0 (14 scans each).
const MaxScans = 1 + 63*14

// ManyScans writes a legal w×h greyscale progressive JPEG of flat grey
// with the given number of scans (1 to MaxScans): the kind of file that
// costs a decoder far more than its size suggests, since every scan visits
// every 8×8 block. All coefficients but DC are zero, so each AC scan is a
// few end-of-band runs and the file stays small: 8192×8192 with 500 scans
// is about 190 KB. Coefficients are completed one at a time (coded, then
// refined down to bit 0) in zigzag order; those the scans do not reach are
// never coded, which the JPEG standard allows.
func ManyScans(w, h, scans int) []byte {
	if scans < 1 || scans > MaxScans || w < 1 || h < 1 || w > 65535 || h > 65535 {
		panic("testimg: ManyScans out of range")
	}
	// A DC scan, then coefficient k coded at bit al = depth-1 and refined
	// to bit 0: every coefficient gets 14 scans but the last, which gets
	// what is left, so that no coefficient is left half refined.
	script := []Scan{{}}
	left := scans - 1
	for k := 1; left > 0; k++ {
		depth := min(left, 14)
		for al := depth - 1; al >= 0; al-- {
			ah := 0
			if al < depth-1 {
				ah = al + 1
			}
			script = append(script, Scan{Ss: k, Se: k, Ah: ah, Al: al})
		}
		left -= depth
	}
	return GreyScript(w, h, script)
}

// bitWriter packs entropy-coded bits MSB first.
type bitWriter struct {
	acc   uint64
	n     int
	bytes []byte
}

func (b *bitWriter) put(v uint32, bits int) {
	b.acc = b.acc<<bits | uint64(v)&(1<<bits-1)
	b.n += bits
	for b.n >= 8 {
		b.n -= 8
		c := byte(b.acc >> b.n)
		b.bytes = append(b.bytes, c)
		if c == 0xFF {
			b.bytes = append(b.bytes, 0) // byte stuffing
		}
	}
}

// flush pads the last byte with ones, appends the scan's bytes to out and
// resets for the next scan.
func (b *bitWriter) flush(out []byte) []byte {
	if b.n > 0 {
		b.put(1<<(8-b.n)-1, 8-b.n)
	}
	out = append(out, b.bytes...)
	b.bytes, b.acc, b.n = b.bytes[:0], 0, 0
	return out
}

// GreyScript writes a w×h greyscale progressive JPEG of flat grey (every
// coefficient zero, DC included) coded by the given scan script, each
// scan holding the least data it can: DC first scans one 1-bit code per
// block, DC refinement scans one correction bit per block, AC scans (first
// or refinement) a few end-of-band runs. Scans' Comps are ignored (there
// is one component). Nothing checks the script: a bogus progression makes
// libjpeg warn, which is what some tests want. empty lists scans (by
// index) written without any data, which libjpeg reads as data ending
// early.
func GreyScript(w, h int, script []Scan, empty ...int) []byte {
	if w < 1 || h < 1 || w > 65535 || h > 65535 {
		panic("testimg: GreyScript out of range")
	}
	out := []byte{0xFF, 0xD8}
	seg := func(m byte, body ...byte) {
		out = append(out, 0xFF, m)
		out = binary.BigEndian.AppendUint16(out, uint16(len(body)+2))
		out = append(out, body...)
	}
	q := make([]byte, 65)
	for i := 1; i < 65; i++ {
		q[i] = 1
	}
	seg(0xDB, q...)
	seg(0xC2, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 1, 1, 0x11, 0)
	dc := append([]byte{0x00, 1}, make([]byte, 15)...)
	seg(0xC4, append(dc, 0)...)
	ac := append([]byte{0x10, 0, 0, 0, 15}, make([]byte, 12)...)
	for r := range 15 {
		ac = append(ac, byte(r<<4))
	}
	seg(0xC4, ac...)

	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	var bw bitWriter
	for i, s := range script {
		seg(0xDA, 1, 1, 0x00, byte(s.Ss), byte(s.Se), byte(s.Ah<<4|s.Al))
		if slices.Contains(empty, i) {
			continue
		}
		if s.Ss == 0 {
			// DC: a category-0 code, or a correction bit of 0, per block.
			for range blocks {
				bw.put(0, 1)
			}
		} else {
			for n := blocks; n > 0; {
				run := min(n, 1<<15-1)
				r := 0
				for 2<<r <= run {
					r++
				}
				bw.put(uint32(r), 4)
				bw.put(uint32(run-1<<r), r)
				n -= run
			}
		}
		out = bw.flush(out)
	}
	return append(out, 0xFF, 0xD9)
}

// SimpleProgression is libjpeg's standard progressive script for YCbCr
// (jpeg_simple_progression), which Pillow and most tools write.
var SimpleProgression = []Scan{
	{Comps: []int{0, 1, 2}, Ss: 0, Se: 0, Ah: 0, Al: 1},
	{Comps: []int{0}, Ss: 1, Se: 5, Ah: 0, Al: 2},
	{Comps: []int{2}, Ss: 1, Se: 63, Ah: 0, Al: 1},
	{Comps: []int{1}, Ss: 1, Se: 63, Ah: 0, Al: 1},
	{Comps: []int{0}, Ss: 6, Se: 63, Ah: 0, Al: 2},
	{Comps: []int{0}, Ss: 1, Se: 63, Ah: 2, Al: 1},
	{Comps: []int{0, 1, 2}, Ss: 0, Se: 0, Ah: 1, Al: 0},
	{Comps: []int{2}, Ss: 1, Se: 63, Ah: 1, Al: 0},
	{Comps: []int{1}, Ss: 1, Se: 63, Ah: 1, Al: 0},
	{Comps: []int{0}, Ss: 1, Se: 63, Ah: 1, Al: 0},
}
