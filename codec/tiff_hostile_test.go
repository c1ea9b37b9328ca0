package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/hostile"
)

// manyTags is an 8×8 grey TIFF with n unknown tags of size bytes each,
// all on the same data.
func manyTags(n, size int) []byte { return hostile.TIFFManyTags(n, size) }

// TestTIFFTagLimits: the tag count and the total tag data at their limits
// decode; one past, they are refused, naming the limit.
func TestTIFFTagLimits(t *testing.T) {
	lim := LimitsFor(64 << 20)
	// The image's own tags are 9.
	if _, err := Decode(manyTags(tiffMaxTags-9, 4), Options{Limits: lim}); err != nil {
		t.Fatalf("%d tags: %v", tiffMaxTags, err)
	}
	_, err := Decode(manyTags(tiffMaxTags-8, 4), Options{Limits: lim})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), fmt.Sprintf("%d tags, over the limit of %d", tiffMaxTags+1, tiffMaxTags)) {
		t.Errorf("message: %v", err)
	}
	// 15 overlapping tags of 1 MiB fit in 16 MiB; 17 do not.
	img, err := Decode(manyTags(15, 1<<20), Options{Limits: lim})
	if err != nil || img.Width != 8 {
		t.Fatalf("15 MiB of tag data: %v", err)
	}
	_, err = Decode(manyTags(17, 1<<20), Options{Limits: lim})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "tag data") || !strings.Contains(err.Error(), fmt.Sprint(tiffMinTagData)) {
		t.Errorf("message: %v", err)
	}
	// A file larger than its tag data may hold that much: 20 MiB of
	// distinct tag data in a 20 MiB file.
	w := hostile.NewTIFF()
	w.TIFFStrips(8, 8, 8, 1, 1, 1, [][]byte{make([]byte, 64)})
	for i := 0; i < 20; i++ {
		w.Entry(uint16(60000+i), hostile.TIFFUndefined, 1<<20, w.Data(make([]byte, 1<<20)))
	}
	if _, err := Decode(w.Bytes(), Options{Limits: lim}); err != nil {
		t.Fatalf("20 MiB of distinct tag data: %v", err)
	}
	// Header reports what libtiff keeps.
	d := NewDecoder()
	defer d.Close()
	h, err := d.Header(manyTags(15, 1<<20), lim)
	if err != nil || h.Memory < 15<<20 || h.Memory > 32<<20 {
		t.Errorf("Header %+v, %v", h, err)
	}
	// The memory limit counts them too.
	_, err = Decode(manyTags(15, 1<<20), Options{Limits: Limits{MaxMemory: 8 << 20}})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "memory limit") {
		t.Errorf("message: %v", err)
	}
}

// TestTIFFStrileLimit: a header claiming millions of tiles or strips is
// refused before libtiff allocates their offsets.
func TestTIFFStrileLimit(t *testing.T) {
	w := hostile.NewTIFF()
	w.Long(256, 4096)
	w.Long(257, 4096)
	w.Short(258, 8)
	w.Short(259, 1)
	w.Short(262, 1)
	w.Long(322, 1)
	w.Long(323, 1)
	w.Long(324, 8)
	w.Long(325, 1)
	var err error
	n := allocated(func() { _, err = Decode(w.Bytes(), Options{Limits: LimitsFor(64 << 20)}) })
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "16777216 tiles") || n > 1<<20 {
		t.Errorf("%v, %d bytes allocated", err, n)
	}
	// A strip per row of 1M rows is at the limit, and decodes.
	var strips [][]byte
	for i := 0; i < tiffMaxStriles; i++ {
		strips = append(strips, []byte{byte(i)})
	}
	w = hostile.NewTIFF()
	w.TIFFStrips(1, tiffMaxStriles, 1, 1, 1, 1, strips)
	img, err := Decode(w.Bytes(), Options{Limits: LimitsFor(64 << 20)})
	if err != nil || img.Pix[3*1000] != byte(1000%256) {
		t.Fatalf("a strip per row: %v", err)
	}
}

