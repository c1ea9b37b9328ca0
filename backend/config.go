package backend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sluice-dev/sluice/internal/excerpt"
)

// The model config arrives as Triton's JSON of inference.ModelConfig
// (protobuf JSON with proto field names, every primitive field printed,
// int64 values as numbers or, from other producers, as strings). Sluice
// reads the few fields it needs into a typed view but keeps the whole
// document as a generic map: when auto-complete rewrites the config, every
// field this package does not know about must come back unchanged.

// Data type names of the model config that Sluice uses.
const (
	typeUint8  = "TYPE_UINT8"
	typeString = "TYPE_STRING" // BYTES in requests
	typeFP16   = "TYPE_FP16"
	typeFP32   = "TYPE_FP32"
	typeInt32  = "TYPE_INT32"
	// typeInvalid is what Triton prints for a data_type left out.
	typeInvalid = "TYPE_INVALID"
)

// TensorConfig is one input or output of the model config, as Sluice
// reads it.
type TensorConfig struct {
	Name     string
	DataType string  // "TYPE_UINT8", "TYPE_STRING", "TYPE_FP32", ...
	Dims     []int64 // without the batch dimension; -1 is variable
	// AllowRaggedBatch lets the dynamic batcher put requests whose
	// shapes differ into one Execute (inputs only).
	AllowRaggedBatch bool

	reshape  bool // a reshape is given; Sluice supports none
	optional bool // an optional input; Sluice supports none
}

// String prints the tensor as people write it in config.pbtxt.
func (t TensorConfig) String() string {
	return fmt.Sprintf("%s %s %s", t.Name, t.DataType, dimsString(t.Dims))
}

// config is the parsed model config: the generic document and the typed
// view of it that validation and auto-complete work with.
type config struct {
	doc map[string]any

	name          string
	maxBatchSize  int64
	inputs        []TensorConfig
	outputs       []TensorConfig
	dynamicBatch  bool // dynamic_batching is present
	sequenceBatch bool // sequence_batching is present
	params        map[string]string
}

// parseDoc decodes the JSON document. Triton hands an empty string for a
// config whose every field has its default value.
func parseDoc(data []byte) (map[string]any, error) {
	doc := map[string]any{}
	if len(bytes.TrimSpace(data)) == 0 {
		return doc, nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber() // keep 64-bit values exact when the document is written back
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("model config is not valid JSON: %v", err)
	}
	if d.More() {
		return nil, fmt.Errorf("model config: unexpected data after the JSON object")
	}
	if doc == nil { // the document was "null"
		doc = map[string]any{}
	}
	return doc, nil
}

