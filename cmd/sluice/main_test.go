package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/cmd/sluice/npy"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
)

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", rel)
}

const imagenet = "model_repository/preprocess_imagenet/1/pipeline.pbtxt"

// imagenetDecoded is imagenet for images that arrive decoded.
const imagenetDecoded = "model_repository/preprocess_imagenet_decoded/1/pipeline.pbtxt"

// cropsImagenet crops a detector's boxes for an ImageNet classifier.
const cropsImagenet = "model_repository/preprocess_crops/1/pipeline.pbtxt"

func sluice(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func writeJPEG(t *testing.T, path string, w, h int) {
	t.Helper()
	if err := os.WriteFile(path, testimg.JPEG(w, h, 0), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	code, out, _ := sluice("validate", repoFile(t, imagenet))
	if code != 0 || !strings.Contains(out, "PIXELS: FP32 dims [3,224,224]") {
		t.Fatalf("validate: code %d\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.pbtxt")
	os.WriteFile(bad, []byte(`version: 1
input { name: "IMAGE" }
node { op: "decode" }
node { op: "resize" arg { name: "interp" str: "bilinar" } arg { name: "size" ints { v: [2, 2] } } }
output { name: "O" }`), 0o644)
	code, _, errOut := sluice("validate", bad)
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, `bad.pbtxt: node "resize" (#2): argument "interp"`) {
		t.Fatalf("invalid pipeline: code %d, stderr %q", code, errOut)
	}
}

func TestCompileAndFmtRoundTrip(t *testing.T) {
	dir := t.TempDir()
	compact := filepath.Join(dir, "model.sluice")
	if code, _, e := sluice("compile", repoFile(t, imagenet), "-o", compact); code != 0 {
		t.Fatal(e)
	}
	_, fromText, _ := sluice("fmt", repoFile(t, imagenet))
	code, fromCompact, e := sluice("fmt", compact)
	if code != 0 || fromText != fromCompact || !strings.Contains(fromText, `op: "normalize"`) {
		t.Fatalf("fmt of compact differs from fmt of text (%s):\n%s\n---\n%s", e, fromText, fromCompact)
	}
	if code, _, _ := sluice("validate", compact); code != 0 {
		t.Fatal("compact form does not validate")
	}
}

func TestRunWritesNpy(t *testing.T) {
	dir := t.TempDir()
	a, b, broken := filepath.Join(dir, "a.jpg"), filepath.Join(dir, "b.jpg"), filepath.Join(dir, "broken.jpg")
	writeJPEG(t, a, 300, 200)
	writeJPEG(t, b, 123, 345)
	os.WriteFile(broken, []byte("\xff\xd8\xff\xe0 not really"), 0o644)
	out := filepath.Join(dir, "out")
	code, _, errOut := sluice("run", "--pipeline", repoFile(t, imagenet), "--out", out, "--batch", "2", a, broken, b)
	if code != 1 {
		t.Fatalf("a broken image must make the exit status 1, got %d", code)
	}
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "sluice run: "+broken+": decode: ") || lines[1] != "sluice run: 1 image(s) failed" {
		t.Fatalf("stderr %q", errOut)
	}
	for _, name := range []string{"a", "b"} {
		data, err := os.ReadFile(filepath.Join(out, name+".PIXELS.npy"))
		if err != nil {
			t.Fatal(err)
		}
		dt, shape, px, err := npy.Read(data)
		if err != nil || dt != ops.Float32 || !slices.Equal(shape, []int{3, 224, 224}) || bytes.Equal(px, make([]byte, len(px))) {
			t.Fatalf("%s: %v %v %v", name, dt, shape, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "broken.PIXELS.npy")); err == nil {
		t.Error("an output was written for the broken image")
	}
}

func TestBenchJSON(t *testing.T) {
	dir := t.TempDir()
	writeJPEG(t, filepath.Join(dir, "a.jpg"), 320, 240)
	code, out, e := sluice("bench", "--json", "--duration", "50ms", "--batch", "4", "--pipeline", repoFile(t, imagenet), dir)
	if code != 0 {
		t.Fatal(e)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Batches < 1 || r.ImagesPerSec <= 0 || r.Failed != 0 || r.Batch != 4 {
		t.Fatalf("%+v", r)
	}
}

// --instances runs executors side by side; --gpu without a GPU is an
// error naming what is missing (with one, bench runs on it).
func TestBenchInstancesAndGPU(t *testing.T) {
	dir := t.TempDir()
	writeJPEG(t, filepath.Join(dir, "a.jpg"), 320, 240)
	code, out, e := sluice("bench", "--json", "--duration", "50ms", "--batch", "2", "--instances", "3", "--pipeline", repoFile(t, imagenet), dir)
	var r benchResult
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Instances != 3 || r.Batches < 3 || r.StageMs != nil {
		t.Fatalf("code %d %q %+v", code, e, r)
	}
	code, out, e = sluice("bench", "--json", "--gpu", "0", "--duration", "50ms", "--batch", "2", "--pipeline", repoFile(t, imagenet), dir)
	if err := cuda.Init(); err != nil {
		if code != 1 || !strings.Contains(e, oneLine(err.Error())) {
			t.Fatalf("--gpu without a GPU: code %d, stderr %q, want %q", code, e, err)
		}
		return
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.StageMs["decode"] <= 0 || r.ByGPU["0"] != r.ImagesPerSec {
		t.Fatalf("--gpu 0: code %d %q %+v", code, e, r)
	}
}

func TestBadUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"validate"}, 1, "want one pipeline file"},
		{[]string{"validate", filepath.Join(dir, "missing.pbtxt")}, 1, "no such file"},
		{[]string{"compile", repoFile(t, imagenet)}, 1, "-o FILE is required"},
		{[]string{"run", "--out", dir, "x.jpg"}, 1, "--pipeline is required"},
		{[]string{"run", "--pipeline", repoFile(t, imagenet), "x.jpg"}, 1, "--out DIR is required"},
		{[]string{"run", "--pipeline", repoFile(t, imagenet), "--out", dir, "a/x.jpg", "b/x.jpg"}, 1, "would both write x.jpg.*.npy"},
		{[]string{"bench", "--pipeline", repoFile(t, imagenet), dir}, 1, "no image files in"},
		{[]string{"run", "--workers", "many"}, 1, "invalid value"},
		{[]string{"run", "--gpu", "0,x"}, 1, `"x" is not a GPU ordinal`},
		{[]string{"bench", "--gpu", "-1"}, 1, `"-1" is not a GPU ordinal`},
		{[]string{"bench", "--gpu", "1,0,1"}, 1, "GPU 1 named twice"},
		{[]string{"run", "--gpu", "0,1", "--pipeline", repoFile(t, imagenet), "--out", dir, "x.jpg"}, 1, "--gpu: one GPU, not 2"},
	} {
		code, _, e := sluice(tc.args...)
		if code != tc.code || !strings.Contains(e, tc.want) || strings.Contains(e, "goroutine") {
			t.Errorf("sluice %v: code %d, stderr %q; want %d and %q", tc.args, code, e, tc.code, tc.want)
		}
	}
}

