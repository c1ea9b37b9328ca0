package codec

import (
	"image/color"
	"os"
	"path/filepath"
	"testing"
)

// The files of testdata/formats are written by testdata/make_tiff_jp2.py
// from the pattern below, at patternW × patternH.
const patternW, patternH = 37, 23

// pattern8 is the RGB of pixel (x, y) in the generated files.
func pattern8(x, y int) color.NRGBA {
	return color.NRGBA{byte(x*7 + y*3), byte(x*3 + y*11), byte(x*13 + y*5), 0xFF}
}

func readFormatFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "formats", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// patternDiff decodes src as RGB and returns the largest and the mean
// difference from pattern8 (after f, which may make it grey).
func patternDiff(t *testing.T, src []byte, f func(color.NRGBA) color.NRGBA) (worst int, mean float64) {
	t.Helper()
	img := mustDecode(t, src, Options{Color: RGB})
	if img.Width != patternW || img.Height != patternH {
		t.Fatalf("got %dx%d, want %dx%d", img.Width, img.Height, patternW, patternH)
	}
	sum := 0
	for y := 0; y < patternH; y++ {
		for x := 0; x < patternW; x++ {
			n := f(pattern8(x, y))
			p := img.Pix[3*(y*patternW+x):]
			for i, v := range []byte{n.R, n.G, n.B} {
				sum += absDiff(p[i], v)
				worst = max(worst, absDiff(p[i], v))
			}
		}
	}
	return worst, float64(sum) / float64(3*patternW*patternH)
}

func asIs(n color.NRGBA) color.NRGBA { return n }

// grayOf is Pillow's convert("L") of n, as grey RGB.
func grayOf(n color.NRGBA) color.NRGBA {
	v := Luma(n.R, n.G, n.B)
	return color.NRGBA{v, v, v, 0xFF}
}
