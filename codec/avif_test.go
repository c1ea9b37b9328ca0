package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"strings"
	"testing"
)

// avifBound is the largest difference allowed between a sample decoded by
// sluice and by Pillow. AV1 decoding is exact across conformant decoders,
// and the YUV to RGB conversion follows libavif's fixed-point path (what
// Pillow's bundled libavif 1.x runs for 8-bit BT.601/709/2020): measured
// identical on every case here.
const avifBound = 0

// avifTestImage is a w×h image with smooth gradients, noise and a varying
// alpha, so that chroma and alpha coding both matter.
func avifTestImage(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	seed := uint32(7)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			seed = seed*1664525 + 1013904223
			n := int(seed>>27) - 16
			img.SetNRGBA(x, y, color.NRGBA{
				R: clamp8(40 + 170*x/w + n), G: clamp8(200 - 150*y/h + n), B: clamp8(90 + 80*((x/7+y/5)%2) + n),
				A: clamp8(255 - 200*x/w),
			})
		}
	}
	return img
}

func clamp8(v int) uint8 { return uint8(max(0, min(255, v))) }

// compareBytes returns the largest and the mean absolute difference.
func compareBytes(a, b []byte) (maxd int, mean float64) {
	var sum int
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		sum += d
		maxd = max(maxd, d)
	}
	return maxd, float64(sum) / float64(max(1, len(a)))
}

func TestAVIFMatchesPillow(t *testing.T) {
	src := avifTestImage(67, 45) // odd sizes: chroma planes round up
	cases := []struct {
		name string
		opts map[string]any
	}{
		{"420", map[string]any{"mode": "RGB", "quality": 80}},
		{"444", map[string]any{"mode": "RGB", "quality": 80, "subsampling": "4:4:4"}},
		{"422", map[string]any{"mode": "RGB", "quality": 80, "subsampling": "4:2:2"}},
		{"q100-444", map[string]any{"mode": "RGB", "quality": 100, "subsampling": "4:4:4"}},
		{"limited", map[string]any{"mode": "RGB", "range": "limited"}},
		{"gray", map[string]any{"mode": "L"}},
		{"alpha", map[string]any{"mode": "RGBA", "quality": 90}},
		{"orient6", map[string]any{"mode": "RGB", "orientation": 6}},
		{"orient5", map[string]any{"mode": "RGBA", "orientation": 5}},
		{"tiles", map[string]any{"mode": "RGB", "tile_rows": 1, "tile_cols": 1}},
	}
	d := NewDecoder()
	defer d.Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			avif := pillowAVIF(t, src, tc.opts)
			if got := Sniff(avif); got != "AVIF" {
				t.Fatalf("Sniff = %q", got)
			}
			for _, o := range []Options{{Color: RGB, Orient: true}, {Color: RGBA, Orient: true}, {Color: Gray, Orient: true},
				{Color: BGR}, {Color: BGRA}} {
				img, err := d.DecodeImage(avif, o)
				if err != nil {
					t.Fatal(err)
				}
				mode := map[Color]string{RGB: "RGB", BGR: "RGB", RGBA: "RGBA", BGRA: "RGBA", Gray: "L"}[o.Color]
				want, w, h := pillowDecode(t, avif, mode, o.Orient)
				if img.Width != w || img.Height != h {
					t.Fatalf("%v: %dx%d, Pillow %dx%d", o, img.Width, img.Height, w, h)
				}
				got := img.Pix
				if o.Color == BGR || o.Color == BGRA {
					got = swapRB(got, o.Color.Channels())
				}
				maxd, mean := compareBytes(got, want)
				t.Logf("%v: max %d mean %.4f", o.Color, maxd, mean)
				if maxd > avifBound {
					t.Errorf("%v: differs from Pillow by up to %d (mean %.3f)", o.Color, maxd, mean)
				}
			}
		})
	}
}

func swapRB(p []byte, c int) []byte {
	q := bytes.Clone(p)
	for i := 0; i+2 < len(q); i += c {
		q[i], q[i+2] = q[i+2], q[i]
	}
	return q
}

