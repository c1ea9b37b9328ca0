package codec

import (
	"bytes"
	"image"
	"image/gif"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestDecodeNotImage(t *testing.T) {
	for _, src := range [][]byte{nil, {}, []byte("hello, world"), {0xFF, 0xD8}, {0x89, 'P', 'N'}, bytes.Repeat([]byte{0}, 100)} {
		_, err := Decode(src, Options{})
		wantCause(t, err, NotImage)
	}
}

func TestDecodeUnsupported(t *testing.T) {
	var g bytes.Buffer
	if err := gif.Encode(&g, image.NewGray(image.Rect(0, 0, 4, 4)), nil); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"GIF":  g.Bytes(),
		"HEIF": []byte("\x00\x00\x00\x14ftypheic\x00\x00\x00\x00mif1"),
	}
	for name, src := range cases {
		_, err := Decode(src, Options{})
		wantCause(t, err, Unsupported)
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%s: message %q does not name the format", name, err)
		}
		if got := Sniff(src); got != name {
			t.Errorf("Sniff: got %q, want %q", got, name)
		}
	}
	// "BM" alone is text, not a bitmap; "P6" without whitespace after it is
	// not a pixmap.
	for _, text := range []string{"BMW owners club newsletter", "P6-ish text"} {
		_, err := Decode([]byte(text), Options{})
		wantCause(t, err, NotImage)
	}
}

// forgedJPEG is SOI and a SOF0 claiming w×h, and nothing else.
func forgedJPEG(w, h int) []byte {
	return []byte{0xFF, 0xD8, 0xFF, 0xC0, 0, 17, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 3,
		1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1}
}

// forgedPNG is a valid PNG structure claiming w×h RGBA with a few bytes of
// image data.
func forgedPNG(t testing.TB, w, h int) []byte {
	out := []byte(pngMagic)
	out = append(out, pngIHDR(w, h, 8, 6, 0)...)
	out = append(out, pngChunk("IDAT", zlibBytes(t, make([]byte, 1000)))...)
	return append(out, pngChunk("IEND", nil)...)
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestDecodeTooLarge: a forged 60000×60000 header fails fast, before
// anything like the image is allocated.
func TestDecodeTooLarge(t *testing.T) {
	limit := 64 << 20
	for name, src := range map[string][]byte{"JPEG": forgedJPEG(60000, 60000), "PNG": forgedPNG(t, 60000, 60000)} {
		var err error
		start := time.Now()
		n := allocated(func() { _, err = Decode(src, Options{Limits: LimitsFor(limit)}) })
		wantCause(t, err, TooLarge)
		for _, num := range []string{"3600000000", "67108864"} {
			if !strings.Contains(err.Error(), num) {
				t.Errorf("%s: message %q lacks %s", name, err, num)
			}
		}
		if n > 1<<20 || time.Since(start) > time.Second {
			t.Errorf("%s: rejecting took %v and %d bytes", name, time.Since(start), n)
		}
	}
	// Under the limit, a valid header with too little data still must not
	// allocate the image: JPEG fails its marker walk, PNG its inflate bound.
	for name, src := range map[string][]byte{"JPEG": forgedJPEG(8000, 8000), "PNG": forgedPNG(t, 8000, 8000)} {
		var err error
		n := allocated(func() { _, err = Decode(src, Options{Limits: LimitsFor(limit)}) })
		if err == nil {
			t.Fatalf("%s: forged header decoded", name)
		}
		if n > 1<<20 {
			t.Errorf("%s: rejecting %v allocated %d bytes", name, err, n)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	src := encodeJPEG(t, gradientImage(32, 32), 90)
	_, err := Decode(src[:len(src)-2], Options{})
	if got := err.Error(); !strings.HasPrefix(got, "truncated: JPEG data ends early") {
		t.Errorf("message %q", got)
	}
}

func TestFormats(t *testing.T) {
	got := strings.Join(Formats(), ",")
	for _, name := range []string{"JPEG", "PNG", "GIF", "BMP", "PNM", "WebP", "TIFF", "JPEG 2000"} {
		if !strings.Contains(got, name) {
			t.Errorf("Formats() = %s, lacks %s", got, name)
		}
	}
}
