package backend

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testimg"
)

// hugePipeline resizes every image to 10000x10000: 1.2 GB of FP32 per
// sample, 76.8 GB for a batch of 64.
const hugePipeline = `
version: 1
input { name: "IMAGE" }
node { op: "decode" }
node { op: "resize" arg { name: "size" ints { v: [10000, 10000] } } }
node { op: "normalize" }
output { name: "PIXELS" }
`

func withParams(t *testing.T, cfg string, params map[string]string) string {
	return editConfig(t, cfg, func(m map[string]any) {
		p := map[string]any{}
		for k, v := range params {
			p[k] = map[string]any{"string_value": v}
		}
		m["parameters"] = p
	})
}

// TestLoadRefusesHugeStaticOutput: a pipeline whose fixed-size image is
// over max_image_pixels, and whose batch of outputs is over
// max_batch_bytes, fails its load naming both, as written and as
// auto-completed.
func TestLoadRefusesHugeStaticOutput(t *testing.T) {
	dir := modelDir(t, map[string][]byte{TextFile: []byte(hugePipeline)})
	cfg := editConfig(t, goodConfig, func(m map[string]any) {
		m["max_batch_size"] = 64
		entry(m, "output", 0)["dims"] = []any{3, 10000, 10000}
	})
	_, err := load(t, dir, cfg, false)
	wantError(t, err, CodeInvalidArg,
		`node "resize" outputs 10000x10000 images (100000000 pixels), over max_image_pixels 67108864`,
		"max_batch_size 64 × 1200000000 bytes of outputs per sample (PIXELS FP32 [3, 10000, 10000]) = 76800000000 bytes, over max_batch_bytes 2147483648: lower max_batch_size to 1")
	t.Logf("load error: %v", err)

	// Auto-complete gives max_batch_size 1 (one sample fits 2 GiB); the
	// pixel limit still refuses it.
	_, err = load(t, dir, "{}", true)
	wantError(t, err, CodeInvalidArg, `node "resize" outputs 10000x10000 images`)
	if e := err.(*Error); strings.Contains(e.Msg, "max_batch_bytes") {
		t.Errorf("auto-complete chose a batch over the budget: %v", e)
	}

	// With the limits raised to what it needs, it loads.
	ok := withParams(t, editConfig(t, cfg, func(m map[string]any) { m["max_batch_size"] = 1 }),
		map[string]string{"max_image_pixels": "100000000", "workers": "1"})
	if _, err := load(t, dir, ok, false); err != nil {
		t.Fatal(err)
	}
	// 60000x60000: 43.2 GB a sample, over the budget alone.
	dir = modelDir(t, map[string][]byte{TextFile: []byte(
		`version: 1 input { name: "IMAGE" } node { op: "decode" } node { op: "resize" arg { name: "size" ints { v: [60000, 60000] } } } node { op: "normalize" } output { name: "PIXELS" }`)})
	_, err = load(t, dir, editConfig(t, cfg, func(m map[string]any) {
		m["max_batch_size"] = 1
		entry(m, "output", 0)["dims"] = []any{3, 60000, 60000}
	}), false)
	wantError(t, err, CodeInvalidArg, "max_batch_size 1 × 43200000000 bytes of outputs per sample",
		"over max_batch_bytes 2147483648: make the outputs smaller or raise max_batch_bytes")
}