// TestTIFFJPEGWork: the scans of a JPEG-compressed TIFF's strips are
// counted before decoding, summed over the strips.
func TestTIFFJPEGWork(t *testing.T) {
	src := hostile.TIFFJPEGScans(512, 256, 32, 9)
	d := NewDecoder()
	defer d.Close()
	h, err := d.Header(src, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// 8 strips of 9 scans of 64×4 blocks, 64 units a block, 3 more a
	// block for each of the 4 refinement scans of one coefficient
	// (jpegscan.go), the strips' fixed cost and their bytes.
	ifd, _ := walkTIFF(src)
	if want := int64(8*(9*256*64+4*256*3)+8*tiffJPEGStripWork) + tiffJPEGByteWork*ifd.stripBytes(src); h.Work != want {
		t.Errorf("work %d, want %d", h.Work, want)
	}
	// Progressive: libjpeg keeps a strip's coefficients.
	if h.Memory < 512*256+256*128 {
		t.Errorf("memory %d", h.Memory)
	}
	img, err := Decode(src, Options{Limits: Limits{MaxWork: h.Work}, Color: Gray})
	if err != nil {
		t.Fatalf("at the work limit: %v", err)
	}
	if pix, _, _ := pillowDecode(t, src, "L", false); !bytes.Equal(pix, img.Pix) {
		t.Errorf("differs from Pillow")
	}
	_, err = Decode(src, Options{Limits: Limits{MaxWork: h.Work - 1}})
	wantCause(t, err, TooLarge)
	for _, w := range []string{"work limit", "8 strips", "72 scans", "at most 9"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	// Strips may overlap: 4096 strips on the same 64 KiB stream are 256
	// MiB of JPEG data to read, refused before any is walked.
	strip := hostile.TIFFJPEGScans(64, 8, 8, 1)
	ifd, _ = walkTIFF(strip)
	off, _ := ifd.value(strip, ifd.offs, 0)
	n, _ := ifd.value(strip, ifd.counts, 0)
	stream := append(append([]byte(nil), strip[off:off+n-2]...), make([]byte, 64<<10)...) // junk before EOI
	stream = append(stream, 0xFF, 0xD9)
	w := hostile.NewTIFF()
	at := w.Data(stream)
	w.Long(256, 64)
	w.Long(257, 8*4096)
	w.Short(258, 8)
	w.Short(259, 7)
	w.Short(262, 1)
	w.Long(278, 8)
	offs, counts := make([]uint32, 4096), make([]uint32, 4096)
	for i := range offs {
		offs[i], counts[i] = at, uint32(len(stream))
	}
	w.Longs(273, offs...)
	w.Longs(279, counts...)
	tables := hostile.TIFFJPEGTables()
	w.Entry(347, hostile.TIFFUndefined, uint32(len(tables)), w.Data(tables))
	overlap := w.Bytes()
	_, err = Decode(overlap, Options{Limits: Limits{MaxWork: 256 << 20}})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), fmt.Sprintf("%d bytes in all", 4096*len(stream))) {
		t.Errorf("message: %v", err)
	}
	if img, err := Decode(overlap, Options{Limits: LimitsFor(64 << 20)}); err != nil || img.Height != 8*4096 {
		t.Errorf("within the default limits: %v", err)
	}

	// libtiff's scan limit: 99 scans in a strip decode (as in Pillow), 100
	// are refused before decoding, whatever the work limit; so are 501.
	src = hostile.TIFFJPEGScans(64, 64, 32, tiffJPEGMaxScans)
	img = mustDecode(t, src, Options{Color: Gray})
	if pix, _, _ := pillowDecode(t, src, "L", false); !bytes.Equal(pix, img.Pix) {
		t.Errorf("99 scans: differs from Pillow")
	}
	for _, n := range []int{tiffJPEGMaxScans + 1, MaxJPEGScans + 1} {
		src = hostile.TIFFJPEGScans(64, 64, 32, n)
		_, err = Decode(src, Options{})
		wantCause(t, err, TooLarge)
		if !strings.Contains(err.Error(), "strip 0") || !strings.Contains(err.Error(), fmt.Sprintf("%d scans, over libtiff's limit of 99", n)) {
			t.Errorf("message: %v", err)
		}
		if ok, perr := pillowOpens(t, src); ok {
			t.Errorf("%d scans: Pillow decodes it", n)
		} else {
			t.Logf("%d scans: Pillow: %s", n, perr)
		}
	}
}

