package codec

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/sluice-dev/sluice/internal/hostile"
)

// 65,536 Huffman groups of an 11-bit colour cache (libwebp would allocate
// 1.3 GB of tables) are refused from the header, before libwebp runs; the
// same stream as a lossy image's alpha is too.
func TestWebPHuffmanGroupsRefused(t *testing.T) {
	src := hostile.WebPHuffmanGroups(1024, 1024, 2, 11)
	_, err := Decode(src, Options{Limits: LimitsFor(64 << 20)})
	wantRefused(t, "", err, "65536 Huffman groups", "memory limit")

	alpha := lossyWithAlpha(t, 1024, 1024, hostile.WebPHuffmanGroupsStream(1024, 1024, 2, 11))
	_, err = Decode(alpha, Options{Limits: LimitsFor(64 << 20)})
	wantRefused(t, "", err, "alpha", "65536 Huffman groups")

	// The work of reading the codes is priced too: without a colour cache
	// the tables fit the default memory limit, not a smaller work limit.
	src = hostile.WebPHuffmanGroups(1024, 1024, 2, 0)
	lim := LimitsFor(64 << 20)
	lim.MaxWork = 1 << 30
	_, err = Decode(src, Options{Limits: lim})
	wantRefused(t, "", err, "work limit", "65536 Huffman groups")
}

// At the edge: a file whose estimate is the memory limit decodes (as
// Pillow decodes it), one byte less refuses it.
func TestWebPHuffmanGroupsEdge(t *testing.T) {
	src := hostile.WebPHuffmanGroups(128, 96, 2, 9) // 768 groups
	h, err := NewDecoder().Header(src, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{MaxPixels: 128 * 96, MaxWork: h.Work, MaxMemory: h.Memory}
	got, err := Decode(src, Options{Color: RGBA, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	want, w, hh := pillowDecode(t, src, "RGBA", false)
	if w != 128 || hh != 96 || !bytes.Equal(got.Pix, want) {
		t.Error("the many-group file decodes unlike Pillow")
	}
	lim.MaxMemory--
	_, err = Decode(src, Options{Limits: lim})
	wantRefused(t, "", err, "768 Huffman groups")
	lim.MaxMemory++
	lim.MaxWork--
	_, err = Decode(src, Options{Limits: lim})
	wantCause(t, err, TooLarge)
}

// lossyWithAlpha is a w×h lossy WebP (VP8X, ALPH, VP8) whose ALPH chunk
// holds the lossless stream alpha.
func lossyWithAlpha(t testing.TB, w, h int, alpha []byte) []byte {
	t.Helper()
	lossy := encodeWebP(t, make([]byte, w*h*3), w, h, 3, 50)
	if string(lossy[12:16]) != "VP8 " {
		t.Fatalf("expected a simple lossy file, got chunk %q", lossy[12:16])
	}
	chunk := hostile.WebPChunk
	b := []byte("RIFF\x00\x00\x00\x00WEBP")
	b = chunk(b, "VP8X", []byte{0x10, 0, 0, 0, byte(w - 1), byte((w - 1) >> 8), 0, byte(h - 1), byte((h - 1) >> 8), 0})
	b = chunk(b, "ALPH", append([]byte{1}, alpha...))
	b = append(b, lossy[12:]...)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// A large canvas behind a small first frame decodes as libwebp's
// animation decoder (and so Pillow) shows it, the frame at its offset on
// transparent black, in every colour; without that decoder's two
// canvases.
func TestWebPAnimatedCanvas(t *testing.T) {
	src := hostile.WebPAnimatedCanvasAt(40, 30, 6, 4, 3, 2, 2)
	for _, m := range []struct {
		mode string
		c    Color
	}{{"RGBA", RGBA}, {"RGB", RGB}, {"L", Gray}} {
		got := mustDecode(t, src, Options{Color: m.c})
		want, w, h := pillowDecode(t, src, m.mode, false)
		if w != 40 || h != 30 || !bytes.Equal(got.Pix, want) {
			t.Errorf("%s: the first frame on its canvas differs from Pillow's", m.mode)
		}
	}
	src = hostile.WebPAnimatedCanvas(8192, 8192, 1, 1, 3)
	h, err := NewDecoder().Header(src, LimitsFor(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	if h.Memory > 1<<20 {
		t.Errorf("a 1x1 frame on a 8192x8192 canvas is priced at %d bytes beside the output", h.Memory)
	}
	// Over the pixel limit by its canvas alone.
	_, err = Decode(src, Options{Limits: LimitsFor(8192*8192 - 1)})
	wantRefused(t, "", err, "8192x8192")
}

// Animations that libwebp's own encoder (through Pillow) makes: frames
// after the first drawn as sub-rectangles, with alpha, lossy and lossless;
// the first frame as Pillow shows it.
func TestWebPAnimatedPillow(t *testing.T) {
	for _, opts := range []string{"lossless=True", "quality=70", "allow_mixed=True"} {
		src := pillowScript(t, `
import io, sys
from PIL import Image, ImageDraw
frames = []
for k in range(3):
    f = Image.new("RGBA", (37, 23), (10, 200, 30, 90))
    ImageDraw.Draw(f).rectangle([3 + 5 * k, 2, 12 + 5 * k, 15], fill=(250, 0, 0, 255))
    frames.append(f)
out = io.BytesIO()
frames[0].save(out, "WEBP", save_all=True, append_images=frames[1:], `+opts+`)
sys.stdout.buffer.write(out.getvalue())
`, nil, nil)
		for _, m := range []struct {
			mode string
			c    Color
		}{{"RGBA", RGBA}, {"RGB", RGB}, {"L", Gray}} {
			got := mustDecode(t, src, Options{Color: m.c})
			want, _, _ := pillowDecode(t, src, m.mode, false)
			if !bytes.Equal(got.Pix, want) {
				t.Errorf("%s %s: first frame differs from Pillow's", opts, m.mode)
			}
		}
	}
}

// Lossless files that libwebp's encoder makes at every method and several
// qualities (through Pillow) pass the header's parse and decode as Pillow
// decodes them: the parse refuses nothing legal.
func TestWebPLosslessMethodsPillow(t *testing.T) {
	img := gradientImage(160, 120)
	for i := range img.Pix {
		if i%7 == 3 {
			img.Pix[i] ^= byte(i * 37)
		}
	}
	// One Python run: each file, then Pillow's RGBA decode of it, each
	// after its length.
	out := pillowScript(t, `
import io, struct, sys
from PIL import Image
im = Image.open(io.BytesIO(sys.stdin.buffer.read()))
for m in range(7):
    for q in ((0, 60, 100) if m < 5 else (0, 75)):  # 100 at 5, 6: seconds
        b = io.BytesIO()
        im.save(b, "WEBP", lossless=True, method=m, quality=q)
        rgba = Image.open(io.BytesIO(b.getvalue())).convert("RGBA").tobytes()
        for part in (b.getvalue(), rgba):
            sys.stdout.buffer.write(struct.pack("<I", len(part)) + part)
`, nil, encodePNG(t, img))
	next := func() []byte {
		n := int(binary.LittleEndian.Uint32(out))
		b := out[4 : 4+n]
		out = out[4+n:]
		return b
	}
	for k := 0; len(out) > 0; k++ {
		src, want := next(), next()
		if _, e := parseVP8L(src[20:], true, 0, 0); e != nil {
			t.Errorf("file %d: parse: %s", k, e.what)
			continue
		}
		if got := mustDecode(t, src, Options{Color: RGBA}); !bytes.Equal(got.Pix, want) {
			t.Errorf("file %d: decode differs from Pillow's", k)
		}
	}
}
