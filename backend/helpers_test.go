package backend

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/executor"
)

// imagenetPipeline is the repository's example, which the tests copy into
// a temporary model folder.
const imagenetPipeline = "../model_repository/preprocess_imagenet/1/pipeline.pbtxt"

// twoInputPipeline reads two images per sample, to test what several
// inputs share: one batch size per request, and blame by input.
const twoInputPipeline = `
version: 1
name: "two"
input { name: "A" }
input { name: "B" }
node { name: "da" op: "decode" input: "A" }
node { name: "ra" op: "resize" input: "da" arg { name: "size" ints { v: [8, 8] } } }
node { name: "db" op: "decode" input: "B" }
node { name: "rb" op: "resize" input: "db" arg { name: "size" ints { v: [4, 4] } } }
output { name: "OA" source: "ra" }
output { name: "OB" source: "rb" }
`

// goodConfig is a complete, valid config of the ImageNet model.
const goodConfig = `{
  "name": "pre", "backend": "sluice", "max_batch_size": 8,
  "input": [{"name": "IMAGE", "data_type": "TYPE_UINT8", "dims": ["-1"], "allow_ragged_batch": true}],
  "output": [{"name": "PIXELS", "data_type": "TYPE_FP32", "dims": [3, 224, 224]}],
  "dynamic_batching": {},
  "parameters": {"workers": {"string_value": "2"}}
}`

// bytesConfig is goodConfig with the input as BYTES.
const bytesConfig = `{
  "name": "pre", "backend": "sluice", "max_batch_size": 8,
  "input": [{"name": "IMAGE", "data_type": "TYPE_STRING", "dims": [1]}],
  "output": [{"name": "PIXELS", "data_type": "TYPE_FP32", "dims": [3, 224, 224]}],
  "dynamic_batching": {},
  "parameters": {"workers": {"string_value": "2"}}
}`

const twoInputConfig = `{
  "name": "two", "max_batch_size": 8,
  "input": [{"name": "A", "data_type": "TYPE_UINT8", "dims": [-1], "allow_ragged_batch": true},
            {"name": "B", "data_type": "TYPE_STRING", "dims": [1]}],
  "output": [{"name": "OA", "data_type": "TYPE_UINT8", "dims": [8, 8, 3]},
             {"name": "OB", "data_type": "TYPE_UINT8", "dims": [4, 4, 3]}],
  "dynamic_batching": {},
  "parameters": {"workers": {"string_value": "2"}}
}`

