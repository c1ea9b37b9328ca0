package backend

import (
	"slices"

	"github.com/sluice-dev/sluice/pipeline"
)

// DefaultMaxBatchSize is what auto-complete gives max_batch_size, or fewer
// when that many samples' outputs would be over max_batch_bytes. Large
// enough that a dynamic batch keeps every core busy on CPU; Triton's
// batcher sends less when fewer requests are waiting.
const DefaultMaxBatchSize = 64

// autoComplete fills in, on the generic document, what the config leaves
// out and the pipeline determines: the inputs (one encoded image per batch
// element, TYPE_UINT8 [-1]; a decoded one, layout "HWC", TYPE_UINT8
// [-1, -1, C]), the outputs (types and dims from the
// pipeline), max_batch_size, dynamic batching and allow_ragged_batch on
// UINT8 inputs. It never replaces a value the user gave: where the config
// disagrees with the pipeline, validation says so afterwards. It reports
// whether the document changed.
//
// Triton prints every primitive field of the config, so "left out" can
// only mean "has its default value": max_batch_size 0, data_type
// TYPE_INVALID, empty dims, allow_ragged_batch false. None of these is a
// value a Sluice model can run with, so filling them overrides no choice.
func autoComplete(doc map[string]any, prog *pipeline.Compiled, p Params) (changed bool, err error) {
	set := func(m map[string]any, key string, v any) {
		m[key] = v
		changed = true
	}

	// Sluice batches: a model that does not would get one request of one
	// image per Execute.
	if mbs, err := getInt(doc, "max_batch_size"); err != nil {
		return false, err
	} else if mbs == 0 {
		set(doc, "max_batch_size", defaultMaxBatch(prog, p.MaxBatchBytes))
	}
	// Dynamic batching is what fills those batches. Triton refuses a
	// config with both dynamic and sequence batching, so a sequence
	// batcher the user chose stays alone.
	if doc["dynamic_batching"] == nil && doc["sequence_batching"] == nil {
		set(doc, "dynamic_batching", map[string]any{})
	}
	dynamic := doc["dynamic_batching"] != nil

	inputs, err := getList(doc, "input")
	if err != nil {
		return false, err
	}
	for k, name := range prog.Inputs {
		m := findEntry(inputs, name)
		if m == nil {
			m = map[string]any{"name": name}
			inputs = append(inputs, m)
			set(doc, "input", inputs)
		}
		dt, _ := getString(m, "data_type")
		dims, err := getDims(m, "dims")
		if err != nil {
			continue // validation reports it
		}
		if prog.Tensor(k) {
			// Boxes or their count: one fixed shape per image.
			if dt == "" || dt == typeInvalid {
				set(m, "data_type", "TYPE_"+prog.InputSpecs[k].DType.String())
			}
			if len(dims) == 0 {
				d := []any{}
				for _, x := range prog.InputSpecs[k].Dims {
					d = append(d, int64(x))
				}
				set(m, "dims", d)
			}
			continue
		}
		if prog.Decoded(k) {
			// A decoded image, HWC: its channels are the pipeline's, its
			// height and width each request's.
			if dt == "" || dt == typeInvalid {
				set(m, "data_type", typeUint8)
			}
			if len(dims) == 0 {
				set(m, "dims", []any{int64(-1), int64(-1), int64(prog.InputSpecs[k].Dims[2])})
			}
			// Without ragged batching the dynamic batcher would batch only
			// requests whose images have the same height and width.
			if dynamic {
				if ragged, err := getBool(m, "allow_ragged_batch"); err == nil && !ragged {
					set(m, "allow_ragged_batch", true)
				}
			}
			continue
		}
		if dt == "" || dt == typeInvalid {
			// An input given with dims only: the dims say which of the
			// two forms it is.
			switch {
			case len(dims) == 0 || slices.Equal(dims, rawDims):
				dt = typeUint8
			case slices.Equal(dims, bytesDims):
				dt = typeString
			default:
				continue // validation reports the dims
			}
			set(m, "data_type", dt)
		}
		if len(dims) == 0 {
			switch dt {
			case typeUint8:
				set(m, "dims", []any{int64(-1)})
			case typeString:
				set(m, "dims", []any{int64(1)})
			}
		}
		// Encoded images differ in size, so requests differ in shape:
		// without ragged batching Triton would batch only requests whose
		// images happen to have the same byte length.
		if dt == typeUint8 && dynamic {
			if ragged, err := getBool(m, "allow_ragged_batch"); err == nil && !ragged {
				set(m, "allow_ragged_batch", true)
			}
		}
	}

	outputs, err := getList(doc, "output")
	if err != nil {
		return false, err
	}
	for _, want := range configOutputs(prog, p) {
		m := findEntry(outputs, want.Name)
		if m == nil {
			m = map[string]any{"name": want.Name}
			outputs = append(outputs, m)
			set(doc, "output", outputs)
		}
		if dt, _ := getString(m, "data_type"); dt == "" || dt == typeInvalid {
			set(m, "data_type", want.DataType)
		}
		if dims, err := getDims(m, "dims"); err == nil && len(dims) == 0 {
			d := make([]any, len(want.Dims))
			for i, x := range want.Dims {
				d[i] = x
			}
			set(m, "dims", d)
		}
	}
	return changed, nil
}

// findEntry returns the object of a config input or output list with the
// given name, or nil.
func findEntry(list []any, name string) map[string]any {
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			if n, _ := getString(m, "name"); n == name {
				return m
			}
		}
	}
	return nil
}

// The two input forms Sluice accepts, without the batch dimension.
var (
	rawDims   = []int64{-1} // TYPE_UINT8: the encoded bytes of one image
	bytesDims = []int64{1}  // TYPE_STRING: one BYTES element, one image
)
