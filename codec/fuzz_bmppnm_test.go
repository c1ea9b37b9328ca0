package codec

import (
	"fmt"
	"testing"
)

// bmpSeeds are small BMPs of every layout the decoder reads.
func bmpSeeds() [][]byte {
	pal := testPalette(16)
	rows := [][]byte{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {9, 8, 7, 6, 5, 4, 3, 2, 1}}
	var seeds [][]byte
	for _, bpp := range []int{1, 4, 8, 16, 24, 32} {
		seeds = append(seeds, makeBMP(bmpSpec{w: 3, h: 2, bpp: bpp, header: 40, palette: pal[:min(16, 1<<min(bpp, 4))],
			pixels: storedRows(rows, false)}))
	}
	return append(seeds,
		makeBMP(bmpSpec{w: 2, h: 2, bpp: 32, header: 124, topDown: true, comp: bmpBitfields,
			masks: []uint32{0xFF0000, 0xFF00, 0xFF, 0xFF000000}, pixels: make([]byte, 16)}),
		makeBMP(bmpSpec{w: 3, h: 2, bpp: 16, header: 40, comp: bmpBitfields, masks: []uint32{0xF800, 0x7E0, 0x1F},
			pixels: storedRows(rows, false)}),
		makeBMP(bmpSpec{w: 3, h: 2, bpp: 8, header: 12, palette: pal, pixels: storedRows(rows, false)}),
		makeBMP(bmpSpec{w: 6, h: 4, bpp: 8, comp: bmpRLE8, header: 40, palette: pal,
			pixels: []byte{3, 1, 0, 3, 4, 5, 6, 0, 0, 0, 9, 2, 0, 0, 2, 7, 0, 2, 2, 1, 2, 3, 0, 1}}),
		makeBMP(bmpSpec{w: 5, h: 2, bpp: 4, comp: bmpRLE4, header: 40, palette: pal,
			pixels: []byte{5, 0x12, 0, 0, 0, 3, 0xAB, 0xC0, 2, 0xEE, 0, 1}}),
	)
}

// pnmSeeds are small PNMs of every kind.
func pnmSeeds() [][]byte {
	seeds := [][]byte{
		[]byte("P1\n# c\n3 2\n010 1 1 0\n"),
		[]byte("P4\n9 2\n\xa5\x80\x5a\x00"),
		[]byte("P2\n2 2\n1000\n0 500 999 1000\n"),
		[]byte("P3 1 2 15 1 2 3 #x\n 4 5 15\n"),
	}
	for _, maxval := range []int{255, 100, 65535, 1000} {
		n := 12
		if maxval > 255 {
			n = 24
		}
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 37)
		}
		seeds = append(seeds, append([]byte(fmt.Sprintf("P6\n2 2\n%d\n", maxval)), body...),
			append([]byte(fmt.Sprintf("P5\n3 2\n%d\n", maxval)), body[:n/2]...))
	}
	return seeds
}

// FuzzBMP is FuzzDecode seeded with BMPs only, and the shapes of the
// hostile-input rounds: RLE skipping blank areas with end-of-line and
// delta codes, a palette longer than 256 colours, empty bitfield masks.
func FuzzBMP(f *testing.F) {
	for _, s := range bmpSeeds() {
		f.Add(s)
	}
	pal := testPalette(16)
	f.Add(makeBMP(bmpSpec{w: 600, h: 8, bpp: 8, comp: bmpRLE8, header: 40, palette: pal,
		pixels: []byte{5, 7, 0, 0, 0, 2, 10, 5, 3, 9, 0, 0, 0, 2, 255, 0, 0, 2, 255, 1, 2, 1, 0, 1}}))
	f.Add(makeBMP(bmpSpec{w: 4, h: 2, bpp: 8, header: 40, palette: pal, colors: 1000, pixels: make([]byte, 8)}))
	f.Add(makeBMP(bmpSpec{w: 2, h: 2, bpp: 16, header: 40, comp: bmpBitfields, masks: []uint32{0, 0, 0},
		pixels: make([]byte, 8)}))
	fuzzDecoder(f)
}

// FuzzPNM is FuzzDecode seeded with PNMs only, and a PFM (refused).
func FuzzPNM(f *testing.F) {
	for _, s := range pnmSeeds() {
		f.Add(s)
	}
	f.Add(append([]byte("PF\n2 2\n-1.0\n"), make([]byte, 48)...))
	fuzzDecoder(f)
}

// The seeds are valid images: the fuzzer starts from decodable inputs.
func TestBMPPNMSeedsDecode(t *testing.T) {
	for i, s := range append(bmpSeeds(), pnmSeeds()...) {
		if _, err := Decode(s, Options{Color: RGBA}); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}
