package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-dev/sluice/codec"
)

// sourceModeScript makes, with the venv's Pillow, one small image per case
// in the mode Pillow will open it in, and Pillow's answers for each resize:
// Image.open(f).resize((w, h), filter).convert(m) for m "RGB" (as
// open_clip's preprocess computes it: Resize, CenterCrop, then
// convert("RGB")), "L" and "RGBA".
const sourceModeScript = `
import io, json, os, random, sys
from PIL import Image
arg = json.loads(sys.argv[1])
rng = random.Random(25)
F = {"nearest": Image.NEAREST, "linear": Image.BILINEAR, "cubic": Image.BICUBIC, "area": Image.BOX}
def noise(mode, w, h):
    return Image.frombytes(mode, (w, h), rng.randbytes(w * h * Image.getmodebands(mode)))
def alpha(im):
    # every alpha value, 0 and 255 among them, on noise
    a = bytes(rng.choice([0, 255, rng.randrange(256)]) for _ in range(im.size[0] * im.size[1]))
    im.putalpha(Image.frombytes("L", im.size, a))
    return im
for c in arg["cases"]:
    w, h = c["w"], c["h"]
    m = c["mode"]
    if m == "P":
        im = noise("P", w, h)
        im.putpalette(rng.randbytes(768))
        im.info["transparency"] = 3
    elif m == "1":
        im = noise("L", w, h).convert("1")
    elif m in ("RGBA", "LA"):
        im = alpha(noise(m[:-1], w, h))
    else:
        im = noise(m, w, h)
    save = dict(c["save"] or {})
    if c.get("key"):
        # a tRNS colour key, on a block wide enough that resampled pixels
        # keep its colour
        key = (10, 200, 30) if m == "RGB" else 77
        im.paste(key, (4, 3, 30, 21))
        save["transparency"] = key
    f = io.BytesIO()
    im.save(f, c["format"], **save)
    data = f.getvalue()
    open(os.path.join(arg["dir"], c["name"]), "wb").write(data)
    with Image.open(io.BytesIO(data)) as src:
        assert src.mode == c["mode"], (c["name"], src.mode)
        assert ("transparency" in src.info) == bool(c.get("key") or m == "P" and c["format"] == "PNG"), c["name"]
        for k, (rh, rw, filt) in enumerate(c["resizes"]):
            for to in ("RGB", "L", "RGBA"):
                out = src.resize((rw, rh), F[filt]).convert(to).tobytes()
                open(os.path.join(arg["dir"], "%s.%d.%s" % (c["name"], k, to)), "wb").write(out)
`

type sourceResize struct {
	h, w   int64
	interp string
}

type sourceCase struct {
	name, mode, format string
	save               map[string]any
	key                bool // a tRNS colour key (RGB and L PNGs)
	h, w               int64
	want               codec.Mode
}

func (c sourceCase) MarshalJSON() ([]byte, error) {
	rs := make([][3]any, len(sourceResizes))
	for k, r := range sourceResizes {
		rs[k] = [3]any{r.h, r.w, r.interp}
	}
	if r := len(rs); c.h != 0 {
		rs = append(rs[:r:r], [3]any{c.h, c.w, "cubic"}) // the same size: Pillow copies
	}
	return json.Marshal(map[string]any{"name": c.name, "mode": c.mode, "format": c.format, "save": c.save,
		"key": c.key, "w": c.w, "h": c.h, "resizes": rs})
}

// The resizes every case is judged by; each case adds its own size.
var sourceResizes = []sourceResize{{20, 30, "cubic"}, {61, 83, "cubic"}, {25, 70, "linear"}, {17, 19, "area"}, {20, 30, "nearest"}}

