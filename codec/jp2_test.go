package codec

import (
	"image/color"
	"testing"
)

func TestJP2Lossless(t *testing.T) {
	for _, name := range []string{"rgb.jp2", "rgb.j2k", "rgb_tiled.jp2"} {
		t.Run(name, func(t *testing.T) {
			checkAllColors(t, readFormatFile(t, name), patternW, patternH, func(x, y int) color.NRGBA { return pattern8(x, y) })
		})
	}
	t.Run("gray.jp2", func(t *testing.T) {
		checkAllColors(t, readFormatFile(t, "gray.jp2"), patternW, patternH, func(x, y int) color.NRGBA { return grayOf(pattern8(x, y)) })
	})
	t.Run("gray16.j2k", func(t *testing.T) {
		// 16-bit samples keep their high byte.
		checkAllColors(t, readFormatFile(t, "gray16.j2k"), patternW, patternH, func(x, y int) color.NRGBA {
			v := pattern8(x, y).R
			return color.NRGBA{v, v, v, 0xFF}
		})
	})
	t.Run("rgba.jp2", func(t *testing.T) {
		checkAllColors(t, readFormatFile(t, "rgba.jp2"), patternW, patternH, func(x, y int) color.NRGBA {
			n := pattern8(x, y)
			n.A = n.R
			return n
		})
	})
}

func TestJP2Lossy(t *testing.T) {
	worst, mean := patternDiff(t, readFormatFile(t, "rgb_lossy.jp2"), asIs)
	t.Logf("max difference %d, mean %.2f", worst, mean)
	if mean > 40 {
		t.Errorf("mean difference %.2f from the source", mean)
	}
}

func TestJP2Bad(t *testing.T) {
	for _, name := range []string{"rgb.jp2", "rgb.j2k"} {
		src := readFormatFile(t, name)
		_, err := Decode(src, Options{Limits: LimitsFor(patternW*patternH - 1)})
		wantCause(t, err, TooLarge)
		for _, n := range []int{6, 40, len(src) / 2, len(src) - 3} {
			_, err := Decode(src[:n], Options{})
			if err == nil {
				t.Errorf("%s cut to %d bytes: decoded", name, n)
				continue
			}
			checkFuzzErr(t, err)
			t.Logf("%s cut to %d: %v", name, n, err)
		}
	}
}

// j2kWithSIZ is a codestream start whose SIZ claims a w×h image in tiles
// of tw×th with comps 8-bit components, and nothing after it.
func j2kWithSIZ(w, h, tw, th uint32, comps int) []byte {
	b := []byte(j2kMagic)
	be32 := func(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
	l := 38 + 3*comps
	b = append(b, byte(l>>8), byte(l), 0, 0)
	for _, v := range []uint32{w, h, 0, 0, tw, th, 0, 0} {
		b = append(b, be32(v)...)
	}
	b = append(b, byte(comps>>8), byte(comps))
	for i := 0; i < comps; i++ {
		b = append(b, 7, 1, 1)
	}
	return b
}

func TestJP2Limits(t *testing.T) {
	for _, tc := range []struct {
		src  []byte
		want Cause
	}{
		{j2kWithSIZ(100000, 100000, 100000, 100000, 3), TooLarge},
		{j2kWithSIZ(1000, 1000, 1, 1, 3), Unsupported},         // a million tiles
		{j2kWithSIZ(2000, 2000, 16, 16, 3), Unsupported},       // 15625 tiles, over jp2MaxTiles
		{j2kWithSIZ(200, 200, 4, 4, 3), Unsupported},           // 2500 tiles of 16 pixels
		{j2kWithSIZ(100, 100, 100, 100, 5), Unsupported},       // 5 components
		{j2kWithSIZ(100, 100, 100, 100, 3), Truncated},         // no tiles at all
		{j2kWithSIZ(100, 100, 100, 100, 3)[:20], Truncated},    // SIZ cut
		{append([]byte(jp2Magic), 0, 0, 0, 9, 'j'), Truncated}, // no codestream box
	} {
		_, err := Decode(tc.src, Options{Limits: LimitsFor(1 << 24)})
		wantCause(t, err, tc.want)
		t.Logf("%v", err)
	}
}

// TestJP2RGB16: colour samples over 8 bits are rounded to 8 bits, as
// Pillow does (rgb16.j2k holds pattern8 in the high bytes and (x+y)&255 in
// the low ones), but clipped at 255 where Pillow wraps to 0.
func TestJP2RGB16(t *testing.T) {
	checkAllColors(t, readFormatFile(t, "rgb16.j2k"), patternW, patternH, func(x, y int) color.NRGBA {
		n := pattern8(x, y)
		up := func(v byte) byte {
			if (x+y)&255 >= 128 && v < 255 {
				return v + 1
			}
			return v
		}
		return color.NRGBA{up(n.R), up(n.G), up(n.B), 0xFF}
	})
}
