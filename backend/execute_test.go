package backend

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sluice-dev/sluice/executor"
	// KIND_GPU instances need the GPU executor linked in, as cgo does.
	_ "github.com/sluice-dev/sluice/executor/gpu"
	"github.com/sluice-dev/sluice/internal/allocstest"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
)

var pixelDims = []int64{3, 224, 224}

// TestExecuteRaggedUINT8: requests of UINT8 [B, N] with images of
// different sizes, B = 1 and B = 3 (zero-padded), in one Execute; every
// output equals the executor's on the unpadded images, bit for bit.
func TestExecuteRaggedUINT8(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), goodConfig)
	inst := mustInstance(t, m)
	imgs := [][]byte{testimg.JPEG(64, 48, 1), testimg.JPEG(33, 71, 2), testimg.JPEG(120, 90, 3), testimg.JPEG(17, 9, 4), testimg.JPEG(50, 50, 5)}
	ref := newReference(t, m).outputs(imgs)[0]

	reqs := []Request{request("IMAGE", rawInput(imgs[0])), request("IMAGE", rawInput(imgs[1:4]...)), request("IMAGE", rawInput(imgs[4]))}
	resps := []*fakeResponse{newResponse(), newResponse(), newResponse()}
	errs, st := inst.Execute(reqs, asResponses(resps))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if st.Samples != 5 {
		t.Errorf("Samples %d, want 5", st.Samples)
	}
	checkOutput(t, resps[0], "PIXELS", "FP32", pixelDims, ref[0:1])
	checkOutput(t, resps[1], "PIXELS", "FP32", pixelDims, ref[1:4])
	checkOutput(t, resps[2], "PIXELS", "FP32", pixelDims, ref[4:5])
}

// TestExecuteBytes: BYTES requests with B > 1 and B = 1 in one Execute.
func TestExecuteBytes(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), bytesConfig)
	inst := mustInstance(t, m)
	imgs := [][]byte{testimg.JPEG(40, 30, 6), testimg.JPEG(300, 20, 7), testimg.JPEG(8, 8, 8), testimg.JPEG(99, 101, 9)}
	ref := newReference(t, m).outputs(imgs)[0]

	flat := bytesInput(imgs[3])
	flat.Shape = []int64{1} // [B] is accepted as well as [B, 1]
	reqs := []Request{request("IMAGE", bytesInput(imgs[0:3]...)), request("IMAGE", flat)}
	resps := []*fakeResponse{newResponse(), newResponse()}
	errs, _ := inst.Execute(reqs, asResponses(resps))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	checkOutput(t, resps[0], "PIXELS", "FP32", pixelDims, ref[0:3])
	checkOutput(t, resps[1], "PIXELS", "FP32", pixelDims, ref[3:4])
}

// TestBrokenImageFailsAlone: a truncated image and a non-image in one
// request fail that request only, naming the element and the cause; the
// requests around it are correct.
func TestBrokenImageFailsAlone(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), goodConfig)
	inst := mustInstance(t, m)
	good := [][]byte{testimg.JPEG(64, 48, 1), testimg.JPEG(33, 71, 2), testimg.JPEG(120, 90, 3)}
	ref := newReference(t, m).outputs(good)[0]
	truncated := testimg.JPEG(80, 80, 4)
	truncated = truncated[:len(truncated)/2]

	reqs := []Request{
		request("IMAGE", rawInput(good[0])),
		request("IMAGE", rawInput(good[1], truncated, []byte("not an image at all"))),
		request("IMAGE", rawInput(good[2])),
	}
	resps := []*fakeResponse{newResponse(), newResponse(), newResponse()}
	errs, st := inst.Execute(reqs, asResponses(resps))
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("good requests failed: %v", errs)
	}
	wantError(t, errs[1], CodeInvalidArg, "IMAGE element 1: truncated: decode", "(and 1 more of the request's 3 elements failed)")
	// Its outputs were placed before the batch ran; cgo sends only the
	// error (Execute's contract), so they do not reach the client.
	checkOutput(t, resps[0], "PIXELS", "FP32", pixelDims, ref[0:1])
	checkOutput(t, resps[2], "PIXELS", "FP32", pixelDims, ref[2:3])
	if st.Samples != 5 {
		t.Errorf("Samples %d, want 5: the broken request's images were in the batch", st.Samples)
	}

	// Alone, the non-image says so.
	errs, _ = inst.Execute([]Request{request("IMAGE", rawInput([]byte("not an image at all")))}, []Response{newResponse()})
	wantError(t, errs[0], CodeInvalidArg, "IMAGE element 0: not an image: decode")
}

