package codec

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/internal/allocstest"
	"github.com/sluice-dev/sluice/internal/hostile"
)

func TestDecodeJPEGBlocks(t *testing.T) {
	src := encodeJPEG(t, blockImage(2, 3), 95)
	img := mustDecode(t, src, Options{})
	if img.Width != 48 || img.Height != 32 || img.Color != RGB || len(img.Pix) != 48*32*3 {
		t.Fatalf("got %dx%d %v with %d bytes", img.Width, img.Height, img.Color, len(img.Pix))
	}
	for by := 0; by < 2; by++ {
		for bx := 0; bx < 3; bx++ {
			checkBlock(t, img, by, bx, blockColor(by, bx))
		}
	}
}

// checkBlock compares the centre pixel of block (by, bx) with want.
func checkBlock(t *testing.T, img *Image, by, bx int, want color.RGBA) {
	t.Helper()
	y, x := by*blockSize+blockSize/2, bx*blockSize+blockSize/2
	p := img.Pix[(y*img.Width+x)*3:]
	if absDiff(p[0], want.R) > 12 || absDiff(p[1], want.G) > 12 || absDiff(p[2], want.B) > 12 {
		t.Errorf("block (%d,%d): got %v, want %v", by, bx, p[:3], want)
	}
}

// TestDecodeJPEGColors checks every output colour against the RGB decode.
func TestDecodeJPEGColors(t *testing.T) {
	src := encodeJPEG(t, gradientImage(37, 23), 90)
	rgb := mustDecode(t, src, Options{Color: RGB})
	n := 37 * 23
	for _, c := range []Color{BGR, RGBA, BGRA, Gray} {
		img := mustDecode(t, src, Options{Color: c})
		if img.Width != 37 || img.Height != 23 || len(img.Pix) != n*c.Channels() {
			t.Fatalf("%v: got %dx%d with %d bytes", c, img.Width, img.Height, len(img.Pix))
		}
		for i := 0; i < n; i++ {
			r, g, b := rgb.Pix[3*i], rgb.Pix[3*i+1], rgb.Pix[3*i+2]
			var want []byte
			switch c {
			case BGR:
				want = []byte{b, g, r}
			case RGBA:
				want = []byte{r, g, b, 255}
			case BGRA:
				want = []byte{b, g, r, 255}
			case Gray:
				// libjpeg returns the coded luma; RGB is computed from
				// it, so the two agree up to rounding.
				if d := absDiff(img.Pix[i], Luma(r, g, b)); d > 2 {
					t.Fatalf("GRAY pixel %d: %d, luma of RGB %d", i, img.Pix[i], Luma(r, g, b))
				}
				continue
			}
			got := img.Pix[i*len(want) : (i+1)*len(want)]
			if string(got) != string(want) {
				t.Fatalf("%v pixel %d: got %v, want %v", c, i, got, want)
			}
		}
	}
}

func TestDecodeJPEGGray(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 19, 11))
	for i := range g.Pix {
		g.Pix[i] = uint8(i * 7)
	}
	src := encodeJPEG(t, g, 90)
	gray := mustDecode(t, src, Options{Color: Gray})
	for _, c := range []Color{RGB, BGR, RGBA, BGRA} {
		img := mustDecode(t, src, Options{Color: c})
		k := c.Channels()
		for i, v := range gray.Pix {
			p := img.Pix[i*k : (i+1)*k]
			if p[0] != v || p[1] != v || p[2] != v || (k == 4 && p[3] != 255) {
				t.Fatalf("%v pixel %d: got %v, want grey %d replicated", c, i, p, v)
			}
		}
	}
}

// TestDecodeJPEGScale checks DCT-scaled sizes: ceil(dim*m/8), as TJSCALED.
func TestDecodeJPEGScale(t *testing.T) {
	src := encodeJPEG(t, gradientImage(101, 75), 85)
	for m := 1; m <= 8; m++ {
		img := mustDecode(t, src, Options{Scale: m})
		wh, ww := (75*m+7)/8, (101*m+7)/8
		if img.Height != wh || img.Width != ww || len(img.Pix) != wh*ww*3 {
			t.Errorf("scale %d/8: got %dx%d, want %dx%d", m, img.Width, img.Height, ww, wh)
		}
	}
	// Orientation 6 swaps the scaled size.
	img := mustDecode(t, withAPP1(src, exifPayload(6, false)), Options{Scale: 2, Orient: true})
	if img.Height != 26 || img.Width != 19 {
		t.Errorf("scale 2/8, orientation 6: got %dx%d, want 19x26", img.Width, img.Height)
	}
}

