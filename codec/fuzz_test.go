package codec

import (
	"errors"
	"image"
	"image/color"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/internal/hostile"
	"github.com/sluice-dev/sluice/internal/testcorpus"
	"github.com/sluice-dev/sluice/internal/testimg"
)

// fuzzSeeds are generated images of every kind the decoders handle, plus
// the small corpus files when the corpus is present.
func fuzzSeeds(f *testing.F) {
	g := image.NewGray(image.Rect(0, 0, 9, 7))
	for i := range g.Pix {
		g.Pix[i] = uint8(i * 5)
	}
	g16 := image.NewGray16(image.Rect(0, 0, 5, 3))
	pal := image.NewPaletted(image.Rect(0, 0, 6, 4), color.Palette{color.NRGBA{1, 2, 3, 0}, color.NRGBA{200, 100, 50, 255}})
	jpg := encodeJPEG(f, gradientImage(24, 17), 80)
	pix := noisyRGB(24, 16)
	rgbJPEG, err := testimg.LibJPEG(pix, 24, 16, testimg.LibJPEGOptions{Quality: 90, RGB: true})
	if err != nil {
		f.Fatal(err)
	}
	lowPass, err := testimg.LibJPEG(pix, 24, 16, testimg.LibJPEGOptions{Quality: 90, Scans: lowPassScript})
	if err != nil {
		f.Fatal(err)
	}
	// Small versions of the hostile JPEG shapes: refinements without a
	// first AC scan (a warning at scan 2), a script ending with
	// refinement pending (legal).
	pending, err := testimg.LibJPEG(pix, 24, 16, testimg.LibJPEGOptions{Quality: 90, Scans: hostile.RefinePendingScript})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		rgbJPEG,
		lowPass,
		pending,
		hostile.JPEGRefinements(64, 5),
		testimg.ManyScans(40, 24, 30),
		testimg.ManyScans(16, 16, MaxJPEGScans+1),
		jpg,
		encodeJPEG(f, g, 60),
		withAPP1(jpg, exifPayload(6, true)),
		withAPP1(jpg, exifPayload(3, false)),
		encodePNG(f, gradientImage(11, 5)),
		encodePNG(f, g),
		encodePNG(f, g16),
		encodePNG(f, pal),
		interlacedPNG(f, image.NewNRGBA(image.Rect(0, 0, 10, 9))),
		forgedJPEG(300, 200),
		bmpSeeds()[0],
		pnmSeeds()[0],
		[]byte("GIF89a"),
		encodeWebP(f, noisyRGB(13, 9), 13, 9, 3, 70),
		encodeWebP(f, noisyRGBA(13, 9), 13, 9, 4, 70),
		encodeWebP(f, noisyRGB(11, 6), 11, 6, 3, -1),
		encodeWebP(f, noisyRGBA(11, 6), 11, 6, 4, -1),
		animatedWebP(11, 6, encodeWebP(f, noisyRGB(11, 6), 11, 6, 3, -1)),
	} {
		f.Add(seed)
	}
	formatSeeds(f, ".tif", ".jp2", ".j2k")
	if pillowPython() != "" {
		// AVIFs need Pillow to make; without the venv the fuzzer starts
		// from the other seeds.
		for _, opts := range []map[string]any{
			{"mode": "RGB", "quality": 60},
			{"mode": "RGBA", "subsampling": "4:4:4", "orientation": 7},
			{"mode": "L", "range": "limited"},
		} {
			f.Add(pillowAVIF(f, avifTestImage(21, 13), opts))
		}
	}
	dir, err := testcorpus.Find()
	if err != nil {
		return
	}
	filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || filepath.Ext(path) == ".tsv" || filepath.Ext(path) == ".md" {
			return nil
		}
		if info, err := e.Info(); err == nil && info.Size() <= 64<<10 {
			if b, err := os.ReadFile(path); err == nil && Sniff(b) != "" {
				f.Add(b)
			}
		}
		return nil
	})
}

// FuzzDecode: no input may panic or fail with anything but a classified
// *Error, and every success must have the size its header promised.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	fuzzDecoder(f)
}

// fuzzDecoder runs the FuzzDecode checks on f's inputs. One decoder serves
// all inputs, as a worker's does, so that state left by a failure would
// show up in later inputs.
func fuzzDecoder(f *testing.F) {
	d := NewDecoder()
	f.Cleanup(d.Close)
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, d, data) })
}

// FuzzAVIF is FuzzDecode from AVIF seeds only (made with Pillow; without
// the venv it skips), so that the fuzzer's time goes to the AVIF container
// reader and dav1d.
func FuzzAVIF(f *testing.F) {
	if pillowPython() == "" {
		f.Skip("no .venv with Pillow (make venv makes it)")
	}
	img := avifTestImage(21, 13)
	for _, opts := range []map[string]any{
		{"mode": "RGB", "quality": 60},
		{"mode": "RGB", "subsampling": "4:2:2", "orientation": 6},
		{"mode": "RGBA", "subsampling": "4:4:4", "orientation": 7},
		{"mode": "L", "range": "limited"},
	} {
		f.Add(pillowAVIF(f, img, opts))
	}
	for _, b := range avifHostileSeeds() {
		f.Add(b)
	}
	fuzzDecoder(f)
}