func TestAVIFHeader(t *testing.T) {
	avif := pillowAVIF(t, avifTestImage(40, 24), map[string]any{"mode": "RGB", "orientation": 8})
	d := NewDecoder()
	defer d.Close()
	h, err := d.Header(avif, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Format != "AVIF" || h.Width != 40 || h.Height != 24 || h.Orientation != 8 || h.Scalable {
		t.Errorf("header %+v", h)
	}
	if _, err := d.Header(avif, LimitsFor(40*24-1)); causeOf(err) != TooLarge {
		t.Errorf("one pixel over the limit: %v", err)
	}
}

// TestAVIFBroken: cut or damaged files fail with a cause, for that image
// only; the same decoder then decodes a good one.
func TestAVIFBroken(t *testing.T) {
	good := pillowAVIF(t, avifTestImage(64, 48), map[string]any{"mode": "RGBA"})
	d := NewDecoder()
	defer d.Close()
	for _, n := range []int{12, 40, len(good) / 2, len(good) - 1} {
		_, err := d.DecodeImage(good[:n], Options{})
		c := causeOf(err)
		if c != Truncated && c != Corrupt {
			t.Errorf("cut at %d of %d: %v", n, len(good), err)
		}
		if n == len(good)-1 && c != Truncated {
			t.Errorf("cut by one byte: %v, want truncated", err)
		}
	}
	bad := bytes.Clone(good)
	i := bytes.Index(bad, []byte("mdat"))
	for j := i + 8; j < len(bad) && j < i+40; j++ {
		bad[j] ^= 0x5A
	}
	if _, err := d.DecodeImage(bad, Options{}); err == nil {
		t.Error("damaged AV1 data decoded")
	} else if c := causeOf(err); c != Corrupt {
		t.Errorf("damaged AV1 data: %v", err)
	} else if !strings.Contains(err.Error(), "AVIF") {
		t.Errorf("message %q does not name the format", err)
	}
	if _, err := d.DecodeImage(good, Options{}); err != nil {
		t.Errorf("good file after failures: %v", err)
	}
}

// withISPE rewrites every ispe box of an AVIF to claim w×h.
func withISPE(src []byte, w, h uint32) []byte {
	out := bytes.Clone(src)
	for i := 0; ; {
		j := bytes.Index(out[i:], []byte("ispe"))
		if j < 0 {
			return out
		}
		p := i + j + 8 // past the type, version and flags
		binary.BigEndian.PutUint32(out[p:], w)
		binary.BigEndian.PutUint32(out[p+4:], h)
		i = p
	}
}

// TestAVIFTooLarge: a container claiming a huge image fails from its
// header, before any AV1 data is decoded or pixels allocated; one claiming
// a size its AV1 frame does not have fails too.
func TestAVIFTooLarge(t *testing.T) {
	good := pillowAVIF(t, avifTestImage(64, 48), map[string]any{"mode": "RGB"})
	forged := withISPE(good, 20000, 10000)
	var err error
	n := allocated(func() { _, err = Decode(forged, Options{Limits: LimitsFor(64 << 20)}) })
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "200000000") || n > 1<<20 {
		t.Errorf("%v, allocating %d bytes", err, n)
	}
	// Over the default limit (16384×16384, libavif's), with none of ours.
	_, err = Decode(withISPE(good, 20000, 20000), Options{})
	wantCause(t, err, TooLarge)
	// The container says 32×24, within the pixel limit; the AV1 frame is
	// 64×48 (its bytes alone are over the work limit LimitsFor derives
	// from so few pixels).
	small := withISPE(good, 32, 24)
	_, err = Decode(small, Options{Limits: Limits{MaxPixels: 32 * 24}})
	if c := causeOf(err); c != Corrupt {
		t.Errorf("frame larger than its ispe: %v", err)
	}
}

func TestSniffHEIF(t *testing.T) {
	ftyp := func(major string, compat ...string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(16+4*len(compat)))
		b = append(b, "ftyp"+major+"\x00\x00\x00\x00"...)
		for _, c := range compat {
			b = append(b, c...)
		}
		return append(b, make([]byte, 16)...)
	}
	for _, tc := range []struct {
		src  []byte
		want string
	}{
		{ftyp("avif", "mif1"), "AVIF"},
		{ftyp("avis", "msf1"), "AVIF"},
		{ftyp("mif1", "miaf", "avif"), "AVIF"},
		{ftyp("mif1", "heic", "mif1"), "HEIF"},
		{ftyp("heic", "mif1", "heic"), "HEIF"},
		{ftyp("msf1", "hevc"), "HEIF"},
	} {
		if got := Sniff(tc.src); got != tc.want {
			t.Errorf("%q: Sniff = %q, want %q", tc.src[4:16], got, tc.want)
		}
	}
	_, err := Decode(ftyp("heic", "mif1"), Options{})
	wantCause(t, err, Unsupported)
	if !strings.Contains(err.Error(), "HEIF") {
		t.Errorf("message %q", err)
	}
}

func BenchmarkAVIFDecode(b *testing.B) {
	avif := pillowAVIF(b, avifTestImage(640, 480), map[string]any{"mode": "RGB"})
	d := NewDecoder()
	defer d.Close()
	dst := make([]byte, 640*480*3)
	h, err := d.Header(avif, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(dst)))
	for b.Loop() {
		if err := d.Decode(dst, avif, h, Options{}); err != nil {
			b.Fatal(fmt.Sprint(err))
		}
	}
}