var sourceCases = []sourceCase{
	{name: "p.png", mode: "P", format: "PNG", h: 37, w: 53, want: codec.ModeNearest},
	{name: "bit.png", mode: "1", format: "PNG", h: 37, w: 53, want: codec.ModeNearest},
	{name: "bit.pbm", mode: "1", format: "PPM", h: 29, w: 41, want: codec.ModeNearest},
	{name: "rgba.png", mode: "RGBA", format: "PNG", h: 37, w: 53, want: codec.ModeAlpha},
	{name: "la.png", mode: "LA", format: "PNG", h: 37, w: 53, want: codec.ModeAlpha},
	{name: "rgba.webp", mode: "RGBA", format: "WEBP", save: map[string]any{"lossless": true}, h: 31, w: 45, want: codec.ModeAlpha},
	{name: "cmyk.jpg", mode: "CMYK", format: "JPEG", save: map[string]any{"quality": 90}, h: 37, w: 53, want: codec.ModeCMYK},
	{name: "p.bmp", mode: "P", format: "BMP", h: 37, w: 53, want: codec.ModeNearest},
	{name: "l.bmp", mode: "L", format: "BMP", h: 37, w: 53}, // a grey-ramp palette: "L"
	{name: "p.tif", mode: "P", format: "TIFF", h: 37, w: 53, want: codec.ModeNearest},
	{name: "rgba.tif", mode: "RGBA", format: "TIFF", h: 37, w: 53, want: codec.ModeAlpha},
	{name: "la.tif", mode: "LA", format: "TIFF", h: 37, w: 53, want: codec.ModeAlpha},
	{name: "rgba.jp2", mode: "RGBA", format: "JPEG2000", h: 31, w: 45, want: codec.ModeAlpha},
	{name: "rgb.png", mode: "RGB", format: "PNG", h: 37, w: 53},
	{name: "l.png", mode: "L", format: "PNG", h: 37, w: 53},
	{name: "rgb.jpg", mode: "RGB", format: "JPEG", h: 37, w: 53},
	{name: "rgbkey.png", mode: "RGB", format: "PNG", key: true, h: 37, w: 53},
	{name: "lkey.png", mode: "L", format: "PNG", key: true, h: 37, w: 53},
}

// pillowPython is the venv's python (make venv), or "" without one.
func pillowPython() string {
	dir, err := os.Getwd()
	for err == nil {
		if _, serr := os.Stat(filepath.Join(dir, "go.mod")); serr == nil {
			break
		}
		if parent := filepath.Dir(dir); parent != dir {
			dir = parent
		} else {
			err = errors.New("no go.mod")
		}
	}
	py := filepath.Join(dir, ".venv", "bin", "python")
	if _, serr := os.Stat(py); err != nil || serr != nil {
		return ""
	}
	return py
}

// sourceColors are the decode colours and the Pillow mode each converts
// to.
var sourceColors = []struct{ color, pillow string }{
	{"RGB", "RGB"}, {"BGR", "RGB"}, {"GRAY", "L"}, {"RGBA", "RGBA"}, {"BGRA", "RGBA"},
}

