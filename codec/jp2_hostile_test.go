package codec

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/internal/hostile"
)

// TestJP2HostileShapes: the other ways a small file makes OpenJPEG
// allocate or work for code-blocks, precincts and layers.
func TestJP2HostileShapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  hostile.J2KSpec
		words []string
	}{
		// The main header says 64x64 code-blocks; each tile-part header
		// says 4x4, which is what OpenJPEG uses.
		{"tile-part COD", hostile.J2KSpec{Width: 8192, Height: 8192, Levels: 5, TileCblkExp: 2}, []string{"memory limit", "4194304 code-blocks"}},
		// Precincts of 2x2 make the code-blocks of every band 1x1.
		{"1x1 precincts", hostile.J2KSpec{Width: 2048, Height: 2048, Levels: 5, PrecinctExp: 1}, []string{"memory limit", "precincts"}},
		// Under the layer limit, but each layer walks a million code-blocks.
		{"200 layers", hostile.J2KSpec{Width: 4096, Height: 4096, Levels: 5, Layers: 200, CblkExp: 2, Packet: 0x80}, []string{"work limit", "200 layers"}},
		{"257 layers", hostile.J2KSpec{Width: 64, Height: 64, Levels: 1, Layers: 257}, []string{"257 quality layers", "limit of 256"}},
		// Tiles of 1x1 code-blocks: each tile's structures fit, the work
		// is every tile's.
		{"tiles", hostile.J2KSpec{Width: 4096, Height: 4096, TileWidth: 512, TileHeight: 512, Levels: 5, PrecinctExp: 1}, []string{"work limit", "64 tiles"}},
	} {
		src := hostile.J2K(tc.spec)
		var err error
		n := allocated(func() { _, err = Decode(src, Options{Limits: LimitsFor(64 << 20)}) })
		wantRefused(t, tc.name, err, append(tc.words, "JPEG 2000")...)
		if n > 1<<20 {
			t.Errorf("%s: refusing it allocated %d bytes", tc.name, n)
		}
		t.Logf("%s (%d bytes): %v", tc.name, len(src), err)
	}
}

