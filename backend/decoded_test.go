package backend

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/pipeline"
)

const imagenetDecodedPipeline = "../model_repository/preprocess_imagenet_decoded/1/pipeline.pbtxt"

// decodedConfig is the config of the decoded-input ImageNet model.
const decodedConfig = `{
  "name": "pre", "backend": "sluice", "max_batch_size": 8,
  "input": [{"name": "FRAME", "data_type": "TYPE_UINT8", "dims": [-1, -1, 3], "allow_ragged_batch": true}],
  "output": [{"name": "PIXELS", "data_type": "TYPE_FP32", "dims": [3, 224, 224]}],
  "dynamic_batching": {},
  "parameters": {"workers": {"string_value": "2"}}
}`

func decodedDir(t testing.TB) string {
	return modelDir(t, map[string][]byte{TextFile: readFileT(t, imagenetDecodedPipeline)})
}

// rgb decodes a JPEG as the encoded model's decode does.
func rgb(t testing.TB, jpeg []byte) (px []byte, h, w int) {
	t.Helper()
	img, err := codec.Decode(jpeg, codec.Options{Color: codec.RGB})
	if err != nil {
		t.Fatal(err)
	}
	return img.Pix, img.Height, img.Width
}

// hwcInput is a UINT8 [B, H, W, C] request tensor of images of one size.
func hwcInput(h, w, c int, imgs ...[]byte) Input {
	var data []byte
	for _, img := range imgs {
		data = append(data, img...)
	}
	return Input{DataType: "UINT8", Shape: []int64{int64(len(imgs)), int64(h), int64(w), int64(c)}, Data: data}
}

// TestExecuteDecoded: requests of decoded images of different heights and
// widths in one Execute, one of them carrying two images of one size,
// answer exactly what the encoded model answers on the same pixels; a
// request whose shape does not match its bytes, one with the wrong channel
// count, one of the wrong rank and one over max_image_pixels fail alone,
// naming the input and what is wrong.
func TestExecuteDecoded(t *testing.T) {
	jpegs := [][]byte{testimg.JPEG(64, 48, 1), testimg.JPEG(33, 71, 2), testimg.JPEG(33, 71, 3), testimg.JPEG(120, 90, 4)}
	enc := mustLoad(t, imagenetDir(t), goodConfig)
	ref := newReference(t, enc).outputs(jpegs)[0]

	m := mustLoad(t, decodedDir(t), editConfig(t, decodedConfig, func(c map[string]any) {
		c["parameters"].(map[string]any)["max_image_pixels"] = map[string]any{"string_value": "160000"}
	}))
	inst := mustInstance(t, m)
	var px [][]byte
	var hs, ws []int
	for _, j := range jpegs {
		p, h, w := rgb(t, j)
		px, hs, ws = append(px, p), append(hs, h), append(ws, w)
	}
	mismatched := hwcInput(hs[0], ws[0], 3, px[0])
	mismatched.Data = mismatched.Data[:len(mismatched.Data)-3]
	reqs := []Request{
		request("FRAME", hwcInput(hs[0], ws[0], 3, px[0])),
		request("FRAME", mismatched),
		request("FRAME", hwcInput(hs[1], ws[1], 3, px[1], px[2])),
		request("FRAME", hwcInput(hs[0], ws[0]*3/4, 4, px[0])),
		request("FRAME", Input{DataType: "UINT8", Shape: []int64{1, int64(len(px[0]))}, Data: px[0]}),
		request("FRAME", hwcInput(401, 400, 3, make([]byte, 401*400*3))),
		request("FRAME", hwcInput(hs[3], ws[3], 3, px[3])),
	}
	resps := make([]*fakeResponse, len(reqs))
	for i := range resps {
		resps[i] = newResponse()
	}
	errs, st := inst.Execute(reqs, asResponses(resps))
	for _, i := range []int{0, 2, 6} {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
	}
	checkOutput(t, resps[0], "PIXELS", "FP32", pixelDims, ref[0:1])
	checkOutput(t, resps[2], "PIXELS", "FP32", pixelDims, ref[1:3])
	checkOutput(t, resps[6], "PIXELS", "FP32", pixelDims, ref[3:4])
	wantError(t, errs[1], CodeInvalidArg, "input FRAME: shape [1 48 64 3] does not match its 9213 bytes of data")
	wantError(t, errs[3], CodeInvalidArg, "input FRAME: color: shape [1 48 48 4] has 4 channels, but the pipeline declares color RGB, 3 channels")
	wantError(t, errs[4], CodeInvalidArg, "input FRAME: shape [1 9216], want [batch, height, width, 3]")
	wantError(t, errs[5], CodeInvalidArg, "FRAME element 0: too large: FRAME: image is 400x401 (160400 pixels), over the limit of 160000 (max_image_pixels)")
	if st.Samples != 5 {
		t.Errorf("Samples %d, want 5 (4 good images and the one over the limit)", st.Samples)
	}
}

