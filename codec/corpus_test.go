package codec

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/testcorpus"
)

// corpusEntry is one row of MANIFEST.tsv.
type corpusEntry struct {
	file          string // relative to the corpus root
	width, height int    // stored size
	kind          string
	orientation   int // EXIF orientation, 0 when none
}

func readManifest(t testing.TB, dir string) []corpusEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var col map[string]int
	var out []corpusEntry
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if col == nil {
			col = map[string]int{}
			for i, name := range fields {
				col[name] = i
			}
			for _, need := range []string{"file", "width", "height", "kind", "exif_orientation"} {
				if _, ok := col[need]; !ok {
					t.Fatalf("MANIFEST.tsv lacks column %q", need)
				}
			}
			continue
		}
		get := func(name string) string { return fields[col[name]] }
		e := corpusEntry{file: get("file"), kind: get("kind")}
		e.width, _ = strconv.Atoi(get("width"))
		e.height, _ = strconv.Atoi(get("height"))
		e.orientation, _ = strconv.Atoi(get("exif_orientation"))
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// brokenCauses gives the expected outcome of every file in broken/: a
// cause, or "" for a valid image whose file name lies about its format.
var brokenCauses = map[string]Cause{
	"broken/bad_crc.png":                             Corrupt,
	"broken/corrupt_scan.jpg":                        Corrupt, // libjpeg: "premature end of data segment"
	"broken/go_video-001.progressive.truncated.jpeg": "",      // cut between scans, with EOI: a legal script (libjpeg, Pillow)
	"broken/jpeg_bytes_named.png":                    "",
	"broken/png_bytes_named.jpg":                     "",
	"broken/skimage_truncated.jpg":                   Truncated, // ends inside a DHT segment
	"broken/truncated_90pct_progressive.jpg":         Truncated,
	"broken/truncated_idat.png":                      Truncated,
}

func causeOf(err error) Cause {
	var e *Error
	if errors.As(err, &e) {
		return e.Cause
	}
	return ""
}

