package kernels

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/testcorpus"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// sluice_huffman's logic, run on the CPU (huffman_emu.go compiles
// huffman.cuh as C) against codec.CoefDecoder: every coefficient of every
// block of the buffer equal, MCU padding included, for the corpus's
// sequential JPEGs and generated ones of every sampling, restart interval
// and odd size; damaged data fails where CoefDecoder fails. Tiny
// subsequences make synchronisation take many rounds; running the threads
// of a round in reverse makes each see its neighbours' old states.

func TestHuffmanLayouts(t *testing.T) {
	if !huffEmulated {
		t.Skip("needs cgo")
	}
	got := huffCSizes()
	want := [5]uintptr{unsafe.Sizeof(huffTable{}), unsafe.Sizeof(huffImage{}), unsafe.Sizeof(huffSeg{}), huffSubSize, unsafe.Sizeof(huffParams{})}
	if got != want {
		t.Fatalf("C struct sizes (table, image, segment, subsequence, params) %v, Go's %v", got, want)
	}
}

// huffCase is one JPEG and CoefDecoder's result for it.
type huffCase struct {
	name  string
	src   []byte
	facts *codec.JPEGEntropy
	coef  []int16 // CoefDecoder's, when err is nil
	err   error   // CoefDecoder's
}

// cpuCoefficients decodes src with codec.CoefDecoder.
func cpuCoefficients(dec *codec.CoefDecoder, src []byte) ([]int16, error) {
	blocks, err := dec.Frame(src)
	if err != nil {
		return nil, err
	}
	coef := make([]int16, blocks*64)
	if blocks == 0 {
		return coef, nil
	}
	err = dec.Decode(unsafe.Slice((*byte)(unsafe.Pointer(&coef[0])), blocks*codec.CoefBlock), make([]uint64, blocks), src)
	return coef, err
}

// newHuffCase reads src's facts and CoefDecoder's coefficients; nil for a
// JPEG ReadJPEGEntropy refuses as one the decoder does not take.
func newHuffCase(t *testing.T, dec *codec.CoefDecoder, name string, src []byte) *huffCase {
	t.Helper()
	f, err := codec.ReadJPEGEntropy(src)
	coef, cerr := cpuCoefficients(dec, src)
	if err != nil {
		var ce *codec.Error
		if errors.As(err, &ce) && ce.Cause == codec.Unsupported {
			return nil
		}
		if cerr == nil {
			t.Errorf("%s: ReadJPEGEntropy: %v, where CoefDecoder decodes it", name, err)
		}
		return nil
	}
	if cerr == nil && f.Blocks*64 != len(coef) {
		t.Fatalf("%s: facts say %d blocks, CoefDecoder %d", name, f.Blocks, len(coef)/64)
	}
	if cerr == nil {
		for i, c := range f.Comps {
			cc := dec.Component(i)
			if c.First != cc.First || c.Pitch != cc.Pitch || c.BlocksW != cc.BlocksW || c.BlocksH != cc.BlocksH ||
				c.W != cc.W || c.Height != cc.Height || c.H != cc.H || c.V != cc.V || c.Quant != cc.Quant {
				t.Fatalf("%s: component %d's facts %+v differ from CoefDecoder's %+v", name, i, c, cc)
			}
		}
	}
	return &huffCase{name: name, src: src, facts: f, coef: coef, err: cerr}
}

// checkEmulated decodes cases in one batch on the emulated GPU, both
// thread orders, and compares with CoefDecoder.
func checkEmulated(t *testing.T, cases []*huffCase) (rounds int) {
	t.Helper()
	if !huffEmulated {
		t.Skip("the emulation needs cgo")
	}
	skipOnGPU(t)
	var b huffBatch
	var in []*huffCase
	for _, c := range cases {
		if err := b.add(c.src, c.facts, 0); err != nil {
			t.Logf("%s: not added: %v", c.name, err)
			continue
		}
		in = append(in, c)
	}
	for _, reverse := range []bool{false, true} {
		coefs := make([][]int16, len(in))
		for i, c := range in {
			coefs[i] = make([]int16, c.facts.Blocks*64)
		}
		st, r, err := emulateHuffman(&b, coefs, reverse)
		if err != nil {
			t.Fatal(err)
		}
		rounds = max(rounds, r)
		for i, c := range in {
			gerr := huffError(st[i] & 0xFF)
			switch {
			case c.err != nil && gerr == nil:
				t.Errorf("%s (reverse %v): decoded, where CoefDecoder fails: %v", c.name, reverse, c.err)
			case c.err == nil && gerr != nil:
				t.Errorf("%s (reverse %v): %v", c.name, reverse, gerr)
			case c.err == nil:
				if k := firstDiff(coefs[i], c.coef); k >= 0 {
					t.Errorf("%s (reverse %v): block %d coefficient %d is %d, CoefDecoder's %d", c.name, reverse, k/64, k%64, coefs[i][k], c.coef[k])
				}
			}
		}
	}
	return rounds
}

