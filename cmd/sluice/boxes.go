package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-dev/sluice/cmd/sluice/npy"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// runBoxes is what sluice run feeds a pipeline's boxes input and its
// count from --boxes: the same rows for every image, or rows by file name.
type runBoxes struct {
	input, count int // input indexes; count -1 when there is none
	max          int
	all          [][4]float32            // for every image, or nil
	byName       map[string][][4]float32 // by file name (base, or as given)
}

// loadBoxes reads --boxes for prog: nil when the pipeline has no boxes
// input, an error when it has one and file is empty or unreadable.
func loadBoxes(file string, prog *pipeline.Compiled) (*runBoxes, error) {
	rb := &runBoxes{input: -1, count: -1}
	for i := range prog.Inputs {
		if prog.InputSpecs[i].IsBoxes() {
			if rb.input >= 0 {
				return nil, fmt.Errorf("the pipeline has more than one boxes input; run feeds one (--boxes)")
			}
			rb.input, rb.count, rb.max = i, prog.CountFor(i), prog.InputSpecs[i].Dims[0]
		}
	}
	switch {
	case rb.input < 0 && file != "":
		return nil, fmt.Errorf("--boxes: the pipeline has no boxes input")
	case rb.input < 0:
		return nil, nil
	case file == "":
		return nil, fmt.Errorf("the pipeline's input %s takes boxes: give them with --boxes FILE (JSON [[x1, y1, x2, y2], ...] or .npy [N, 4])", prog.Inputs[rb.input])
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--boxes: %v", err)
	}
	if strings.EqualFold(filepath.Ext(file), ".npy") {
		dt, shape, data, err := npy.Read(b)
		if err != nil {
			return nil, fmt.Errorf("--boxes %s: %v", file, err)
		}
		if dt != ops.Float32 || len(shape) != 2 || shape[1] != 4 {
			return nil, fmt.Errorf("--boxes %s: %v %v, want FP32 [N, 4]: rows x1, y1, x2, y2", file, dt, shape)
		}
		for k := range shape[0] {
			var r [4]float32
			for i := range r {
				r[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[16*k+4*i:]))
			}
			rb.all = append(rb.all, r)
		}
	} else {
		// Decoded as lists of any length, then checked: a [4]float32 would
		// take a short row and pad it with zeros.
		var list [][]float32
		var byName map[string][][]float32
		if err := json.Unmarshal(b, &list); err != nil {
			if err2 := json.Unmarshal(b, &byName); err2 != nil {
				return nil, fmt.Errorf("--boxes %s: neither a JSON list of [x1, y1, x2, y2] rows (%v) nor an object of such lists by image file name (%v)", file, err, err2)
			}
			rb.byName = map[string][][4]float32{}
			for name, l := range byName {
				if rb.byName[name], err = fours(l); err != nil {
					return nil, fmt.Errorf("--boxes %s: %s: %v", file, name, err)
				}
			}
		} else if rb.all, err = fours(list); err != nil {
			return nil, fmt.Errorf("--boxes %s: %v", file, err)
		}
	}
	if rb.all != nil && len(rb.all) > rb.max {
		return nil, fmt.Errorf("--boxes %s: %d rows, over the %d of input %s (boxes max)", file, len(rb.all), rb.max, prog.Inputs[rb.input])
	}
	return rb, nil
}

// fours checks that every row has 4 values.
func fours(l [][]float32) ([][4]float32, error) {
	out := make([][4]float32, len(l))
	for k, r := range l {
		if len(r) != 4 {
			return nil, fmt.Errorf("row %d has %d values, not the 4 of x1, y1, x2, y2", k, len(r))
		}
		out[k] = [4]float32(r)
	}
	return out, nil
}

// fill sets sample i's boxes (and count) in in for the image at path p.
func (rb *runBoxes) fill(in [][][]byte, i int, p string) error {
	rows := rb.all
	if rb.byName != nil {
		var ok bool
		if rows, ok = rb.byName[p]; !ok {
			if rows, ok = rb.byName[filepath.Base(p)]; !ok {
				return fmt.Errorf("--boxes has no rows for %s (by its path or file name)", p)
			}
		}
		if len(rows) > rb.max {
			return fmt.Errorf("--boxes: %d rows for %s, over the input's max of %d", len(rows), p, rb.max)
		}
	}
	b := make([]byte, 16*rb.max)
	nan := math.Float32bits(float32(math.NaN()))
	for k := range rb.max {
		for c := range 4 {
			v := nan
			if k < len(rows) {
				v = math.Float32bits(rows[k][c])
			}
			binary.LittleEndian.PutUint32(b[16*k+4*c:], v)
		}
	}
	in[rb.input][i] = b
	if rb.count >= 0 {
		in[rb.count][i] = binary.LittleEndian.AppendUint32(nil, uint32(len(rows)))
	}
	return nil
}
