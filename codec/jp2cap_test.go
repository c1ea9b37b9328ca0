package codec

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/hostile"
)

// jp2PeakFiles are JPEG 2000 files of many shapes: the shipped test
// files, the hostile shapes at sizes the limits allow, and (where
// opj_compress is installed) encoder-made files of its main options.
func jp2PeakFiles(t *testing.T) map[string][]byte {
	files := map[string][]byte{}
	for _, name := range []string{"gray.jp2", "gray16.j2k", "rgb.j2k", "rgb.jp2", "rgb16.j2k", "rgb_lossy.jp2", "rgb_tiled.jp2", "rgba.jp2"} {
		b, err := os.ReadFile(filepath.Join("testdata", "formats", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	for i, s := range []hostile.J2KSpec{
		{Width: 1024, Height: 1024, Levels: 5, CblkExp: 2},
		{Width: 512, Height: 512, Levels: 5, PrecinctExp: 1},
		{Width: 512, Height: 512, Levels: 5, Layers: 20, CblkExp: 2, Packet: 0x80},
		{Width: 1024, Height: 1024, Levels: 5, TileCblkExp: 2},
		{Width: 1024, Height: 1024, TileWidth: 128, TileHeight: 128, Comps: 3, Levels: 3, Layers: 3, CblkExp: 3, Packet: 0x80},
		{Width: 2048, Height: 1536, Comps: 4, Levels: 6},
	} {
		files[fmt.Sprintf("hostile-shape-%d", i)] = hostile.J2K(s)
	}
	if _, err := exec.LookPath("opj_compress"); err != nil {
		t.Logf("no opj_compress: encoder-made files left out")
		return files
	}
	maps.Copy(files, opjFiles(t, 1200, 900, map[string][]string{
		"opj-default.j2k":   nil,
		"opj-layers.jp2":    {"-r", "80,40,20,10,5,2,1"},
		"opj-tiles.jp2":     {"-t", "256,256", "-b", "32,32", "-p", "RPCL"},
		"opj-precincts.j2k": {"-c", "[128,128],[64,64],[32,32]", "-b", "16,16", "-n", "7"},
		"opj-lossy.jp2":     {"-I", "-r", "20"},
		"opj-cblk4.j2k":     {"-b", "4,4", "-n", "8"},
	}))
	return files
}

// TestJP2PeakWithinEstimate: what OpenJPEG holds at its peak, counted by
// jp2mem.c's allocator, stays within the memory Header estimated, for
// reading the header and for decoding; so the cap (allocCap) only ever
// stops an image whose estimate is wrong.
func TestJP2PeakWithinEstimate(t *testing.T) {
	for name, src := range jp2PeakFiles(t) {
		d, _ := newJP2Decoder()
		h, headerPeak, peak, err := decodePeaks(d.(counted), src)
		d.Close()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		t.Logf("%s: %dx%d, estimate %d bytes, peak %d (header %d): %.2f", name, h.Width, h.Height, h.Memory, peak, headerPeak, float64(peak)/float64(h.Memory))
		if peak > h.Memory || headerPeak > h.Memory {
			t.Errorf("%s: OpenJPEG held %d bytes (header: %d), over the estimate of %d", name, peak, headerPeak, h.Memory)
		}
	}
}

// TestJP2CapStopsAWrongEstimate: an estimate far below what OpenJPEG
// needs (here made so by hand) ends the decode as too large at the cap,
// not at the server's memory; the decoder then decodes the next image.
func TestJP2CapStopsAWrongEstimate(t *testing.T) {
	src := hostile.J2K(hostile.J2KSpec{Width: 512, Height: 512, Levels: 5, PrecinctExp: 1})
	fd, _ := newJP2Decoder()
	d := fd.(*jp2Decoder)
	defer d.Close()
	h, err := d.Header(src, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	full := h.Memory
	h.Memory /= 8
	err = d.Decode(make([]byte, h.Width*h.Height), src, h, Options{Color: Gray})
	wantRefused(t, "an eighth of the estimate", err, "JPEG 2000", "cap of", fmt.Sprint(allocCap(h.Memory)), "out of memory")
	if peak := d.peak(); peak > allocCap(h.Memory) || peak == 0 {
		t.Errorf("OpenJPEG held %d bytes at its peak; the cap was %d", peak, allocCap(h.Memory))
	}
	h.Memory = full
	if err := d.Decode(make([]byte, h.Width*h.Height), src, h, Options{Color: Gray}); err != nil {
		t.Errorf("with the whole estimate: %v", err)
	}
}

// TestJP2HeaderBoxes: a palette (which OpenJPEG would expand into one
// image-sized plane per column: 255 planes of 3072x3072 from 1.7 kB) and
// a channel definition longer than any image Sluice decodes are refused
// from the JP2 header boxes, before OpenJPEG reads the codestream.
func TestJP2HeaderBoxes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  hostile.JP2Spec
		cause Cause
		words []string
	}{
		{"palette", hostile.JP2Spec{Codestream: hostile.J2KSpec{Width: 3072, Height: 3072, Levels: 5}, PaletteColumns: 255},
			Unsupported, []string{"palette (255 columns)"}},
		{"cdef", hostile.JP2Spec{Codestream: hostile.J2KSpec{Width: 64, Height: 64, Comps: 3, Levels: 2}, ChannelDefs: 60000},
			Unsupported, []string{"channel definitions list 60000 channels"}},
	} {
		src := hostile.JP2(tc.spec)
		start := time.Now()
		var err error
		n := allocated(func() { _, err = Decode(src, Options{Limits: LimitsFor(64 << 20)}) })
		wantCause(t, err, tc.cause)
		for _, w := range append(tc.words, "JPEG 2000") {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v does not say %q", tc.name, err, w)
			}
		}
		if took := time.Since(start); took > time.Second || n > 1<<20 {
			t.Errorf("%s: refusing it took %v and %d bytes", tc.name, took, n)
		}
	}
	// The same file with a one-entry channel definition decodes.
	img := mustDecode(t, hostile.JP2(hostile.JP2Spec{Codestream: hostile.J2KSpec{Width: 64, Height: 64, Levels: 2}, ChannelDefs: 1}), Options{Color: Gray})
	if img.Width != 64 || img.Height != 64 {
		t.Errorf("decoded %dx%d", img.Width, img.Height)
	}
}