func firstDiff(a, b []int16) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// skipOnGPU skips an emulated test where the GPU runs the kernel itself
// (huffman_gpu_test.go), so that a GPU machine's time goes to that.
func skipOnGPU(t *testing.T) {
	t.Helper()
	if cuda.Init() == nil {
		if n, err := cuda.DeviceCount(); err == nil && n > 0 {
			t.Skip("a GPU is here: TestGPUHuffman* check the kernel itself")
		}
	}
}

// tinySubsequences makes every subsequence n bytes for the rest of the
// test.
func tinySubsequences(t *testing.T, n int) {
	minSub, maxSub := huffMinSub, huffMaxSub
	huffMinSub, huffMaxSub = n, n
	t.Cleanup(func() { huffMinSub, huffMaxSub = minSub, maxSub })
}

// HuffCorpus is huffCorpus for the GPU tests (package kernels_test).
var HuffCorpus = huffCorpus

// huffCorpus is the corpus's JPEGs by name; it skips the test without the
// corpus (fails with SLUICE_REQUIRE_CORPUS=1).
func huffCorpus(t *testing.T) map[string][]byte {
	dir := testcorpus.Dir(t)
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := strings.ToLower(filepath.Ext(p)); ext != ".jpg" && ext != ".jpeg" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func corpusCases(t *testing.T) []*huffCase {
	dec, err := codec.NewCoefDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	files := huffCorpus(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	var cases []*huffCase
	for _, n := range names {
		if c := newHuffCase(t, dec, n, files[n]); c != nil {
			cases = append(cases, c)
		}
	}
	return cases
}

func TestHuffmanEmulatedCorpus(t *testing.T) {
	skipOnGPU(t)
	cases := corpusCases(t)
	ok := 0
	for _, c := range cases {
		if c.err == nil {
			ok++
		}
	}
	rounds := checkEmulated(t, cases)
	t.Logf("%d sequential JPEGs of one scan (%d CoefDecoder decodes), at most %d rounds", len(cases), ok, rounds)
}

func TestHuffmanEmulatedCorpusTiny(t *testing.T) {
	skipOnGPU(t)
	tinySubsequences(t, 32)
	cases := corpusCases(t)
	rounds := checkEmulated(t, cases)
	t.Logf("%d JPEGs in 32-byte subsequences: at most %d rounds", len(cases), rounds)
}

// generatedCases are libjpeg's JPEGs of every sampling, with and without
// restart intervals, at sizes that leave partial blocks and MCUs, and Go's.
func generatedCases(t *testing.T) []*huffCase {
	dec, err := codec.NewCoefDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var cases []*huffCase
	add := func(name string, src []byte) {
		if c := newHuffCase(t, dec, name, src); c != nil {
			cases = append(cases, c)
		} else {
			t.Fatalf("%s: not taken", name)
		}
	}
	for i, sz := range [][2]int{{333, 250}, {17, 9}, {64, 48}, {1, 1}, {101, 77}, {8, 16}, {640, 480}, {1023, 7}} {
		for _, luma := range [][2]int{{1, 1}, {2, 1}, {2, 2}, {1, 2}, {4, 1}, {2, 4}} {
			for _, restart := range []int{0, 1, 3, 40} {
				for _, q := range []int{50, 97} {
					rgb := huffTestImage(sz[1], sz[0], uint64(900+i))
					src, err := testimg.LibJPEG(rgb, sz[0], sz[1], testimg.LibJPEGOptions{Quality: q, Luma: luma, Restart: restart})
					if err != nil {
						t.Fatal(err)
					}
					add(fmt.Sprintf("%dx%d/luma%dx%d/rst%d/q%d", sz[0], sz[1], luma[0], luma[1], restart, q), src)
				}
			}
		}
		for _, restart := range []int{0, 2} {
			src, err := testimg.LibJPEG(huffTestImage(sz[1], sz[0], 5), sz[0], sz[1], testimg.LibJPEGOptions{Quality: 85, Grey: true, Restart: restart})
			if err != nil {
				t.Fatal(err)
			}
			add(fmt.Sprintf("%dx%d/grey/rst%d", sz[0], sz[1], restart), src)
		}
		add(fmt.Sprintf("%dx%d/go", sz[0], sz[1]), testimg.JPEG(sz[0], sz[1], i))
	}
	return cases
}

func TestHuffmanEmulatedGenerated(t *testing.T) {
	skipOnGPU(t)
	cases := generatedCases(t)
	rounds := checkEmulated(t, cases)
	t.Logf("%d generated JPEGs: at most %d rounds", len(cases), rounds)
	// The small ones again in 4-byte subsequences.
	small := slices.DeleteFunc(cases, func(c *huffCase) bool { return c.facts.Width*c.facts.Height > 40000 })
	tinySubsequences(t, 4)
	rounds = checkEmulated(t, small)
	t.Logf("%d of them in 4-byte subsequences: at most %d rounds", len(small), rounds)
}

// Damaged entropy-coded data: random bytes changed inside the scan. Where
// CoefDecoder still decodes, the coefficients must be its own; where it
// fails, the image fails.
func TestHuffmanEmulatedDamage(t *testing.T) {
	skipOnGPU(t)
	dec, err := codec.NewCoefDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	r := rand.New(rand.NewPCG(3, 4))
	var cases []*huffCase
	failed := 0
	for i := range 300 {
		luma := [][2]int{{1, 1}, {2, 1}, {2, 2}, {1, 2}}[i%4]
		w, h := 40+r.IntN(200), 30+r.IntN(150)
		src, err := testimg.LibJPEG(huffTestImage(h, w, uint64(i)), w, h, testimg.LibJPEGOptions{Quality: 30 + r.IntN(70), Luma: luma, Restart: []int{0, 0, 2, 7}[i%4], Grey: i%9 == 0})
		if err != nil {
			t.Fatal(err)
		}
		f, err := codec.ReadJPEGEntropy(src)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := f.Segments[0].Start, f.Segments[len(f.Segments)-1].End
		for range 1 + r.IntN(3) {
			switch k := lo + r.IntN(hi-lo); r.IntN(3) {
			case 0:
				src[k] ^= byte(1 << r.IntN(8))
			case 1:
				src[k] = byte(r.IntN(256))
			default:
				src[k] = 0xFF // a marker, or a stuffed zero's 0xFF
			}
		}
		c := newHuffCase(t, dec, fmt.Sprintf("damaged %d", i), src)
		if c == nil {
			continue
		}
		if c.err != nil {
			failed++
		}
		cases = append(cases, c)
	}
	checkEmulated(t, cases)
	t.Logf("%d damaged JPEGs, %d of which CoefDecoder refuses", len(cases), failed)
	tinySubsequences(t, 8)
	checkEmulated(t, cases)
}

// huffTestImage is an h×w RGB image of gradients, noise and hard edges.
func huffTestImage(h, w int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 11))
	px := make([]byte, h*w*3)
	for y := range h {
		for x := range w {
			p := px[(y*w+x)*3:]
			n := r.IntN(61) - 30
			p[0] = byte(min(max(x*255/max(w-1, 1)+n, 0), 255))
			p[1] = byte(min(max(y*255/max(h-1, 1)-n, 0), 255))
			p[2] = byte(min(max((x+y)*3+r.IntN(90), 0), 255))
			if (x/8+y/8)%5 == 0 {
				p[2] = 255 - p[2]
			}
		}
	}
	return px
}

