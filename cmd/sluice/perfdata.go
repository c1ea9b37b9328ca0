package main

import (
	"bufio"
	"encoding/base64"
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
// every .jpg, .jpeg and .png file under DIR (recursively), or under the
// given subfolders of DIR. Files that Sluice cannot decode (the corpus's
// broken/ folder) are left out, each named on stderr, so that every
// request of a perf run succeeds.
func cmdPerfData(args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("perf-data", flag.ContinueOnError)
	corpus := fset.String("corpus", "", "image folder, walked recursively (required)")
	out := fset.String("o", "", "JSON file to write (required)")
	maxN := fset.Int("max", 0, "at most N images, spread evenly over the sorted list (0: all)")
	input := fset.String("input", "IMAGE", "the model's input name")
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
	roots := []string{*corpus}
	if len(pos) > 0 {
		roots = roots[:0]
		for _, sub := range pos {
			roots = append(roots, filepath.Join(*corpus, sub))
		}
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
			switch strings.ToLower(filepath.Ext(p)) {
			case ".jpg", ".jpeg", ".png":
				if d.Type().IsRegular() {
					files = append(files, p)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	sort.Strings(files)
	files = dedup(files)

	var data perfData
	total, skipped := 0, 0
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
		var e perfEntry
		e.Content.B64 = base64.StdEncoding.EncodeToString(b)
		e.Shape = []int{len(b)}
		data.Data = append(data.Data, map[string]perfEntry{*input: e})
		total += len(b)
	}
	if len(data.Data) == 0 {
		return fmt.Errorf("no decodable .jpg, .jpeg or .png files under %s", strings.Join(roots, ", "))
	}
	if *maxN > 0 && len(data.Data) > *maxN {
		// An even spread over the sorted list keeps the corpus's mix of
		// folders and sizes rather than the first N of one folder.
		picked := make([]map[string]perfEntry, *maxN)
		total = 0
		for i := range picked {
			picked[i] = data.Data[i*len(data.Data) / *maxN]
			total += picked[i][*input].Shape[0]
		}
		data.Data = picked
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
	n := len(data.Data)
	fmt.Fprintf(stdout, "%d images (mean %.1f kB, %d skipped) from %s -> %s\n",
		n, float64(total)/float64(n)/1000, skipped, strings.Join(roots, ", "), *out)
	return nil
}

// checkImage decodes the image the way the backend would (within the
// default limits; JPEGs at 1/8 scale, which still reads every scan).
func checkImage(b []byte) error {
	if len(b) > ops.DefaultLimits.MaxBytes {
		return fmt.Errorf("%d bytes, more than the backend's default limit of %d", len(b), ops.DefaultLimits.MaxBytes)
	}
	_, err := codec.Decode(b, codec.Options{Scale: 1, Limits: ops.DefaultLimits.Codec()})
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
