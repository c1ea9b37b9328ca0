package backend

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/ops"
)

const cropsPipeline = "../model_repository/preprocess_crops/1/pipeline.pbtxt"

// cropsConfig is model_repository/preprocess_crops's config, as JSON.
const cropsConfig = `{
  "name": "pre", "backend": "sluice", "max_batch_size": 8,
  "input": [{"name": "IMAGE", "data_type": "TYPE_UINT8", "dims": [-1], "allow_ragged_batch": true},
            {"name": "BOXES", "data_type": "TYPE_FP32", "dims": [8, 4]},
            {"name": "COUNT", "data_type": "TYPE_INT32", "dims": [1]}],
  "output": [{"name": "CROPS", "data_type": "TYPE_FP32", "dims": [8, 3, 224, 224]},
             {"name": "NUM_CROPS", "data_type": "TYPE_INT32", "dims": [1]},
             {"name": "CROP_BOXES", "data_type": "TYPE_FP32", "dims": [8, 4]}],
  "dynamic_batching": {},
  "parameters": {"workers": {"string_value": "2"}}
}`

func cropsDir(t testing.TB) string {
	return modelDir(t, map[string][]byte{TextFile: readFileT(t, cropsPipeline)})
}

func boxesInput(b int, rows ...[4]float32) Input {
	var data []byte
	for range b {
		for k := range 8 {
			r := [4]float32{float32(math.NaN()), 0, 0, 0}
			if k < len(rows) {
				r = rows[k]
			}
			for _, v := range r {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
			}
		}
	}
	return Input{DataType: "FP32", Shape: []int64{int64(b), 8, 4}, Data: data}
}

func countInput(n ...int32) Input {
	var data []byte
	for _, x := range n {
		data = binary.LittleEndian.AppendUint32(data, uint32(x))
	}
	return Input{DataType: "INT32", Shape: []int64{int64(len(n)), 1}, Data: data}
}

func cropRequest(img []byte, boxes, count Input) *fakeRequest {
	return &fakeRequest{inputs: map[string]Input{"IMAGE": rawInput(img), "BOXES": boxes, "COUNT": count}}
}

// TestExecuteBoxes: requests with boxes and counts answer the crops and
// their count; boxes of another shape, bytes that do not match the shape, a
// wrong data type and a count out of range fail alone, naming the input.
func TestExecuteBoxes(t *testing.T) {
	m := mustLoad(t, cropsDir(t), cropsConfig)
	inst := mustInstance(t, m)
	img := testimg.JPEG(120, 90, 1)
	rows := [][4]float32{{0.1, 0.1, 0.6, 0.7}, {0.5, 0.2, 1.1, 0.9}, {0, 0, 0.3, 0.3}}
	short := boxesInput(1, rows...)
	short.Data = short.Data[:100]
	wide := boxesInput(1, rows...)
	wide.Shape = []int64{1, 8, 5}
	ints := boxesInput(1, rows...)
	ints.DataType = "INT32"
	reqs := []Request{
		cropRequest(img, boxesInput(1, rows...), countInput(3)),
		cropRequest(img, boxesInput(1, rows...), countInput(2)),
		cropRequest(img, short, countInput(3)),
		cropRequest(img, wide, countInput(3)),
		cropRequest(img, ints, countInput(3)),
		cropRequest(img, boxesInput(1, rows...), countInput(9)),
	}
	resps := make([]*fakeResponse, len(reqs))
	for i := range resps {
		resps[i] = newResponse()
	}
	errs, _ := inst.Execute(reqs, asResponses(resps))
	for _, i := range []int{0, 1} {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
	}
	n := func(r *fakeResponse) uint32 { return binary.LittleEndian.Uint32(r.outputs["NUM_CROPS"].data) }
	if n(resps[0]) != 3 || n(resps[1]) != 2 {
		t.Errorf("NUM_CROPS %d %d, want 3 2", n(resps[0]), n(resps[1]))
	}
	crops0, crops1 := resps[0].outputs["CROPS"].data, resps[1].outputs["CROPS"].data
	row := 3 * 224 * 224 * 4
	if string(crops0[:2*row]) != string(crops1[:2*row]) || string(crops1[2*row:3*row]) != string(make([]byte, row)) {
		t.Error("count 2: the first two crops should be count 3's, the third zeros")
	}
	// CROP_BOXES: the relative boxes in the 120x90 image's pixels, the
	// second clipped at its right edge; NaN past the count.
	box := func(r *fakeResponse, k int) [4]float32 {
		var b [4]float32
		for i := range b {
			b[i] = math.Float32frombits(binary.LittleEndian.Uint32(r.outputs["CROP_BOXES"].data[16*k+4*i:]))
		}
		return b
	}
	px := func(v float32, side int) float32 { return float32(float64(v) * float64(side)) }
	for k, r := range rows {
		want := [4]float32{px(r[0], 120), px(r[1], 90), min(px(r[2], 120), 120), min(px(r[3], 90), 90)}
		if got := box(resps[0], k); got != want {
			t.Errorf("CROP_BOXES row %d: %v, want %v", k, got, want)
		}
	}
	if got := box(resps[1], 2); got[0] == got[0] {
		t.Errorf("CROP_BOXES row 2 past the count: %v, want NaN", got)
	}
	wantError(t, errs[2], CodeInvalidArg, "input BOXES: 100 bytes of data, but shape [1 8 4] of FP32 is 128 bytes")
	wantError(t, errs[3], CodeInvalidArg, "input BOXES: shape [1 8 5], want [batch, 8, 4]: boxes, rows x1, y1, x2, y2, FP32[8,4] relative per image")
	wantError(t, errs[4], CodeInvalidArg, "input BOXES: data type INT32, the model takes FP32")
	wantError(t, errs[5], CodeInvalidArg, "COUNT element 0: invalid input: COUNT: count 9 is outside 0..8")
}