// modelDir makes a model folder with version 1 holding files, and
// returns the model folder.
func modelDir(t testing.TB, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, "1", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readFileT(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func imagenetDir(t testing.TB) string {
	return modelDir(t, map[string][]byte{TextFile: readFileT(t, imagenetPipeline)})
}

// load loads a model from dir, closing it at the end of the test.
func load(t testing.TB, dir, cfg string, autoComplete bool) (*Model, error) {
	t.Helper()
	m, err := LoadModel(ModelArgs{Name: "pre", Version: 1, RepoPath: dir, Config: []byte(cfg), AutoComplete: autoComplete})
	if m != nil {
		t.Cleanup(m.Close)
	}
	return m, err
}

func mustLoad(t testing.TB, dir, cfg string) *Model {
	t.Helper()
	m, err := load(t, dir, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustInstance(t testing.TB, m *Model) *Instance {
	t.Helper()
	inst, err := m.NewInstance("pre_0", "KIND_CPU", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	return inst
}

// editConfig applies edit to a config's JSON.
func editConfig(t testing.TB, cfg string, edit func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(cfg), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// entry returns the i-th object of a config list.
func entry(m map[string]any, list string, i int) map[string]any {
	return m[list].([]any)[i].(map[string]any)
}

// wantError checks that err is an *Error of the code whose message holds
// every part.
func wantError(t testing.TB, err error, code Code, parts ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want *Error", err, err)
	}
	if e.Code != code {
		t.Errorf("code %d, want %d (%v)", e.Code, code, err)
	}
	for _, p := range parts {
		if !strings.Contains(e.Msg, p) {
			t.Errorf("error %q does not contain %q", e.Msg, p)
		}
	}
}

// fakeRequest is a Request over plain Go values. outputs lists the
// outputs it asks for; nil asks for all, as Triton lists every output
// for a request that names none.
type fakeRequest struct {
	inputs    map[string]Input
	outputs   []string
	panics    bool
	cancelled bool
}

func (r *fakeRequest) Requested(name string) bool {
	return r.outputs == nil || slices.Contains(r.outputs, name)
}

func (r *fakeRequest) Cancelled() bool { return r.cancelled }

func (r *fakeRequest) Input(name string) (Input, error) {
	if r.panics {
		panic("request input exploded")
	}
	x, ok := r.inputs[name]
	if !ok {
		return Input{}, fmt.Errorf("request has no input %q", name)
	}
	return x, nil
}

// rawInput packs images as UINT8 [B, N], padding the shorter ones with
// zeros as a client batching them must.
func rawInput(imgs ...[]byte) Input {
	n := 0
	for _, img := range imgs {
		n = max(n, len(img))
	}
	data := make([]byte, len(imgs)*n)
	for i, img := range imgs {
		copy(data[i*n:], img)
	}
	return Input{DataType: "UINT8", Shape: []int64{int64(len(imgs)), int64(n)}, Data: data}
}

// bytesInput packs images as BYTES [B, 1] in Triton's serialization.
func bytesInput(imgs ...[]byte) Input {
	var data []byte
	for _, img := range imgs {
		data = binary.LittleEndian.AppendUint32(data, uint32(len(img)))
		data = append(data, img...)
	}
	return Input{DataType: "BYTES", Shape: []int64{int64(len(imgs)), 1}, Data: data}
}

func request(name string, x Input) *fakeRequest {
	return &fakeRequest{inputs: map[string]Input{name: x}}
}

// fakeResponse is a Response that keeps its outputs, reusing their buffers
// so that it allocates nothing in steady state.
type fakeResponse struct {
	outputs map[string]*fakeOutput
	calls   int
	fail    string // Output of this name fails
	panics  string // Output of this name panics
}

type fakeOutput struct {
	dataType string
	shape    []int64
	data     []byte
}

func newResponse() *fakeResponse { return &fakeResponse{outputs: map[string]*fakeOutput{}} }

func (r *fakeResponse) Output(name, dataType string, shape []int64) ([]byte, error) {
	size := map[string]int64{"FP32": 4, "FP16": 2, "UINT8": 1, "BOOL": 1, "INT32": 4}[dataType]
	for _, d := range shape {
		size *= d
	}
	return r.OutputSized(name, dataType, shape, int(size))
}

func (r *fakeResponse) OutputSized(name, dataType string, shape []int64, size int) ([]byte, error) {
	r.calls++
	if name == r.fail {
		return nil, errors.New("out of response memory")
	}
	if name == r.panics {
		panic("response output exploded")
	}
	o := r.outputs[name]
	if o == nil {
		o = &fakeOutput{}
		r.outputs[name] = o
	}
	o.dataType = dataType
	o.shape = append(o.shape[:0], shape...)
	if cap(o.data) < size {
		o.data = make([]byte, size)
	}
	o.data = o.data[:size]
	return o.data, nil
}

// reset forgets the outputs but keeps their buffers.
func (r *fakeResponse) reset() {
	for _, o := range r.outputs {
		o.dataType, o.shape, o.data = "", o.shape[:0], o.data[:0]
	}
	r.calls = 0
}

// reference runs the model's pipeline directly with an executor over
// images of input 0, returning output o of sample i.
type reference struct {
	t    testing.TB
	exec *executor.CPU
}

func newReference(t testing.TB, m *Model) *reference {
	t.Helper()
	e, err := executor.New(m.Pipeline, executor.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return &reference{t: t, exec: e}
}

// outputs runs one batch and returns every output's samples.
func (r *reference) outputs(in ...[][]byte) [][][]byte {
	r.t.Helper()
	res, err := r.exec.Run(in)
	if err != nil {
		r.t.Fatal(err)
	}
	out := make([][][]byte, len(res.Outputs))
	for o, x := range res.Outputs {
		sb := r.exec.SampleBytes(o)
		for i, err := range res.Errs {
			if err != nil {
				r.t.Fatalf("reference sample %d: %v", i, err)
			}
			out[o] = append(out[o], bytes.Clone(x.Data[i*sb:(i+1)*sb]))
		}
	}
	return out
}

// checkOutput checks that a response's output holds exactly the given
// reference samples, in order, with the right type and shape.
func checkOutput(t testing.TB, resp *fakeResponse, name, dataType string, dims []int64, want [][]byte) {
	t.Helper()
	o := resp.outputs[name]
	if o == nil {
		t.Fatalf("response has no output %s", name)
	}
	shape := append([]int64{int64(len(want))}, dims...)
	if o.dataType != dataType || fmt.Sprint(o.shape) != fmt.Sprint(shape) {
		t.Errorf("output %s is %s %v, want %s %v", name, o.dataType, o.shape, dataType, shape)
	}
	if !bytes.Equal(o.data, bytes.Join(want, nil)) {
		t.Errorf("output %s differs from the executor's result", name)
	}
}
