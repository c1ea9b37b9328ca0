package backend

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/sluice-dev/sluice/internal/testimg"
)

const cropsPipeline = "../model_repository/preprocess_crops/1/pipeline.pbtxt"

// cropsConfig is model_repository/preprocess_crops's config, as JSON.
const cropsConfig = `{
  "name": "pre", "backend": "sluice", "max_batch_size": 8,
  "input": [{"name": "IMAGE", "data_type": "TYPE_UINT8", "dims": [-1], "allow_ragged_batch": true},
            {"name": "BOXES", "data_type": "TYPE_FP32", "dims": [8, 4]},
            {"name": "COUNT", "data_type": "TYPE_INT32", "dims": [1]}],
  "output": [{"name": "CROPS", "data_type": "TYPE_FP32", "dims": [8, 3, 224, 224]},
             {"name": "NUM_CROPS", "data_type": "TYPE_INT32", "dims": [1]}],
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
