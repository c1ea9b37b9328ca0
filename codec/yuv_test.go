package codec

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/testimg"
)

// yccToRGB converts DecodeYUVPlanes' planes as libjpeg-turbo 2.1 does with
// fancy upsampling (jdsample.c), or with chroma replicated when !fancy, and
// its fixed-point colour conversion (jdcolor.c): the algorithm the GPU's
// sluice_ycc implements, checked here against TurboJPEG's own RGB decode.
func yccToRGB(p [3][]byte, w, h, cw, ch, sx, sy int, fancy bool) []byte {
	at := func(pl []byte, r, i int) int { return int(pl[r*cw+i]) }
	hfancy := fancy && sx == 2 && cw > 2 // libjpeg replicates planes of two columns or fewer
	chroma := func(pl []byte, x, y int) int {
		i, r := min(x/sx, cw-1), min(y/sy, ch-1)
		odd := func(v int) bool { return v&1 == 1 }
		if fancy && sy == 2 && (sx == 1 || hfancy) {
			r2 := max(r-1, 0)
			if odd(y) {
				r2 = min(r+1, ch-1)
			}
			if sx == 1 {
				bias := 1
				if odd(y) {
					bias = 2
				}
				return (3*at(pl, r, i) + at(pl, r2, i) + bias) >> 2
			}
			j, bias := max(i-1, 0), 8
			if odd(x) {
				j, bias = min(i+1, cw-1), 7
			}
			cs := 3*at(pl, r, i) + at(pl, r2, i)
			cn := 3*at(pl, r, j) + at(pl, r2, j)
			return (3*cs + cn + bias) >> 4
		}
		if sy == 1 && hfancy {
			j, bias := max(i-1, 0), 1
			if odd(x) {
				j, bias = min(i+1, cw-1), 2
			}
			return (3*at(pl, r, i) + at(pl, r, j) + bias) >> 2
		}
		return at(pl, r, i)
	}
	clamp := func(v int) byte { return byte(min(max(v, 0), 255)) }
	out := make([]byte, w*h*3)
	for y := range h {
		for x := range w {
			yy := int(p[0][y*w+x])
			cb, cr := chroma(p[1], x, y)-128, chroma(p[2], x, y)-128
			o := out[(y*w+x)*3:]
			o[0] = clamp(yy + (91881*cr+32768)>>16)
			o[1] = clamp(yy + (-22554*cb+32768-46802*cr)>>16)
			o[2] = clamp(yy + (116130*cb+32768)>>16)
		}
	}
	return out
}

// yuvTestRGB is an h×w image with smooth gradients, noise and hard colour
// edges, where upsampling matters most.
func yuvTestRGB(w, h int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	px := make([]byte, w*h*3)
	for y := range h {
		for x := range w {
			p := px[(y*w+x)*3:]
			p[0] = byte(x * 255 / max(w-1, 1))
			p[1] = byte(y * 255 / max(h-1, 1))
			p[2] = byte(r.IntN(256))
			if (x/3+y/2)%3 == 0 {
				p[0], p[1] = 255-p[0], 40
			}
		}
	}
	return px
}

// yuvSizes covers odd sizes and planes of one or two chroma columns or
// rows, where libjpeg's edge cases and fallbacks apply.
var yuvSizes = [][2]int{{17, 13}, {1, 1}, {1, 7}, {2, 5}, {3, 3}, {4, 2}, {5, 1}, {6, 9}, {33, 2}, {64, 48}}

func TestDecodeYUVPlanesMatchesDecode(t *testing.T) {
	type tc struct {
		name   string
		jpg    []byte
		sx, sy int
	}
	cases := []tc{{name: "testimg-420", jpg: testimg.JPEG(37, 21, 2), sx: 2, sy: 2}}
	for i, sz := range yuvSizes {
		for _, sub := range [][2]int{{1, 1}, {2, 1}, {2, 2}, {1, 2}} {
			b, err := EncodeJPEG(yuvTestRGB(sz[0], sz[1], uint64(i)), sz[0], sz[1], 90, sub[0], sub[1])
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, tc{fmt.Sprintf("%dx%d/sub%dx%d", sz[0], sz[1], sub[0], sub[1]), b, sub[0], sub[1]})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, w, h, cw, ch, sx, sy, err := DecodeYUVPlanes(c.jpg)
			if err != nil {
				t.Fatal(err)
			}
			if sx != c.sx || sy != c.sy {
				t.Fatalf("subsampling %dx%d, want %dx%d", sx, sy, c.sx, c.sy)
			}
			if cw != (w+sx-1)/sx || ch != (h+sy-1)/sy || len(p[0]) != w*h || len(p[1]) != cw*ch || len(p[2]) != cw*ch {
				t.Fatalf("%dx%d image with %dx%d chroma, planes of %d, %d, %d bytes", w, h, cw, ch, len(p[0]), len(p[1]), len(p[2]))
			}
			for _, fast := range []bool{false, true} {
				img, err := Decode(c.jpg, Options{Color: RGB, FastUpsample: fast})
				if err != nil {
					t.Fatal(err)
				}
				if img.Width != w || img.Height != h {
					t.Fatalf("Decode gives %dx%d, the planes %dx%d", img.Width, img.Height, w, h)
				}
				got := yccToRGB(p, w, h, cw, ch, sx, sy, !fast)
				if !bytes.Equal(got, img.Pix) {
					for i := range got {
						if got[i] != img.Pix[i] {
							t.Fatalf("FastUpsample %v: byte %d (pixel %d,%d channel %d): %d from the planes, Decode %d",
								fast, i, i/3%w, i/3/w, i%3, got[i], img.Pix[i])
						}
					}
				}
			}
		})
	}
}

func TestDecodeYUVPlanesRejects(t *testing.T) {
	colour, err := EncodeJPEG(yuvTestRGB(8, 8, 1), 8, 8, 90, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, _, _, _, err := DecodeYUVPlanes(colour[:20]); err == nil {
		t.Error("a truncated header decoded")
	}
	var gray bytes.Buffer
	if err := jpeg.Encode(&gray, image.NewGray(image.Rect(0, 0, 8, 8)), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, _, _, _, err := DecodeYUVPlanes(gray.Bytes()); err == nil {
		t.Error("a greyscale JPEG gave YCbCr planes")
	}
	if _, _, _, _, _, _, _, err := DecodeYUVPlanes(nil); err == nil {
		t.Error("no data decoded")
	}
	if _, err := EncodeJPEG(yuvTestRGB(8, 8, 1), 8, 8, 90, 4, 1); err == nil {
		t.Error("4:1:1 encoded")
	}
	if _, err := EncodeJPEG(make([]byte, 10), 8, 8, 90, 1, 1); err == nil {
		t.Error("a short image encoded")
	}
}