// TestLoadRefusesMaxBatchOverBudget: max_batch_size × one sample's outputs
// over max_batch_bytes fails the load with the numbers and the largest
// max_batch_size that fits; at that size the model loads.
func TestLoadRefusesMaxBatchOverBudget(t *testing.T) {
	dir := imagenetDir(t)
	const sample = 3 * 224 * 224 * 4
	fits := (2 << 30) / sample // 3566
	for _, mbs := range []int64{2147483647, 9223372036854775807, int64(fits) + 1} {
		cfg := editConfig(t, goodConfig, func(m map[string]any) { m["max_batch_size"] = fmt.Sprint(mbs) })
		_, err := load(t, dir, cfg, false)
		wantError(t, err, CodeInvalidArg, fmt.Sprintf("max_batch_size %d × %d bytes of outputs per sample (PIXELS FP32 [3, 224, 224])", mbs, sample),
			"over max_batch_bytes 2147483648", fmt.Sprintf("lower max_batch_size to %d or raise max_batch_bytes", fits))
		if over := mbs > MaxBatchSizeLimit; over != strings.Contains(err.Error(), fmt.Sprintf("max_batch_size %d is over 65536, the most Sluice takes", mbs)) {
			t.Errorf("max_batch_size %d: the limit of 65536 %s named", mbs, map[bool]string{true: "not", false: "wrongly"}[over])
		}
		t.Logf("max_batch_size %d: %v", mbs, err)
	}
	cfg := editConfig(t, goodConfig, func(m map[string]any) { m["max_batch_size"] = fits })
	if _, err := load(t, dir, cfg, false); err != nil {
		t.Fatal(err)
	}
	// Tiny outputs fit any batch in the budget; the bookkeeping limit holds.
	tiny := modelDir(t, map[string][]byte{TextFile: []byte(
		`version: 1 input { name: "IMAGE" } node { op: "decode" arg { name: "color" str: "GRAY" } } node { op: "resize" arg { name: "size" ints { v: [1, 1] } } } output { name: "PIXELS" }`)})
	for mbs, ok := range map[int]bool{MaxBatchSizeLimit: true, MaxBatchSizeLimit + 1: false} {
		cfg := editConfig(t, goodConfig, func(m map[string]any) {
			m["max_batch_size"] = mbs
			entry(m, "output", 0)["data_type"] = "TYPE_UINT8"
			entry(m, "output", 0)["dims"] = []any{1, 1, 1}
		})
		_, err := load(t, tiny, cfg, false)
		if ok && err != nil {
			t.Errorf("max_batch_size %d: %v", mbs, err)
		}
		if !ok {
			wantError(t, err, CodeInvalidArg, "max_batch_size 65537 is over 65536, the most Sluice takes")
		}
	}
	// A budget of its own: 10 samples fit, 11 do not.
	for mbs, ok := range map[int]bool{10: true, 11: false} {
		cfg := withParams(t, editConfig(t, goodConfig, func(m map[string]any) { m["max_batch_size"] = mbs }),
			map[string]string{"max_batch_bytes": fmt.Sprint(10 * sample)})
		_, err := load(t, dir, cfg, false)
		if ok && err != nil {
			t.Errorf("max_batch_size %d: %v", mbs, err)
		}
		if !ok {
			wantError(t, err, CodeInvalidArg, fmt.Sprintf("max_batch_size 11 × %d bytes", sample), fmt.Sprintf("over max_batch_bytes %d", 10*sample))
		}
	}
}

// TestAutoCompleteBatchWithinBudget: auto-complete lowers the default
// max_batch_size to what max_batch_bytes holds, and never below 1.
func TestAutoCompleteBatchWithinBudget(t *testing.T) {
	dir := imagenetDir(t)
	const sample = 3 * 224 * 224 * 4
	for budget, want := range map[int]int64{10 * sample: 10, 10*sample + sample/2: 10, 1000 * sample: 64} {
		m, err := load(t, dir, withParams(t, "{}", map[string]string{"max_batch_bytes": fmt.Sprint(budget), "workers": "1"}), true)
		if err != nil {
			t.Fatal(err)
		}
		if m.MaxBatchSize != want {
			t.Errorf("max_batch_bytes %d: max_batch_size %d, want %d", budget, m.MaxBatchSize, want)
		}
	}
	_, err := load(t, dir, withParams(t, "{}", map[string]string{"max_batch_bytes": "1000"}), true)
	wantError(t, err, CodeInvalidArg, "max_batch_size 1 × 602112 bytes", "over max_batch_bytes 1000")
}

