package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/cmd/sluice/npy"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/ops"
)

// TestRunBoxes: sluice run --boxes takes the same boxes as a JSON list, a
// JSON object by file name or a .npy, with the same outputs; the count is
// the number of rows given. A pipeline with boxes needs --boxes, one
// without refuses it, and more rows than max are refused.
func TestRunBoxes(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "a.jpg")
	if err := os.WriteFile(img, testimg.JPEG(200, 150, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := [][4]float32{{0.1, 0.2, 0.6, 0.9}, {0.5, 0.5, 1.2, 1.1}}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	list := write("list.json", `[[0.1, 0.2, 0.6, 0.9], [0.5, 0.5, 1.2, 1.1]]`)
	byName := write("names.json", `{"a.jpg": [[0.1, 0.2, 0.6, 0.9], [0.5, 0.5, 1.2, 1.1]]}`)
	var raw []byte
	for _, r := range rows {
		for _, v := range r {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
	}
	var nb bytes.Buffer
	if err := npy.Write(&nb, ops.Float32, []int{2, 4}, raw); err != nil {
		t.Fatal(err)
	}
	npyFile := write("boxes.npy", nb.String())
	pipe := repoFile(t, cropsImagenet)

	var first []byte
	for _, b := range []string{list, byName, npyFile} {
		out := filepath.Join(dir, "out-"+filepath.Base(b))
		if code, _, e := sluice("run", "--pipeline", pipe, "--boxes", b, "--out", out, img); code != 0 {
			t.Fatalf("%s: %s", b, e)
		}
		crops, _ := os.ReadFile(filepath.Join(out, "a.CROPS.npy"))
		n, _ := os.ReadFile(filepath.Join(out, "a.NUM_CROPS.npy"))
		_, shape, data, err := npy.Read(n)
		if err != nil || len(shape) != 1 || binary.LittleEndian.Uint32(data) != 2 {
			t.Errorf("%s: NUM_CROPS %v %v", b, shape, err)
		}
		if first == nil {
			first = crops
		} else if !bytes.Equal(crops, first) {
			t.Errorf("%s: crops differ from the JSON list's", b)
		}
	}
	if len(first) < 8*3*224*224*4 {
		t.Fatalf("CROPS.npy of %d bytes", len(first))
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pipeline", pipe}, "the pipeline's input BOXES takes boxes: give them with --boxes FILE"},
		{[]string{"--pipeline", repoFile(t, imagenet), "--boxes", list}, "--boxes: the pipeline has no boxes input"},
		{[]string{"--pipeline", pipe, "--boxes", write("many.json", "["+strings.Repeat("[0, 0, 1, 1], ", 8)+"[0, 0, 1, 1]]")}, "9 rows, over the 8 of input BOXES"},
		{[]string{"--pipeline", pipe, "--boxes", write("other.json", `{"b.jpg": []}`)}, "--boxes has no rows for " + img},
		{[]string{"--pipeline", pipe, "--boxes", write("bad.json", `[[1, 2, 3]]`)}, "row 0 has 3 values, not the 4 of x1, y1, x2, y2"},
		{[]string{"--pipeline", pipe, "--boxes", write("junk.json", `"boxes"`)}, "neither a JSON list of [x1, y1, x2, y2] rows"},
	} {
		code, _, e := sluice(append(append([]string{"run"}, c.args...), "--out", filepath.Join(dir, "x"), img)...)
		if code == 0 || !strings.Contains(e, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, e, c.want)
		}
	}
}

// TestBenchBoxes: bench feeds every image the boxes of --boxes (by file
// name too) and its count; every sample succeeds. Without --boxes it says
// what is missing.
func TestBenchBoxes(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"a.jpg", "b.jpg"} {
		if err := os.WriteFile(filepath.Join(dir, name), testimg.JPEG(200+40*i, 150, 5), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list := filepath.Join(t.TempDir(), "boxes.json")
	byName := filepath.Join(t.TempDir(), "names.json")
	if err := os.WriteFile(list, []byte(`[[0.1, 0.2, 0.6, 0.9], [0.5, 0.5, 1.2, 1.1]]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(byName, []byte(`{"a.jpg": [[0.1, 0.2, 0.6, 0.9]], "b.jpg": [[0, 0, 1, 1], [0.2, 0.2, 0.4, 0.4]]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pipe := repoFile(t, cropsImagenet)
	for _, boxes := range []string{list, byName} {
		code, out, e := sluice("bench", "--json", "--duration", "50ms", "--batch", "3", "--pipeline", pipe, "--boxes", boxes, dir)
		var r benchResult
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Batches < 1 || r.Failed != 0 || r.Images != 2 {
			t.Fatalf("--boxes %s: code %d %q %+v", filepath.Base(boxes), code, e, r)
		}
	}
	code, _, e := sluice("bench", "--duration", "50ms", "--pipeline", pipe, dir)
	if code != 1 || !strings.Contains(e, "BOXES takes boxes: give them with --boxes") {
		t.Fatalf("without --boxes: code %d, stderr %q", code, e)
	}
}