// marshalDoc writes the document back. Keys come out sorted; strings are
// not HTML-escaped, so that values such as "a&b" come back as written.
func marshalDoc(doc map[string]any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// view reads the typed view out of the document.
func view(doc map[string]any) (*config, error) {
	c := &config{doc: doc, params: map[string]string{}}
	var err error
	if c.name, err = getString(doc, "name"); err != nil {
		return nil, fmt.Errorf("model config: %v", err)
	}
	if c.maxBatchSize, err = getInt(doc, "max_batch_size"); err != nil {
		return nil, fmt.Errorf("model config: %v", err)
	}
	if c.inputs, err = tensors(doc, "input"); err != nil {
		return nil, err
	}
	if c.outputs, err = tensors(doc, "output"); err != nil {
		return nil, err
	}
	c.dynamicBatch = doc["dynamic_batching"] != nil
	c.sequenceBatch = doc["sequence_batching"] != nil
	if c.params, err = parameters(doc); err != nil {
		return nil, err
	}
	return c, nil
}

func tensors(doc map[string]any, key string) ([]TensorConfig, error) {
	list, err := getList(doc, key)
	if err != nil {
		return nil, fmt.Errorf("model config: %v", err)
	}
	var ts []TensorConfig
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("model config: %s #%d: want an object, got %s", key, i+1, jsonKind(x))
		}
		t, err := tensor(m)
		if err != nil {
			return nil, fmt.Errorf("model config: %s #%d: %v", key, i+1, err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

func tensor(m map[string]any) (TensorConfig, error) {
	var t TensorConfig
	var err error
	if t.Name, err = getString(m, "name"); err != nil {
		return t, err
	}
	if t.DataType, err = getString(m, "data_type"); err != nil {
		return t, err
	}
	if t.DataType == "" {
		t.DataType = typeInvalid
	}
	if t.Dims, err = getDims(m, "dims"); err != nil {
		return t, err
	}
	if t.AllowRaggedBatch, err = getBool(m, "allow_ragged_batch"); err != nil {
		return t, err
	}
	if t.optional, err = getBool(m, "optional"); err != nil {
		return t, err
	}
	t.reshape = m["reshape"] != nil
	return t, nil
}

// parameters reads "parameters": {"key": {"string_value": "..."}}.
func parameters(doc map[string]any) (map[string]string, error) {
	p := map[string]string{}
	x, ok := doc["parameters"]
	if !ok || x == nil {
		return p, nil
	}
	m, ok := x.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("model config: parameters: want an object, got %s", jsonKind(x))
	}
	for k, v := range m {
		vm, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("model config: parameter %s: want {string_value: ...}, got %s", excerpt.Quote(k), jsonKind(v))
		}
		s, err := getString(vm, "string_value")
		if err != nil {
			return nil, fmt.Errorf("model config: parameter %s: %v", excerpt.Quote(k), err)
		}
		p[k] = s
	}
	return p, nil
}

// Accessors of the generic document. A missing key or null reads as the
// zero value, as protobuf has it.

func getString(m map[string]any, key string) (string, error) {
	switch v := m[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", fmt.Errorf("%s: want a string, got %s", key, jsonKind(v))
	}
}

func getBool(m map[string]any, key string) (bool, error) {
	switch v := m[key].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	default:
		return false, fmt.Errorf("%s: want true or false, got %s", key, jsonKind(v))
	}
}

func getInt(m map[string]any, key string) (int64, error) {
	if m[key] == nil {
		return 0, nil
	}
	n, err := asInt(m[key])
	if err != nil {
		return 0, fmt.Errorf("%s: %v", key, err)
	}
	return n, nil
}

func getList(m map[string]any, key string) ([]any, error) {
	switch v := m[key].(type) {
	case nil:
		return nil, nil
	case []any:
		return v, nil
	default:
		return nil, fmt.Errorf("%s: want a list, got %s", key, jsonKind(v))
	}
}

func getDims(m map[string]any, key string) ([]int64, error) {
	list, err := getList(m, key)
	if err != nil {
		return nil, err
	}
	dims := make([]int64, len(list))
	for i, x := range list {
		if dims[i], err = asInt(x); err != nil {
			return nil, fmt.Errorf("%s[%d]: %v", key, i, err)
		}
	}
	return dims, nil
}

// asInt reads an integer written as a JSON number or, as protobuf's JSON
// printer does for int64, as a string.
func asInt(x any) (int64, error) {
	var s string
	switch v := x.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	case float64: // documents built in Go rather than decoded
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return 0, fmt.Errorf("%v is not an integer", v)
		}
		return int64(v), nil
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	default:
		return 0, fmt.Errorf("want an integer, got %s", jsonKind(x))
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not an integer", excerpt.Quote(s))
	}
	return n, nil
}

func jsonKind(x any) string {
	switch v := x.(type) {
	case nil:
		return "null"
	case string:
		return excerpt.Quote(v)
	case json.Number:
		return excerpt.Cut(string(v), excerpt.Max)
	case bool, float64, int, int64:
		return fmt.Sprint(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", x)
}

// dimsString prints dims as config.pbtxt has them, the first maxShownDims
// of them: a config's dims are not bounded before validation reports them.
func dimsString(dims []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range dims {
		if i == maxShownDims {
			fmt.Fprintf(&b, ", … (%d dims)", len(dims))
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// maxShownDims is more than any tensor Sluice takes or makes has.
const maxShownDims = 8

// findTensor returns the index of the named tensor, or -1.
func findTensor(ts []TensorConfig, name string) int {
	for i, t := range ts {
		if t.Name == name {
			return i
		}
	}
	return -1
}
