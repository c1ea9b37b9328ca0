package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-dev/sluice/codec"
)

// sourceModeScript makes, with the venv's Pillow, one small image per case
// in the mode Pillow will open it in, and Pillow's answer for each resize:
// Image.open(f).resize((w, h), filter).convert("RGB"), as open_clip's
// preprocess computes it (Resize, CenterCrop, then convert("RGB")).
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
    f = io.BytesIO()
    im.save(f, c["format"], **(c["save"] or {}))
    data = f.getvalue()
    open(os.path.join(arg["dir"], c["name"]), "wb").write(data)
    with Image.open(io.BytesIO(data)) as src:
        assert src.mode == c["mode"], (c["name"], src.mode)
        for k, (rh, rw, filt) in enumerate(c["resizes"]):
            out = src.resize((rw, rh), F[filt]).convert("RGB").tobytes()
            open(os.path.join(arg["dir"], "%s.%d.rgb" % (c["name"], k)), "wb").write(out)
`

type sourceResize struct {
	h, w   int64
	interp string
}

type sourceCase struct {
	name, mode, format string
	save               map[string]any
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
		"w": c.w, "h": c.h, "resizes": rs})
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

// TestResizeSourceModeMatchesPillow decodes each image (a palette, 1-bit,
// RGBA, LA and CMYK one, and RGB and grey ones that the flag leaves as they
// were) and resizes it with source_mode, alone and fused with a crop, in
// RGB and BGR: every byte equals Pillow's.
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
			want, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s.%d.rgb", c.name, k)))
			if err != nil {
				t.Fatal(err)
			}
			for _, col := range []string{"RGB", "BGR"} {
				name := fmt.Sprintf("%s %dx%d %s %s", c.name, r.h, r.w, r.interp, col)
				args := Args{"size": IntsVal(r.h, r.w), "interp": StrVal(r.interp), "source_mode": BoolVal(true)}
				rs := mustBuild(t, "resize", args)
				got, decoded := decodeResize(t, in, col, rs)
				if decoded.Mode != c.want {
					t.Errorf("%s: decode handed over mode %v, want %v", name, decoded.Mode, c.want)
				}
				wantRGB := want
				if col == "BGR" {
					wantRGB = swapRB(want)
				}
				if got.Mode != codec.ModeDirect || got.Color.String() != col {
					t.Errorf("%s: output mode %v colour %v", name, got.Mode, got.Color)
				}
				wantImage(t, got, []int{int(r.h), int(r.w), 3}, wantRGB)
				if c.want == codec.ModeDirect {
					// The flag changes nothing on L and RGB images.
					delete(args, "source_mode")
					plain, _ := decodeResize(t, in, col, mustBuild(t, "resize", args))
					wantImage(t, plain, []int{int(r.h), int(r.w), 3}, wantRGB)
				}
				// Fused with a crop whose window reaches past the image
				// on one side: the window of the same pixels, and fill.
				crop := mustBuild(t, "crop", Args{"roi": IntsVal(2, -3, r.h-4, r.w+1)})
				fused, _ := decodeResize(t, in, col, fuse(t, rs, crop))
				wantImage(t, fused, []int{int(r.h) - 4, int(r.w) + 1, 3}, rgbWindow(wantRGB, int(r.w), 2, -3, int(r.h)-4, int(r.w)+1))
			}
		}
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

func swapRB(rgb []byte) []byte {
	out := slices.Clone(rgb)
	for i := 0; i+2 < len(out); i += 3 {
		out[i], out[i+2] = out[i+2], out[i]
	}
	return out
}

// rgbWindow is the h×w window at top, left of an RGB image w0 pixels wide,
// zeros outside it (crop's default fill).
func rgbWindow(rgb []byte, w0, top, left, h, w int) []byte {
	h0 := len(rgb) / (3 * w0)
	out := make([]byte, h*w*3)
	for y := range h {
		for x := range w {
			sy, sx := top+y, left+x
			if sy >= 0 && sy < h0 && sx >= 0 && sx < w0 {
				copy(out[(y*w+x)*3:(y*w+x)*3+3], rgb[(sy*w0+sx)*3:])
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
	for _, s := range []Spec{grayDyn, imageSpec(Dynamic, Dynamic, 4, RGBA)} {
		if _, err := rs.Infer([]Spec{s}); err == nil {
			t.Errorf("source_mode accepted %v", s)
		}
	}
	if _, err := rs.Infer([]Spec{rgbDyn}); err != nil {
		t.Error(err)
	}
	// On the GPU: refused, as not supported there.
	g := NewGeom(10, 10, RGB, Limits{})
	if err := rs.(GPUStage).GPU(nil, &g, nil); !errors.Is(err, ErrNotOnGPU) {
		t.Errorf("GPU: %v, want ErrNotOnGPU", err)
	}
	// A tensor that claims four channels of alpha but holds three is a
	// per-sample error, not a panic.
	bad := newImage(2, 2, 3, func(int, int, int) byte { return 1 })
	bad.Color, bad.Mode = RGB, codec.ModeAlpha
	if err := newRunner(t, rs, 1).run(bad); err == nil {
		t.Error("ran an RGB tensor marked RGBA/LA")
	}
}
