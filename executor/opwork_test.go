package executor

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// TestOperatorWorkBudget: an operator's work is drawn on the request's
// budget with the images' decode: two images whose resampling each fits
// the request's max_request_work but not together fail the second,
// naming the operator and the limit, while the first is served.
func TestOperatorWorkBudget(t *testing.T) {
	prog, err := pipeline.CompileText([]byte(`version: 1 input { name: "FRAME" layout: "HWC" color: "RGB" }
		node { op: "letterbox" arg { name: "size" ints { v: [320, 320] } } }
		output { name: "PIXELS" source: "letterbox" }`), "w.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(prog, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const h, w = 480, 640
	img, dims := make([]byte, h*w*3), []int{h, w, 3}
	n := e.SampleBytes(0)
	run := func(b *ops.Budget) []error {
		dst := [][]Dest{{{Host: make([]byte, n)}, {Host: make([]byte, n)}}}
		errs := make([]error, 2)
		if err := e.RunShaped([][][]byte{{img, img}}, [][][]int{{dims, dims}}, dst, errs, []*ops.Budget{b, b}); err != nil {
			t.Fatal(err)
		}
		return errs
	}
	// What one image's letterbox charges: a decoded input draws no work.
	var probe ops.Budget
	probe.Reset("request", ops.Quota{}, nil)
	if errs := run(&probe); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	_, work := probe.Used()
	work /= 2
	if work < h*w {
		t.Fatalf("letterbox of %dx%d charged %d units", w, h, work)
	}
	var b ops.Budget
	b.Reset("request", ops.Quota{MaxWork: 2*work - 1}, nil)
	errs := run(&b)
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("want exactly one image over the request's work (each needs %d units): %v", work, errs)
	}
	for _, err := range errs {
		var se *SampleError
		if err != nil && (!errors.As(err, &se) || se.Node != "letterbox" || ops.CauseOf(err) != ops.TooLarge ||
			!strings.Contains(err.Error(), "units of decode and operator work, the limit max_request_work")) {
			t.Errorf("%v: want letterbox refused, naming max_request_work", err)
		}
	}
	b.Reset("request", ops.Quota{MaxWork: 2 * work}, nil)
	if errs := run(&b); errors.Join(errs...) != nil {
		t.Errorf("a budget of exactly two images: %v", errs)
	}
}

// TestCropBoxesHostileRequest: a decoded 8192x8192 image with 256
// whole-image boxes, through the executor at the default limits, is
// refused in milliseconds naming crop_boxes and max_image_work; the same
// request with a few boxes is served.
func TestCropBoxesHostileRequest(t *testing.T) {
	prog, err := pipeline.CompileText([]byte(`version: 1 input { name: "IMAGE" layout: "HWC" color: "RGB" }
		input { name: "BOXES" boxes { max: 256 coords: "relative" } }
		node { op: "crop_boxes" input: ["IMAGE", "BOXES"] arg { name: "size" ints { v: [64, 64] } } }
		output { name: "CROPS" source: "crop_boxes:crops" } output { name: "N" source: "crop_boxes:count" }`), "b.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(prog, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const side = 8192
	img := make([]byte, side*side*3) // untouched zeros: never read when refused
	whole := make([][4]float32, 256)
	nan := float32(math.NaN())
	few := make([][4]float32, 256)
	for k := range whole {
		whole[k] = [4]float32{0, 0, 1, 1}
		few[k] = [4]float32{nan, nan, nan, nan}
	}
	few[0], few[1] = [4]float32{0.1, 0.1, 0.2, 0.3}, [4]float32{0.5, 0.5, 0.52, 0.51}
	r := NewResult(prog)
	start := time.Now()
	in := [][][]byte{{img, img}, {boxBytes(whole...), boxBytes(few...)}}
	if err := RunShaped(e, in, [][][]int{{{side, side, 3}, {side, side, 3}}, nil}, r); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	var se *SampleError
	if err := r.Errs[0]; !errors.As(err, &se) || se.Node != "crop_boxes" || ops.CauseOf(err) != ops.TooLarge ||
		!strings.Contains(err.Error(), "max_image_work") || !strings.Contains(err.Error(), "256 boxes of the 8192x8192 image") {
		t.Errorf("256 whole-image boxes: %v, want crop_boxes refused naming max_image_work", err)
	}
	if r.Errs[1] != nil {
		t.Errorf("two small boxes: %v", r.Errs[1])
	}
	t.Logf("%v; the request took %v", r.Errs[0], took)
	if took > time.Second {
		t.Errorf("the request took %v", took)
	}
}
