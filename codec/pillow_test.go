package codec

import (
	"bytes"
	"encoding/json"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/internal/testcorpus"
)

// The Go tests make AVIFs with Pillow (Go has no AV1 encoder), through
// the venv that make sets up; without it they skip.

// pillowPython is the venv's python, or "" when it is missing.
func pillowPython() string {
	root, err := testcorpus.RepoRoot()
	if err != nil {
		return ""
	}
	py := filepath.Join(root, ".venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		return ""
	}
	return py
}

// pillowScript runs a Python snippet with the venv's Pillow, feeding it
// stdin; the snippet gets its argument as the JSON in sys.argv[1].
func pillowScript(t testing.TB, script string, arg any, stdin []byte) []byte {
	t.Helper()
	py := pillowPython()
	if py == "" {
		t.Skip("no .venv with Pillow (make venv makes it)")
	}
	a, err := json.Marshal(arg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", script, string(a))
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return out
}

const pillowAVIFScript = `
import io, json, sys
from PIL import Image, features
if not features.check("avif"):
    sys.exit("Pillow has no AVIF support")
opts = json.loads(sys.argv[1])
im = Image.open(io.BytesIO(sys.stdin.buffer.read()))
if "mode" in opts:
    im = im.convert(opts.pop("mode"))
orient = opts.pop("orientation", 1)
if orient != 1:
    exif = Image.Exif()
    exif[0x0112] = orient
    opts["exif"] = exif
out = io.BytesIO()
im.save(out, "AVIF", **opts)
sys.stdout.buffer.write(out.getvalue())
`

// pillowAVIF encodes img as AVIF with Pillow's save options opts (plus
// "mode", a mode to convert to first, and "orientation", stored as AVIF's
// irot/imir).
func pillowAVIF(t testing.TB, img image.Image, opts map[string]any) []byte {
	t.Helper()
	return pillowScript(t, pillowAVIFScript, opts, encodePNG(t, img))
}

const pillowDecodeScript = `
import io, json, sys
from PIL import Image, ImageOps
opts = json.loads(sys.argv[1])
im = Image.open(io.BytesIO(sys.stdin.buffer.read()))
if opts["orient"]:
    im = ImageOps.exif_transpose(im)
im = im.convert(opts["mode"])
sys.stdout.buffer.write(json.dumps([im.width, im.height]).encode() + b"\n" + im.tobytes())
`

// pillowDecode decodes src with Pillow into mode ("RGB", "RGBA", "L"),
// applying the orientation when orient is set.
func pillowDecode(t testing.TB, src []byte, mode string, orient bool) (pix []byte, w, h int) {
	t.Helper()
	out := pillowScript(t, pillowDecodeScript, map[string]any{"mode": mode, "orient": orient}, src)
	i := bytes.IndexByte(out, '\n')
	var wh [2]int
	if i < 0 || json.Unmarshal(out[:i], &wh) != nil {
		t.Fatalf("pillowDecode: bad output %q", out[:min(len(out), 40)])
	}
	return out[i+1:], wh[0], wh[1]
}