// TestJP2EstimateEdge: an image whose estimates equal the limits decodes;
// one unit or byte less refuses it, naming the limit and the numbers.
func TestJP2EstimateEdge(t *testing.T) {
	src := hostile.J2K(hostile.J2KSpec{Width: 512, Height: 384, Levels: 4, Layers: 8, CblkExp: 3, Packet: 0x80})
	d, _ := newJP2Decoder()
	defer d.Close()
	h, err := d.Header(src, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// 512x384 samples and 3072 code-blocks of 8x8 walked in 8 layers.
	if h.Memory < 512*384*jp2MemPerSample+3072*jp2MemPerCblk || h.Work < 3072*8*jp2WorkPerCblkLayerLevel {
		t.Fatalf("estimates %d bytes, %d units: too low", h.Memory, h.Work)
	}
	img, err := Decode(src, Options{Color: Gray, Limits: Limits{MaxPixels: 512 * 384, MaxWork: h.Work, MaxMemory: h.Memory}})
	if err != nil {
		t.Fatalf("at the limits: %v", err)
	}
	// No code-block is included: every coefficient is 0, every sample
	// the DC level.
	if bytes.Count(img.Pix, []byte{128}) != len(img.Pix) {
		t.Errorf("pixels are not all 128")
	}
	_, err = Decode(src, Options{Limits: Limits{MaxWork: h.Work, MaxMemory: h.Memory - 1}})
	wantRefused(t, "memory-1", err, "memory limit", fmt.Sprint(h.Memory), fmt.Sprint(h.Memory-1), "8 layers")
	_, err = Decode(src, Options{Limits: Limits{MaxWork: h.Work - 1, MaxMemory: h.Memory}})
	wantRefused(t, "work-1", err, "work limit", fmt.Sprint(h.Work), "3072 code-blocks")
}

// TestJP2AllocFailures: the C libraries' messages for a failed allocation
// are TooLarge, whatever else they say; others keep their causes.
func TestJP2AllocFailures(t *testing.T) {
	for _, msg := range []string{
		// OpenJPEG 2.5's, as its sources spell them.
		"Cannot decode tile, memory error",
		"Not enough memory for tile resolutions",
		"Not enough memory to handle band precints",
		"Not enough memory to create Tag-tree nodes",
		"Not enough memory to read PPM marker",
		"Cannot allocate cblk->decoded_data",
		"Cannot allocate Tier 1 handle",
		"cannot allocate opj_tcd_seg_data_chunk_t* array",
		"Size of tile data exceeds system limits",
		"Error allocating tile component data.",
		"Failed to allocate image header.",
		"out of memory", // jp2mem.c's
	} {
		wantRefused(t, msg, jp2Error(msg), "too large", "JPEG 2000", "out of memory", msg)
	}
	for _, msg := range []string{
		// libtiff 4.5's.
		"Out of memory",
		"Out of memory reading of \"ImageDescription\"",
		"No space for strip buffer",
		"No space for tile buffer",
		"No space for data buffer at scanline 7",
		"No space for LZW code table",
		"No space to expand strip arrays",
		"Failed to allocate memory for to read TIFF directory (0 elements of 12 bytes each)",
		"Failed to allocate fields array",
		"Cannot allocate strip offset and bytecount arrays",
		"Cannot allocate decompressor",
		"Unable to allocate memory for auto-correcting of subsampling values",
		"Not enough memory",
	} {
		wantRefused(t, msg, tiffError(msg), "too large", "TIFF", "out of memory", msg)
	}
	for msg, want := range map[string]Cause{
		"Stream too short":                       Truncated,
		"Expected EPH marker":                    Corrupt,
		"Invalid number of layers in COD marker": Corrupt,
	} {
		wantCause(t, jp2Error(msg), want)
	}
	for msg, want := range map[string]Cause{
		"Not a TIFF or MDI file, bad magic number 0":            NotImage,
		"Read error on strip 3":                                 Truncated,
		"Sorry, requested compression method is not configured": Unsupported,
	} {
		wantCause(t, tiffError(msg), want)
	}
}

// TestJP2Large: legal large files as opj_compress makes them (its
// defaults: one tile, 64x64 code-blocks, 6 resolutions, one layer,
// lossless; then 7 layers, 1024x1024 tiles, precincts, 32x32 code-blocks
// and RPCL) pass the limits at their defaults and decode as Pillow does.
func TestJP2Large(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes and decodes 4096x4096 images")
	}
	if _, err := exec.LookPath("opj_compress"); err != nil {
		t.Skip("no opj_compress")
	}
	files := opjFiles(t, 4096, 4096, map[string][]string{
		"default.j2k":      nil,
		"layers_tiles.jp2": {"-r", "80,40,20,10,5,2,1", "-t", "1024,1024", "-c", "[256,256],[128,128]", "-b", "32,32", "-p", "RPCL"},
	})
	for name, src := range files {
		d, _ := newJP2Decoder()
		hd, err := d.Header(src, LimitsFor(64<<20))
		d.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %d bytes, estimates %d bytes, %d units", name, len(src), hd.Memory, hd.Work)
		img := mustDecode(t, src, Options{Limits: LimitsFor(64 << 20)})
		want, pw, ph := pillowDecode(t, src, "RGB", false)
		if img.Width != pw || img.Height != ph || !bytes.Equal(img.Pix, want) {
			t.Errorf("%s: %dx%d differs from Pillow's %dx%d", name, img.Width, img.Height, pw, ph)
		}
	}
}

// opjFiles encodes a textured w x h RGB image with opj_compress, once for
// each of variants (a file name, whose extension picks JP2 or a raw
// codestream, and its options), and returns the files by name.
func opjFiles(t *testing.T, w, h int, variants map[string][]string) map[string][]byte {
	t.Helper()
	ppm := fmt.Appendf(nil, "P6\n%d %d\n255\n", w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n := uint32(x*7919+y*104729) * 2654435761 >> 29 // a little texture
			ppm = append(ppm, byte(x/16+int(n)), byte(y/16+int(n)), byte((x+y)/32^int(n)))
		}
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ppm")
	if err := os.WriteFile(in, ppm, 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for name, args := range variants {
		out := filepath.Join(dir, name)
		cmd := exec.Command("opj_compress", append([]string{"-i", in, "-o", out}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("opj_compress %s: %v\n%s", name, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}

// jp2HostileSeeds are FuzzJP2's seeds of the hostile shapes, small: 4x4
// code-blocks, 2x2 precincts, layers of one-byte packets that walk every
// code-block, a tile-part COD, tiles, and the registered cases themselves
// (refused at once).
func jp2HostileSeeds() [][]byte {
	var out [][]byte
	for _, s := range []hostile.J2KSpec{
		{Width: 64, Height: 64, Levels: 3, CblkExp: 2},
		{Width: 48, Height: 40, Levels: 2, PrecinctExp: 1},
		{Width: 64, Height: 64, Levels: 3, Layers: 12, CblkExp: 2, Packet: 0x80},
		{Width: 64, Height: 64, Levels: 2, TileCblkExp: 2},
		{Width: 96, Height: 64, TileWidth: 32, TileHeight: 32, Comps: 3, Levels: 2, Layers: 3, CblkExp: 3, Packet: 0x80},
	} {
		out = append(out, hostile.J2K(s))
	}
	for _, c := range hostile.Of("JPEG 2000") {
		out = append(out, c.Make())
	}
	return out
}