// avifPrimarySample returns the offset and length of the first extent of
// item 1 (Pillow's colour item) in an AVIF written by libavif, whose iloc
// box is version 0 with 4-byte offsets and lengths; at is where the
// extent's offset field is.
func avifPrimarySample(t *testing.T, src []byte) (off, n, at int) {
	t.Helper()
	i := bytes.Index(src, []byte("iloc"))
	if i < 0 || src[i+4] != 0 || src[i+8] != 0x44 || src[i+9]>>4 != 0 {
		t.Fatalf("unexpected iloc layout % x", src[i:i+12])
	}
	p := i + 10
	count := int(binary.BigEndian.Uint16(src[p:]))
	p += 2
	for k := 0; k < count; k++ {
		id := binary.BigEndian.Uint16(src[p:])
		extents := int(binary.BigEndian.Uint16(src[p+4:]))
		if id == 1 {
			return int(binary.BigEndian.Uint32(src[p+6:])), int(binary.BigEndian.Uint32(src[p+10:])), p + 6
		}
		p += 6 + 8*extents
	}
	t.Fatal("no item 1")
	return
}

// withFrames rewrites an AVIF so that its colour item's sample holds its
// sequence header and then its frame OBU k times: k frames for dav1d to
// decode from a sample little larger than one. The new sample goes in a
// free box at the end, and the iloc extent points at it.
func withFrames(t *testing.T, src []byte, k int) []byte {
	off, n, at := avifPrimarySample(t, src)
	sample := src[off : off+n]
	var seq, frame []byte
	for p := 0; p < len(sample); {
		h := sample[p]
		if h&2 == 0 || h&4 != 0 {
			t.Fatalf("OBU header %#x: want a size field and no extension", h)
		}
		size, m := binary.Uvarint(sample[p+1:])
		end := p + 1 + m + int(size)
		switch (h >> 3) & 15 {
		case 1:
			seq = sample[p:end]
		case 6:
			frame = sample[p:end]
		}
		p = end
	}
	if seq == nil || frame == nil {
		t.Fatal("no sequence header or frame OBU")
	}
	payload := append([]byte{}, seq...)
	for i := 0; i < k; i++ {
		payload = append(payload, frame...)
	}
	out := bytes.Clone(src)
	out = binary.BigEndian.AppendUint32(out, uint32(8+len(payload)))
	out = append(out, "free"...)
	binary.BigEndian.PutUint32(out[at:], uint32(len(out)))
	binary.BigEndian.PutUint32(out[at+4:], uint32(len(payload)))
	return append(out, payload...)
}

// TestAVIFWorkBound: a sample coding many frames is refused before dav1d
// decodes them; a few are within the budget.
func TestAVIFWorkBound(t *testing.T) {
	good := pillowAVIF(t, avifTestImage(64, 48), map[string]any{"mode": "RGB"})
	d := NewDecoder()
	defer d.Close()
	if _, err := d.DecodeImage(withFrames(t, good, 1), Options{}); err != nil {
		t.Fatalf("rewritten sample of one frame: %v", err)
	}
	// Each frame is priced at its item's 64×48 (dav1d refuses larger
	// ones), so avifWorkPerPixel frames fit and one more does not.
	if _, err := d.DecodeImage(withFrames(t, good, avifWorkPerPixel), Options{}); causeOf(err) == TooLarge {
		t.Errorf("%d frames: %v", avifWorkPerPixel, err)
	}
	_, err := d.DecodeImage(withFrames(t, good, avifWorkPerPixel+1), Options{})
	wantCause(t, err, TooLarge)
	_, err = d.DecodeImage(withFrames(t, good, 5000), Options{})
	wantCause(t, err, TooLarge)
	if !strings.Contains(err.Error(), "AV1 data") {
		t.Errorf("message %q", err)
	}
	if _, err := d.DecodeImage(good, Options{}); err != nil {
		t.Errorf("good file after a refusal: %v", err)
	}
}

const pillowSequenceScript = `
import io, sys
from PIL import Image
im = Image.open(io.BytesIO(sys.stdin.buffer.read())).convert("RGB")
frames = [im, im.transpose(Image.Transpose.FLIP_LEFT_RIGHT), im.transpose(Image.Transpose.FLIP_TOP_BOTTOM)]
out = io.BytesIO()
frames[0].save(out, "AVIF", save_all=True, append_images=frames[1:], duration=100)
sys.stdout.buffer.write(out.getvalue())
`

// TestAVIFSequence: an image sequence decodes to its first frame, as
// Pillow's Image.open shows it.
func TestAVIFSequence(t *testing.T) {
	seq := pillowScript(t, pillowSequenceScript, nil, encodePNG(t, avifTestImage(48, 32)))
	if string(seq[8:12]) != "avis" {
		t.Fatalf("major brand %q, want avis", seq[8:12])
	}
	img, err := Decode(seq, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, w, h := pillowDecode(t, seq, "RGB", false)
	if img.Width != w || img.Height != h {
		t.Fatalf("%dx%d, Pillow %dx%d", img.Width, img.Height, w, h)
	}
	maxd, mean := compareBytes(img.Pix, want)
	t.Logf("max %d mean %.4f", maxd, mean)
	if maxd > avifBound {
		t.Errorf("first frame differs from Pillow's by up to %d (mean %.3f)", maxd, mean)
	}
}