// TestMalformedRequests: requests that cannot be read fail alone, before
// the batch; the others are answered.
func TestMalformedRequests(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), bytesConfig)
	inst := mustInstance(t, m)
	img := testimg.JPEG(30, 40, 1)
	ref := newReference(t, m).outputs([][]byte{img})[0]

	overlong := bytesInput(img)
	binary.LittleEndian.PutUint32(overlong.Data, uint32(len(img)+1))
	cut := bytesInput(img, img)
	cut.Data = cut.Data[:len(img)+4+2]
	trailing := bytesInput(img)
	trailing.Data = append(slices.Clone(trailing.Data), 0, 0)
	few := Input{DataType: "BYTES", Shape: []int64{2, 1}, Data: []byte{0, 0, 0, 0}}
	huge := bytesInput(img)
	huge.Shape = []int64{1 << 40, 1}
	badShape := bytesInput(img)
	badShape.Shape = []int64{1, 2}
	wrongType := rawInput(img)

	cases := []struct {
		in   Input
		want string
	}{
		{overlong, fmt.Sprintf("input IMAGE: BYTES element 0: length %d, but only %d bytes are left", len(img)+1, len(img))},
		{cut, "input IMAGE: BYTES element 1: the buffer ends inside its 4-byte length"},
		{trailing, "input IMAGE: 2 bytes after the last of 1 BYTES elements"},
		{few, "input IMAGE: 4 bytes cannot hold 2 BYTES elements"},
		{huge, "input IMAGE: batch size 1099511627776 is over max_batch_size 8"},
		{badShape, "input IMAGE: shape [1 2], want [batch, 1]"},
		{wrongType, "input IMAGE: data type UINT8, the model takes BYTES"},
	}
	reqs := []Request{request("IMAGE", bytesInput(img))}
	for _, c := range cases {
		reqs = append(reqs, request("IMAGE", c.in))
	}
	reqs = append(reqs, &fakeRequest{}, request("IMAGE", bytesInput(img)))
	resps := make([]*fakeResponse, len(reqs))
	for i := range resps {
		resps[i] = newResponse()
	}
	errs, st := inst.Execute(reqs, asResponses(resps))
	for i, c := range cases {
		wantError(t, errs[i+1], CodeInvalidArg, c.want)
		if resps[i+1].calls != 0 {
			t.Errorf("case %d: a failed request was asked for outputs", i)
		}
	}
	wantError(t, errs[len(reqs)-2], CodeInvalidArg, `input IMAGE: request has no input "IMAGE"`)
	for _, i := range []int{0, len(reqs) - 1} {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		checkOutput(t, resps[i], "PIXELS", "FP32", pixelDims, ref)
	}
	if st.Samples != 2 {
		t.Errorf("Samples %d, want 2", st.Samples)
	}
}

func TestMalformedUINT8(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), goodConfig)
	inst := mustInstance(t, m)
	img := testimg.JPEG(30, 40, 1)
	short := rawInput(img, img)
	short.Data = short.Data[:len(short.Data)-1]
	over := rawInput(img)
	over.Shape = []int64{9, 0}
	over.Data = nil
	for _, c := range []struct {
		in   Input
		want string
	}{
		{short, fmt.Sprintf("input IMAGE: %d bytes of data for shape [2 %d]", 2*len(img)-1, len(img))},
		{over, "input IMAGE: batch size 9 is over max_batch_size 8"},
		{Input{DataType: "UINT8", Shape: []int64{5}, Data: make([]byte, 5)}, "input IMAGE: shape [5], want [batch, bytes]"},
		{bytesInput(img), "input IMAGE: data type BYTES, the model takes UINT8"},
	} {
		errs, _ := inst.Execute([]Request{request("IMAGE", c.in)}, []Response{newResponse()})
		wantError(t, errs[0], CodeInvalidArg, c.want)
	}
}

