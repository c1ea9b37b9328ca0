package main

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/ops"
)

// perfEntry is one entry of perf_analyzer's --input-data JSON: an input's
// content (base64) and its shape without the batch dimension.
type perfEntry struct {
	Content struct {
		B64 string `json:"b64"`
	} `json:"content"`
	Shape []int `json:"shape"`
}

type perfData struct {
	Data []map[string]perfEntry `json:"data"`
}

// cmdPerfData writes perf_analyzer input data from the images of a corpus:
// every file with one of the --ext endings under DIR (recursively), or
// under the given subfolders of DIR. Files that Sluice cannot decode (the
// corpus's broken/ folder) are left out, each named on stderr, so that
// every request of a perf run succeeds.
//
// With -b B > 1 perf_analyzer makes a [B, N] tensor of B consecutive
// entries, which must all have the same shape: --pad zero-pads every image
// to the largest one's size (Sluice's decoders ignore the zeros). --bytes
// writes entries for a TYPE_STRING [1] input instead, one BYTES element per
// image, so that images of any sizes batch without padding.
func cmdPerfData(args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("perf-data", flag.ContinueOnError)
	corpus := fset.String("corpus", "", "image folder, walked recursively (required)")
	out := fset.String("o", "", "JSON file to write (required)")
	maxN := fset.Int("max", 0, "at most N images, spread evenly over the sorted list (0: all)")
	input := fset.String("input", "IMAGE", "the model's input name")
	exts := fset.String("ext", ".jpg,.jpeg,.png", "file name endings, comma-separated (any case)")
	pad := fset.Bool("pad", false, "zero-pad every image to the largest's size (for perf_analyzer -b > 1)")
	asBytes := fset.Bool("bytes", false, "entries for a TYPE_STRING [1] input (BYTES elements)")
	pos, err := parse(fset, args, stderr)
	if err != nil {
		return err
	}
	if *corpus == "" {
		return fmt.Errorf("--corpus DIR is required")
	}
	if *out == "" {
		return fmt.Errorf("-o FILE is required")
	}
	if *maxN < 0 {
		return fmt.Errorf("--max must be at least 0")
	}
	if *input == "" {
		return fmt.Errorf("--input must not be empty")
	}
	if *pad && *asBytes {
		return fmt.Errorf("--pad and --bytes exclude each other (BYTES elements batch at any size)")
	}
	endings := map[string]bool{}
	var names []string
	for _, e := range strings.Split(*exts, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if !strings.HasPrefix(e, ".") {
			e = "." + e
		}
		if !endings[e] {
			endings[e] = true
			names = append(names, e)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("--ext names no file ending")
	}
	roots := []string{*corpus}
	from := *corpus // what the summary says the images came from
	if len(pos) > 0 {
		roots = roots[:0]
		for _, sub := range pos {
			roots = append(roots, filepath.Join(*corpus, sub))
		}
		from = strings.Join(pos, ", ")
	}
	var files []string
	for _, root := range roots {
		if st, err := os.Stat(root); err != nil {
			return err
		} else if !st.IsDir() {
			return fmt.Errorf("%s is not a folder", root)
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if endings[strings.ToLower(filepath.Ext(p))] && d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	sort.Strings(files)
	files = dedup(files)

	var blobs [][]byte
	skipped := 0
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := checkImage(b); err != nil {
			skipped++
			fmt.Fprintf(stderr, "sluice perf-data: skipping %s: %s\n", p, oneLine(err.Error()))
			continue
		}
		blobs = append(blobs, b)
	}
	if len(blobs) == 0 {
		return fmt.Errorf("no decodable %s files under %s", strings.Join(names, ", "), strings.Join(roots, ", "))
	}
	if *maxN > 0 && len(blobs) > *maxN {
		// An even spread over the sorted list keeps the corpus's mix of
		// folders and sizes rather than the first N of one folder.
		picked := make([][]byte, *maxN)
		for i := range picked {
			picked[i] = blobs[i*len(blobs) / *maxN]
		}
		blobs = picked
	}
	total, width := 0, 0
	for _, b := range blobs {
		total += len(b)
		width = max(width, len(b))
	}

	var data perfData
	for _, b := range blobs {
		var e perfEntry
		switch {
		case *pad:
			b = append(b[:len(b):len(b)], make([]byte, width-len(b))...)
			e.Shape = []int{width}
		case *asBytes:
			// One BYTES element as perf_analyzer sends it: a 4-byte
			// little-endian length, then the bytes.
			b = append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...)
			e.Shape = []int{1}
		default:
			e.Shape = []int{len(b)} // a UINT8 [-1] input: the shape without the batch dimension
		}
		e.Content.B64 = base64.StdEncoding.EncodeToString(b)
		data.Data = append(data.Data, map[string]perfEntry{*input: e})
	}
	if dir := filepath.Dir(*out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := json.NewEncoder(w).Encode(data); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// One line, which scripts quote as the data's description up to " -> ".
	note := fmt.Sprintf("%d images, mean %.1f kB, from %s", len(blobs), float64(total)/float64(len(blobs))/1000, from)
	if *pad {
		note += fmt.Sprintf(", zero-padded to %.1f kB", float64(width)/1000)
	}
	if *asBytes {
		note += ", as BYTES elements"
	}
	if skipped > 0 {
		note += fmt.Sprintf(", %d skipped (not decodable)", skipped)
	}
	fmt.Fprintf(stdout, "%s -> %s\n", note, *out)
	return nil
}

// checkImage decodes the image the way the backend would (within the
// default limits; JPEGs at 1/8 scale, which still reads every scan).
func checkImage(b []byte) error {
	if len(b) > ops.DefaultLimits.MaxBytes {
		return fmt.Errorf("%d bytes, more than the backend's default limit of %d", len(b), ops.DefaultLimits.MaxBytes)
	}
	_, err := codec.Decode(b, codec.Options{Scale: 1, Limits: ops.DefaultLimits})
	return err
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
