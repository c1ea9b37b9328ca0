package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/png"
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

// --pad, --bytes and --ext: what perf_analyzer needs for batched requests
// (entries of one shape) and for TYPE_STRING inputs.
func TestPerfDataForms(t *testing.T) {
	corpus := t.TempDir()
	var jpegs [][]byte // by name, as the sorted walk finds them
	for i, s := range [][2]int{{640, 480}, {64, 48}, {300, 500}, {33, 17}} {
		b := testimg.JPEG(s[0], s[1], i)
		if err := os.WriteFile(filepath.Join(corpus, "img"+string(rune('0'+i))+".jpg"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		jpegs = append(jpegs, b)
	}
	var pngBuf bytes.Buffer
	if err := png.Encode(&pngBuf, image.NewGray(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corpus, "z.png"), pngBuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	largest := 0
	for _, b := range jpegs {
		largest = max(largest, len(b))
	}
	dir := t.TempDir()

	// --pad: every entry the largest image's size, the image then zeros.
	out := filepath.Join(dir, "pad.json")
	code, stdout, stderr := sluice("perf-data", "--corpus", corpus, "-o", out, "--ext", ".JPG", "--pad")
	if code != 0 {
		t.Fatalf("--pad: code %d: %s", code, stderr)
	}
	if want := "4 images, mean "; !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, ", zero-padded to ") {
		t.Errorf("--pad: stdout %q", stdout)
	}
	imgs, shapes := perfFile(t, out, "IMAGE")
	if len(imgs) != len(jpegs) {
		t.Fatalf("--pad --ext .JPG: %d entries, want the %d JPEGs", len(imgs), len(jpegs))
	}
	for i, b := range imgs {
		if len(b) != largest || len(shapes[i]) != 1 || shapes[i][0] != largest {
			t.Fatalf("--pad entry %d: %d bytes, shape %v; want %d and [%d]", i, len(b), shapes[i], largest, largest)
		}
		if !bytes.Equal(b[:len(jpegs[i])], jpegs[i]) || bytes.ContainsFunc(b[len(jpegs[i]):], func(r rune) bool { return r != 0 }) {
			t.Fatalf("--pad entry %d is not image %d followed by zeros", i, i)
		}
	}

	// --pad with --max pads to the largest of the images kept.
	code, _, stderr = sluice("perf-data", "--corpus", corpus, "-o", out, "--ext", "jpg", "--pad", "--max", "2")
	if code != 0 {
		t.Fatalf("--pad --max 2: code %d: %s", code, stderr)
	}
	imgs, _ = perfFile(t, out, "IMAGE")
	if want := max(len(jpegs[0]), len(jpegs[2])); len(imgs) != 2 || len(imgs[0]) != want || len(imgs[1]) != want {
		t.Fatalf("--pad --max 2: %d entries, want images 0 and 2 padded to %d bytes", len(imgs), want)
	}

	// --bytes: one BYTES element each (little-endian length, then the
	// image), shape [1]; the PNG too, with the default endings.
	out = filepath.Join(dir, "bytes.json")
	code, stdout, stderr = sluice("perf-data", "--corpus", corpus, "-o", out, "--bytes", "--input", "RAW")
	if code != 0 {
		t.Fatalf("--bytes: code %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "5 images") || !strings.Contains(stdout, ", as BYTES elements -> "+out) {
		t.Errorf("--bytes: stdout %q", stdout)
	}
	imgs, shapes = perfFile(t, out, "RAW")
	if len(imgs) != 5 {
		t.Fatalf("--bytes: %d entries, want 5", len(imgs))
	}
	for i, b := range imgs {
		if len(shapes[i]) != 1 || shapes[i][0] != 1 {
			t.Fatalf("--bytes entry %d: shape %v, want [1]", i, shapes[i])
		}
		if len(b) < 4 || int(binary.LittleEndian.Uint32(b)) != len(b)-4 {
			t.Fatalf("--bytes entry %d: %d bytes, not a length and that many bytes", i, len(b))
		}
		if i < len(jpegs) && !bytes.Equal(b[4:], jpegs[i]) {
			t.Fatalf("--bytes entry %d is not image %d", i, i)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pad", "--bytes"}, "--pad and --bytes exclude each other"},
		{[]string{"--ext", " , "}, "--ext names no file ending"},
		{[]string{"--ext", ".webp"}, "no decodable .webp files"},
	} {
		args := append([]string{"perf-data", "--corpus", corpus, "-o", out}, tc.args...)
		code, _, e := sluice(args...)
		if code != 1 || !strings.Contains(e, tc.want) {
			t.Errorf("sluice %v: code %d, stderr %q; want 1 and %q", args, code, e, tc.want)
		}
	}
}
