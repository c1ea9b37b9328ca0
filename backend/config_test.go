package backend

import (
	"testing"

	"github.com/sluice-dev/sluice/ops"
)

func TestAutoCompleteEmpty(t *testing.T) {
	dir := imagenetDir(t)
	// Triton hands an empty string for a config without a single
	// non-default field.
	for _, cfg := range []string{"", "{}"} {
		m, err := load(t, dir, cfg, true)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"dynamic_batching":{},` +
			`"input":[{"allow_ragged_batch":true,"data_type":"TYPE_UINT8","dims":[-1],"name":"IMAGE"}],` +
			`"max_batch_size":64,` +
			`"output":[{"data_type":"TYPE_FP32","dims":[3,224,224],"name":"PIXELS"}]}`
		if string(m.NewConfig) != want {
			t.Errorf("config %q auto-completes to\n%s\nwant\n%s", cfg, m.NewConfig, want)
		}
		if m.MaxBatchSize != 64 || len(m.Inputs) != 1 || m.Inputs[0].String() != "IMAGE TYPE_UINT8 [-1]" ||
			!m.Inputs[0].AllowRaggedBatch || m.Outputs[0].String() != "PIXELS TYPE_FP32 [3, 224, 224]" {
			t.Errorf("model %d %v %v", m.MaxBatchSize, m.Inputs, m.Outputs)
		}
		if m.Params.Workers != 0 || m.Params.Limits != ops.DefaultLimits {
			t.Errorf("default params %+v", m.Params)
		}
	}
}

// TestAutoCompleteTritonConfig starts from the JSON Triton hands for a
// config.pbtxt holding only backend: "sluice" (every primitive field
// printed, defaults filled in by the server): every field Sluice does not
// know must come back unchanged, big integers included.
func TestAutoCompleteTritonConfig(t *testing.T) {
	in := `{"name":"pre","platform":"","backend":"sluice","runtime":"",` +
		`"version_policy":{"latest":{"num_versions":1}},"max_batch_size":0,"input":[],"output":[],` +
		`"batch_input":[],"batch_output":[],"optimization":{"priority":"PRIORITY_DEFAULT",` +
		`"input_pinned_memory":{"enable":true},"output_pinned_memory":{"enable":true},` +
		`"gather_kernel_buffer_threshold":0,"eager_batching":false},"instance_group":[],` +
		`"default_model_filename":"","cc_model_filenames":{},"metric_tags":{},` +
		`"parameters":{"workers":{"string_value":"2"}},"model_warmup":[],` +
		`"model_transaction_policy":{"decoupled":false},"future_field":{"big":18446744073709551615,"s":"<a&b>"}}`
	want := `{"backend":"sluice","batch_input":[],"batch_output":[],"cc_model_filenames":{},` +
		`"default_model_filename":"","dynamic_batching":{},"future_field":{"big":18446744073709551615,"s":"<a&b>"},` +
		`"input":[{"allow_ragged_batch":true,"data_type":"TYPE_UINT8","dims":[-1],"name":"IMAGE"}],` +
		`"instance_group":[],"max_batch_size":64,"metric_tags":{},"model_transaction_policy":{"decoupled":false},` +
		`"model_warmup":[],"name":"pre","optimization":{"eager_batching":false,"gather_kernel_buffer_threshold":0,` +
		`"input_pinned_memory":{"enable":true},"output_pinned_memory":{"enable":true},"priority":"PRIORITY_DEFAULT"},` +
		`"output":[{"data_type":"TYPE_FP32","dims":[3,224,224],"name":"PIXELS"}],` +
		`"parameters":{"workers":{"string_value":"2"}},"platform":"","runtime":"",` +
		`"version_policy":{"latest":{"num_versions":1}}}`
	m, err := load(t, imagenetDir(t), in, true)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.NewConfig) != want {
		t.Errorf("auto-completed to\n%s\nwant\n%s", m.NewConfig, want)
	}
	if m.Params.Workers != 2 {
		t.Errorf("workers %d", m.Params.Workers)
	}
}

// TestAutoCompleteFillsOnlyGaps: what the user wrote stays as written (int64
// dims as strings included); only default-valued fields are filled.
func TestAutoCompleteFillsOnlyGaps(t *testing.T) {
	dir := imagenetDir(t)
	in := `{"max_batch_size":8,` +
		`"input":[{"name":"IMAGE","data_type":"TYPE_INVALID","dims":[],"allow_ragged_batch":false,"optional":false}],` +
		`"output":[{"name":"PIXELS","data_type":"TYPE_FP32","dims":["3","224","224"],"label_filename":""}]}`
	want := `{"dynamic_batching":{},` +
		`"input":[{"allow_ragged_batch":true,"data_type":"TYPE_UINT8","dims":[-1],"name":"IMAGE","optional":false}],` +
		`"max_batch_size":8,` +
		`"output":[{"data_type":"TYPE_FP32","dims":["3","224","224"],"label_filename":"","name":"PIXELS"}]}`
	m, err := load(t, dir, in, true)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.NewConfig) != want {
		t.Errorf("auto-completed to\n%s\nwant\n%s", m.NewConfig, want)
	}

	t.Run("complete config unchanged", func(t *testing.T) {
		m, err := load(t, dir, goodConfig, true)
		if err != nil {
			t.Fatal(err)
		}
		if m.NewConfig != nil {
			t.Errorf("a complete config came back changed: %s", m.NewConfig)
		}
	})
	t.Run("BYTES input kept", func(t *testing.T) {
		cfg := `{"max_batch_size":4,"input":[{"name":"IMAGE","data_type":"TYPE_STRING"}]}`
		m, err := load(t, dir, cfg, true)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"dynamic_batching":{},"input":[{"data_type":"TYPE_STRING","dims":[1],"name":"IMAGE"}],` +
			`"max_batch_size":4,"output":[{"data_type":"TYPE_FP32","dims":[3,224,224],"name":"PIXELS"}]}`
		if string(m.NewConfig) != want {
			t.Errorf("auto-completed to\n%s\nwant\n%s", m.NewConfig, want)
		}
	})
	t.Run("sequence batching kept alone", func(t *testing.T) {
		cfg := `{"sequence_batching":{}}`
		m, err := load(t, dir, cfg, true)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"input":[{"data_type":"TYPE_UINT8","dims":[-1],"name":"IMAGE"}],"max_batch_size":64,` +
			`"output":[{"data_type":"TYPE_FP32","dims":[3,224,224],"name":"PIXELS"}],"sequence_batching":{}}`
		if string(m.NewConfig) != want {
			t.Errorf("auto-completed to\n%s\nwant\n%s", m.NewConfig, want)
		}
	})
	t.Run("disagreement is an error", func(t *testing.T) {
		cfg := `{"output":[{"name":"PIXELS","data_type":"TYPE_FP16","dims":[3,224,224]}]}`
		_, err := load(t, dir, cfg, true)
		wantError(t, err, CodeInvalidArg, `config output "PIXELS": data_type TYPE_FP16, but pipeline.pbtxt produces TYPE_FP32`)
	})
}

func TestAutoCompleteOff(t *testing.T) {
	_, err := load(t, imagenetDir(t), "", false)
	wantError(t, err, CodeInvalidArg,
		"max_batch_size is 0: Sluice batches images, so it must be > 0",
		`pipeline input "IMAGE" has no config input: add input { name: "IMAGE" data_type: TYPE_UINT8 dims: [-1] allow_ragged_batch: true }`,
		`pipeline output "PIXELS" has no config output: add output { name: "PIXELS" data_type: TYPE_FP32 dims: [3, 224, 224] }`)
}

func TestValidationErrors(t *testing.T) {
	dir := imagenetDir(t)
	cases := []struct {
		name string
		base string
		edit func(m map[string]any)
		want []string // empty: valid
	}{
		{"max_batch_size", goodConfig, func(m map[string]any) { m["max_batch_size"] = 0 },
			[]string{"max_batch_size is 0: Sluice batches images"}},
		{"negative max_batch_size", goodConfig, func(m map[string]any) { m["max_batch_size"] = -1 },
			[]string{"max_batch_size is -1"}},
		{"missing input", goodConfig, func(m map[string]any) { m["input"] = []any{} },
			[]string{`pipeline input "IMAGE" has no config input`}},
		{"extra input", goodConfig, func(m map[string]any) {
			m["input"] = append(m["input"].([]any), map[string]any{"name": "EXTRA", "data_type": "TYPE_UINT8", "dims": []any{-1}})
		}, []string{`config input "EXTRA" is not a pipeline input (pipeline.pbtxt has input IMAGE)`}},
		{"duplicate input", goodConfig, func(m map[string]any) {
			m["input"] = append(m["input"].([]any), entry(m, "input", 0))
		}, []string{`config input "IMAGE" is listed twice`}},
		{"input type", goodConfig, func(m map[string]any) { entry(m, "input", 0)["data_type"] = "TYPE_FP32" },
			[]string{`config input "IMAGE": data_type TYPE_FP32 is not supported`, "TYPE_UINT8 with dims [-1] or TYPE_STRING with dims [1]"}},
		{"UINT8 dims", goodConfig, func(m map[string]any) { entry(m, "input", 0)["dims"] = []any{3} },
			[]string{`config input "IMAGE": TYPE_UINT8 needs dims [-1]`, "not [3]"}},
		{"STRING dims", bytesConfig, func(m map[string]any) { entry(m, "input", 0)["dims"] = []any{-1} },
			[]string{`config input "IMAGE": TYPE_STRING needs dims [1]`, "not [-1]"}},
		{"ragged missing", goodConfig, func(m map[string]any) { entry(m, "input", 0)["allow_ragged_batch"] = false },
			[]string{`config input "IMAGE": set allow_ragged_batch: true`}},
		{"ragged not needed without dynamic batching", goodConfig, func(m map[string]any) {
			entry(m, "input", 0)["allow_ragged_batch"] = false
			delete(m, "dynamic_batching")
		}, nil},
		{"BYTES needs no ragged batching", bytesConfig, func(m map[string]any) {}, nil},
		{"input reshape", goodConfig, func(m map[string]any) { entry(m, "input", 0)["reshape"] = map[string]any{"shape": []any{}} },
			[]string{`config input "IMAGE": reshape is not supported`}},
		{"optional input", goodConfig, func(m map[string]any) { entry(m, "input", 0)["optional"] = true },
			[]string{`config input "IMAGE": optional inputs are not supported`}},
		{"missing output", goodConfig, func(m map[string]any) { delete(m, "output") },
			[]string{`pipeline output "PIXELS" has no config output`}},
		{"extra output", goodConfig, func(m map[string]any) {
			m["output"] = append(m["output"].([]any), map[string]any{"name": "MORE", "data_type": "TYPE_FP32", "dims": []any{1}})
		}, []string{`config output "MORE" is not a pipeline output (pipeline.pbtxt has output PIXELS)`}},
		{"output type", goodConfig, func(m map[string]any) { entry(m, "output", 0)["data_type"] = "TYPE_UINT8" },
			[]string{`config output "PIXELS": data_type TYPE_UINT8, but pipeline.pbtxt produces TYPE_FP32`}},
		{"output dims", goodConfig, func(m map[string]any) { entry(m, "output", 0)["dims"] = []any{"3", "224", "225"} },
			[]string{`config output "PIXELS": dims [3, 224, 225], but pipeline.pbtxt produces [3, 224, 224]`}},
		{"output reshape", goodConfig, func(m map[string]any) { entry(m, "output", 0)["reshape"] = map[string]any{"shape": []any{1}} },
			[]string{`config output "PIXELS": reshape is not supported`}},
		{"several at once", goodConfig, func(m map[string]any) {
			m["max_batch_size"] = 0
			entry(m, "output", 0)["dims"] = []any{1}
		}, []string{"max_batch_size is 0", `config output "PIXELS": dims [1]`}},
		{"dims not integers", goodConfig, func(m map[string]any) { entry(m, "output", 0)["dims"] = []any{"three"} },
			[]string{`model config: output #1: dims[0]: "three" is not an integer`}},
		{"input not a list", goodConfig, func(m map[string]any) { m["input"] = "IMAGE" },
			[]string{`model config: input: want a list, got "IMAGE"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, dir, editConfig(t, c.base, c.edit), false)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, CodeInvalidArg, c.want...)
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		_, err := load(t, dir, "{max_batch_size: 8}", false)
		wantError(t, err, CodeInvalidArg, "model config is not valid JSON")
	})
}

func TestParameters(t *testing.T) {
	dir := imagenetDir(t)
	with := func(params map[string]string) string {
		return editConfig(t, goodConfig, func(m map[string]any) {
			p := map[string]any{}
			for k, v := range params {
				p[k] = map[string]any{"string_value": v}
			}
			m["parameters"] = p
		})
	}
	m := mustLoad(t, dir, with(map[string]string{"workers": " 3 ", "max_image_pixels": "1000000", "max_image_bytes": "65536"}))
	if want := (Params{Workers: 3, Limits: ops.WithPixels(ops.Limits{MaxBytes: 65536}, 1000000), HWShare: -1, MaxBatchBytes: 2 << 30,
		RequestQuota: ops.DefaultRequestQuota, BatchQuota: ops.DefaultBatchQuota}); m.Params != want {
		t.Errorf("params %+v, want %+v", m.Params, want)
	}
	m = mustLoad(t, dir, with(map[string]string{"max_batch_bytes": "4294967296"}))
	if m.Params.MaxBatchBytes != 4<<30 {
		t.Errorf("max_batch_bytes %d, want 4 GiB", m.Params.MaxBatchBytes)
	}
	m = mustLoad(t, dir, with(map[string]string{"gpu_memory_bytes": "268435456", "gpu_hardware_decode_share": "0.75"}))
	if m.Params.GPUMemory != 256<<20 || m.Params.HWShare != 0.75 {
		t.Errorf("GPU params %+v, want 256 MiB and a share of 0.75", m.Params)
	}
	for _, v := range []string{"1.5", "-0.1", "half", "NaN"} {
		_, err := load(t, dir, with(map[string]string{"gpu_hardware_decode_share": v}), false)
		wantError(t, err, CodeInvalidArg, `parameter "gpu_hardware_decode_share": "`+v+`" is not a number from 0 to 1`)
	}

	_, err := load(t, dir, with(map[string]string{"max_image_pixel": "10"}), false)
	wantError(t, err, CodeInvalidArg, `unknown parameter "max_image_pixel"`, "pipeline, workers, max_image_pixels, max_image_work, max_image_memory, max_image_bytes, max_request_pixels, max_request_work, max_batch_pixels, max_batch_work, max_batch_bytes")

	for _, c := range []struct{ name, value string }{
		{"workers", "abc"}, {"workers", "0"}, {"workers", "100000"}, {"workers", ""},
		{"max_image_pixels", "-5"}, {"max_image_pixels", "1e6"}, {"max_image_bytes", "0"},
		{"max_image_bytes", "99999999999999999999"}, {"max_batch_bytes", "0"}, {"max_batch_bytes", "-1"},
		{"max_batch_bytes", "2GB"},
	} {
		_, err := load(t, dir, with(map[string]string{c.name: c.value}), false)
		wantError(t, err, CodeInvalidArg, `parameter "`+c.name+`": "`+c.value+`" is not an integer`)
	}

	t.Run("not a string_value", func(t *testing.T) {
		cfg := editConfig(t, goodConfig, func(m map[string]any) {
			m["parameters"] = map[string]any{"workers": 4}
		})
		_, err := load(t, dir, cfg, false)
		wantError(t, err, CodeInvalidArg, `parameter "workers": want {string_value: ...}, got 4`)
	})
}