// TestInconsistentBatchSizes: with two inputs, a request whose inputs
// have different batch sizes fails alone; blame names the right input.
func TestInconsistentBatchSizes(t *testing.T) {
	dir := modelDir(t, map[string][]byte{TextFile: []byte(twoInputPipeline)})
	m := mustLoad(t, dir, twoInputConfig)
	inst := mustInstance(t, m)
	a := [][]byte{testimg.JPEG(20, 10, 1), testimg.JPEG(11, 31, 2)}
	b := [][]byte{testimg.JPEG(9, 9, 3), testimg.JPEG(40, 4, 4)}
	ref := newReference(t, m).outputs(a, b)

	two := func(x, y Input) Request { return &fakeRequest{inputs: map[string]Input{"A": x, "B": y}} }
	reqs := []Request{
		two(rawInput(a...), bytesInput(b...)),
		two(rawInput(a...), bytesInput(b[0])),
		two(rawInput(a[0]), bytesInput([]byte("garbage"))),
		two(rawInput(a[1]), bytesInput(b[1])),
	}
	resps := []*fakeResponse{newResponse(), newResponse(), newResponse(), newResponse()}
	errs, st := inst.Execute(reqs, asResponses(resps))
	wantError(t, errs[1], CodeInvalidArg, "input B has 1 elements, input A has 2: every input needs the same batch size")
	wantError(t, errs[2], CodeInvalidArg, "B element 0: not an image: db")
	for _, i := range []int{0, 3} {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
	}
	checkOutput(t, resps[0], "OA", "UINT8", []int64{8, 8, 3}, ref[0])
	checkOutput(t, resps[0], "OB", "UINT8", []int64{4, 4, 3}, ref[1])
	checkOutput(t, resps[3], "OA", "UINT8", []int64{8, 8, 3}, ref[0][1:])
	checkOutput(t, resps[3], "OB", "UINT8", []int64{4, 4, 3}, ref[1][1:])
	if st.Samples != 4 {
		t.Errorf("Samples %d, want 4", st.Samples)
	}
}

// TestOutputFails: a response that cannot allocate an output fails its
// request with CodeInternal; the others are answered.
func TestOutputFails(t *testing.T) {
	dir := modelDir(t, map[string][]byte{TextFile: []byte(twoInputPipeline)})
	m := mustLoad(t, dir, twoInputConfig)
	inst := mustInstance(t, m)
	img := testimg.JPEG(20, 10, 1)
	req := &fakeRequest{inputs: map[string]Input{"A": rawInput(img), "B": bytesInput(img)}}
	resps := []*fakeResponse{newResponse(), newResponse(), newResponse()}
	resps[0].fail = "OA"
	resps[1].fail = "OB"
	errs, _ := inst.Execute([]Request{req, req, req}, asResponses(resps))
	wantError(t, errs[0], CodeInternal, "output OA: out of response memory")
	wantError(t, errs[1], CodeInternal, "output OB: out of response memory")
	if resps[0].calls != 1 {
		t.Errorf("Output called %d times after failing", resps[0].calls)
	}
	if errs[2] != nil {
		t.Fatal(errs[2])
	}

	// A response missing altogether (cgo's bug) fails its request too.
	errs, _ = inst.Execute([]Request{req, req}, []Response{newResponse()})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	wantError(t, errs[1], CodeInternal, "no response")
}

