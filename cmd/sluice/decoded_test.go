package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/cmd/sluice/npy"
	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/ops"
)

// TestRunDecodedNpy: `sluice run` of the decoded-input pipeline over .npy
// files of the photo's pixels writes what the encoded pipeline writes for
// the JPEG; a .npy of the wrong channel count or dtype fails alone.
func TestRunDecodedNpy(t *testing.T) {
	dir := t.TempDir()
	jpeg := testimg.JPEG(300, 200, 3)
	if err := os.WriteFile(filepath.Join(dir, "a.jpg"), jpeg, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := codec.Decode(jpeg, codec.Options{Color: codec.RGB})
	if err != nil {
		t.Fatal(err)
	}
	writeNpyT := func(name string, dt ops.DType, shape []int, data []byte) string {
		var b bytes.Buffer
		if err := npy.Write(&b, dt, shape, data); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "npy", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := writeNpyT("a.npy", ops.Uint8, []int{img.Height, img.Width, 3}, img.Pix)
	rgba := writeNpyT("rgba.npy", ops.Uint8, []int{2, 2, 4}, make([]byte, 16))
	fp := writeNpyT("fp.npy", ops.Float32, []int{1, 1, 3}, make([]byte, 12))

	encOut, decOut := filepath.Join(dir, "enc"), filepath.Join(dir, "dec")
	if code, _, e := sluice("run", "--pipeline", repoFile(t, imagenet), "--out", encOut, filepath.Join(dir, "a.jpg")); code != 0 {
		t.Fatal(e)
	}
	code, _, errOut := sluice("run", "--pipeline", repoFile(t, imagenetDecoded), "--out", decOut, a, rgba, fp)
	if code != 1 || !strings.Contains(errOut, rgba+": FRAME: invalid input: shape [2 2 4] has 4 channels, but the pipeline declares color RGB (3)") ||
		!strings.Contains(errOut, fp+": the pipeline's input is a decoded RGB image, UINT8 [H, W, 3]; this .npy file holds FP32") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	want, _ := os.ReadFile(filepath.Join(encOut, "a.PIXELS.npy"))
	got, _ := os.ReadFile(filepath.Join(decOut, "a.PIXELS.npy"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Error("the decoded .npy's output differs from the JPEG's")
	}
}