// The model folders carry both forms of their pipeline; the compact one
// must be what `make compact` makes of the text one as committed.
func TestCommittedCompactFormsAreFresh(t *testing.T) {
	texts, _ := filepath.Glob(repoFile(t, "model_repository/*/1/pipeline.pbtxt"))
	if len(texts) < 2 {
		t.Fatalf("found %d example pipelines", len(texts))
	}
	for _, text := range texts {
		out := filepath.Join(t.TempDir(), "model.sluice")
		if code, _, e := sluice("compile", text, "-o", out); code != 0 {
			t.Fatal(e)
		}
		want, _ := os.ReadFile(out)
		got, err := os.ReadFile(filepath.Join(filepath.Dir(text), "model.sluice"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: model.sluice is missing or stale (%v): run make compact", filepath.Dir(text), err)
		}
	}
}

// TestReadImages: bench reads images by content, through links (the GPU
// benchmark links corpus files into folders by kind), and skips the rest.
func TestReadImages(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	jpg := filepath.Join(src, "a.bin")
	if err := os.WriteFile(jpg, testimg.JPEG(8, 8, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(jpg, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	imgs, _, err := readImages(dir)
	if err != nil || len(imgs) != 1 {
		t.Fatalf("readImages: %d images, %v; want the linked JPEG alone", len(imgs), err)
	}
}