// TestPanicsStayInside: a panic under Execute becomes CodeInternal errors
// for the requests not yet answered; the answered ones stand.
func TestPanicsStayInside(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), goodConfig)
	inst := mustInstance(t, m)
	img := testimg.JPEG(20, 10, 1)
	req := request("IMAGE", rawInput(img))

	resps := []*fakeResponse{newResponse(), newResponse(), newResponse()}
	resps[1].panics = "PIXELS"
	errs, st := inst.Execute([]Request{req, req, req}, asResponses(resps))
	if errs[0] != nil {
		t.Errorf("request 0, answered before the panic: %v", errs[0])
	}
	wantError(t, errs[1], CodeInternal, "response output exploded")
	wantError(t, errs[2], CodeInternal, "response output exploded")
	if !(st.ExecStart <= st.ComputeStart && st.ComputeStart <= st.ComputeEnd && st.ComputeEnd <= st.ExecEnd) || st.ExecEnd == 0 {
		t.Errorf("timestamps after a panic: %+v", st)
	}

	errs, _ = inst.Execute([]Request{req, &fakeRequest{panics: true}}, []Response{newResponse(), newResponse()})
	for i := range errs {
		wantError(t, errs[i], CodeInternal, "request input exploded")
	}

	// The instance still works.
	errs, _ = inst.Execute([]Request{req}, []Response{newResponse()})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
}

func TestInstanceKinds(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), goodConfig)
	// Without a driver a GPU instance fails its load, naming what is
	// missing; with one it runs (the GPU tests check how well).
	gi, err := m.NewInstance("pre_0", "KIND_GPU", 0)
	if cerr := cuda.Init(); cerr != nil {
		wantError(t, err, CodeUnavailable, "instance pre_0 (KIND_GPU, device 0): "+cerr.Error())
	} else if err != nil {
		t.Fatalf("KIND_GPU with a driver: %v", err)
	} else {
		gi.Close()
	}
	_, err = m.NewInstance("pre_0", "KIND_TPU", 0)
	wantError(t, err, CodeInvalidArg, `unknown kind "KIND_TPU"`)
	for _, kind := range []string{"KIND_CPU", "KIND_AUTO", "KIND_MODEL"} {
		inst, err := m.NewInstance("pre_0", kind, 0)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if inst.exec.Workers() != 2 {
			t.Errorf("%d workers, want the parameter's 2", inst.exec.Workers())
		}
		inst.Close()
	}
}

func TestClose(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), goodConfig)
	a := mustInstance(t, m)
	b := mustInstance(t, m)
	a.Close()
	a.Close()
	errs, _ := a.Execute([]Request{request("IMAGE", rawInput(testimg.JPEG(8, 8, 1)))}, []Response{newResponse()})
	wantError(t, errs[0], CodeUnavailable, "closed")

	m.Close() // closes b, which Triton would have finalized first
	m.Close()
	if !b.closed {
		t.Error("Model.Close left an instance open")
	}
	b.Close()
	_, err := m.NewInstance("late", "KIND_CPU", 0)
	wantError(t, err, CodeUnavailable, "unloading")
}

