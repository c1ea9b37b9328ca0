package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/hostile"
)

// The hostile AVIF cases (internal/hostile/avif.go) and the edges they
// stand next to: each is refused from its container, before decoding or
// any large allocation, with a message naming the limit or box and the
// numbers; the legal files beside the limits decode.

// TestAVIFHostile: every registered AVIF case is refused with its cause,
// words a server's error must contain, and little allocated.
func TestAVIFHostile(t *testing.T) {
	want := map[string]struct {
		cause Cause
		words []string
	}{
		"avif-ipma-1m":                   {TooLarge, []string{"ipma", "1000001 entries", fmt.Sprint(avifMaxItems)}},
		"avif-grid-45x45-shared-extents": {TooLarge, []string{"extents", "shared or overlapping"}},
		"avif-ispe-32768x2048":           {Corrupt, []string{"ispe says 32768x2048", "sequence header", "64x64"}},
	}
	cases := hostile.Of("AVIF")
	if len(cases) != len(want) {
		t.Errorf("%d AVIF cases registered, %d known here", len(cases), len(want))
	}
	d := NewDecoder()
	defer d.Close()
	for _, c := range cases {
		src := c.Make()
		w, ok := want[c.Name]
		if !ok {
			t.Errorf("%s: no expectation", c.Name)
			continue
		}
		var err error
		n := allocated(func() {
			var h Header
			if h, err = d.Header(src, LimitsFor(64<<20)); err == nil {
				err = d.Decode(make([]byte, h.Width*h.Height*3), src, h, Options{})
			}
		})
		if causeOf(err) != w.cause {
			t.Errorf("%s (%d bytes): %v, want %q", c.Name, len(src), err, w.cause)
			continue
		}
		for _, s := range append(w.words, c.Refused...) {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", c.Name, err, s)
			}
		}
		// The container's own tables (an item map, box lists) at most.
		if n > 4<<20 {
			t.Errorf("%s: allocated %d bytes before refusing", c.Name, n)
		}
	}
}

// TestAVIFCountLimits: each structural limit refuses one over it from the
// count the box declares, and the same file at the limit decodes.
func TestAVIFCountLimits(t *testing.T) {
	p := avifSample(t, 40, 24)
	want := mustDecode(t, p.file(), Options{})
	d := NewDecoder()
	defer d.Close()
	// ipma entries without properties still count (they made items).
	q := p
	q.ipmaMore = avifMaxItems - 1
	img, err := d.DecodeImage(q.file(), Options{})
	if err != nil {
		t.Fatalf("ipma of %d entries: %v", avifMaxItems, err)
	}
	if !bytes.Equal(img.Pix, want.Pix) {
		t.Error("ipma at the limit: pixels differ")
	}
	q.ipmaMore = avifMaxItems
	_, err = d.DecodeImage(q.file(), Options{})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "ipma") || !strings.Contains(err.Error(), fmt.Sprint(avifMaxItems+1)) {
		t.Errorf("ipma over the limit: %v", err)
	}
	// Extents: the most one item may have.
	q = p
	q.extents = avifMaxExtents
	if img, err := d.DecodeImage(q.file(), Options{}); err != nil || !bytes.Equal(img.Pix, want.Pix) {
		t.Errorf("%d extents: %v", avifMaxExtents, err)
	}
	// A grid declaring more tiles than the limit, from its ImageGrid alone.
	grid := hostile.AVIFSharedGrid(65, 64, 64)
	_, err = d.DecodeImage(grid, Options{})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "4160 tiles") {
		t.Errorf("grid of 65x64 tiles: %v", err)
	}
}

// TestAVIFSharedExtents: tiles sharing one extent exactly (one content,
// deduplicated, as Pillow decodes) are scanned once and decode as Pillow
// does; the small hostile grid (two extents over one region a tile) is
// refused on its second tile.
func TestAVIFSharedExtents(t *testing.T) {
	src := avifencFile(t, encodePNG(t, avifTestImage(256, 128)), "--grid", "2x1", "-y", "420")
	shared := avifShareTiles(t, src)
	img := mustDecode(t, shared, Options{})
	pil, w, h := pillowDecode(t, shared, "RGB", false)
	if w != img.Width || h != img.Height {
		t.Fatalf("%dx%d, Pillow %dx%d", img.Width, img.Height, w, h)
	}
	if maxd, mean := compareBytes(img.Pix, pil); maxd > avifBound {
		t.Errorf("shared tiles differ from Pillow's by up to %d (mean %.3f)", maxd, mean)
	}
	// The right tile repeats the left one (but at the edges, where chroma
	// upsampling blends across tiles).
	for y := 0; y < 128; y++ {
		row := img.Pix[y*256*3:]
		if !bytes.Equal(row[4*3:124*3], row[132*3:252*3]) {
			t.Fatalf("row %d: the tiles differ", y)
		}
	}
	_, err := Decode(hostile.AVIFSharedGrid(3, 3, 64), Options{})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "shared or overlapping") {
		t.Errorf("shared region: %v", err)
	}
}