// TestBatchOverMaxBatchSizeFailsAlone: a request that would take the
// batch past max_batch_size (whose outputs the load fit in the budget)
// fails alone with INVALID_ARG before anything is allocated for it; the
// requests around it get their outputs.
func TestBatchOverMaxBatchSizeFailsAlone(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), editConfig(t, goodConfig, func(m map[string]any) { m["max_batch_size"] = 4 }))
	inst := mustInstance(t, m)
	imgs := [][]byte{testimg.JPEG(64, 48, 1), testimg.JPEG(33, 71, 2), testimg.JPEG(120, 90, 3), testimg.JPEG(17, 9, 4)}
	ref := newReference(t, m).outputs(imgs)[0]
	reqs := []Request{
		request("IMAGE", rawInput(imgs[0:3]...)),
		request("IMAGE", rawInput(imgs[0:2]...)), // 3 + 2 > 4
		request("IMAGE", rawInput(imgs...)),      // 4 alone, but 3 + 4 > 4
		request("IMAGE", bytesInput(imgs[3])),    // the wrong type: fails first
		request("IMAGE", rawInput(imgs[3])),      // 3 + 1 = 4
	}
	resps := []*fakeResponse{newResponse(), newResponse(), newResponse(), newResponse(), newResponse()}
	errs, st := inst.Execute(reqs, asResponses(resps))
	wantError(t, errs[1], CodeInvalidArg, "input IMAGE: batch size 2 would bring this execution's batch to 5 samples, over max_batch_size 4")
	wantError(t, errs[2], CodeInvalidArg, "input IMAGE: batch size 4 would bring this execution's batch to 7 samples, over max_batch_size 4")
	wantError(t, errs[3], CodeInvalidArg, "data type BYTES")
	for _, i := range []int{0, 4} {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
	}
	if st.Samples != 4 {
		t.Errorf("Samples %d, want 4", st.Samples)
	}
	checkOutput(t, resps[0], "PIXELS", "FP32", pixelDims, ref[0:3])
	checkOutput(t, resps[4], "PIXELS", "FP32", pixelDims, ref[3:4])
	for _, i := range []int{1, 2, 3} {
		if resps[i].calls != 0 {
			t.Errorf("failed request %d was asked for outputs", i)
		}
	}
	// Over max_batch_size alone.
	errs, _ = inst.Execute([]Request{request("IMAGE", rawInput(append(imgs, imgs[0])...))}, asResponses([]*fakeResponse{newResponse()}))
	wantError(t, errs[0], CodeInvalidArg, "input IMAGE: batch size 5 is over max_batch_size 4")
}

// TestResponderBudget: the responder checks a batch's scratch memory
// against max_batch_bytes before allocating it.
func TestResponderBudget(t *testing.T) {
	r := newResponder([]respondOutput{{name: "A", sample: 60}, {name: "B", sample: 40}}, -1, 1000)
	r.prepare(10)
	if err := r.scratchAll(0, 2); err != nil {
		t.Fatal(err)
	}
	if len(r.scratch[0]) != 600 || len(r.scratch[1]) != 400 || len(r.dst[0][1].Host) != 60 {
		t.Errorf("scratch of %d and %d bytes", len(r.scratch[0]), len(r.scratch[1]))
	}
	r.prepare(11)
	if err := r.scratchAll(0, 2); err == nil || !strings.Contains(err.Error(), "a batch of 11 samples needs 1100 bytes of outputs, over max_batch_bytes 1000") {
		t.Errorf("scratchAll for 11: %v", err)
	}
	if cap(r.scratch[0]) != 600 {
		t.Errorf("a refused batch grew the scratch to %d bytes", cap(r.scratch[0]))
	}
	if n := r.release(); n != 1000 || r.scratch[0] != nil || r.scratch[1] != nil {
		t.Errorf("release: %d bytes, scratch %v", n, r.scratch)
	}
}