// One table pair for every component: the MCU's tables then repeat every
// block (period 1), so the decoder synchronises on bits alone and finds
// each block's component from the count of blocks before it. libjpeg
// gives chroma tables of their own, so these JPEGs are libjpeg's
// coefficients coded again with its luma tables for every component.
func TestHuffmanEmulatedSharedTables(t *testing.T) {
	skipOnGPU(t)
	dec, err := codec.NewCoefDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var cases []*huffCase
	for i, sz := range [][2]int{{333, 250}, {17, 9}, {101, 77}, {640, 480}} {
		for _, luma := range [][2]int{{1, 1}, {2, 1}, {2, 2}, {1, 2}, {4, 1}} {
			for _, restart := range []int{0, 5} {
				src, err := testimg.LibJPEG(huffTestImage(sz[1], sz[0], uint64(40+i)), sz[0], sz[1], testimg.LibJPEGOptions{Quality: 90, Luma: luma})
				if err != nil {
					t.Fatal(err)
				}
				f, err := codec.ReadJPEGEntropy(src)
				if err != nil {
					t.Fatal(err)
				}
				coef, err := cpuCoefficients(dec, src)
				if err != nil {
					t.Fatal(err)
				}
				again := recode(f, coef, restart)
				name := fmt.Sprintf("%dx%d/luma%dx%d/rst%d/shared", sz[0], sz[1], luma[0], luma[1], restart)
				c := newHuffCase(t, dec, name, again)
				if c == nil || c.err != nil {
					t.Fatalf("%s: not decoded: %+v", name, c)
				}
				if k := firstDiff(c.coef, coef); k >= 0 {
					t.Fatalf("%s: recoded coefficient %d is %d, was %d", name, k, c.coef[k], coef[k])
				}
				cases = append(cases, c)
			}
		}
	}
	var b huffBatch
	if err := b.add(cases[0].src, cases[0].facts, 0); err != nil || b.images[0].Period != 1 {
		t.Fatalf("period %d, want 1 (%v)", b.images[0].Period, err)
	}
	rounds := checkEmulated(t, cases)
	t.Logf("%d JPEGs: at most %d rounds", len(cases), rounds)
}