// TestStats: timestamps come from ModelArgs.Now in order, and Samples
// counts the batch's images.
func TestStats(t *testing.T) {
	var clock uint64 = 1000
	m, err := LoadModel(ModelArgs{Name: "pre", Version: 1, RepoPath: imagenetDir(t), Config: []byte(goodConfig),
		Now: func() uint64 { clock += 10; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	inst := mustInstance(t, m)
	img := testimg.JPEG(20, 10, 1)
	_, st := inst.Execute([]Request{request("IMAGE", rawInput(img, img)), request("IMAGE", rawInput(img))},
		[]Response{newResponse(), newResponse()})
	if !(1000 < st.ExecStart && st.ExecStart < st.ComputeStart && st.ComputeStart < st.ComputeEnd &&
		st.ComputeEnd < st.ExecEnd && st.ExecEnd <= clock) {
		t.Errorf("timestamps out of order: %+v", st)
	}
	if st.Samples != 3 {
		t.Errorf("Samples %d, want 3", st.Samples)
	}

	// The default clock is monotonic too.
	m2 := mustLoad(t, imagenetDir(t), goodConfig)
	_, st = mustInstance(t, m2).Execute(nil, nil)
	if !(0 < st.ExecStart && st.ExecStart <= st.ComputeStart && st.ComputeStart <= st.ComputeEnd && st.ComputeEnd <= st.ExecEnd) {
		t.Errorf("default clock: %+v", st)
	}
}

// TestExecuteAllocs measures the steady state of Execute: after warm-up,
// a batch of requests whose responses reuse their buffers.
func TestExecuteAllocs(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), goodConfig)
	inst := mustInstance(t, m)
	imgs := [][]byte{testimg.JPEG(64, 48, 1), testimg.JPEG(33, 71, 2), testimg.JPEG(120, 90, 3)}
	reqs := []Request{request("IMAGE", rawInput(imgs[0])), request("IMAGE", rawInput(imgs[1:]...)), request("IMAGE", bytesInput(imgs[0]))}
	resps := []*fakeResponse{newResponse(), newResponse(), newResponse()}
	rs := asResponses(resps)
	run := func() {
		for _, r := range resps {
			r.reset()
		}
		errs, _ := inst.Execute(reqs, rs)
		if errs[0] != nil || errs[1] != nil || errs[2] == nil {
			t.Fatalf("unexpected outcome: %v", errs)
		}
	}
	// Every worker meets every image first: which worker takes which
	// sample is the scheduler's choice.
	if _, err := inst.exec.(*executor.CPU).Warm([][][]byte{imgs}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		run()
	}
	n := allocstest.PerRun(t, 10, run)
	t.Logf("%v allocations per Execute of 3 requests, 3 images, one failed request", n)
	// The failed request's *Error and its message are the only ones.
	if n > 6 {
		t.Errorf("%v allocations per Execute in steady state", n)
	}
	reqs[2] = request("IMAGE", rawInput(imgs[2]))
	run = func() {
		for _, r := range resps {
			r.reset()
		}
		if errs, _ := inst.Execute(reqs, rs); errs[2] != nil {
			t.Fatal(errs[2])
		}
	}
	for range 10 {
		run()
	}
	n = allocstest.PerRun(t, 10, run)
	t.Logf("%v allocations per Execute of 3 requests, 4 images, all good", n)
	if n > 0 {
		t.Errorf("%v allocations per Execute in steady state", n)
	}
}

// TestLogging: the load summary at Info; request failures at Debug only.
func TestLogging(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	dir := imagenetDir(t)
	m, err := LoadModel(ModelArgs{Name: "pre", Version: 1, RepoPath: dir, Config: []byte(goodConfig), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	loaded := logs.FilterMessage("sluice model loaded").All()
	if len(loaded) != 1 {
		t.Fatalf("load logged %d times", len(loaded))
	}
	fields := fmt.Sprint(loaded[0].ContextMap())
	for _, want := range []string{"pipeline:preprocess_imagenet", "file:" + filepath.Join(dir, "1", TextFile), "IMAGE TYPE_UINT8 [-1]", "PIXELS TYPE_FP32 [3, 224, 224]", "workers:2"} {
		if !strings.Contains(fields, want) {
			t.Errorf("load summary %s lacks %s", fields, want)
		}
	}

	inst := mustInstance(t, m)
	bad := request("IMAGE", rawInput([]byte("junk")))
	for range 100 {
		inst.Execute([]Request{bad}, []Response{newResponse()})
	}
	if n := logs.FilterMessage("sluice request failed").Len(); n != 0 {
		t.Errorf("%d request failures logged at Info", n)
	}

	core, logs = observer.New(zapcore.DebugLevel)
	m2, err := LoadModel(ModelArgs{Name: "pre", Version: 1, RepoPath: imagenetDir(t), Config: []byte(goodConfig), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	mustInstance(t, m2).Execute([]Request{bad}, []Response{newResponse()})
	failed := logs.FilterMessage("sluice request failed").All()
	if len(failed) != 1 || failed[0].Level != zapcore.DebugLevel {
		t.Fatalf("request failure logs: %v", failed)
	}
	if s := fmt.Sprint(failed[0].ContextMap()); !strings.Contains(s, "IMAGE element 0: not an image") {
		t.Errorf("request failure log %s", s)
	}
}

func asResponses(rs []*fakeResponse) []Response {
	out := make([]Response, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

// TestMarkImageErrors: with image_errors "mark" (its outputs added by
// auto-complete) a request with a broken image succeeds: the good images'
// outputs are the executor's, the broken one's zeros, and IMAGE_OK and
// IMAGE_ERROR say which failed in the words of the default mode's error.
func TestMarkImageErrors(t *testing.T) {
	cfg := editConfig(t, bytesConfig, func(m map[string]any) {
		m["parameters"] = map[string]any{"image_errors": map[string]any{"string_value": "mark"}}
	})
	m, err := load(t, imagenetDir(t), cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.NewConfig), `"IMAGE_OK"`) || !strings.Contains(string(m.NewConfig), `"TYPE_STRING"`) {
		t.Errorf("auto-complete did not add IMAGE_OK/IMAGE_ERROR: %s", m.NewConfig)
	}
	inst := mustInstance(t, m)
	good := [][]byte{testimg.JPEG(64, 48, 1), testimg.JPEG(33, 71, 2)}
	ref := newReference(t, m).outputs(good)[0]
	truncated := testimg.JPEG(80, 80, 4)
	truncated = truncated[:len(truncated)/2]

	resps := []*fakeResponse{newResponse()}
	for run := range 2 {
		if run == 1 {
			// Buffers that held an image's pixels: the broken image's
			// must still read zeros.
			resps[0].reset()
			if errs, _ := inst.Execute([]Request{request("IMAGE", bytesInput(good[0], good[0], good[1]))}, asResponses(resps)); errs[0] != nil {
				t.Fatal(errs[0])
			}
			resps[0].reset()
		}
		errs, st := inst.Execute([]Request{request("IMAGE", bytesInput(good[0], truncated, good[1]))}, asResponses(resps))
		if errs[0] != nil {
			t.Fatalf("run %d: %v", run, errs[0])
		}
		if st.Images.Failures[causeIndex(ops.Truncated)] != 1 || st.Images.Images != 2 {
			t.Errorf("run %d: image stats %+v, want 2 images and 1 truncated", run, st.Images)
		}
		zero := make([]byte, len(ref[0]))
		checkOutput(t, resps[0], "PIXELS", "FP32", pixelDims, [][]byte{ref[0], zero, ref[1]})
		checkOutput(t, resps[0], OutputImageOK, "BOOL", []int64{1}, [][]byte{{1}, {0}, {1}})
		o := resps[0].outputs[OutputImageError]
		if o == nil || o.dataType != "BYTES" || fmt.Sprint(o.shape) != "[3 1]" {
			t.Fatalf("IMAGE_ERROR: %+v", o)
		}
		var msgs []string
		for b := o.data; len(b) >= 4; {
			n := binary.LittleEndian.Uint32(b)
			msgs = append(msgs, string(b[4:4+n]))
			b = b[4+n:]
		}
		if len(msgs) != 3 || msgs[0] != "" || msgs[2] != "" || !strings.HasPrefix(msgs[1], "IMAGE element 1: truncated: decode") {
			t.Errorf("IMAGE_ERROR holds %q", msgs)
		}
	}

	// Without auto-complete the outputs must be in the config.
	_, err = load(t, imagenetDir(t), cfg, false)
	wantError(t, err, CodeInvalidArg, `image_errors "mark" output "IMAGE_OK" has no config output`)
	// And without "mark" they are refused.
	bad := editConfig(t, bytesConfig, func(m map[string]any) {
		m["output"] = append(m["output"].([]any), map[string]any{"name": "IMAGE_OK", "data_type": "TYPE_BOOL", "dims": []any{1}})
	})
	_, err = load(t, imagenetDir(t), bad, false)
	wantError(t, err, CodeInvalidArg, `config output "IMAGE_OK" is not a pipeline output`)
	_, err = load(t, imagenetDir(t), editConfig(t, bytesConfig, func(m map[string]any) {
		m["parameters"] = map[string]any{"image_errors": map[string]any{"string_value": "skip"}}
	}), false)
	wantError(t, err, CodeInvalidArg, `parameter "image_errors": "skip" is not fail_request, mark or mark_ok`)
	// A pipeline output of one of their names clashes.
	clash := modelDir(t, map[string][]byte{TextFile: []byte(
		`version: 1 input { name: "IMAGE" } node { op: "decode" } node { op: "resize" arg { name: "size" ints { v: [8, 8] } } } output { name: "IMAGE_OK" }`)})
	_, err = load(t, clash, cfg, true)
	wantError(t, err, CodeInvalidArg, `pipeline output "IMAGE_OK": image_errors "mark" adds an output of that name: rename it`)
}