// TestBoxesConfig: auto-complete gives boxes and count inputs their fixed
// type and dims, and the crops' outputs theirs; validation names the input
// and what the pipeline declares.
func TestBoxesConfig(t *testing.T) {
	m, err := load(t, cropsDir(t), "{}", true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"dynamic_batching":{},` +
		`"input":[{"allow_ragged_batch":true,"data_type":"TYPE_UINT8","dims":[-1],"name":"IMAGE"},` +
		`{"data_type":"TYPE_FP32","dims":[8,4],"name":"BOXES"},{"data_type":"TYPE_INT32","dims":[1],"name":"COUNT"}],` +
		`"max_batch_size":`
	if got := string(m.NewConfig); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("auto-complete gave\n%s\nwant it to start\n%s", got, want)
	}
	for _, c := range []struct {
		in   int
		edit func(in map[string]any)
		want string
	}{
		{1, func(in map[string]any) { in["dims"] = []any{-1, 4} }, `config input "BOXES": data_type TYPE_FP32 dims [-1, 4], but pipeline.pbtxt declares it boxes, FP32[8,4] relative: give data_type TYPE_FP32 dims [8, 4]`},
		{2, func(in map[string]any) { in["data_type"] = "TYPE_FP32" }, `config input "COUNT": data_type TYPE_FP32 dims [1], but pipeline.pbtxt declares it the count of input "BOXES", INT32[1]: give data_type TYPE_INT32 dims [1]`},
	} {
		cfg := editConfig(t, cropsConfig, func(m map[string]any) { c.edit(entry(m, "input", c.in)) })
		_, err := load(t, cropsDir(t), cfg, false)
		wantError(t, err, CodeInvalidArg, c.want)
	}
	cfg := editConfig(t, cropsConfig, func(m map[string]any) { m["input"] = m["input"].([]any)[:1] })
	_, err = load(t, cropsDir(t), cfg, false)
	wantError(t, err, CodeInvalidArg, `pipeline input "BOXES" has no config input: add input { name: "BOXES" data_type: TYPE_FP32 dims: [8, 4] }`,
		`pipeline input "COUNT" has no config input: add input { name: "COUNT" data_type: TYPE_INT32 dims: [1] }`)
}

// FuzzBoxes: any boxes bytes, shape and count fail their request with an
// invalid-argument error or give at most max crops; none takes the
// instance down.
func FuzzBoxes(f *testing.F) {
	m := mustLoad(f, cropsDir(f), cropsConfig)
	inst := mustInstance(f, m)
	img := testimg.JPEG(40, 30, 2)
	good := boxesInput(1, [4]float32{0.1, 0.1, 0.9, 0.9}).Data
	f.Add(good, int64(8), int64(4), int32(1))
	f.Add(good, int64(8), int64(4), int32(-3))
	f.Add(good[:64], int64(4), int64(4), int32(2))
	f.Add(append(good, good...), int64(16), int64(4), int32(8))
	f.Add([]byte{0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff}, int64(8), int64(4), int32(8))
	f.Fuzz(func(t *testing.T, data []byte, rows, cols int64, count int32) {
		boxes := Input{DataType: "FP32", Shape: []int64{1, rows, cols}, Data: data}
		resp := newResponse()
		errs, _ := inst.Execute([]Request{cropRequest(img, boxes, countInput(count))}, asResponses([]*fakeResponse{resp}))
		if errs[0] != nil {
			wantError(t, errs[0], CodeInvalidArg)
			return
		}
		if n := binary.LittleEndian.Uint32(resp.outputs["NUM_CROPS"].data); n > 8 {
			t.Fatalf("NUM_CROPS %d", n)
		}
	})
}

// TestRequestedOutputs: a request gets the outputs it names and no
// others, with the same values as a request that names none; IMAGE_OK and
// IMAGE_ERROR likewise under image_errors "mark".
func TestRequestedOutputs(t *testing.T) {
	m := mustLoad(t, cropsDir(t), cropsConfig)
	inst := mustInstance(t, m)
	img := testimg.JPEG(120, 90, 1)
	rows := [][4]float32{{0.1, 0.1, 0.6, 0.7}, {0.5, 0.2, 1.1, 0.9}}
	ask := func(outputs ...string) *fakeRequest {
		r := cropRequest(img, boxesInput(1, rows...), countInput(2))
		r.outputs = outputs
		return r
	}
	reqs := []Request{ask(), ask("NUM_CROPS"), ask("CROPS")}
	resps := []*fakeResponse{newResponse(), newResponse(), newResponse()}
	errs, _ := inst.Execute(reqs, asResponses(resps))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	names := func(r *fakeResponse) string {
		var s []string
		for name := range r.outputs {
			s = append(s, name)
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	for i, want := range []string{"CROPS CROP_BOXES NUM_CROPS", "NUM_CROPS", "CROPS"} {
		if got := names(resps[i]); got != want {
			t.Errorf("request %d: outputs %q, want %q", i, got, want)
		}
	}
	if !bytes.Equal(resps[1].outputs["NUM_CROPS"].data, resps[0].outputs["NUM_CROPS"].data) ||
		!bytes.Equal(resps[2].outputs["CROPS"].data, resps[0].outputs["CROPS"].data) {
		t.Error("an output asked for alone differs from the same output of a request that names none")
	}

	mark, err := load(t, imagenetDir(t), editConfig(t, bytesConfig, func(m map[string]any) {
		m["parameters"] = map[string]any{"image_errors": map[string]any{"string_value": "mark"}}
	}), true)
	if err != nil {
		t.Fatal(err)
	}
	minst := mustInstance(t, mark)
	broken := testimg.JPEG(80, 80, 4)
	broken = broken[:len(broken)/2]
	for _, c := range []struct {
		ask  []string
		want string
	}{
		{[]string{"PIXELS"}, "PIXELS"},
		{[]string{OutputImageOK}, OutputImageOK},
		{[]string{OutputImageError}, OutputImageError},
		{nil, "IMAGE_ERROR IMAGE_OK PIXELS"},
	} {
		r := request("IMAGE", bytesInput(img, broken))
		r.outputs = c.ask
		resp := newResponse()
		errs, _ := minst.Execute([]Request{r}, asResponses([]*fakeResponse{resp}))
		if errs[0] != nil {
			t.Fatalf("asking %v: %v", c.ask, errs[0])
		}
		if got := names(resp); got != c.want {
			t.Errorf("asking %v: outputs %q, want %q", c.ask, got, c.want)
		}
		// The broken image is marked whatever else is asked for: its
		// steps ran.
		if ok := resp.outputs[OutputImageOK]; ok != nil && string(ok.data) != "\x01\x00" {
			t.Errorf("asking %v: IMAGE_OK %v, want [1 0]", c.ask, ok.data)
		}
	}
}

// TestCancelledRequest: a request its client cancelled is answered
// CodeCancelled without being run; the others of its batch are served.
func TestCancelledRequest(t *testing.T) {
	m := mustLoad(t, cropsDir(t), cropsConfig)
	inst := mustInstance(t, m)
	img := testimg.JPEG(120, 90, 1)
	gone := cropRequest(img, boxesInput(1, [4]float32{0, 0, 1, 1}), countInput(1))
	gone.cancelled = true
	reqs := []Request{gone, cropRequest(img, boxesInput(1, [4]float32{0, 0, 1, 1}), countInput(1))}
	resps := []*fakeResponse{newResponse(), newResponse()}
	errs, st := inst.Execute(reqs, asResponses(resps))
	wantError(t, errs[0], CodeCancelled, "cancelled")
	if errs[1] != nil {
		t.Fatalf("the request beside it: %v", errs[1])
	}
	if st.Samples != 1 {
		t.Errorf("%d samples ran, want 1", st.Samples)
	}
}

// goneAfter is a request whose client goes away once it has been asked
// n times whether it has.
type goneAfter struct {
	*fakeRequest
	n atomic.Int32
}

func (r *goneAfter) Cancelled() bool { return r.n.Add(-1) < 0 }

// TestCancelledWhileRunning: a request cancelled after its images were
// collected stops drawing on its budget: its remaining images do not run
// (counted as cancelled), and it is answered CodeCancelled.
func TestCancelledWhileRunning(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), bytesConfig)
	inst := mustInstance(t, m)
	imgs := make([][]byte, 8)
	for i := range imgs {
		imgs[i] = testimg.JPEG(200, 150, i)
	}
	r := &goneAfter{fakeRequest: request("IMAGE", bytesInput(imgs...))}
	r.n.Store(1) // collect asks once; the images' budget finds it gone
	errs, st := inst.Execute([]Request{r}, asResponses([]*fakeResponse{newResponse()}))
	wantError(t, errs[0], CodeCancelled, "cancelled")
	if got := st.Images.Failures[causeIndex(ops.Cancelled)]; got != len(imgs) || st.Images.Images != 0 {
		t.Errorf("images %+v: want all %d cancelled, none decoded", st.Images, len(imgs))
	}
}

// TestMarkOK: image_errors "mark_ok" answers like "mark" with IMAGE_OK
// alone: the model has no string output for Triton to classify.
func TestMarkOK(t *testing.T) {
	cfg := editConfig(t, bytesConfig, func(m map[string]any) {
		m["parameters"] = map[string]any{"image_errors": map[string]any{"string_value": "mark_ok"}}
	})
	m, err := load(t, imagenetDir(t), cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	if c := string(m.NewConfig); !strings.Contains(c, `"IMAGE_OK"`) || strings.Contains(c, `"IMAGE_ERROR"`) {
		t.Errorf("auto-complete: want IMAGE_OK and no IMAGE_ERROR: %s", c)
	}
	inst := mustInstance(t, m)
	broken := testimg.JPEG(80, 80, 4)
	resp := newResponse()
	errs, _ := inst.Execute([]Request{request("IMAGE", bytesInput(testimg.JPEG(64, 48, 1), broken[:len(broken)/2]))},
		asResponses([]*fakeResponse{resp}))
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if resp.outputs[OutputImageError] != nil {
		t.Error("mark_ok answered IMAGE_ERROR")
	}
	if ok := resp.outputs[OutputImageOK]; ok == nil || string(ok.data) != "\x01\x00" {
		t.Errorf("IMAGE_OK %+v, want [1 0]", ok)
	}
	// A config that still lists IMAGE_ERROR is refused.
	with := editConfig(t, cfg, func(m map[string]any) {
		m["output"] = []any{
			map[string]any{"name": "PIXELS", "data_type": "TYPE_FP32", "dims": []any{3, 224, 224}},
			map[string]any{"name": "IMAGE_OK", "data_type": "TYPE_BOOL", "dims": []any{1}},
			map[string]any{"name": "IMAGE_ERROR", "data_type": "TYPE_STRING", "dims": []any{1}},
		}
	})
	_, err = load(t, imagenetDir(t), with, false)
	wantError(t, err, CodeInvalidArg, `"IMAGE_ERROR"`)
}