// pillowOpens says whether Pillow decodes src, and its error if not.
func pillowOpens(t *testing.T, src []byte) (bool, string) {
	out := pillowScript(t, `
import io, sys
from PIL import Image
try:
    im = Image.open(io.BytesIO(sys.stdin.buffer.read()))
    im.load()
    print("ok")
except Exception as e:
    print("error:", type(e).__name__, e)
`, nil, src)
	s := strings.TrimSpace(string(out))
	return s == "ok", s
}

// divTIFF is a 4×3 8-bit image of spp samples with the given photometric
// (-1: none), rows per strip (0 written as 0; -1: none) and extra entries.
func divTIFF(spp uint16, ph, rps int, pix []byte, extra func(w *hostile.TIFFWriter)) []byte {
	w := hostile.NewTIFF()
	off := w.Data(pix)
	w.Long(256, 4)
	w.Long(257, 3)
	w.Short(258, 8)
	w.Short(259, 1)
	if ph >= 0 {
		w.Short(262, uint16(ph))
	}
	w.Long(273, off)
	w.Short(277, spp)
	if rps >= 0 {
		w.Long(278, uint32(rps))
	}
	w.Long(279, uint32(len(pix)))
	if extra != nil {
		extra(w)
	}
	return w.Bytes()
}

func ramp(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*37 + 11)
	}
	return b
}

// TestTIFFPillowDivergences: the decisions on files Pillow and libtiff
// read differently, each checked against Pillow.
func TestTIFFPillowDivergences(t *testing.T) {
	colorMap := func(count int) func(w *hostile.TIFFWriter) {
		return func(w *hostile.TIFFWriter) {
			vs := make([]uint16, count)
			for i := range vs {
				vs[i] = uint16(i*4000 + 7)
			}
			w.Shorts(320, vs...)
		}
	}
	idx := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255}
	for _, tc := range []struct {
		name  string
		src   []byte
		cause Cause // "" when it decodes, as Pillow
		words string
	}{
		// No Photometric: Pillow takes min-is-white for one sample, and
		// cannot open more.
		{"no photometric, grey", divTIFF(1, -1, 3, ramp(12), nil), "", ""},
		{"no photometric, RGB", divTIFF(3, -1, 3, ramp(36), nil), Corrupt, "no photometric interpretation"},
		{"no photometric, grey+alpha", divTIFF(2, -1, 3, ramp(24), nil), Corrupt, "no photometric interpretation"},
		// RowsPerStrip 0: libtiff and Pillow both refuse it.
		{"RowsPerStrip 0", divTIFF(3, 2, 0, ramp(36), nil), Corrupt, "RowsPerStrip is 0"},
		{"no RowsPerStrip", divTIFF(3, 2, -1, ramp(36), nil), "", ""},
		// A ColorMap of other than 768 values: libtiff ignores it (and
		// reads grey); Pillow uses count/3 entries, the rest black.
		{"ColorMap of 4 entries", divTIFF(1, 3, 3, idx, colorMap(12)), "", ""},
		{"ColorMap of 13 values", divTIFF(1, 3, 3, idx, colorMap(13)), "", ""},
		{"ColorMap of 769 values", divTIFF(1, 3, 3, idx, colorMap(769)), "", ""},
		{"ColorMap of 1 value", divTIFF(1, 3, 3, idx, colorMap(1)), "", ""},
		{"ColorMap of 768 values", divTIFF(1, 3, 3, idx, colorMap(768)), "", ""},
		{"ColorMap of 300 entries", divTIFF(1, 3, 3, idx, colorMap(900)), Corrupt, "300 entries"},
		{"no ColorMap", divTIFF(1, 3, 3, idx, nil), Corrupt, "no ColorMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, perr := pillowOpens(t, tc.src)
			img, err := Decode(tc.src, Options{})
			if tc.cause != "" {
				wantCause(t, err, tc.cause)
				if !strings.Contains(err.Error(), tc.words) {
					t.Errorf("%q lacks %q", err, tc.words)
				}
				if ok {
					t.Errorf("Pillow decodes it")
				}
				t.Logf("Sluice: %v; Pillow: %s", err, perr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pix, w, h := pillowDecode(t, tc.src, "RGB", false)
			if w != img.Width || h != img.Height || !bytes.Equal(pix, img.Pix) {
				t.Errorf("differs from Pillow:\n%v\n%v", img.Pix, pix)
			}
		})
	}
}

