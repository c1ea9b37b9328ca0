package codec

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"strings"
	"testing"
)

// pillowFlattenScript composites an image onto an opaque background as
// transformers' convert_to_rgb does, then converts it to the mode asked.
const pillowFlattenScript = `
import io, json, sys
from PIL import Image
opts = json.loads(sys.argv[1])
im = Image.open(io.BytesIO(sys.stdin.buffer.read())).convert("RGBA")
bg = Image.new("RGBA", im.size, tuple(opts["bg"]))
im = Image.alpha_composite(bg, im).convert("RGB").convert(opts["mode"])
sys.stdout.buffer.write(im.tobytes())
`

// everyAlpha is a 256×256 image in which every (value, alpha) pair
// occurs: red is the column, alpha the row, green and blue other mixes.
func everyAlpha() *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, 256, 256))
	for y := range 256 {
		for x := range 256 {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x), uint8(255 - x), uint8(x*7 + y), uint8(y)})
		}
	}
	return img
}

// TestFlattenPillow checks Background against Pillow's alpha_composite on
// every value and alpha, for several backgrounds and each output colour.
func TestFlattenPillow(t *testing.T) {
	src := encodePNG(t, everyAlpha())
	for _, bg := range [][3]byte{{255, 255, 255}, {0, 0, 0}, {114, 7, 200}, {1, 254, 128}} {
		for _, c := range []struct {
			col  Color
			mode string
		}{{RGB, "RGB"}, {Gray, "L"}, {BGR, "RGB"}} {
			want := pillowScript(t, pillowFlattenScript, map[string]any{"bg": bg, "mode": c.mode}, src)
			got := mustDecode(t, src, Options{Color: c.col, Background: &bg})
			if c.col == BGR {
				for i := 0; i < len(want); i += 3 {
					want[i], want[i+2] = want[i+2], want[i]
				}
			}
			if !bytes.Equal(got.Pix, want) {
				n, at := 0, -1
				for i := range want {
					if got.Pix[i] != want[i] {
						n++
						if at < 0 {
							at = i
						}
					}
				}
				t.Errorf("background %v %v: %d of %d bytes differ from Pillow, first at %d: %d, want %d",
					bg, c.col, n, len(want), at, got.Pix[at], want[at])
			}
		}
	}
}

// Without alpha the background changes nothing: JPEG takes its own path,
// an opaque PNG goes through the RGBA buffer.
func TestFlattenOpaque(t *testing.T) {
	bg := [3]byte{9, 99, 199}
	for name, src := range map[string][]byte{
		"jpeg": encodeJPEG(t, gradientImage(40, 30), 90),
		"png":  encodePNG(t, gradientImage(40, 30)),
	} {
		for _, col := range []Color{RGB, BGR, Gray} {
			plain := mustDecode(t, src, Options{Color: col})
			flat := mustDecode(t, src, Options{Color: col, Background: &bg})
			if !bytes.Equal(plain.Pix, flat.Pix) {
				t.Errorf("%s %v: an opaque image changed with a background", name, col)
			}
		}
	}
}

func TestFlattenRefusesAlphaOutput(t *testing.T) {
	bg := [3]byte{255, 255, 255}
	src := encodePNG(t, everyAlpha())
	for _, col := range []Color{RGBA, BGRA} {
		_, err := Decode(src, Options{Color: col, Background: &bg})
		if err == nil || !strings.Contains(err.Error(), "Background") {
			t.Errorf("%v with a background: %v", col, err)
		}
	}
}

// The decoder's RGBA buffer is reused: a second, smaller image decodes
// right after a larger one.
func TestFlattenReuse(t *testing.T) {
	bg := [3]byte{255, 255, 255}
	d := NewDecoder()
	defer d.Close()
	for _, n := range []int{64, 16, 64} {
		img := image.NewNRGBA(image.Rect(0, 0, n, n))
		for i := range img.Pix {
			img.Pix[i] = 0 // transparent black: all background
		}
		out, err := d.DecodeImage(encodePNG(t, img), Options{Background: &bg})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Pix, bytes.Repeat([]byte{255}, 3*n*n)) {
			t.Errorf("%dx%d transparent image: %s", n, n, fmt.Sprint(out.Pix[:6]))
		}
	}
}