// orientRef applies EXIF orientation o to a grid, composed from the plain
// flips and transpose of the EXIF specification, independently of Orient.
func orientRef[T any](g [][]T, o int) [][]T {
	flipH := func(g [][]T) [][]T {
		out := make([][]T, len(g))
		for y, row := range g {
			out[y] = make([]T, len(row))
			for x := range row {
				out[y][x] = row[len(row)-1-x]
			}
		}
		return out
	}
	flipV := func(g [][]T) [][]T {
		out := make([][]T, len(g))
		for y := range g {
			out[y] = g[len(g)-1-y]
		}
		return out
	}
	transpose := func(g [][]T) [][]T {
		out := make([][]T, len(g[0]))
		for x := range out {
			out[x] = make([]T, len(g))
			for y := range g {
				out[x][y] = g[y][x]
			}
		}
		return out
	}
	switch o {
	case 2:
		return flipH(g)
	case 3:
		return flipV(flipH(g))
	case 4:
		return flipV(g)
	case 5:
		return transpose(g)
	case 6: // rotate 90° clockwise
		return flipH(transpose(g))
	case 7:
		return flipV(flipH(transpose(g)))
	case 8: // rotate 90° counter-clockwise
		return flipV(transpose(g))
	}
	return g
}

// TestDecodeJPEGOrientation stores a 3×2-block image with each EXIF
// orientation and checks where every block lands.
func TestDecodeJPEGOrientation(t *testing.T) {
	jpg := encodeJPEG(t, blockImage(2, 3), 95)
	grid := [][]color.RGBA{
		{blockColor(0, 0), blockColor(0, 1), blockColor(0, 2)},
		{blockColor(1, 0), blockColor(1, 1), blockColor(1, 2)},
	}
	for o := 1; o <= 8; o++ {
		src := withAPP1(jpg, exifPayload(o, o%2 == 0))
		img := mustDecode(t, src, Options{Orient: true})
		want := orientRef(grid, o)
		if img.Height != len(want)*blockSize || img.Width != len(want[0])*blockSize {
			t.Fatalf("orientation %d: got %dx%d, want %dx%d", o, img.Width, img.Height, len(want[0])*blockSize, len(want)*blockSize)
		}
		for by := range want {
			for bx := range want[by] {
				checkBlock(t, img, by, bx, want[by][bx])
			}
		}
		// Without Orient the image comes as stored.
		stored := mustDecode(t, src, Options{})
		if stored.Width != 48 || stored.Height != 32 {
			t.Errorf("orientation %d, not applied: got %dx%d", o, stored.Width, stored.Height)
		}
	}
}

func TestDecodeJPEGTruncated(t *testing.T) {
	src := encodeJPEG(t, gradientImage(64, 48), 90)
	for _, n := range []int{3, 20, len(src) / 3, len(src) / 2, len(src) - 5, len(src) - 2, len(src) - 1} {
		_, err := Decode(src[:n], Options{})
		if causeOf(err) != Truncated {
			t.Errorf("cut at %d of %d: got %v, want truncated", n, len(src), err)
		}
	}
}