// avifShareTiles points every tile of an avifenc grid (iloc version 0,
// 4-byte offsets and lengths, no base) at the first tile's extent.
func avifShareTiles(t *testing.T, src []byte) []byte {
	t.Helper()
	l, err := parseAVIF(src)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Clone(src)
	i := bytes.Index(out, []byte("iloc"))
	if i < 0 || out[i+4] != 0 || out[i+8] != 0x44 || out[i+9] != 0 {
		t.Fatalf("unexpected iloc layout % x", out[i:i+12])
	}
	p, count := i+12, int(binary.BigEndian.Uint16(out[i+10:]))
	first := l.color[0].extents[0]
	tiles := map[uint32]bool{}
	for _, it := range l.color {
		tiles[it.id] = true
	}
	for k := 0; k < count; k++ {
		id, n := binary.BigEndian.Uint16(out[p:]), int(binary.BigEndian.Uint16(out[p+4:]))
		if tiles[uint32(id)] {
			if n != 1 {
				t.Fatalf("tile %d has %d extents", id, n)
			}
			binary.BigEndian.PutUint32(out[p+6:], uint32(first.off))
			binary.BigEndian.PutUint32(out[p+10:], uint32(first.n))
		}
		p += 6 + 8*n
	}
	return out
}

const pillowLoadScript = `
import io, sys
from PIL import Image
try:
    im = Image.open(io.BytesIO(sys.stdin.buffer.read()))
    im.load()
    print("decoded")
except Exception as e:
    print("refused:", e)
`

// pillowLoads reports whether Pillow decodes src, and what it said.
func pillowLoads(t *testing.T, src []byte) (bool, string) {
	t.Helper()
	out := strings.TrimSpace(string(pillowScript(t, pillowLoadScript, nil, src)))
	return out == "decoded", out
}

// TestAVIFPillowRefuses: the containers Pillow 13 (libavif) refuses are
// refused here too, each with its cause; the legal neighbours decode in
// both.
func TestAVIFPillowRefuses(t *testing.T) {
	p := avifSample(t, 40, 24)
	want := mustDecode(t, p.file(), Options{})
	unknown := box("abcd", []byte{1, 2, 3})
	irot := box("irot", []byte{1})
	with := func(f func(q *avifParts)) []byte { q := p; f(&q); return q.file() }
	cases := []struct {
		name  string
		src   []byte
		cause Cause // "" decodes
		msg   string
	}{
		{"its one extent of length 0", zeroFirstExtent(t, p.file()), Corrupt, "zero-length"},
		{"a zero-length extent after the data", with(func(q *avifParts) { q.zeroExt = 1 }), "", ""},
		{"ipma index past ipco", with(func(q *avifParts) { q.assoc = []byte{3, 0x81, 0x02, 0x05} }), Corrupt, "past the 2 of ipco"},
		{"unknown essential property", with(func(q *avifParts) {
			q.props, q.assoc = [][]byte{unknown}, []byte{3, 0x81, 0x02, 0x83}
		}), Unsupported, `essential "abcd"`},
		{"unknown property, not essential", with(func(q *avifParts) {
			q.props, q.assoc = [][]byte{unknown}, []byte{3, 0x81, 0x02, 0x03}
		}), "", ""},
		{"irot not essential", with(func(q *avifParts) {
			q.props, q.assoc = [][]byte{irot}, []byte{3, 0x81, 0x02, 0x03}
		}), Corrupt, "irot property is not marked essential"},
		{"essential index 0", with(func(q *avifParts) { q.assoc = []byte{3, 0x81, 0x02, 0x80} }), Corrupt, "index 0"},
	}
	for _, tc := range cases {
		ok, said := pillowLoads(t, tc.src)
		img, err := Decode(tc.src, Options{})
		if tc.cause == "" {
			if err != nil || !ok {
				t.Errorf("%s: %v; Pillow %s", tc.name, err, said)
			} else if !bytes.Equal(img.Pix, want.Pix) {
				t.Errorf("%s: pixels differ", tc.name)
			}
			continue
		}
		if ok {
			t.Errorf("%s: Pillow decodes it", tc.name)
		}
		if causeOf(err) != tc.cause || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q naming %q (Pillow %s)", tc.name, err, tc.cause, tc.msg, said)
		}
	}
}

// zeroFirstExtent sets the length of iloc's first extent (item 1's, in
// avifParts.file's layout) to 0.
func zeroFirstExtent(t *testing.T, src []byte) []byte {
	t.Helper()
	out := bytes.Clone(src)
	i := bytes.Index(out, []byte("iloc"))
	if i < 0 || out[i+8] != 0x44 {
		t.Fatal("no iloc")
	}
	binary.BigEndian.PutUint32(out[i+12+6+4:], 0)
	return out
}