// TestResizeSourceModeMatchesPillow decodes each image (a palette one with
// tRNS, 1-bit, RGBA, LA and CMYK ones, RGB and grey ones with and without
// a tRNS colour key) and resizes it with source_mode, alone and fused with
// a crop, in every colour: every byte equals Pillow's.
func TestResizeSourceModeMatchesPillow(t *testing.T) {
	py := pillowPython()
	if py == "" {
		t.Skip("no .venv with Pillow (make venv makes it)")
	}
	dir := t.TempDir()
	arg, err := json.Marshal(map[string]any{"dir": dir, "cases": sourceCases})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(py, "-c", sourceModeScript, string(arg))
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	for _, c := range sourceCases {
		enc, err := os.ReadFile(filepath.Join(dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		in := &Tensor{DType: Uint8, Dims: []int{len(enc)}, Data: enc}
		resizes := append(slices.Clone(sourceResizes), sourceResize{c.h, c.w, "cubic"})
		for k, r := range resizes {
			for _, col := range sourceColors {
				pil, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s.%d.%s", c.name, k, col.pillow)))
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s %dx%d %s %s", c.name, r.h, r.w, r.interp, col.color)
				args := Args{"size": IntsVal(r.h, r.w), "interp": StrVal(r.interp), "source_mode": BoolVal(true)}
				rs := mustBuild(t, "resize", args)
				got, decoded := decodeResize(t, in, col.color, rs)
				if decoded.Mode != c.want {
					t.Errorf("%s: decode handed over mode %v, want %v", name, decoded.Mode, c.want)
				}
				ch := len(pil) / int(r.h*r.w)
				want := pil
				if col.color[0] == 'B' {
					want = swapRB(pil, ch)
				}
				if got.Mode != codec.ModeDirect || got.Color.String() != col.color {
					t.Errorf("%s: output mode %v colour %v", name, got.Mode, got.Color)
				}
				sameImage(t, name, got, []int{int(r.h), int(r.w), ch}, want)
				if c.want == codec.ModeDirect && ch == 3 {
					// The flag changes nothing on L and RGB images in RGB.
					delete(args, "source_mode")
					plain, _ := decodeResize(t, in, col.color, mustBuild(t, "resize", args))
					sameImage(t, name+" without source_mode", plain, []int{int(r.h), int(r.w), ch}, want)
				}
				// Fused with a crop whose window reaches past the image
				// on one side: the window of the same pixels, and fill.
				crop := mustBuild(t, "crop", Args{"roi": IntsVal(2, -3, r.h-4, r.w+1)})
				fused, _ := decodeResize(t, in, col.color, fuse(t, rs, crop))
				sameImage(t, name+" fused", fused, []int{int(r.h) - 4, int(r.w) + 1, ch},
					pixelWindow(want, ch, int(r.w), 2, -3, int(r.h)-4, int(r.w)+1))
			}
		}
	}
}

// sameImage reports got's dims and bytes where they differ from want's:
// how many bytes, by how much at most, and where first.
func sameImage(t *testing.T, name string, got *Tensor, dims []int, want []byte) {
	t.Helper()
	if !slices.Equal(got.Dims, dims) {
		t.Errorf("%s: dims %v, want %v", name, got.Dims, dims)
		return
	}
	n, most, first := 0, 0, -1
	for i := range want {
		if d := int(got.Data[i]) - int(want[i]); d != 0 {
			n, most = n+1, max(most, d, -d)
			if first < 0 {
				first = i
			}
		}
	}
	if n > 0 {
		t.Errorf("%s: %d of %d bytes differ, by up to %d; the first at %d: %d, want %d",
			name, n, len(want), most, first, got.Data[first], want[first])
	}
}

// decodeResize decodes in with color col for the (maybe fused) resize rs
// as its only consumer, then runs rs.
func decodeResize(t *testing.T, in *Tensor, col string, rs Op) (out, decoded *Tensor) {
	t.Helper()
	decoded = decodeFor(t, in, col, rs)
	return newRunner(t, rs, 1).mustRun(t, decoded), decoded
}

// decodeFor decodes in with color col for consumer as its only one.
func decodeFor(t *testing.T, in *Tensor, col string, consumer Op) *Tensor {
	t.Helper()
	dec := mustBuild(t, "decode", Args{"color": StrVal(col), "orient": BoolVal(false)})
	dec.(Linker).Link([]Op{consumer})
	return newRunner(t, dec, 1).mustRun(t, in)
}

// swapRB swaps the first and third of each pixel's ch channels (3 or 4):
// RGB to BGR, RGBA to BGRA.
func swapRB(px []byte, ch int) []byte {
	out := slices.Clone(px)
	for i := 0; i+ch <= len(out); i += ch {
		out[i], out[i+2] = out[i+2], out[i]
	}
	return out
}

// pixelWindow is the h×w window at top, left of an image of ch channels w0
// pixels wide, zeros outside it (crop's default fill).
func pixelWindow(px []byte, ch, w0, top, left, h, w int) []byte {
	h0 := len(px) / (ch * w0)
	out := make([]byte, h*w*ch)
	for y := range h {
		for x := range w {
			sy, sx := top+y, left+x
			if sy >= 0 && sy < h0 && sx >= 0 && sx < w0 {
				copy(out[(y*w+x)*ch:(y*w+x+1)*ch], px[(sy*w0+sx)*ch:])
			}
		}
	}
	return out
}

// Without source_mode, or unlinked, decode hands over the decoded colour.
func TestDecodeSourceModeOnlyForItsResize(t *testing.T) {
	rgba := newImage(3, 4, 4, func(y, x, c int) byte { return byte(60*y + 10*x + c) })
	var enc bytes.Buffer
	if err := png.Encode(&enc, &image.NRGBA{Pix: rgba.Data, Stride: 4 * 4, Rect: image.Rect(0, 0, 4, 3)}); err != nil {
		t.Fatal(err)
	}
	in := &Tensor{DType: Uint8, Dims: []int{enc.Len()}, Data: enc.Bytes()}
	for _, rs := range []Op{
		mustBuild(t, "resize", Args{"size": IntsVal(2, 2)}),
		mustBuild(t, "letterbox", Args{"size": IntsVal(2)}),
	} {
		if decoded := decodeFor(t, in, "RGB", rs); decoded.Mode != codec.ModeDirect || decoded.Dims[2] != 3 {
			t.Errorf("%T: decode handed over %v channels in mode %v", rs, decoded.Dims, decoded.Mode)
		}
	}
}

func TestResizeSourceModeRefuses(t *testing.T) {
	wantArgErr(t, "resize", Args{"size": IntsVal(2, 2), "interp": StrVal("opencv_linear"), "source_mode": BoolVal(true)}, "source_mode")
	rs := mustBuild(t, "resize", Args{"size": IntsVal(2, 2), "source_mode": BoolVal(true)})
	// Every colour a decode gives: the resize converts to it.
	for _, s := range []Spec{rgbDyn, grayDyn, imageSpec(Dynamic, Dynamic, 3, BGR), imageSpec(Dynamic, Dynamic, 4, RGBA), imageSpec(Dynamic, Dynamic, 4, BGRA)} {
		out, err := rs.Infer([]Spec{s})
		if err != nil {
			t.Errorf("%v: %v", s, err)
		} else if want := imageSpec(2, 2, s.Color.Channels(), s.Color); out[0].String() != want.String() {
			t.Errorf("%v: %v, want %v", s, out[0], want)
		}
	}
	// On the GPU: refused, as not supported there.
	g := NewGeom(10, 10, RGB, Limits{})
	if err := rs.(GPUStage).GPU(nil, &g, nil); !errors.Is(err, ErrNotOnGPU) {
		t.Errorf("GPU: %v, want ErrNotOnGPU", err)
	}
	// A tensor that does not hold what its mode and colour say (four
	// channels of alpha, or RGB for GRAY) is a per-sample error, not a
	// panic.
	for _, c := range []struct {
		ch   int
		col  Color
		mode codec.Mode
	}{{3, RGB, codec.ModeAlpha}, {3, Gray, codec.ModeCMYK}, {1, Gray, codec.ModeDirect}, {3, RGBA, codec.ModeDirect}} {
		bad := newImage(2, 2, c.ch, func(int, int, int) byte { return 1 })
		bad.Color, bad.Mode = c.col, c.mode
		if err := newRunner(t, rs, 1).run(bad); err == nil {
			t.Errorf("ran %d channels marked %v in mode %v", c.ch, c.col, c.mode)
		}
	}
}

// TestResizeSourceModeConversions checks each conversion after the
// resampling against Pillow's definitions written out here (Convert.c),
// applied to the plain resize of what the decode hands over: the
// premultiplied RGBA, the inks, the RGB and the keyed colour image.
func TestResizeSourceModeConversions(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	const sh, sw = 13, 17
	muldiv255 := func(a, b int) int { v := a*b + 128; return ((v >> 8) + v) >> 8 }
	l24 := func(r, g, b int) byte { return byte((r*19595 + g*38470 + b*7471 + 0x8000) >> 16) }
	rgba := randImage(rng, sh, sw, 4)
	for i := 3; i < len(rgba.Data); i += 16 {
		rgba.Data[i] = []byte{0, 255}[i/16%2] // alpha 0 and 255 among the others
	}
	inks := randImage(rng, sh, sw, 4)
	rgb := randImage(rng, sh, sw, 3)
	keyedRGBA := randImage(rng, sh, sw, 4)
	key := [3]byte{9, 99, 199}
	for y := range sh {
		for x := range sw {
			p := keyedRGBA.Data[(y*sw+x)*4:][:4]
			p[3] = 255
			if y > 2 && y < 10 && x > 3 && x < 12 {
				copy(p, key[:])
				p[3] = 0
			}
		}
	}
	// plain is the resize without source_mode of pixels of ch channels.
	plain := func(px []byte, ch int, size []int64, interp string) []byte {
		in := newImage(sh, sw, ch, func(int, int, int) byte { return 0 })
		copy(in.Data, px)
		rs := mustBuild(t, "resize", Args{"size": IntsVal(size...), "interp": StrVal(interp)})
		return slices.Clone(newRunner(t, rs, 1).mustRun(t, in).Data)
	}
	premultiplied := slices.Clone(rgba.Data)
	for i := 0; i < len(premultiplied); i += 4 {
		for k := range 3 {
			premultiplied[i+k] = byte(muldiv255(int(premultiplied[i+k]), int(premultiplied[i+3])))
		}
	}
	for _, size := range [][]int64{{7, 9}, {sh, sw}, {29, 31}} {
		for _, interp := range []string{"linear", "cubic", "nearest", "area"} {
			same := size[0] == sh && size[1] == sw
			for _, col := range []Color{RGB, BGR, Gray, RGBA, BGRA} {
				och := col.Channels()
				ri, bi := 0, 2
				if col == BGR || col == BGRA {
					ri, bi = 2, 0
				}
				// put writes the RGBA pixel i of the output in col, as
				// convert("RGB"), convert("L") (rgb2l) or convert("RGBA").
				put := func(out []byte, i int, r, g, b, a byte) {
					p := out[i*och : (i+1)*och]
					switch och {
					case 1:
						p[0] = l24(int(r), int(g), int(b))
					default:
						p[ri], p[1], p[bi] = r, g, b
						if och == 4 {
							p[3] = a
						}
					}
				}
				n := int(size[0] * size[1])
				rs := mustBuild(t, "resize", Args{"size": IntsVal(size...), "interp": StrVal(interp), "source_mode": BoolVal(true)})
				run := func(name string, px []byte, ch int, mode codec.Mode, want []byte) {
					in := newImage(sh, sw, ch, func(int, int, int) byte { return 0 })
					copy(in.Data, px)
					in.Color, in.Mode = col, mode
					got := newRunner(t, rs, 1).mustRun(t, in)
					sameImage(t, fmt.Sprintf("%s %v %s to %v", name, size, interp, col), got, []int{int(size[0]), int(size[1]), och}, want)
				}

				// RGBA: premultiplied (rgbA2rgba) unless NEAREST or the
				// same size, divided back (rgba2rgbA).
				want := make([]byte, n*och)
				if interp == "nearest" || same {
					q := plain(rgba.Data, 4, size, interp)
					for i := range n {
						put(want, i, q[4*i], q[4*i+1], q[4*i+2], q[4*i+3])
					}
				} else {
					q := plain(premultiplied, 4, size, interp)
					for i := range n {
						p := q[4*i : 4*i+4]
						c := [3]byte{p[0], p[1], p[2]}
						if a := int(p[3]); a != 0 && a != 255 {
							for k := range 3 {
								c[k] = byte(min(255*int(p[k])/a, 255))
							}
						}
						put(want, i, c[0], c[1], c[2], p[3])
					}
				}
				run("RGBA", rgba.Data, 4, codec.ModeAlpha, want)

				// CMYK: cmyk2rgb of the resampled inks, alpha 255.
				q := plain(inks.Data, 4, size, interp)
				for i := range n {
					p := q[4*i : 4*i+4]
					nk := 255 - int(p[3])
					put(want, i, byte(max(nk-muldiv255(int(p[0]), nk), 0)), byte(max(nk-muldiv255(int(p[1]), nk), 0)),
						byte(max(nk-muldiv255(int(p[2]), nk), 0)), 255)
				}
				run("CMYK", inks.Data, 4, codec.ModeCMYK, want)

				switch och {
				case 1:
					// RGB to L: the luma of the resampled colours.
					q := plain(rgb.Data, 3, size, interp)
					for i := range n {
						want[i] = l24(int(q[3*i]), int(q[3*i+1]), int(q[3*i+2]))
					}
					run("RGB", rgb.Data, 3, codec.ModeDirect, want)
				case 4:
					// RGB with a colour key to RGBA: transparent where the
					// resampled colour is the key (rgbT2a), in col's order.
					px, k := keyedRGBA.Data, key
					if col == BGRA {
						px, k = swapRB(px, 4), [3]byte{key[2], key[1], key[0]}
					}
					q := plain(px, 4, size, interp)
					hits := 0
					for i := range n {
						copy(want[4*i:], q[4*i:4*i+3])
						want[4*i+3] = 255
						if [3]byte(q[4*i:4*i+3]) == k {
							want[4*i+3] = 0
							hits++
						}
					}
					if hits == 0 {
						t.Errorf("%v %s: no resampled pixel has the key", size, interp)
					}
					run("keyed RGB", px, 4, codec.ModeDirect, want)
				}
			}
		}
	}
}