// TestScanJPEGProgression checks the completeness rule on hand-made
// marker structures (the entropy bytes are never decoded).
func TestScanJPEGProgression(t *testing.T) {
	seg := func(m byte, body ...byte) []byte {
		return append([]byte{0xFF, m, byte((len(body) + 2) >> 8), byte(len(body) + 2)}, body...)
	}
	sof := func(m byte, nc int) []byte {
		b := []byte{8, 0, 8, 0, 8, byte(nc)}
		for i := 1; i <= nc; i++ {
			b = append(b, byte(i), 0x11, 0)
		}
		return seg(m, b...)
	}
	sos := func(ss, se, ahal byte, comps ...byte) []byte {
		b := []byte{byte(len(comps))}
		for _, c := range comps {
			b = append(b, c, 0)
		}
		b = append(b, ss, se, ahal)
		return append(seg(mSOS, b...), 0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56) // data, stuffing, RST0
	}
	build := func(parts ...[]byte) []byte {
		out := []byte{0xFF, mSOI}
		for _, p := range parts {
			out = append(out, p...)
		}
		return append(out, 0xFF, mEOI)
	}
	noEOI := build(sof(0xC0, 1), sos(0, 63, 0, 1))
	cases := []struct {
		name string
		src  []byte
		want Cause
	}{
		{"baseline", build(sof(0xC0, 3), sos(0, 63, 0, 1, 2, 3)), ""},
		{"sequential, one scan per component", build(sof(0xC0, 3), sos(0, 63, 0, 1), sos(0, 63, 0, 2), sos(0, 63, 0, 3)), ""},
		{"sequential, a component never coded", build(sof(0xC0, 3), sos(0, 63, 0, 1), sos(0, 63, 0, 2)), Truncated},
		{"progressive, complete", build(sof(0xC2, 1), sos(0, 0, 0x01, 1), sos(1, 63, 0x01, 1), sos(0, 0, 0x10, 1), sos(1, 63, 0x10, 1)), ""},
		// Refinement left pending is a legal script (libjpeg and Pillow
		// decode it without a warning), as is a coefficient never coded.
		{"progressive, refinement pending", build(sof(0xC2, 1), sos(0, 0, 0x01, 1), sos(1, 63, 0x01, 1), sos(0, 0, 0x10, 1)), ""},
		{"progressive, a component's AC never coded", build(sof(0xC2, 2), sos(0, 0, 0, 1, 2), sos(1, 5, 0, 1), sos(6, 63, 0, 1)), ""},
		{"progressive, high AC never coded", build(sof(0xC2, 1), sos(0, 0, 0, 1), sos(1, 44, 0x01, 1), sos(1, 44, 0x10, 1)), ""},
		{"progressive, DC never refined", build(sof(0xC2, 1), sos(0, 0, 0x01, 1), sos(1, 63, 0, 1)), ""},
		{"progressive, a component without DC", build(sof(0xC2, 2), sos(0, 0, 0, 1), sos(1, 63, 0, 1)), Truncated},
		{"progressive, a component only refined", build(sof(0xC2, 2), sos(0, 0, 0x01, 1), sos(0, 0, 0x10, 1, 2)), Truncated},
		{"junk between markers", build([]byte{0x00, 0x11}, sof(0xC0, 1), []byte{0x22}, sos(0, 63, 0, 1)), ""},
		{"no scan", build(sof(0xC0, 1)), Corrupt},
		{"scan of an unknown component", build(sof(0xC0, 1), sos(0, 63, 0, 9)), Corrupt},
		{"lossless", build(sof(0xC3, 1), sos(1, 0, 0, 1)), Unsupported},
		{"hierarchical", build(sof(0xC5, 1), sos(0, 63, 0, 1)), Unsupported},
		{"bogus length", build([]byte{0xFF, 0xE0, 0x00, 0x01}), Corrupt},
		{"no EOI", noEOI[:len(noEOI)-2], Truncated},
	}
	for _, c := range cases {
		_, err := scanJPEG(c.src, Limits{})
		var got Cause
		if err != nil {
			got = err.Cause
		}
		if got != c.want {
			t.Errorf("%s: got %v, want cause %q", c.name, err, c.want)
		}
	}
}

