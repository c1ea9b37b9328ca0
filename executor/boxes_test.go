package executor

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/pipeline"
)

func boxBytes(rows ...[4]float32) []byte {
	var b []byte
	for _, r := range rows {
		for _, v := range r {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return b
}

func int32Bytes(n int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(n)) }

func boxesPipeline(t *testing.T, input, decode string) *pipeline.Compiled {
	t.Helper()
	c, err := pipeline.CompileText([]byte(`version: 1 `+input+`
		input { name: "BOXES" boxes { max: 3 coords: "pixel" } } input { name: "COUNT" count_of: "BOXES" } `+decode+`
		node { op: "crop_boxes" input: ["`+map[bool]string{true: "decode", false: "IMAGE"}[decode != ""]+`", "BOXES"] arg { name: "size" ints { v: [20, 30] } } }
		node { op: "normalize" arg { name: "mean" floats { v: [1] } } }
		output { name: "CROPS" } output { name: "N" source: "crop_boxes:count" }`), "b.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBoxesCount: a count input marks the rows at and past it unused
// (zeros through normalize, not counted) without touching the request's
// bytes; a count outside 0..max, and boxes of the wrong shape or size,
// fail their sample only, naming the input.
func TestBoxesCount(t *testing.T) {
	prog := boxesPipeline(t, `input { name: "IMAGE" }`, `node { op: "decode" input: "IMAGE" }`)
	e, err := New(prog, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	src, err := os.ReadFile("../../shared/corpus/jpeg/exif/derived_seeding_orient6.jpg")
	if err != nil {
		t.Skip(err)
	}
	rows := boxBytes([4]float32{1, 2, 40, 30}, [4]float32{10, 10, 60, 50}, [4]float32{0, 0, 20, 20})
	keep := append([]byte(nil), rows...)
	in := [][][]byte{{src, src, src, src, src}, {rows, rows, rows, rows[:40], rows}, {int32Bytes(3), int32Bytes(1), int32Bytes(4), int32Bytes(3), int32Bytes(-1)}}
	r := NewResult(prog)
	if err := RunShaped(e, in, [][][]int{nil, {{3, 4}, {3, 4}, {3, 4}, {3, 4}, {3, 5}}, nil}, r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rows, keep) {
		t.Fatal("the count was applied to the request's own buffer")
	}
	crop := len(r.Outputs[0].Data) / 5 / 3
	sample := func(s int) []byte { return r.Outputs[0].Data[s*3*crop : (s+1)*3*crop] }
	count := func(s int) int32 { return int32(binary.LittleEndian.Uint32(r.Outputs[1].Data[4*s:])) }
	if r.Errs[0] != nil || r.Errs[1] != nil || count(0) != 3 || count(1) != 1 {
		t.Fatalf("errs %v, counts %d %d", r.Errs[:2], count(0), count(1))
	}
	if !bytes.Equal(sample(1)[:crop], sample(0)[:crop]) || !allZeros(sample(1)[crop:]) || allZeros(sample(0)[2*crop:]) {
		t.Error("count 1: row 0 is not sample 0's, or rows 1 and 2 are not zeros")
	}
	for s, want := range map[int]string{
		2: "COUNT: invalid input: count 4 is outside 0..3",
		3: "BOXES: invalid input: 40 bytes of data, but FP32[3,4] pixel is 48 bytes",
		4: "BOXES: invalid input: shape [3 5], but the pipeline declares FP32[3,4] pixel",
	} {
		if r.Errs[s] == nil || !strings.Contains(r.Errs[s].Error(), want) {
			t.Errorf("sample %d: %v, want %q", s, r.Errs[s], want)
		}
	}
}

func allZeros(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// TestBoxesOriented: pixel boxes are in the decoded, oriented image's
// coordinates: cropping an EXIF-rotated JPEG decoded with orient gives the
// crops of the same boxes on the rotated pixels fed as a decoded image.
func TestBoxesOriented(t *testing.T) {
	src, err := os.ReadFile("../../shared/corpus/jpeg/exif/derived_seeding_orient6.jpg")
	if err != nil {
		t.Skip(err)
	}
	img, err := codec.Decode(src, codec.Options{Color: codec.RGB, Orient: true})
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := codec.Decode(src, codec.Options{Color: codec.RGB}); err != nil || raw.Width != img.Height || raw.Height != img.Width {
		t.Fatalf("orientation 6 should swap width and height: %v", err)
	}
	rows := boxBytes([4]float32{1.5, 2, float32(img.Width) - 3, 70.25}, [4]float32{5, float32(img.Height) / 2, 50, float32(img.Height) + 9}, [4]float32{0, 0, 8, 8})
	run := func(prog *pipeline.Compiled, in [][][]byte, dims [][][]int) []byte {
		e, err := New(prog, Options{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		r := NewResult(prog)
		if err := RunShaped(e, in, dims, r); err != nil || r.Errs[0] != nil {
			t.Fatal(err, r.Errs[0])
		}
		return append([]byte(nil), r.Outputs[0].Data...)
	}
	oriented := run(boxesPipeline(t, `input { name: "IMAGE" }`, `node { op: "decode" input: "IMAGE" arg { name: "orient" bool: true } }`),
		[][][]byte{{src}, {rows}, {int32Bytes(3)}}, nil)
	decoded := run(boxesPipeline(t, `input { name: "IMAGE" layout: "HWC" color: "RGB" }`, ""),
		[][][]byte{{img.Pix}, {rows}, {int32Bytes(3)}}, [][][]int{{{img.Height, img.Width, 3}}, nil, nil})
	stored := run(boxesPipeline(t, `input { name: "IMAGE" }`, `node { op: "decode" input: "IMAGE" arg { name: "orient" bool: false } }`),
		[][][]byte{{src}, {rows}, {int32Bytes(3)}}, nil)
	if !bytes.Equal(oriented, decoded) {
		t.Error("crops of the oriented decode differ from those of the oriented pixels")
	}
	if bytes.Equal(oriented, stored) {
		t.Error("orient made no difference: the test shows nothing")
	}
}
