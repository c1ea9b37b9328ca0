package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/testimg"
)

// perfFile reads perf-data's output back: per entry, the decoded bytes and
// the shape of the named input.
func perfFile(t *testing.T, path, input string) ([][]byte, [][]int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Data []map[string]struct {
			Content struct {
				B64 string `json:"b64"`
			} `json:"content"`
			Shape []int `json:"shape"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	var imgs [][]byte
	var shapes [][]int
	for i, e := range doc.Data {
		if len(e) != 1 {
			t.Fatalf("entry %d has %d inputs, want 1", i, len(e))
		}
		in, ok := e[input]
		if !ok {
			t.Fatalf("entry %d lacks input %s: %v", i, input, e)
		}
		b, err := base64.StdEncoding.DecodeString(in.Content.B64)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		imgs = append(imgs, b)
		shapes = append(shapes, in.Shape)
	}
	return imgs, shapes
}

func TestPerfData(t *testing.T) {
	corpus := t.TempDir()
	want := map[string]bool{} // decodable images by content
	inB := map[string]bool{}  // those under b/
	put := func(rel string, b []byte) {
		p := filepath.Join(corpus, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sizes := [][2]int{{64, 48}, {640, 480}, {300, 500}, {1024, 768}, {224, 224}, {33, 17}}
	for i, s := range sizes {
		b := testimg.JPEG(s[0], s[1], i)
		rel := filepath.Join("a", "img"+string(rune('0'+i))+".jpg")
		if i%2 == 1 {
			rel = filepath.Join("b", "deep", "img"+string(rune('0'+i))+".JPEG")
			inB[string(b)] = true
		}
		put(rel, b)
		want[string(b)] = true
	}
	good := testimg.JPEG(100, 80, 9)
	put("broken/truncated.jpg", good[:len(good)/2])
	put("notes.txt", []byte("not an image"))

	out := filepath.Join(t.TempDir(), "sub", "perf.json")
	code, stdout, stderr := sluice("perf-data", "--corpus", corpus, "-o", out)
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "6 images") || !strings.Contains(stdout, "1 skipped") {
		t.Errorf("stdout %q", stdout)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "truncated.jpg: truncated") {
		t.Errorf("the broken image must be skipped with one line naming the cause: %q", stderr)
	}
	imgs, shapes := perfFile(t, out, "IMAGE")
	if len(imgs) != len(sizes) {
		t.Fatalf("%d entries, want %d", len(imgs), len(sizes))
	}
	seen := map[string]bool{}
	for i, b := range imgs {
		if !want[string(b)] {
			t.Fatalf("entry %d (%d bytes) is not one of the images", i, len(b))
		}
		if len(shapes[i]) != 1 || shapes[i][0] != len(b) {
			t.Fatalf("entry %d: shape %v, want [%d]", i, shapes[i], len(b))
		}
		seen[string(b)] = true
	}
	if len(seen) != len(sizes) {
		t.Fatalf("%d distinct images, want %d", len(seen), len(sizes))
	}

	// Subfolders, --max and --input.
	out2 := filepath.Join(t.TempDir(), "perf.json")
	code, _, stderr = sluice("perf-data", "--corpus", corpus, "-o", out2, "b", "--input", "RAW", "--max", "2")
	if code != 0 || stderr != "" {
		t.Fatalf("code %d: %s", code, stderr)
	}
	imgs, _ = perfFile(t, out2, "RAW")
	if len(imgs) != 2 || bytes.Equal(imgs[0], imgs[1]) {
		t.Fatalf("%d entries from b/ with --max 2", len(imgs))
	}
	for _, b := range imgs {
		if !inB[string(b)] {
			t.Fatal("an entry from outside b/")
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"perf-data", "-o", out}, "--corpus DIR is required"},
		{[]string{"perf-data", "--corpus", corpus}, "-o FILE is required"},
		{[]string{"perf-data", "--corpus", corpus, "-o", out, "missing"}, "no such file"},
		{[]string{"perf-data", "--corpus", filepath.Join(corpus, "broken"), "-o", out}, "no decodable"},
	} {
		// The failure is the last line (skipped files may come before it).
		code, _, e := sluice(tc.args...)
		lines := strings.Split(strings.TrimSuffix(e, "\n"), "\n")
		if last := lines[len(lines)-1]; code != 1 || !strings.HasPrefix(last, "sluice perf-data: ") || !strings.Contains(last, tc.want) {
			t.Errorf("sluice %v: code %d, stderr %q; want 1 and %q", tc.args, code, e, tc.want)
		}
	}
}