func TestClassifyJPEG(t *testing.T) {
	cases := []struct {
		msg   string
		fatal bool
		want  jpegVerdict
		cause Cause
	}{
		{"Premature end of JPEG file", false, jpegBad, Truncated},
		{"Corrupt JPEG data: bad Huffman code", false, jpegBad, Corrupt},
		{"Corrupt JPEG data: premature end of data segment", false, jpegBad, Corrupt},
		{"Corrupt JPEG data: found marker 0xd9 instead of RST3", false, jpegBad, Corrupt},
		{"Corrupt JPEG data: 17 extraneous bytes before marker 0xd9", false, jpegHarmless, ""},
		{"Warning: unknown JFIF revision number 3.01", false, jpegHarmless, ""},
		{"Corrupt JPEG data: 17 extraneous bytes before marker 0xd9", true, jpegBad, Corrupt},
		{"Bogus Huffman table definition", false, jpegBad, Corrupt}, // fatal after a warning
		{"Unsupported JPEG process: SOF type 0xc3", true, jpegBad, Unsupported},
		{"Unsupported JPEG data precision 12", true, jpegBad, Unsupported},
		{"Maximum supported image dimension is 65500 pixels", true, jpegBad, TooLarge},
		{"Progressive JPEG image has more than 500 scans", true, jpegBad, Unsupported},
		{"something new", true, jpegBad, Corrupt},
	}
	for _, c := range cases {
		v, err := classifyJPEG(c.msg, c.fatal)
		var cause Cause
		if err != nil {
			cause = err.Cause
		}
		if v != c.want || cause != c.cause {
			t.Errorf("%q (fatal %v): got %v %v, want %v %q", c.msg, c.fatal, v, err, c.want, c.cause)
		}
	}
}

// cmykGrid is every C and K sample pairing (M and Y follow C), as stored
// 4-component pixels.
func cmykGrid() []byte {
	src := make([]byte, 4*256*256)
	for c := 0; c < 256; c++ {
		for k := 0; k < 256; k++ {
			i := 4 * (c*256 + k)
			src[i], src[i+1], src[i+2], src[i+3] = byte(c), byte(255-c), byte(c/2), byte(k)
		}
	}
	return src
}

// TestCMYKFormula checks cmykTo against Pillow's steps written out
// literally: invert the stored inks ("CMYK;I"), then cmyk2rgb.
func TestCMYKFormula(t *testing.T) {
	muldiv255 := func(a, b int) int { tmp := a*b + 128; return ((tmp >> 8) + tmp) >> 8 }
	src := cmykGrid()
	rgb := make([]byte, 3*256*256)
	cmykTo(rgb, src, RGB, CMYKPillow)
	for i := 0; i < 256*256; i++ {
		s := src[4*i : 4*i+4]
		nk := 255 - (255 - int(s[3]))
		for ch := 0; ch < 3; ch++ {
			want := nk - muldiv255(255-int(s[ch]), nk)
			if int(rgb[3*i+ch]) != want {
				t.Fatalf("CMYK %v channel %d: got %d, want %d", s, ch, rgb[3*i+ch], want)
			}
		}
	}
}

// TestCMYKOpenCVFormula checks cmykTo's OpenCV rule against OpenCV's
// CMYK-to-BGR and CMYK-to-grey steps written out literally.
func TestCMYKOpenCVFormula(t *testing.T) {
	src := cmykGrid()
	bgr := make([]byte, 3*256*256)
	gray := make([]byte, 256*256)
	cmykTo(bgr, src, BGR, CMYKOpenCV)
	cmykTo(gray, src, Gray, CMYKOpenCV)
	for i := 0; i < 256*256; i++ {
		s := src[4*i : 4*i+4]
		k := int(s[3])
		var rgb [3]int
		for ch := range rgb {
			rgb[ch] = k - ((255-int(s[ch]))*k)>>8
			if got := int(bgr[3*i+2-ch]); got != rgb[ch] {
				t.Fatalf("CMYK %v channel %d: got %d, want %d", s, ch, got, rgb[ch])
			}
		}
		if want := (rgb[0]*4899 + rgb[1]*9617 + rgb[2]*1868 + 8192) >> 14; int(gray[i]) != want {
			t.Fatalf("CMYK %v grey: got %d, want %d", s, gray[i], want)
		}
	}
	// The rules differ: else choosing one would not matter.
	pillow := make([]byte, len(bgr))
	cmykTo(pillow, src, BGR, CMYKPillow)
	if bytes.Equal(pillow, bgr) {
		t.Error("the Pillow and OpenCV rules agree everywhere")
	}
}

