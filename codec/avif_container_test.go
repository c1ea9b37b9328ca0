package codec

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Containers built here around the AV1 data of a real AVIF (Pillow's), so
// that each test forges one field and checks the typed cause it gets.

func box(typ string, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	return append(append(b, typ...), body...)
}

func fullBox(typ string, version byte, parts ...[]byte) []byte {
	return box(typ, append([]byte{version, 0, 0, 0}, bytes.Join(parts, nil)...))
}

func be16(v int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func be32(v int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// avifParts is what avifFile assembles; tests change fields.
type avifParts struct {
	major    string
	itemType string
	w, h     int
	av1C     []byte
	data     []byte // the AV1 item's bytes
	extents  int    // iloc extents the data is split in (≥ 1)
	extLen   int    // when > 0, the length the first extent claims
	hdlr     string
	noMeta   bool
	moov     bool
	colr     []byte   // a colr property's payload, when set
	props    [][]byte // more property boxes, after ispe, av1C (and colr)
	assoc    []byte   // when set, item 1's ipma association count and indices
	zeroExt  int      // when > 0, that many zero-length extents follow the data's
	ipmaMore int      // ipma entries without properties, for items 2, 3...
}

// itemData is an item's bytes: an alias of src for one extent, else its
// extents joined.
func itemData(m *avifMeta, it *avifItem, src []byte) ([]byte, error) {
	parts, _, err := m.parts(it, src)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return bytes.Join(parts, nil), nil
}

// avifSample returns a Pillow AVIF's AV1 item and its av1C, w×h.
func avifSample(t *testing.T, w, h int) avifParts {
	return avifSampleMode(t, w, h, "RGB")
}

// avifSampleMode is avifSample of a Pillow image of mode ("RGB", "L").
func avifSampleMode(t *testing.T, w, h int, mode string) avifParts {
	t.Helper()
	src := pillowAVIF(t, avifTestImage(w, h), map[string]any{"mode": mode, "subsampling": "4:4:4"})
	l, err := parseAVIF(src)
	if err != nil {
		t.Fatal(err)
	}
	data, derr := itemData(l.meta, l.color[0], src)
	if derr != nil {
		t.Fatal(derr)
	}
	return avifParts{major: "avif", itemType: "av01", w: w, h: h, av1C: l.meta.prop(l.color[0], "av1C"),
		data: bytes.Clone(data), extents: 1, hdlr: "pict"}
}

// file lays out ftyp, meta (item 1) and mdat.
func (p avifParts) file() []byte {
	ftyp := box("ftyp", []byte(p.major), be32(0), []byte("mif1miaf"))
	iloc := func(mdatAt int) []byte {
		n := max(p.extents, 1)
		step := len(p.data) / n
		var ext []byte
		for i := 0; i < n; i++ {
			ln := step
			if i == n-1 {
				ln = len(p.data) - step*(n-1)
			}
			if i == 0 && p.extLen > 0 {
				ln = p.extLen
			}
			ext = append(append(ext, be32(mdatAt+8+i*step)...), be32(ln)...)
		}
		for i := 0; i < p.zeroExt; i++ {
			ext = append(append(ext, be32(mdatAt+8)...), be32(0)...)
		}
		return fullBox("iloc", 0, []byte{0x44, 0x00}, be16(1), be16(1), be16(0), be16(n+p.zeroExt), ext)
	}
	props, assoc := [][]byte{fullBox("ispe", 0, be32(p.w), be32(p.h)), box("av1C", p.av1C)}, []byte{2, 0x81, 0x02}
	if p.colr != nil {
		props, assoc = append(props, box("colr", p.colr)), []byte{3, 0x81, 0x02, 0x03}
	}
	props = append(props, p.props...)
	if p.assoc != nil {
		assoc = p.assoc
	}
	ipma := append(be16(1), assoc...)
	for i := 0; i < p.ipmaMore; i++ {
		ipma = append(append(ipma, be16(2+i)...), 0)
	}
	meta := func(mdatAt int) []byte {
		return fullBox("meta", 0,
			fullBox("hdlr", 0, be32(0), []byte(p.hdlr), make([]byte, 13)),
			fullBox("pitm", 0, be16(1)),
			fullBox("iinf", 0, be16(1), fullBox("infe", 2, be16(1), be16(0), []byte(p.itemType), []byte{0})),
			iloc(mdatAt),
			box("iprp",
				box("ipco", props...),
				fullBox("ipma", 0, be32(1+p.ipmaMore), ipma)))
	}
	var out []byte
	out = append(out, ftyp...)
	if p.moov {
		out = append(out, box("moov", box("mvhd", make([]byte, 100)))...)
	}
	if !p.noMeta {
		m := meta(0)
		out = append(out, meta(len(out)+len(m))...)
	}
	return append(out, box("mdat", p.data)...)
}

func TestAVIFBuiltContainer(t *testing.T) {
	p := avifSample(t, 40, 24)
	want := mustDecode(t, pillowAVIF(t, avifTestImage(40, 24), map[string]any{"mode": "RGB", "subsampling": "4:4:4"}), Options{})
	for _, n := range []int{1, 3} {
		q := p
		q.extents = n
		got := mustDecode(t, q.file(), Options{})
		if !bytes.Equal(got.Pix, want.Pix) {
			t.Errorf("%d extents: pixels differ from the Pillow file's", n)
		}
	}
}

func TestAVIFForged(t *testing.T) {
	p := avifSample(t, 40, 24)
	good := p.file()
	cases := []struct {
		name string
		src  []byte
		want Cause
		msg  string
	}{
		{"handler", func() []byte { q := p; q.hdlr = "vide"; return q.file() }(), Corrupt, "handler"},
		{"hevc item", func() []byte { q := p; q.itemType = "hvc1"; return q.file() }(), Unsupported, "hvc1"},
		{"sequence only", func() []byte { q := p; q.noMeta, q.moov = true, true; return q.file() }(), Unsupported, "sequence"},
		{"no meta", func() []byte { q := p; q.noMeta = true; return q.file() }(), Corrupt, "meta"},
		{"extent past the end", func() []byte { q := p; q.extLen = len(p.data) + 100; return q.file() }(), Truncated, "past the end"},
		{"too many extents", func() []byte { q := p; q.extents = avifMaxExtents + 1; return q.file() }(), TooLarge, "extents"},
		{"empty size", func() []byte { q := p; q.w = 0; return q.file() }(), Corrupt, "empty"},
		{"huge side", func() []byte { q := p; q.w = 1 << 20; return q.file() }(), TooLarge, "a side"},
		{"ispe smaller than the frame", func() []byte { q := p; q.w, q.h = 20, 12; return q.file() }(), Corrupt, "larger than"},
		{"no frame", func() []byte { q := p; q.data = []byte{0x12, 0x00}; return q.file() }(), Corrupt, "no frame"},
		{"bad OBUs", func() []byte { q := p; q.data = []byte{0x32, 0x7f, 1, 2}; return q.file() }(), Corrupt, "OBU"},
		{"box under its header", append(bytes.Clone(good[:len(good)-len(p.data)-8]), 0, 0, 0, 4, 'm', 'd', 'a', 't'), Corrupt, "under its header"},
		{"box past its parent", func() []byte {
			b := bytes.Clone(good)
			i := bytes.Index(b, []byte("ipco"))
			binary.BigEndian.PutUint32(b[i+4:], 1000) // ispe's size
			return b
		}(), Corrupt, "runs past its parent"},
		{"cut in mdat", good[:len(good)-10], Truncated, "ends early"},
	}
	d := NewDecoder()
	defer d.Close()
	for _, tc := range cases {
		_, err := d.DecodeImage(tc.src, Options{})
		if causeOf(err) != tc.want || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q naming %q", tc.name, err, tc.want, tc.msg)
		}
	}
	if _, err := d.DecodeImage(good, Options{}); err != nil {
		t.Errorf("good file after the forged ones: %v", err)
	}
}

// avifencFile writes img with avifenc (libavif's tool, installed by make
// test-deps) and its args; the test skips without it.
func avifencFile(t *testing.T, png []byte, args ...string) []byte {
	t.Helper()
	exe, err := exec.LookPath("avifenc")
	if err != nil {
		t.Skip("no avifenc (make test-deps installs libavif-bin)")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.png"), filepath.Join(dir, "out.avif")
	if err := os.WriteFile(in, png, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append(append([]string{"-j", "1"}, args...), in, out)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("avifenc: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAVIFAvifenc: grids, 10- and 12-bit, alpha and lossless (identity
// matrix) files decode as Pillow decodes them.
func TestAVIFAvifenc(t *testing.T) {
	png := encodePNG(t, avifTestImage(150, 90))
	// avifenc writes grid cells of at least 64×64, even-sized.
	grids := map[string][]byte{"grid 3x2 4:2:0": encodePNG(t, avifTestImage(384, 256)), "grid 2x2 4:4:4": encodePNG(t, avifTestImage(260, 132))}
	cases := map[string][]string{
		"grid 3x2 4:2:0":    {"--grid", "3x2", "-y", "420"},
		"grid 2x2 4:4:4":    {"--grid", "2x2", "-y", "444"},
		"10-bit 4:2:0":      {"-d", "10", "-y", "420"},
		"12-bit 4:2:2":      {"-d", "12", "-y", "422"},
		"12-bit 4:2:0":      {"-d", "12", "-y", "420"},
		"limited 4:2:0":     {"-r", "limited", "-y", "420"},
		"lossless identity": {"--lossless"},
		"identity limited":  {"--cicp", "1/13/0", "-y", "444", "-r", "limited"},
		"YCgCo":             {"--cicp", "1/13/8", "-y", "444"},
		"FCC 4:2:0":         {"--cicp", "1/13/4", "-y", "420"},
		"unspecified 4:2:0": {"--cicp", "1/13/2", "-y", "420"},
		"BT.709 limited":    {"--cicp", "1/13/1", "-y", "420", "-r", "limited"},
		"BT.2020 10-bit":    {"--cicp", "9/16/9", "-d", "10", "-y", "420"},
	}
	// Matrices libavif converts in floating point (FCC here): float32
	// rounding may differ by one level (measured max 1, mean under 0.0001).
	bound := map[string]int{"FCC 4:2:0": 1}
	for name, args := range cases {
		in := png
		if g, ok := grids[name]; ok {
			in = g
		}
		src := avifencFile(t, in, args...)
		if strings.HasPrefix(name, "grid") && !bytes.Contains(src[:min(len(src), 4096)], []byte("grid")) {
			t.Fatalf("%s: avifenc wrote no grid item", name)
		}
		for _, mode := range []string{"RGBA", "RGB"} {
			c := map[string]Color{"RGBA": RGBA, "RGB": RGB}[mode]
			img, err := Decode(src, Options{Color: c})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want, w, h := pillowDecode(t, src, mode, false)
			if img.Width != w || img.Height != h {
				t.Fatalf("%s: %dx%d, Pillow %dx%d", name, img.Width, img.Height, w, h)
			}
			if maxd, mean := compareBytes(img.Pix, want); maxd > max(avifBound, bound[name]) {
				t.Errorf("%s %s: differs from Pillow by up to %d (mean %.4f)", name, mode, maxd, mean)
			}
		}
	}
}

// TestAVIFGridCrop: a grid whose output is smaller than its tiles cover
// (the right and bottom tiles overhang) decodes cropped, as in Pillow; one
// whose tiles fall short of the output, or overhang by a whole tile, is
// corrupt.
func TestAVIFGridCrop(t *testing.T) {
	src := avifencFile(t, encodePNG(t, avifTestImage(384, 256)), "--grid", "3x2", "-y", "420")
	l, err := parseAVIF(src)
	if err != nil {
		t.Fatal(err)
	}
	g, gerr := itemData(l.meta, l.meta.item(l.meta.primary), src)
	if gerr != nil || len(g) != 8 || g[1]&1 != 0 {
		t.Fatalf("grid payload % x (%v): want 16-bit sizes", g, gerr)
	}
	ispe := l.meta.prop(l.meta.item(l.meta.primary), "ispe")
	set := func(w, h int) []byte {
		binary.BigEndian.PutUint16(g[4:], uint16(w)) // g and ispe alias src
		binary.BigEndian.PutUint16(g[6:], uint16(h))
		if ispe != nil {
			binary.BigEndian.PutUint32(ispe[4:], uint32(w))
			binary.BigEndian.PutUint32(ispe[8:], uint32(h))
		}
		return bytes.Clone(src)
	}
	cropped := set(384-38, 256-22)
	img := mustDecode(t, cropped, Options{Color: RGBA})
	want, w, h := pillowDecode(t, cropped, "RGBA", false)
	if img.Width != w || img.Height != h || w != 346 || h != 234 {
		t.Fatalf("%dx%d, Pillow %dx%d", img.Width, img.Height, w, h)
	}
	if maxd, mean := compareBytes(img.Pix, want); maxd > avifBound {
		t.Errorf("cropped grid differs from Pillow by up to %d (mean %.4f)", maxd, mean)
	}
	for _, wh := range [][2]int{{385, 256}, {384, 128}} {
		_, err := Decode(set(wh[0], wh[1]), Options{})
		if causeOf(err) != Corrupt || !strings.Contains(err.Error(), "do not fit") {
			t.Errorf("output %dx%d: %v", wh[0], wh[1], err)
		}
	}
}

// TestAVIFClapIrot: clap (a crop) is ignored and irot/imir become the
// orientation, as Pillow 13 does (avifenc's --imir 1 mirrors left to
// right: with --irot 1, EXIF orientation 7).
func TestAVIFClapIrot(t *testing.T) {
	png := encodePNG(t, avifTestImage(120, 80))
	clap := avifencFile(t, png, "--crop", "10,20,60,40", "-y", "444")
	rot := avifencFile(t, png, "--irot", "1", "--imir", "1", "-y", "444")
	d := NewDecoder()
	defer d.Close()
	if h, err := d.Header(rot, Limits{}); err != nil || h.Orientation != 7 {
		t.Errorf("irot 1 imir 1: %+v %v, want orientation 7", h, err)
	}
	for name, src := range map[string][]byte{"clap": clap, "irot+imir": rot} {
		img, err := d.DecodeImage(src, Options{Color: RGB, Orient: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, w, h := pillowDecode(t, src, "RGB", true)
		if img.Width != w || img.Height != h {
			t.Fatalf("%s: %dx%d, Pillow %dx%d", name, img.Width, img.Height, w, h)
		}
		if maxd, mean := compareBytes(img.Pix, want); maxd > avifBound {
			t.Errorf("%s: differs from Pillow by up to %d (mean %.4f)", name, maxd, mean)
		}
	}
}

// TestAVIFColr: the colr nclx matrix and range decide the conversion, as
// Pillow's do; identity on a grey (4:0:0) image is its luma.
func TestAVIFColr(t *testing.T) {
	nclx := func(matrix int, full bool) []byte {
		b := append([]byte("nclx"), append(be16(1), append(be16(13), be16(matrix)...)...)...)
		if full {
			return append(b, 0x80)
		}
		return append(b, 0)
	}
	for _, tc := range []struct {
		name string
		mode string
		colr []byte
	}{
		{"BT.709 full", "RGB", nclx(1, true)},
		{"BT.601 limited", "RGB", nclx(6, false)},
		{"identity grey", "L", nclx(0, true)},
		{"YCgCo", "RGB", nclx(8, true)},
	} {
		p := avifSampleMode(t, 40, 24, tc.mode)
		p.colr = tc.colr
		src := p.file()
		img, err := Decode(src, Options{Color: RGB})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, _, _ := pillowDecode(t, src, "RGB", false)
		if maxd, mean := compareBytes(img.Pix, want); maxd > avifBound {
			t.Errorf("%s: differs from Pillow by up to %d (mean %.4f)", tc.name, maxd, mean)
		}
	}
	p := avifSample(t, 40, 24)
	p.colr = nclx(12, true) // chroma-derived: not converted here
	_, err := Decode(p.file(), Options{})
	if causeOf(err) != Unsupported || !strings.Contains(err.Error(), "matrix coefficients 12") {
		t.Errorf("matrix 12: %v", err)
	}
}