// TestIdleRelease: an instance drops its scratch buffers once idle for
// idleRelease, not while Executes keep coming; it answers the same after.
func TestIdleRelease(t *testing.T) {
	m := mustLoad(t, imagenetDir(t), goodConfig)
	inst := mustInstance(t, m)
	img := testimg.JPEG(64, 48, 1)
	run := func() []byte {
		// The second request's outputs cannot be placed: its samples go
		// to scratch memory.
		resp, bad := newResponse(), newResponse()
		bad.fail = "PIXELS"
		errs, _ := inst.Execute([]Request{request("IMAGE", rawInput(img)), request("IMAGE", rawInput(img))},
			asResponses([]*fakeResponse{resp, bad}))
		if errs[0] != nil || errs[1] == nil {
			t.Fatalf("errors %v, %v: want the second request alone to fail", errs[0], errs[1])
		}
		return resp.outputs["PIXELS"].data
	}
	first := run()
	held := func() int {
		inst.mu.Lock()
		defer inst.mu.Unlock()
		return cap(inst.resp.scratch[0])
	}
	if held() == 0 || inst.idle == nil {
		t.Fatal("no scratch buffer or no idle timer after an Execute")
	}
	inst.releaseIdle() // as if the timer fired just after an Execute
	if held() == 0 {
		t.Error("buffers released right after an Execute")
	}
	inst.mu.Lock()
	inst.lastExec = time.Now().Add(-idleRelease)
	inst.mu.Unlock()
	inst.releaseIdle()
	if n := held(); n != 0 {
		t.Errorf("%d bytes held after idleRelease without an Execute", n)
	}
	if string(run()) != string(first) {
		t.Error("outputs differ after the buffers were released")
	}
}

// TestMaxInputBytes: the bound cgo puts on an input it must copy, without
// overflow for any parameter.
func TestMaxInputBytes(t *testing.T) {
	dir := imagenetDir(t)
	m := mustLoad(t, dir, withParams(t, goodConfig, map[string]string{"max_image_bytes": "1000"}))
	if got := m.MaxInputBytes(); got != 8*1004 {
		t.Errorf("max_batch_size 8, max_image_bytes 1000: %d, want %d", got, 8*1004)
	}
	m = mustLoad(t, dir, withParams(t, goodConfig, map[string]string{"max_image_bytes": "9223372036854775000"}))
	if got := m.MaxInputBytes(); got != math.MaxInt64 {
		t.Errorf("an enormous max_image_bytes: %d, want MaxInt64", got)
	}
}

// TestRequestAndBatchBudgets: a request whose images together pass
// max_request_pixels fails naming it, while another request of the same
// batch is served; a batch over max_batch_work fails the request that
// brought it over, naming that limit.
func TestRequestAndBatchBudgets(t *testing.T) {
	img := testimg.JPEG(64, 48, 1) // 3072 pixels
	m := mustLoad(t, imagenetDir(t), withParams(t, goodConfig, map[string]string{
		"workers": "2", "max_request_pixels": "7000", "max_batch_work": "1000000000000"}))
	inst := mustInstance(t, m)
	reqs := []Request{request("IMAGE", rawInput(img, img, img)), request("IMAGE", rawInput(img, img))}
	resps := []*fakeResponse{newResponse(), newResponse()}
	errs, _ := inst.Execute(reqs, asResponses(resps))
	wantError(t, errs[0], CodeInvalidArg, "the request's images decode to more than 7000 pixels, the limit max_request_pixels")
	if errs[1] != nil {
		t.Fatalf("the request within its budget failed: %v", errs[1])
	}
	// The next batch starts afresh.
	if errs, _ := inst.Execute(reqs[1:], asResponses(resps[1:])); errs[0] != nil {
		t.Fatal(errs[0])
	}

	// The batch's work: each image's estimates, its decode's and its
	// resize's, are drawn on it too.
	m = mustLoad(t, imagenetDir(t), withParams(t, goodConfig, map[string]string{"workers": "1", "max_batch_work": "1000000"}))
	inst = mustInstance(t, m)
	reqs = []Request{request("IMAGE", rawInput(img)), request("IMAGE", rawInput(img))}
	errs, _ = inst.Execute(reqs, asResponses(resps))
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("want exactly one request over the batch's work (each image needs about 600,000 units: 12,000 to decode, the rest to resample): %v", errs)
	}
	for _, err := range errs {
		if err != nil {
			wantError(t, err, CodeInvalidArg, "resize: the batch's images need more than 1000000 units of decode and operator work, the limit max_batch_work")
		}
	}
}