// TestJPEGDecodeNoAllocs: a worker's steady state allocates nothing, with
// or without orientation.
func TestJPEGDecodeNoAllocs(t *testing.T) {
	plain := encodeJPEG(t, gradientImage(64, 48), 90)
	rotated := withAPP1(plain, exifPayload(6, true))
	d := NewDecoder()
	defer d.Close()
	for _, src := range [][]byte{plain, rotated} {
		o := Options{Color: RGB, Orient: true, Scale: 4}
		h, err := d.Header(src, LimitsFor(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		oh, ow, oc := h.OutSize(o)
		dst := make([]byte, oh*ow*oc)
		run := func() {
			h, err := d.Header(src, LimitsFor(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Decode(dst, src, h, o); err != nil {
				t.Fatal(err)
			}
		}
		run() // warm the scratch buffers
		if n := allocstest.PerRun(t, 20, run); n != 0 {
			t.Errorf("orientation %d: %v allocations per decode, want 0", h.Orientation, n)
		}
	}
}

// TestJPEGReuseAfterFailure: a failed header read must not poison the
// worker's handle for the next image (TurboJPEG 2.1 bug, see reset).
func TestJPEGReuseAfterFailure(t *testing.T) {
	good := encodeJPEG(t, gradientImage(32, 32), 90)
	bad := bogusDHT(good)
	d := NewDecoder()
	defer d.Close()
	_, err := d.DecodeImage(bad, Options{})
	wantCause(t, err, Corrupt)
	if _, err := d.DecodeImage(good, Options{}); err != nil {
		t.Fatalf("good image after a bad one: %v", err)
	}
}

// TestDecodeJPEGWarnings: junk before a marker draws a harmless libjpeg
// warning and decodes as the clean file; garbled scan data is Corrupt.
func TestDecodeJPEGWarnings(t *testing.T) {
	src := encodeJPEG(t, gradientImage(64, 48), 90)
	clean := mustDecode(t, src, Options{})
	junk := append(append(append([]byte{}, src[:len(src)-2]...), 0x01, 0x02, 0x03), 0xFF, mEOI)
	if img := mustDecode(t, junk, Options{}); string(img.Pix) != string(clean.Pix) {
		t.Error("junk before EOI changed the pixels")
	}
	_, err := Decode(garbleScan(src), Options{})
	wantCause(t, err, Corrupt)

	// A harmless warning does not hide a later harmful one: TurboJPEG
	// reports only the first warning, which alone would let the garbled
	// image through.
	sos := bytes.LastIndex(src, []byte{0xFF, mSOS})
	junkFirst := append(append(append([]byte{}, src[:sos]...), 0x01, 0x02), garbleScan(src)[sos:]...)
	_, err = Decode(junkFirst, Options{})
	wantCause(t, err, Corrupt)
	if !strings.Contains(err.Error(), "scan data is corrupt") {
		t.Errorf("junk, then garbled data: %v", err)
	}
}

// TestJPEGStopsAtFirstWarning: the decode ends at the first warning that
// means damage, not after decoding the whole image. The hostile suite's
// file (8192×8192, a DC scan and 23 refinements, under the work limit)
// draws "Inconsistent progression sequence" at its second scan; the same
// file with a last scan that names an undefined Huffman table, a fatal
// error, gives the warning's text: libjpeg never reached that scan.
func TestJPEGStopsAtFirstWarning(t *testing.T) {
	c, ok := hostile.Named("jpeg-8192-refine23-bogus")
	if !ok {
		t.Fatal("no jpeg-8192-refine23-bogus case")
	}
	src := c.Make()
	if s, err := scanJPEG(src, LimitsFor(defaultMaxPixels)); err != nil {
		t.Fatalf("the file must be within the limits: %v (work %d)", err, s.work)
	}
	fatalLast := append(append([]byte{}, src[:len(src)-2]...),
		0xFF, mSOS, 0, 8, 1, 1, 0x11, 1, 63, 0x00, 0x55, 0xFF, mEOI) // AC table 1: never defined
	for _, f := range [][]byte{src, fatalLast} {
		_, err := Decode(f, Options{Color: Gray, Limits: LimitsFor(defaultMaxPixels)})
		wantCause(t, err, Corrupt)
		if !strings.Contains(err.Error(), "Inconsistent progression sequence") {
			t.Errorf("not stopped at the first warning: %v", err)
		}
	}
}

// bogusDHT breaks a JPEG's first Huffman table: our marker walk passes it,
// libjpeg's header reader fails ("Bogus Huffman table definition").
func bogusDHT(src []byte) []byte {
	bad := append([]byte{}, src...)
	for i := 2; i+4 < len(bad); i++ {
		if bad[i] == 0xFF && bad[i+1] == mDHT {
			for j := i + 5; j < i+21; j++ {
				bad[j] = 0xFF // code counts summing far over 256
			}
			break
		}
	}
	return bad
}

// garbleScan overwrites the middle of a JPEG's scan data with a pattern
// that is no valid Huffman sequence for long: libjpeg decodes to the end
// with a corrupt-data warning.
func garbleScan(src []byte) []byte {
	sos := 0
	for i := len(src) - 2; i > 0; i-- {
		if src[i] == 0xFF && src[i+1] == mSOS {
			sos = i
			break
		}
	}
	bad := append([]byte{}, src...)
	data := sos + 2 + (int(src[sos+2])<<8 | int(src[sos+3]))
	for i := data + (len(src)-data)/3; i < data+(len(src)-data)/2; i++ {
		bad[i] = byte(i*37) | 0x80
		if bad[i] == 0xFF {
			bad[i] = 0xFE
		}
	}
	return bad
}

func BenchmarkDecodeJPEG(b *testing.B) {
	src := encodeJPEG(b, gradientImage(640, 480), 90)
	d := NewDecoder()
	defer d.Close()
	for _, o := range []Options{{Color: RGB}, {Color: RGB, Scale: 4}} {
		h, err := d.Header(src, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		oh, ow, oc := h.OutSize(o)
		dst := make([]byte, oh*ow*oc)
		b.Run(fmt.Sprintf("scale%d", o.scale()), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				h, err := d.Header(src, Limits{})
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Decode(dst, src, h, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeConcurrent: workers with their own decoders, mixing good and
// failing inputs, each get their own results (libjpeg-turbo keeps error
// texts per thread; see sl_msg).
func TestDecodeConcurrent(t *testing.T) {
	good := encodeJPEG(t, gradientImage(48, 40), 90)
	want := mustDecode(t, good, Options{})
	inputs := []struct {
		src   []byte
		cause Cause
	}{
		{good, ""},
		{good[:len(good)-2], Truncated},
		{append(append([]byte{}, good[:len(good)-2]...), 0x01, 0xFF, mEOI), ""}, // harmless warning
		{forgedJPEG(64, 64), Truncated},
		{bogusDHT(good), Corrupt},   // fails in tjDecompressHeader3
		{garbleScan(good), Corrupt}, // warns in sl_decompress
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			d := NewDecoder()
			defer d.Close()
			for i := 0; i < 40; i++ {
				in := inputs[(i+w)%len(inputs)]
				img, err := d.DecodeImage(in.src, Options{})
				if causeOf(err) != in.cause || (err == nil) != (in.cause == "") {
					t.Errorf("worker %d input %d: got %v, want cause %q", w, (i+w)%len(inputs), err, in.cause)
					return
				}
				if err == nil && string(img.Pix) != string(want.Pix) {
					t.Errorf("worker %d: pixels differ", w)
					return
				}
			}
		}(w)
	}
	wg.Wait()
}

// TestScratch: the bound follows the output size (DCT scale, orientation)
// and doubles with a background, whose RGBA image is flattened.
func TestScratch(t *testing.T) {
	src := withAPP1(encodeJPEG(t, gradientImage(64, 48), 90), exifPayload(6, true))
	d := NewDecoder()
	defer d.Close()
	h, err := d.Header(src, LimitsFor(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	bg := [3]byte{255, 255, 255}
	for _, c := range []struct {
		o    Options
		want int
	}{
		{Options{}, 4 * 64 * 48},
		{Options{Orient: true, Scale: 4}, 4 * 32 * 24},
		{Options{Background: &bg}, 8 * 64 * 48},
	} {
		if got := h.Scratch(c.o); got != c.want {
			t.Errorf("Scratch(%+v) = %d, want %d", c.o, got, c.want)
		}
	}
}