// TestDecodedConfig: auto-complete gives a decoded input TYPE_UINT8
// [-1, -1, C] with ragged batching; validation names the input and the
// field that disagrees with the pipeline.
func TestDecodedConfig(t *testing.T) {
	m, err := load(t, decodedDir(t), "{}", true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"dynamic_batching":{},` +
		`"input":[{"allow_ragged_batch":true,"data_type":"TYPE_UINT8","dims":[-1,-1,3],"name":"FRAME"}],` +
		`"max_batch_size":64,` +
		`"output":[{"data_type":"TYPE_FP32","dims":[3,224,224],"name":"PIXELS"}]}`
	if string(m.NewConfig) != want {
		t.Errorf("auto-complete gave\n%s\nwant\n%s", m.NewConfig, want)
	}
	for _, c := range []struct {
		edit func(in map[string]any)
		want string
	}{
		{func(in map[string]any) { in["dims"] = []any{-1} }, `config input "FRAME": dims [-1], but pipeline.pbtxt declares it a decoded RGB image, layout HWC: give dims [-1, -1, 3]`},
		{func(in map[string]any) { in["dims"] = []any{-1, -1, 4} }, `config input "FRAME": dims [-1, -1, 4]`},
		{func(in map[string]any) { in["data_type"] = "TYPE_STRING"; in["dims"] = []any{1} }, `config input "FRAME": data_type TYPE_STRING, but pipeline.pbtxt declares it a decoded RGB image, layout HWC: give data_type TYPE_UINT8 dims [-1, -1, 3]`},
		{func(in map[string]any) { in["allow_ragged_batch"] = false }, `config input "FRAME": set allow_ragged_batch: true: decoded images differ in height and width`},
	} {
		cfg := editConfig(t, decodedConfig, func(m map[string]any) { c.edit(entry(m, "input", 0)) })
		_, err := load(t, decodedDir(t), cfg, false)
		wantError(t, err, CodeInvalidArg, c.want)
	}
	cfg := editConfig(t, decodedConfig, func(m map[string]any) { delete(m, "input") })
	_, err = load(t, decodedDir(t), cfg, false)
	wantError(t, err, CodeInvalidArg, `pipeline input "FRAME" has no config input: add input { name: "FRAME" data_type: TYPE_UINT8 dims: [-1, -1, 3] allow_ragged_batch: true }`)
}

// deviceRequest hands its decoded input over in GPU memory, as Triton does
// for an upstream model's GPU output: the span's address is not memory
// here, only what the collector passes on.
type deviceRequest struct {
	fakeRequest
	asked []int // the devices InputOn was asked for
}

func (r *deviceRequest) InputOn(name string, device int) (Input, error) {
	r.asked = append(r.asked, device)
	x, err := r.Input(name)
	x.Dev, x.DevBytes, x.Device, x.Data = 0x7000_0000, len(x.Data), device, nil
	return x, err
}

// TestCollectDevice: for an instance whose executor reads device memory,
// decoded inputs are asked for on its GPU and, given there, become one
// span per image (their shapes checked against the span's bytes as against
// host bytes); host inputs of the same batch keep empty spans; a request
// taken back out takes its spans too; without such an executor (device
// -1) InputOn is never called.
func TestCollectDevice(t *testing.T) {
	prog, err := pipeline.CompileText(readFileT(t, imagenetDecodedPipeline), "decoded.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	ins := newCollectInputs([]TensorConfig{{Name: "FRAME", DataType: "TYPE_UINT8"}}, prog)
	px := make([]byte, 2*4*5*3)
	dev := &deviceRequest{fakeRequest: fakeRequest{inputs: map[string]Input{"FRAME": hwcInput(4, 5, 3, px[:60], px[60:])}}}
	host := &fakeRequest{inputs: map[string]Input{"FRAME": hwcInput(4, 5, 3, px[:60])}}
	bad := &deviceRequest{fakeRequest: fakeRequest{inputs: map[string]Input{"FRAME": hwcInput(4, 6, 3, px[:60])}}}
	bad.inputs["FRAME"] = Input{DataType: "UINT8", Shape: []int64{1, 4, 6, 3}, Data: px[:60]}

	c := newCollector(ins, 8, 1)
	if _, n, err := c.add(dev); err != nil || n != 2 {
		t.Fatalf("device request: %d images, %v", n, err)
	}
	if _, _, err := c.add(host); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.add(bad); err == nil || !strings.Contains(err.Error(), "does not match its 60 bytes") {
		t.Errorf("a shape over the span's bytes: %v", err)
	}
	want := []executor.DevSpan{{Ptr: 0x7000_0000, Len: 60, Device: 1}, {Ptr: 0x7000_0000 + 60, Len: 60, Device: 1}, {}}
	if !slices.Equal(c.dev[0], want) || c.onDev != 2 || c.batch[0][0] != nil || len(c.batch[0][2]) != 60 {
		t.Errorf("spans %v (%d on the device), host bytes %d", c.dev[0], c.onDev, len(c.batch[0][2]))
	}
	if !slices.Equal(dev.asked, []int{1}) {
		t.Errorf("InputOn asked for devices %v, want [1]", dev.asked)
	}
	c.reset()
	if len(c.dev[0]) != 0 || c.onDev != 0 {
		t.Errorf("after reset: spans %v, %d on the device", c.dev[0], c.onDev)
	}

	c = newCollector(ins, 8, -1)
	if _, _, err := c.add(dev); err != nil || c.dev != nil || len(dev.asked) != 1 {
		t.Errorf("host-memory instance: %v, spans %v, InputOn asked %d times", err, c.dev, len(dev.asked))
	}
}