// TestDecodeCorpus decodes every corpus image, upright and as stored, and
// checks sizes against the manifest and causes for the broken files.
//
// With SLUICE_DECODE_DUMP=dir it also writes each upright RGB decode there
// as raw bytes, listed in dir/index.tsv (file, dump name, height, width,
// channels), for comparing with other decoders; SLUICE_DECODE_DUMP_SCALE=m
// dumps JPEGs decoded at scale m/8 instead.
func TestDecodeCorpus(t *testing.T) {
	dir := testcorpus.Dir(t)
	dump := os.Getenv("SLUICE_DECODE_DUMP")
	dumpScale, _ := strconv.Atoi(os.Getenv("SLUICE_DECODE_DUMP_SCALE"))
	var index *os.File
	if dump != "" {
		if err := os.MkdirAll(dump, 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if index, err = os.Create(filepath.Join(dump, "index.tsv")); err != nil {
			t.Fatal(err)
		}
		defer index.Close()
	}
	d := NewDecoder()
	defer d.Close()
	seen := 0
	for _, e := range readManifest(t, dir) {
		src, err := os.ReadFile(filepath.Join(dir, e.file))
		if err != nil {
			t.Errorf("%s: %v", e.file, err)
			continue
		}
		seen++
		want, broken := brokenCauses[e.file]
		if strings.HasPrefix(e.file, "broken/") && !broken {
			t.Errorf("%s: broken file without an expected cause; add it to brokenCauses", e.file)
			continue
		}
		img, err := d.DecodeImage(src, Options{Color: RGB, Orient: true})
		if want != "" {
			if got := causeOf(err); got != want {
				t.Errorf("%s: got %v, want cause %q", e.file, err, want)
			} else {
				t.Logf("%s: %v", e.file, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", e.file, err)
			continue
		}
		wh, ww := OrientedDims(e.height, e.width, e.orientation)
		if img.Height != wh || img.Width != ww || len(img.Pix) != wh*ww*3 {
			t.Errorf("%s: upright decode is %dx%d (%d bytes), want %dx%d", e.file, img.Width, img.Height, len(img.Pix), ww, wh)
		}
		stored, err := d.DecodeImage(src, Options{Color: RGB})
		if err != nil {
			t.Errorf("%s: decode as stored: %v", e.file, err)
		} else if stored.Height != e.height || stored.Width != e.width {
			t.Errorf("%s: stored decode is %dx%d, want %dx%d", e.file, stored.Width, stored.Height, e.width, e.height)
		}
		if index != nil {
			if dumpScale != 0 {
				if img, err = d.DecodeImage(src, Options{Color: RGB, Orient: true, Scale: dumpScale}); err != nil {
					t.Fatalf("%s: %v", e.file, err)
				}
			}
			name := strings.ReplaceAll(e.file, "/", "__") + ".rgb"
			if err := os.WriteFile(filepath.Join(dump, name), img.Pix, 0o644); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(index, "%s\t%s\t%d\t%d\t3\n", e.file, name, img.Height, img.Width)
		}
	}
	if seen == 0 {
		t.Fatal("manifest lists no files")
	}
}

// TestDecodeCorpusEXIF: each set holds one photo stored with every EXIF
// orientation (the pixels rotated to match, then re-encoded), so decoded
// upright they must all show the same image. Re-encoding the rotated
// pixels moves JPEG's block grid, hence a tolerance on the mean difference
// instead of equality; the recurser set also draws its orientation number
// into each image. Decoding without orientation must differ by far more.
func TestDecodeCorpusEXIF(t *testing.T) {
	dir := testcorpus.Dir(t)
	// File i of a set carries orientation i; ref is the upright one.
	sets := []struct {
		prefix  string
		ref, n  int
		maxMean float64
	}{
		{"jpeg/exif/derived_seeding_orient", 1, 8, 2},
		{"jpeg/exif/recurser_Landscape_", 0, 8, 6},
	}
	d := NewDecoder()
	defer d.Close()
	load := func(file string, orient bool) *Image {
		src, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		img, err := d.DecodeImage(src, Options{Orient: orient})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return img
	}
	for _, s := range sets {
		ref := load(fmt.Sprintf("%s%d.jpg", s.prefix, s.ref), true)
		for i := s.ref + 1; i <= s.n; i++ {
			file := fmt.Sprintf("%s%d.jpg", s.prefix, i)
			img := load(file, true)
			mean, ok := meanAbsDiff(ref, img)
			if !ok || mean >= s.maxMean {
				t.Errorf("%s: upright decode differs from %d: %dx%d vs %dx%d, mean |diff| %.2f (limit %v)",
					file, s.ref, img.Width, img.Height, ref.Width, ref.Height, mean, s.maxMean)
			}
			if i == 1 {
				continue // orientation 1 is upright as stored
			}
			if raw, same := meanAbsDiff(ref, load(file, false)); same && raw < 10*s.maxMean {
				t.Errorf("%s: decoded as stored, mean |diff| is only %.2f: is its orientation real?", file, raw)
			}
		}
	}
}

// meanAbsDiff is the mean absolute difference of two same-size images.
func meanAbsDiff(a, b *Image) (float64, bool) {
	if a.Width != b.Width || a.Height != b.Height || len(a.Pix) != len(b.Pix) {
		return 0, false
	}
	var sum int
	for i := range a.Pix {
		sum += absDiff(a.Pix[i], b.Pix[i])
	}
	return float64(sum) / float64(len(a.Pix)), true
}

// TestDecodeCorpusScaled decodes every corpus JPEG at 1/2, 1/4 and 1/8 and
// checks the sizes: TJSCALED's ceil(dim*m/8), then oriented.
func TestDecodeCorpusScaled(t *testing.T) {
	dir := testcorpus.Dir(t)
	d := NewDecoder()
	defer d.Close()
	for _, e := range readManifest(t, dir) {
		if brokenCauses[e.file] != "" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.file))
		if err != nil {
			t.Fatal(err)
		}
		if Sniff(src) != "JPEG" {
			continue
		}
		for _, m := range []int{4, 2, 1} {
			img, err := d.DecodeImage(src, Options{Orient: true, Scale: m})
			if err != nil {
				t.Errorf("%s at %d/8: %v", e.file, m, err)
				continue
			}
			wh, ww := OrientedDims((e.height*m+7)/8, (e.width*m+7)/8, e.orientation)
			if img.Height != wh || img.Width != ww || len(img.Pix) != wh*ww*3 {
				t.Errorf("%s at %d/8: got %dx%d, want %dx%d", e.file, m, img.Width, img.Height, ww, wh)
			}
		}
	}
}