// recode writes a baseline JPEG of f's frame with coefficients coef (in
// CoefDecoder's layout), every component coded with the first
// component's tables, and restart markers every restart MCUs.
func recode(f *codec.JPEGEntropy, coef []int16, restart int) []byte {
	out := []byte{0xFF, 0xD8}
	seg := func(m byte, body ...byte) {
		out = append(out, 0xFF, m, byte((len(body)+2)>>8), byte(len(body)+2))
		out = append(out, body...)
	}
	for i, c := range f.Comps {
		q := []byte{byte(i)}
		for z := range 64 {
			q = append(q, byte(c.Quant[zigzagNatural[z]]))
		}
		seg(0xDB, q...)
	}
	sof := []byte{8, byte(f.Height >> 8), byte(f.Height), byte(f.Width >> 8), byte(f.Width), byte(len(f.Comps))}
	for i, c := range f.Comps {
		sof = append(sof, byte(c.ID), byte(c.H<<4|c.V), byte(i))
	}
	seg(0xC0, sof...)
	dc, ac := f.Comps[0].DC, f.Comps[0].AC
	seg(0xC4, append(append([]byte{0x00}, dc.Counts[:]...), dc.Symbols...)...)
	seg(0xC4, append(append([]byte{0x10}, ac.Counts[:]...), ac.Symbols...)...)
	if restart > 0 {
		seg(0xDD, byte(restart>>8), byte(restart))
	}
	sos := []byte{byte(len(f.Comps))}
	for _, c := range f.Comps {
		sos = append(sos, byte(c.ID), 0x00)
	}
	seg(0xDA, append(sos, 0, 63, 0)...)
	dcCode, acCode := canonical(&dc), canonical(&ac)
	var w huffWriter
	pred := make([]int, len(f.Comps))
	for m := range f.MCUX * f.MCUY {
		if restart > 0 && m > 0 && m%restart == 0 {
			w.flush()
			w.out = append(w.out, 0xFF, byte(0xD0+(m/restart-1)%8))
			clear(pred)
		}
		mx, my := m%f.MCUX, m/f.MCUX
		for ci, c := range f.Comps {
			for y := range c.V {
				for x := range c.H {
					blk := coef[(c.First+(my*c.V+y)*c.Pitch+mx*c.H+x)*64:][:64]
					diff := int(blk[0]) - pred[ci]
					pred[ci] = int(blk[0])
					s, bits := category(diff)
					w.code(dcCode[s])
					w.put(bits, s)
					run := 0
					for z := 1; z < 64; z++ {
						v := int(blk[zigzagNatural[z]])
						if v == 0 {
							run++
							continue
						}
						for ; run > 15; run -= 16 {
							w.code(acCode[0xF0])
						}
						s, bits := category(v)
						w.code(acCode[run<<4|s])
						w.put(bits, s)
						run = 0
					}
					if run > 0 {
						w.code(acCode[0x00])
					}
				}
			}
		}
	}
	w.flush()
	return append(append(out, w.out...), 0xFF, 0xD9)
}

var zigzagNatural = [64]int{
	0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48,
	41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
	30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63}

// canonical gives each symbol of h its code: (length << 16) | code.
func canonical(h *codec.JPEGHuffman) map[int]uint32 {
	codes := map[int]uint32{}
	code, k := 0, 0
	for l := 1; l <= 16; l++ {
		for range h.Counts[l-1] {
			codes[int(h.Symbols[k])] = uint32(l<<16 | code)
			code++
			k++
		}
		code <<= 1
	}
	return codes
}

// category is v's size and its bits as JPEG codes them.
func category(v int) (int, int) {
	a := max(v, -v)
	s := 0
	for a>>s != 0 {
		s++
	}
	if v < 0 {
		v += 1<<s - 1
	}
	return s, v
}

// huffWriter writes bits MSB first, stuffing a zero after each 0xFF.
type huffWriter struct {
	out  []byte
	acc  uint64
	bits int
}

func (w *huffWriter) put(v, n int) {
	w.acc = w.acc<<n | uint64(v)&(1<<n-1)
	w.bits += n
	for w.bits >= 8 {
		b := byte(w.acc >> (w.bits - 8))
		w.out = append(w.out, b)
		if b == 0xFF {
			w.out = append(w.out, 0)
		}
		w.bits -= 8
	}
}

func (w *huffWriter) code(c uint32) { w.put(int(c&0xFFFF), int(c>>16)) }

// flush pads the last byte with ones.
func (w *huffWriter) flush() {
	if w.bits > 0 {
		w.put(1<<(8-w.bits)-1, 8-w.bits)
	}
}