// TestAVIFEstimates: Header's work and memory estimates, and refusals by
// the work and memory limits naming them.
func TestAVIFEstimates(t *testing.T) {
	src := pillowAVIF(t, avifTestImage(64, 48), map[string]any{"mode": "RGB"})
	d := NewDecoder()
	defer d.Close()
	h, err := d.Header(src, LimitsFor(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	px := int64(64 * 48)
	if h.Work < px*(avifWorkPerSample*6/4+avifConvertWork) || h.Memory < px*4 {
		t.Errorf("estimates work %d, memory %d for %d pixels", h.Work, h.Memory, px)
	}
	_, err = d.Header(src, Limits{MaxPixels: 1 << 20, MaxWork: h.Work - 1})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "work limit") || !strings.Contains(err.Error(), fmt.Sprint(h.Work)) {
		t.Errorf("work limit: %v", err)
	}
	_, err = d.Header(src, Limits{MaxPixels: 1 << 20, MaxMemory: h.Memory - 1})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "memory limit") {
		t.Errorf("memory limit: %v", err)
	}
}

// TestAVIFParseOnce: Decode reuses Header's parse of the same src (a
// container of avifMaxItems items costs Header, not Decode), and parses
// again for another slice.
func TestAVIFParseOnce(t *testing.T) {
	p := avifSample(t, 40, 24)
	p.ipmaMore = avifMaxItems - 1
	src := p.file()
	want := mustDecode(t, src, Options{})
	d := NewDecoder()
	defer d.Close()
	dst := make([]byte, 40*24*3)
	var h Header
	var err error
	for i := 0; i < 2; i++ { // the second round finds the buffers made
		if h, err = d.Header(src, Limits{}); err != nil {
			t.Fatal(err)
		}
		if err = d.Decode(dst, src, h, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	hn := allocated(func() { h, err = d.Header(src, Limits{}) })
	dn := allocated(func() { err = d.Decode(dst, src, h, Options{}) })
	if err != nil || dn*4 > hn {
		t.Errorf("Header allocated %d bytes, Decode %d (%v): Decode parsed again", hn, dn, err)
	}
	// Another slice of the same bytes: parsed anew, decoded alike.
	h, _ = d.Header(src, Limits{})
	if err := d.Decode(dst, bytes.Clone(src), h, Options{}); err != nil || !bytes.Equal(dst, want.Pix) {
		t.Errorf("another slice: %v", err)
	}
	// A Header never followed by Decode keeps no reference to its src.
	var freed atomic.Bool
	func() {
		b := bytes.Clone(src)
		runtime.AddCleanup(&b[0], func(*atomic.Bool) { freed.Store(true) }, &freed)
		if _, err := d.Header(b, Limits{}); err != nil {
			t.Fatal(err)
		}
	}()
	for i := 0; i < 100 && !freed.Load(); i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if !freed.Load() {
		t.Error("the decoder keeps Header's src alive")
	}
}

// avifHostileSeeds are FuzzAVIF's hostile shapes, small: ipma entries
// just over the limit, a grid of tiles sharing one region, an ispe over
// its sequence header's size.
func avifHostileSeeds() [][]byte {
	return [][]byte{
		hostile.AVIFManyIPMA(avifMaxItems),
		hostile.AVIFSharedGrid(3, 3, 32),
		hostile.AVIFLyingISPE(1024, 1024, 16, 16),
	}
}

// TestAVIFAlphaUnknownEssential: an alpha item citing an unknown property
// as essential is ignored, as libavif ignores it: the image decodes
// opaque, as in Pillow.
func TestAVIFAlphaUnknownEssential(t *testing.T) {
	src := pillowAVIF(t, avifTestImage(32, 16), map[string]any{"mode": "RGBA"})
	b := bytes.Clone(src)
	// Pillow's layout: ipco holds the colour's pixi, then the alpha's; the
	// alpha item (2) is ipma's second entry.
	first := bytes.Index(b, []byte("pixi"))
	second := first + 4 + bytes.Index(b[first+4:], []byte("pixi"))
	i := bytes.Index(b, []byte("ipma"))
	if first < 0 || second < first+4 || i < 0 || b[i+4] != 0 || b[i+7]&1 != 0 {
		t.Fatalf("unexpected layout")
	}
	copy(b[second:], "abcd")
	p := i + 12
	p += 3 + int(b[p+2]) // item 1's entry
	if binary.BigEndian.Uint16(b[p:]) != 2 {
		t.Fatalf("ipma's second entry is item %d", binary.BigEndian.Uint16(b[p:]))
	}
	n, idx := int(b[p+2]), 0
	for k := 0; k < n; k++ {
		if q := p + 3 + k; b[q] == 5 { // the alpha's pixi, now "abcd"
			b[q], idx = 0x85, q
		}
	}
	if idx == 0 {
		t.Fatal("alpha item does not cite property 5")
	}
	img := mustDecode(t, b, Options{Color: RGBA})
	pil, _, _ := pillowDecode(t, b, "RGBA", false)
	if maxd, mean := compareBytes(img.Pix, pil); maxd > avifBound {
		t.Errorf("differs from Pillow by up to %d (mean %.3f)", maxd, mean)
	}
	for k := 3; k < len(img.Pix); k += 4 {
		if img.Pix[k] != 255 {
			t.Fatalf("alpha %d at %d: the alpha item was decoded", img.Pix[k], k/4)
		}
	}
	if _, err := Decode(src, Options{Color: RGBA}); err != nil {
		t.Fatal(err)
	}
}
