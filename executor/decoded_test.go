package executor

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// decodedPipeline is the repository's ImageNet example for decoded images:
// the encoded one (imagenetFile) less its decode node.
const (
	imagenetFile        = "../model_repository/preprocess_imagenet/1/pipeline.pbtxt"
	imagenetDecodedFile = "../model_repository/preprocess_imagenet_decoded/1/pipeline.pbtxt"
)

func compileFile(t *testing.T, path string) *pipeline.Compiled {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pipeline.CompileText(text, path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pixels decodes an encoded image as the encoded pipeline's decode does
// (RGB, EXIF orientation ignored) and returns it with its shape.
func pixels(t *testing.T, src []byte) ([]byte, []int) {
	t.Helper()
	img, err := codec.Decode(src, codec.Options{Color: codec.RGB})
	if err != nil {
		t.Fatal(err)
	}
	return img.Pix, []int{img.Height, img.Width, 3}
}

// TestDecodedInputEqualsDecode: images of different sizes in one batch
// through the decoded-input pipeline give exactly the encoded pipeline's
// outputs on the same pixels, and so does a BGR input whose normalize
// reorders to RGB.
func TestDecodedInputEqualsDecode(t *testing.T) {
	enc, err := New(compileFile(t, imagenetFile), Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	prog := compileFile(t, imagenetDecodedFile)
	if !prog.Decoded(0) || prog.Spec(pipeline.Ref{Node: pipeline.InputRef}).String() != "UINT8[-1,-1,3] RGB" {
		t.Fatalf("input spec %v", prog.Spec(pipeline.Ref{Node: pipeline.InputRef}))
	}
	dec, err := New(prog, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()

	jpegs := [][]byte{testimg.JPEG(300, 200, 1), testimg.JPEG(123, 345, 2), testimg.JPEG(257, 256, 3), testimg.JPEG(40, 31, 4)}
	want, err := enc.Run([][][]byte{jpegs})
	if err != nil {
		t.Fatal(err)
	}
	wantPix := bytes.Clone(want.Outputs[0].Data)
	var px [][]byte
	var dims [][]int
	for _, j := range jpegs {
		p, d := pixels(t, j)
		px, dims = append(px, p), append(dims, d)
	}
	r := NewResult(prog)
	if err := RunShaped(dec, [][][]byte{px}, [][][]int{dims}, r); err != nil {
		t.Fatal(err)
	}
	for s, err := range r.Errs {
		if err != nil {
			t.Fatalf("sample %d: %v", s, err)
		}
	}
	if !bytes.Equal(r.Outputs[0].Data, wantPix) {
		t.Fatal("decoded-input outputs differ from decode + the same pipeline")
	}

	// BGR pixels declared BGR, normalize putting them back in RGB order.
	text, _ := os.ReadFile(imagenetDecodedFile)
	bgrText := strings.Replace(string(text), `color: "RGB"`, `color: "BGR"`, 1)
	bgrText = strings.Replace(bgrText, `arg { name: "layout" str: "CHW" }`, `arg { name: "layout" str: "CHW" } arg { name: "order" str: "RGB" }`, 1)
	bgrProg, err := pipeline.CompileText([]byte(bgrText), "bgr.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	bgr, err := New(bgrProg, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer bgr.Close()
	swapped := make([][]byte, len(px))
	for i, p := range px {
		q := bytes.Clone(p)
		for k := 0; k+2 < len(q); k += 3 {
			q[k], q[k+2] = q[k+2], q[k]
		}
		swapped[i] = q
	}
	rb := NewResult(bgrProg)
	if err := RunShaped(bgr, [][][]byte{swapped}, [][][]int{dims}, rb); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rb.Outputs[0].Data, wantPix) {
		t.Error("BGR input with order RGB differs from the RGB pipeline")
	}
}

// TestDecodedInputRefusals: a shape that does not match the bytes, the
// wrong channel count, an empty image, no shape, and an image over
// max_image_pixels or over its budget each fail their own sample only,
// naming the shape; the good samples around them are right.
func TestDecodedInputRefusals(t *testing.T) {
	prog := compileFile(t, imagenetDecodedFile)
	e, err := New(prog, Options{Workers: 2, Limits: ops.WithPixels(ops.DefaultLimits, 320*320)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	good, gd := pixels(t, testimg.JPEG(60, 50, 1))
	alone := NewResult(prog)
	if err := RunShaped(e, [][][]byte{{good}}, [][][]int{{gd}}, alone); err != nil || alone.Errs[0] != nil {
		t.Fatal(err, alone.Errs)
	}
	want := bytes.Clone(alone.Outputs[0].Data)

	big := make([]byte, 321*320*3)
	cases := []struct {
		px   []byte
		dims []int
		msg  string
	}{
		{good, gd, ""},
		{good[:len(good)-1], gd, "shape [50 60 3] does not match the 8999 bytes of data"},
		{make([]byte, 50*60*4), []int{50, 60, 4}, "shape [50 60 4] has 4 channels, but the pipeline declares color RGB (3)"},
		{nil, []int{0, 60, 3}, "is an empty image"},
		{good, nil, "shape [] is not [height, width, channels]"},
		{big, []int{321, 320, 3}, "image is 320x321 (102720 pixels), over the limit of 102400 (max_image_pixels)"},
		{good, gd, ""},
	}
	var px [][]byte
	var dims [][]int
	for _, c := range cases {
		px, dims = append(px, c.px), append(dims, c.dims)
	}
	r := NewResult(prog)
	if err := RunShaped(e, [][][]byte{px}, [][][]int{dims}, r); err != nil {
		t.Fatal(err)
	}
	n := e.SampleBytes(0)
	for s, c := range cases {
		row := r.Outputs[0].Data[s*n : (s+1)*n]
		if c.msg == "" {
			if r.Errs[s] != nil || !bytes.Equal(row, want) {
				t.Errorf("sample %d: %v, or its output differs from the image alone", s, r.Errs[s])
			}
			continue
		}
		var se *SampleError
		if !errors.As(r.Errs[s], &se) || se.Node != "FRAME" || !strings.Contains(se.Err.Error(), c.msg) {
			t.Errorf("sample %d: %v, want a SampleError of FRAME with %q", s, r.Errs[s], c.msg)
		}
		if !bytes.Equal(row, make([]byte, n)) {
			t.Errorf("sample %d: a refused sample's output is not zero", s)
		}
	}

	// The request's pixel budget, as decode draws an encoded image's.
	var b ops.Budget
	b.Reset("request", ops.Quota{MaxPixels: 2*50*60 - 1}, nil)
	dst := [][]Dest{{{Host: make([]byte, n)}, {Host: make([]byte, n)}}}
	errs := make([]error, 2)
	if err := e.RunShaped([][][]byte{{good, good}}, [][][]int{{gd, gd}}, dst, errs, []*ops.Budget{&b, &b}); err != nil {
		t.Fatal(err)
	}
	if (errs[0] == nil) == (errs[1] == nil) || !strings.Contains(errors.Join(errs...).Error(), "max_request_pixels") {
		t.Errorf("budget of one and a bit images: %v", errs)
	}

	// Without shapes at all, every sample of a decoded input fails; the
	// call itself is well formed.
	if err := Run(e, [][][]byte{{good}}, r); err != nil || r.Errs[0] == nil {
		t.Errorf("Run without shapes: %v, %v", err, r.Errs)
	}
}
