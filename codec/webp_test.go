package codec

import (
	"bytes"
	"encoding/binary"
	"image/color"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/hostile"
	"github.com/sluice-dev/sluice/internal/testimg"
)

// WebP test files come from libwebp's own encoder (internal/testimg).

// noisyRGBA is noisyRGB with an alpha channel that varies over the image;
// no pixel is fully transparent, where a lossless encoder may rewrite RGB.
func noisyRGBA(w, h int) []byte {
	rgb := noisyRGB(w, h)
	r := rand.New(rand.NewPCG(3, 4))
	pix := make([]byte, 0, w*h*4)
	for i := 0; i < w*h; i++ {
		pix = append(pix, rgb[3*i], rgb[3*i+1], rgb[3*i+2], byte(1+(i*7+r.IntN(30))%255))
	}
	return pix
}

func encodeWebP(t testing.TB, pix []byte, w, h, channels int, quality float32) []byte {
	t.Helper()
	b, err := testimg.WebP(pix, w, h, channels, quality)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pixelsOf reads packed pixels of ch channels as NRGBA (opaque for 3).
func pixelsOf(pix []byte, w, ch int) func(x, y int) color.NRGBA {
	return func(x, y int) color.NRGBA {
		p := pix[(y*w+x)*ch:]
		n := color.NRGBA{p[0], p[1], p[2], 0xFF}
		if ch == 4 {
			n.A = p[3]
		}
		return n
	}
}

func TestDecodeWebPLossless(t *testing.T) {
	const w, h = 37, 23 // odd sizes: no block alignment to hide errors
	for _, ch := range []int{3, 4} {
		pix := noisyRGB(w, h)
		if ch == 4 {
			pix = noisyRGBA(w, h)
		}
		src := encodeWebP(t, pix, w, h, ch, -1)
		if got := Sniff(src); got != "WebP" {
			t.Fatalf("Sniff = %q", got)
		}
		// Lossless: every colour is exactly the source's.
		checkAllColors(t, src, w, h, pixelsOf(pix, w, ch))
	}
}

func TestDecodeWebPLossy(t *testing.T) {
	const w, h = 45, 31
	for _, ch := range []int{3, 4} {
		pix := noisyRGB(w, h)
		if ch == 4 {
			pix = noisyRGBA(w, h)
		}
		src := encodeWebP(t, pix, w, h, ch, 90)
		ref := mustDecode(t, src, Options{Color: RGBA})
		// Every colour is the same decode: RGBA's samples, reordered, alpha
		// dropped, or as Pillow's luma.
		checkAllColors(t, src, w, h, pixelsOf(ref.Pix, w, 4))
		// Close to what was encoded; alpha at the default lossless alpha
		// compression is exact.
		var sum, n int
		for i := 0; i < w*h; i++ {
			for c := 0; c < 3; c++ {
				sum += absDiff(ref.Pix[4*i+c], pix[ch*i+c])
				n++
			}
			want := byte(0xFF)
			if ch == 4 {
				want = pix[4*i+3]
			}
			if ref.Pix[4*i+3] != want {
				t.Fatalf("channels %d: alpha at pixel %d is %d, want %d", ch, i, ref.Pix[4*i+3], want)
			}
		}
		if mean := float64(sum) / float64(n); mean > 12 {
			t.Errorf("channels %d: mean error %.2f over quality-90 lossy data", ch, mean)
		}
	}
}

func TestDecodeWebPTruncated(t *testing.T) {
	for _, q := range []float32{-1, 80} {
		src := encodeWebP(t, noisyRGB(40, 30), 40, 30, 3, q)
		for _, n := range []int{12, 20, len(src) / 2, len(src) - 1} {
			_, err := Decode(src[:n], Options{})
			wantCause(t, err, Truncated)
		}
	}
}

func TestDecodeWebPCorrupt(t *testing.T) {
	src := encodeWebP(t, noisyRGB(40, 30), 40, 30, 3, 80)
	if string(src[12:16]) != "VP8 " {
		t.Fatalf("expected a simple lossy file, got chunk %q", src[12:16])
	}
	// The VP8 key frame start code (9d 01 2a) follows the 3-byte frame tag.
	bad := append([]byte(nil), src...)
	bad[23] ^= 0xFF
	_, err := Decode(bad, Options{})
	wantCause(t, err, Corrupt)

	lossless := encodeWebP(t, noisyRGB(40, 30), 40, 30, 3, -1)
	bad = append([]byte(nil), lossless...)
	bad[20] = 0x00 // the VP8L signature byte 0x2f
	_, err = Decode(bad, Options{})
	wantCause(t, err, Corrupt)
}

func TestDecodeWebPTooLarge(t *testing.T) {
	src := encodeWebP(t, noisyRGB(40, 30), 40, 30, 3, -1)
	_, err := Decode(src, Options{Limits: LimitsFor(40*30 - 1)})
	wantCause(t, err, TooLarge)
	if _, err := Decode(src, Options{Limits: LimitsFor(40 * 30)}); err != nil {
		t.Fatal(err)
	}
}

// animatedWebP wraps still WebPs (lossless, each w×h) as the frames of an
// animation on a w×h canvas, each frame at the origin: RIFF, VP8X with the
// animation flag, ANIM, then one ANMF chunk a frame around the still's
// image chunk.
func animatedWebP(w, h int, frames ...[]byte) []byte {
	u24 := func(b []byte, v int) []byte { return append(b, byte(v), byte(v>>8), byte(v>>16)) }
	chunk := hostile.WebPChunk
	b := []byte("RIFF\x00\x00\x00\x00WEBP")
	b = chunk(b, "VP8X", u24(u24([]byte{0x02, 0, 0, 0}, w-1), h-1))
	b = chunk(b, "ANIM", []byte{0, 0, 0, 0, 0, 0})
	for _, f := range frames {
		body := u24(u24(u24(u24(u24(nil, 0), 0), w-1), h-1), 100)
		body = append(body, 0x02) // no blending: the frame replaces the canvas
		body = append(body, f[12:]...)
		b = chunk(b, "ANMF", body)
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// An animated WebP decodes to its first frame, as Pillow shows it.
func TestDecodeWebPAnimated(t *testing.T) {
	const w, h = 24, 16
	first, second := noisyRGB(w, h), noisyRGB(w, h)[3:]
	second = append(second, 1, 2, 3)
	a, b := encodeWebP(t, first, w, h, 3, -1), encodeWebP(t, second, w, h, 3, -1)
	anim := animatedWebP(w, h, a, b)
	for _, c := range []Color{RGB, BGR, RGBA, BGRA, Gray} {
		got, err := Decode(anim, Options{Color: c})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		want, err := Decode(a, Options{Color: c})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Pix, want.Pix) {
			t.Errorf("%v: the animation's decode is not its first frame's", c)
		}
	}
	if _, err := Decode(anim[:len(anim)-len(b)/2], Options{}); err == nil {
		t.Error("a cut animation decoded")
	}
}

// The decoder keeps no state across images: one Decoder through good,
// bad and good again gives the same pixels.
func TestDecodeWebPReuse(t *testing.T) {
	good := encodeWebP(t, noisyRGBA(20, 10), 20, 10, 4, 75)
	bad := good[:len(good)-5]
	d := NewDecoder()
	defer d.Close()
	first, err := d.DecodeImage(good, Options{Color: Gray})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.DecodeImage(bad, Options{Color: Gray}); err == nil {
		t.Fatal("truncated WebP decoded")
	}
	again, err := d.DecodeImage(good, Options{Color: Gray})
	if err != nil {
		t.Fatal(err)
	}
	if string(first.Pix) != string(again.Pix) {
		t.Fatal("second decode differs")
	}
}

// FuzzWebP mutates what follows "RIFF size WEBP" and writes a RIFF size
// that fits, so that the inputs reach libwebp's parsers instead of failing
// the signature or the size check. The seeds run in go test. What
// Header's own lossless parse refuses as corrupt or truncated, libwebp
// must fail to decode too (the parse refuses nothing libwebp takes).
func FuzzWebP(f *testing.F) {
	for _, q := range []float32{-1, 60} {
		f.Add(encodeWebP(f, noisyRGB(13, 9), 13, 9, 3, q)[12:])
		f.Add(encodeWebP(f, noisyRGBA(13, 9), 13, 9, 4, q)[12:])
	}
	f.Add(animatedWebP(13, 9, encodeWebP(f, noisyRGB(13, 9), 13, 9, 3, -1))[12:])
	// The hostile shapes, small: many Huffman groups (a colour cache, a
	// lossy image's alpha), a canvas larger than its first frame.
	f.Add(hostile.WebPHuffmanGroups(16, 12, 2, 3)[12:])
	f.Add(lossyWithAlpha(f, 16, 16, hostile.WebPHuffmanGroupsStream(16, 16, 2, 0))[12:])
	f.Add(hostile.WebPAnimatedCanvasAt(64, 48, 4, 2, 3, 2, 2)[12:])
	d := NewDecoder()
	f.Cleanup(d.Close)
	f.Fuzz(func(t *testing.T, body []byte) {
		src := append([]byte("RIFF\x00\x00\x00\x00WEBP"), body...)
		binary.LittleEndian.PutUint32(src[4:], uint32(len(src)-8))
		h, err := d.Header(src, LimitsFor(1<<20))
		if err != nil {
			checkFuzzErr(t, err)
			if e, ok := err.(*Error); ok && e.Cause != TooLarge && strings.Contains(e.Msg, "WebP lossless") {
				if lh, ok := webpLibHeader(src); ok && lh.Pixels() <= 1<<20 {
					dst := make([]byte, lh.Pixels()*4)
					if d.Decode(dst, src, lh, Options{Color: RGBA}) == nil {
						t.Fatalf("Header refused (%v) what libwebp decodes", err)
					}
				}
			}
			return
		}
		if h.Format != "WebP" || h.Pixels() > 1<<20 {
			t.Fatalf("bad header %+v", h)
		}
		for _, c := range []Color{RGB, Gray, BGRA} {
			dst := make([]byte, h.Pixels()*c.Channels())
			if err := d.Decode(dst, src, h, Options{Color: c}); err != nil {
				checkFuzzErr(t, err)
				return
			}
		}
	})
}