// TestTIFFFilesMatchPillow: the test files decode as Pillow decodes them
// (JPEG ones within libjpeg versions' rounding).
func TestTIFFFilesMatchPillow(t *testing.T) {
	for _, name := range []string{
		"rgb_raw.tif", "rgb_tiff_lzw.tif", "rgb_tiff_adobe_deflate.tif", "rgb_packbits.tif", "rgb_tiled.tif",
		"pages.tif", "rgb16_raw.tif", "rgb16_lzw.tif", "rgb16_bigendian.tif", "gray_lzw.tif",
		"gray_miniswhite.tif", "rgba_deflate.tif", "palette_packbits.tif", "rgb_jpeg.tif", "ycbcr_jpeg.tif",
	} {
		t.Run(name, func(t *testing.T) {
			src := readFormatFile(t, name)
			img := mustDecode(t, src, Options{Color: RGBA})
			pix, w, h := pillowDecode(t, src, "RGBA", false)
			if w != img.Width || h != img.Height {
				t.Fatalf("%dx%d, Pillow %dx%d", img.Width, img.Height, w, h)
			}
			worst := 0
			for i := range pix {
				worst = max(worst, absDiff(pix[i], img.Pix[i]))
			}
			if tol := map[bool]int{true: 2, false: 0}[strings.Contains(name, "jpeg")]; worst > tol {
				t.Errorf("differs from Pillow by up to %d", worst)
			}
		})
	}
}

// TestTIFFIFDWalk: the walk reads both byte orders and stops, leaving
// libtiff to report, at a directory that is not there.
func TestTIFFIFDWalk(t *testing.T) {
	le := forgedTIFF(4, 5, 60)
	d, err := walkTIFF(le)
	if err != nil || d.width != 4 || d.height != 5 || d.spp != 3 || d.striles != 1 || d.photometric != 2 {
		t.Fatalf("%+v %v", d, err)
	}
	// The same file big-endian: swap every field by hand.
	be := []byte("MM\x00*")
	be = binary.BigEndian.AppendUint32(be, binary.LittleEndian.Uint32(le[4:]))
	be = append(be, le[8:8+60]...)
	p := 8 + 60
	n := binary.LittleEndian.Uint16(le[p:])
	be = binary.BigEndian.AppendUint16(be, n)
	for i := 0; i < int(n); i++ {
		e := le[p+2+12*i:]
		typ := binary.LittleEndian.Uint16(e[2:])
		be = binary.BigEndian.AppendUint16(be, binary.LittleEndian.Uint16(e))
		be = binary.BigEndian.AppendUint16(be, typ)
		be = binary.BigEndian.AppendUint32(be, binary.LittleEndian.Uint32(e[4:]))
		if typ == 3 {
			be = binary.BigEndian.AppendUint16(be, binary.LittleEndian.Uint16(e[8:]))
			be = append(be, 0, 0)
		} else {
			be = binary.BigEndian.AppendUint32(be, binary.LittleEndian.Uint32(e[8:]))
		}
	}
	be = append(be, 0, 0, 0, 0)
	d, err = walkTIFF(be)
	if err != nil || d.width != 4 || d.height != 5 || d.spp != 3 || d.striles != 1 {
		t.Fatalf("big-endian: %+v %v", d, err)
	}
	if img, err := Decode(be, Options{}); err != nil || img.Width != 4 {
		t.Fatalf("big-endian decode: %v", err)
	}
	for _, b := range [][]byte{le[:8], le[:4], append([]byte("II*\x00\xff\xff\xff\x00"), le[8:]...)} {
		if _, err := walkTIFF(b); err != nil {
			t.Errorf("walk of %d bytes: %v", len(b), err)
		}
	}
}