// checkDecode decodes data with d in several option sets: it may fail only
// with a classified *Error, and a success must have the size its header
// promised.
func checkDecode(t *testing.T, d *Decoder, data []byte) {
	opts := []Options{
		{Color: RGB, Orient: true},
		{Color: Gray, Orient: true, Scale: 3},
		{Color: BGRA, Scale: 1},
	}
	const limit = 1 << 20 // keep each input cheap
	h, err := d.Header(data, LimitsFor(limit))
	if err != nil {
		checkFuzzErr(t, err)
		return
	}
	if h.Width < 1 || h.Height < 1 || h.Width*h.Height > limit || h.Orientation < 1 || h.Orientation > 8 {
		t.Fatalf("bad header %+v", h)
	}
	for _, o := range opts {
		oh, ow, oc := h.OutSize(o)
		sh, sw := h.ScaledSize(o.Scale)
		if o.Orient {
			sh, sw = OrientedDims(sh, sw, h.Orientation)
		}
		if oh != sh || ow != sw || oc != o.Color.Channels() || oh < 1 || ow < 1 {
			t.Fatalf("header %+v: OutSize(%+v) = %d,%d,%d", h, o, oh, ow, oc)
		}
		dst := make([]byte, oh*ow*oc)
		if err := d.Decode(dst, data, h, o); err != nil {
			checkFuzzErr(t, err)
			return
		}
	}
}

// formatSeeds adds the files of testdata/formats whose names end in one of
// exts (written by testdata/make_tiff_jp2.py).
func formatSeeds(f *testing.F, exts ...string) {
	entries, err := os.ReadDir(filepath.Join("testdata", "formats"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		for _, ext := range exts {
			if filepath.Ext(e.Name()) == ext {
				f.Add(readFormatFile(f, e.Name()))
			}
		}
	}
}

// fuzzFormat fuzzes one format's decoder: inputs that mutation took out of
// the format get its signature back in front, so that every input reaches
// that decoder.
func fuzzFormat(f *testing.F, name string, magic []byte) {
	d := NewDecoder()
	f.Cleanup(d.Close)
	f.Fuzz(func(t *testing.T, data []byte) {
		if Sniff(data) != name {
			data = append(append([]byte(nil), magic...), data...)
		}
		checkDecode(t, d, data)
	})
}

// FuzzTIFF: FuzzDecode's checks on TIFF inputs.
func FuzzTIFF(f *testing.F) {
	formatSeeds(f, ".tif")
	f.Add([]byte("II*\x00\x08\x00\x00\x00"))
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\x00\x00"))
	// The hostile shapes, small: too many tags, tags overlapping past the
	// tag-data limit, JPEG strips of many scans, one strip over the scan
	// limit; and the Pillow divergences (no Photometric, a short ColorMap).
	f.Add(hostile.TIFFManyTags(tiffMaxTags, 1))
	f.Add(hostile.TIFFManyTags(300, 64<<10))
	f.Add(hostile.TIFFJPEGScans(64, 48, 16, 9))
	f.Add(hostile.TIFFJPEGScans(16, 8, 8, MaxJPEGScans+1))
	f.Add(divTIFF(1, -1, 3, ramp(12), nil))
	f.Add(divTIFF(1, 3, 3, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255}, func(w *hostile.TIFFWriter) {
		w.Shorts(320, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	}))
	fuzzFormat(f, "TIFF", []byte("II*\x00"))
}

// FuzzJP2: FuzzDecode's checks on JPEG 2000 inputs (JP2 files and
// codestreams).
func FuzzJP2(f *testing.F) {
	formatSeeds(f, ".jp2", ".j2k")
	f.Add(j2kWithSIZ(64, 64, 16, 16, 3))
	f.Add(j2kWithSIZ(100000, 10, 100000, 10, 1))
	for _, b := range jp2HostileSeeds() {
		f.Add(b)
	}
	fuzzFormat(f, "JPEG 2000", []byte(j2kMagic))
}

func checkFuzzErr(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("unclassified error %T: %v", err, err)
	}
	switch e.Cause {
	case Truncated, NotImage, Corrupt, Unsupported, TooLarge:
	default:
		t.Fatalf("unknown cause in %v", err)
	}
}

// FuzzEXIF: the orientation parser returns 1 to 8 whatever the bytes.
func FuzzEXIF(f *testing.F) {
	for o := 0; o <= 9; o++ {
		f.Add(exifPayload(o, o%2 == 0))
	}
	f.Add([]byte("Exif\x00\x00MM\x00*\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range [][]byte{data, append([]byte("Exif\x00\x00"), data...)} {
			if o := EXIFOrientation(p); o < 1 || o > 8 {
				t.Fatalf("orientation %d", o)
			}
		}
	})
}
