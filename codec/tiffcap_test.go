package codec

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/hostile"
)

// bigTIFF is a 2048x1536 RGB TIFF in strips of rps rows, uncompressed or
// Deflate-compressed.
func bigTIFF(t *testing.T, deflate bool, rps int) []byte {
	const w, h = 2048, 1536
	var strips [][]byte
	for y := 0; y < h; y += rps {
		rows := min(rps, h-y)
		raw := make([]byte, rows*w*3)
		for i := range raw {
			raw[i] = byte((i/3)%w/8 + (y+i/(3*w))/6 + i%3*40)
		}
		if deflate {
			var b bytes.Buffer
			z := zlib.NewWriter(&b)
			z.Write(raw)
			z.Close()
			raw = b.Bytes()
		}
		strips = append(strips, raw)
	}
	comp := uint16(1)
	if deflate {
		comp = 8
	}
	tw := hostile.NewTIFF()
	tw.TIFFStrips(w, h, uint32(rps), 3, comp, 2, strips)
	return tw.Bytes()
}

// TestTIFFPeakWithinEstimate: what libtiff holds at its peak, counted by
// capalloc.c, stays within the cap (allocCap) of the memory Header
// estimated, for reading the header and for decoding, over every test
// TIFF and large made ones; libtiff's fixed allocations (about 80 kB for
// LZW's tables) are what the cap's slack is for, and on the large files
// the peak stays within the estimate itself.
func TestTIFFPeakWithinEstimate(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "formats", "*.tif"))
	if len(files) < 10 {
		t.Fatalf("only %d test TIFFs", len(files))
	}
	srcs := map[string][]byte{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[filepath.Base(f)] = src
	}
	large := map[string]bool{}
	for _, rps := range []int{1536, 64} {
		for _, deflate := range []bool{false, true} {
			name := fmt.Sprintf("made 2048x1536 rps %d deflate %v", rps, deflate)
			srcs[name], large[name] = bigTIFF(t, deflate, rps), true
		}
	}
	for f, src := range srcs {
		d, _ := newTIFFDecoder()
		h, headerPeak, peak, err := decodePeaks(d.(counted), src)
		d.Close()
		if err != nil {
			if !strings.Contains(err.Error(), "not supported") {
				t.Errorf("%s: %v", f, err)
			}
			continue
		}
		t.Logf("%s: %dx%d, estimate %d bytes, peak %d (header %d)", f, h.Width, h.Height, h.Memory, peak, headerPeak)
		bound := allocCap(h.Memory)
		if large[f] {
			bound = h.Memory
		}
		if peak == 0 || peak > bound || headerPeak > bound {
			t.Errorf("%s: libtiff held %d bytes (header: %d), over %d (estimate %d)", f, peak, headerPeak, bound, h.Memory)
		}
	}
}

// TestTIFFCapStopsAWrongEstimate: an estimate far below what libtiff
// needs (made so by hand) ends the decode as too large at the cap; the
// decoder then decodes the next image.
func TestTIFFCapStopsAWrongEstimate(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "formats", "rgb_tiff_lzw.tif"))
	if err != nil {
		t.Fatal(err)
	}
	fd, _ := newTIFFDecoder()
	d := fd.(*tiffDecoder)
	defer d.Close()
	h, err := d.Header(src, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	full := h.Memory
	// An estimate of one byte, no slack: libtiff's first allocation fails.
	saved := allocCapSlack
	allocCapSlack = 0
	defer func() { allocCapSlack = saved }()
	h.Memory = 1
	err = d.Decode(make([]byte, h.Width*h.Height*3), src, h, Options{})
	wantRefused(t, "a one-byte estimate", err, "TIFF", "cap of", "out of memory")
	allocCapSlack = saved
	h.Memory = full
	if err := d.Decode(make([]byte, h.Width*h.Height*3), src, h, Options{}); err != nil {
		t.Errorf("with the whole estimate: %v", err)
	}
}
