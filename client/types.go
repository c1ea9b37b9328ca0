package client

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Tensor is one input or output: its name, Triton datatype ("UINT8",
// "BYTES", "FP32", ...), shape, and contents as raw little-endian bytes in
// row-major order (BYTES: see EncodeBytes).
type Tensor struct {
	Name     string
	Datatype string
	Shape    []int64
	Data     []byte
}

// InferRequest is one inference request. Outputs names the outputs wanted;
// empty asks for all of them.
type InferRequest struct {
	Model   string
	Version string // empty: the server's choice
	ID      string
	Inputs  []Tensor
	Outputs []string
}

// InferResponse holds the outputs in the order the server sent them.
type InferResponse struct {
	Model   string
	Version string
	ID      string
	Outputs []Tensor
}

// Output returns the named output, or nil.
func (r *InferResponse) Output(name string) *Tensor {
	for i := range r.Outputs {
		if r.Outputs[i].Name == name {
			return &r.Outputs[i]
		}
	}
	return nil
}

// ServerMetadata is the server's name, version and protocol extensions.
type ServerMetadata struct {
	Name       string
	Version    string
	Extensions []string
}

// TensorMetadata describes a model input or output (-1: variable dimension).
type TensorMetadata struct {
	Name     string
	Datatype string
	Shape    []int64
}

// ModelMetadata is a model's versions, platform, inputs and outputs.
type ModelMetadata struct {
	Name     string
	Versions []string
	Platform string
	Inputs   []TensorMetadata
	Outputs  []TensorMetadata
}

// ConfigTensor is an input or output of a model configuration; DataType is
// the config's spelling ("TYPE_UINT8").
type ConfigTensor struct {
	Name             string
	DataType         string
	Dims             []int64
	AllowRaggedBatch bool
}

// ModelConfig is the subset of Triton's model configuration the client
// reads.
type ModelConfig struct {
	Name         string
	Platform     string
	Backend      string
	MaxBatchSize int
	Inputs       []ConfigTensor
	Outputs      []ConfigTensor
}

// Duration is a cumulative statistic: how many times, and nanoseconds in all.
type Duration struct {
	Count uint64
	Ns    uint64
}

// BatchStats are the executions of one batch size.
type BatchStats struct {
	BatchSize     uint64
	ComputeInput  Duration
	ComputeInfer  Duration
	ComputeOutput Duration
}

// ModelStats are a model version's cumulative inference statistics.
type ModelStats struct {
	Name           string
	Version        string
	LastInference  uint64 // milliseconds since the epoch
	InferenceCount uint64
	ExecutionCount uint64
	Success        Duration
	Fail           Duration
	Queue          Duration
	ComputeInput   Duration
	ComputeInfer   Duration
	ComputeOutput  Duration
	Batches        []BatchStats
}

// ModelIndex is one entry of the repository index.
type ModelIndex struct {
	Name    string
	Version string
	State   string // "READY", "UNAVAILABLE", "LOADING", ... or empty when never loaded
	Reason  string
}

// Client is what both protocols offer. Methods are safe for concurrent use.
type Client interface {
	ServerLive(ctx context.Context) (bool, error)
	ServerReady(ctx context.Context) (bool, error)
	ModelReady(ctx context.Context, model, version string) (bool, error)
	ServerMetadata(ctx context.Context) (*ServerMetadata, error)
	ModelMetadata(ctx context.Context, model, version string) (*ModelMetadata, error)
	ModelConfig(ctx context.Context, model, version string) (*ModelConfig, error)
	Infer(ctx context.Context, req *InferRequest) (*InferResponse, error)
	// ModelStatistics: model "" gives every model's.
	ModelStatistics(ctx context.Context, model, version string) ([]ModelStats, error)
	RepositoryIndex(ctx context.Context, readyOnly bool) ([]ModelIndex, error)
	LoadModel(ctx context.Context, model string) error
	UnloadModel(ctx context.Context, model string) error
	Close() error
}

// RetryPolicy bounds the retries of calls that could not reach the server.
type RetryPolicy struct {
	MaxAttempts    int           // total attempts, at least 1; 0: 3
	InitialBackoff time.Duration // 0: 50ms
	MaxBackoff     time.Duration // 0: 1s
}

// Options configure a client. The zero value is usable.
type Options struct {
	Retry RetryPolicy
	// Timeout applies to each call whose context has no deadline; 0: none.
	Timeout time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = 50 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = time.Second
	}
	return p
}

// retry runs call until it succeeds, fails with a non-retryable error, the
// attempts run out, or ctx ends (the last error is returned).
func retry(ctx context.Context, p RetryPolicy, retryable func(error) bool, call func() error) error {
	p = p.withDefaults()
	backoff := p.InitialBackoff
	var err error
	for attempt := 1; ; attempt++ {
		err = call()
		if err == nil || attempt >= p.MaxAttempts || !retryable(err) {
			return err
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < backoff {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff *= 2
		if backoff > p.MaxBackoff {
			backoff = p.MaxBackoff
		}
	}
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// EncodeBytes serializes BYTES elements as Triton wants them: each element
// behind its length as a 4-byte little-endian integer.
func EncodeBytes(elems ...[]byte) []byte {
	n := 0
	for _, e := range elems {
		n += 4 + len(e)
	}
	out := make([]byte, 0, n)
	for _, e := range elems {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(e)))
		out = append(out, e...)
	}
	return out
}

// DecodeBytes splits serialized BYTES data into its elements (which alias
// data).
func DecodeBytes(data []byte) ([][]byte, error) {
	var out [][]byte
	for off := 0; off < len(data); {
		if len(data)-off < 4 {
			return nil, fmt.Errorf("BYTES data: %d stray bytes at offset %d", len(data)-off, off)
		}
		n := int(binary.LittleEndian.Uint32(data[off:]))
		off += 4
		if n > len(data)-off {
			return nil, fmt.Errorf("BYTES data: element %d at offset %d claims %d bytes, %d left", len(out), off-4, n, len(data)-off)
		}
		out = append(out, data[off:off+n:off+n])
		off += n
	}
	return out, nil
}

// BytesTensor is a BYTES input of the given elements, shape [len(elems)]
// unless shape is given.
func BytesTensor(name string, elems [][]byte, shape ...int64) Tensor {
	if len(shape) == 0 {
		shape = []int64{int64(len(elems))}
	}
	return Tensor{Name: name, Datatype: "BYTES", Shape: shape, Data: EncodeBytes(elems...)}
}

// ImageErrors reads the per-image results of a model with image_errors
// "mark": one entry per image, "" when it succeeded, else why it failed
// (its outputs are then zeros). ok is false when the response carries no
// IMAGE_OK and IMAGE_ERROR (the model fails whole requests instead).
func (r *InferResponse) ImageErrors() (msgs []string, ok bool, err error) {
	okT, errT := r.Output("IMAGE_OK"), r.Output("IMAGE_ERROR")
	if okT == nil || errT == nil {
		return nil, false, nil
	}
	oks, err := okT.Bools()
	if err != nil {
		return nil, true, err
	}
	if msgs, err = errT.Strings(); err != nil {
		return nil, true, err
	}
	if len(oks) != len(msgs) {
		return nil, true, fmt.Errorf("IMAGE_OK has %d elements, IMAGE_ERROR %d", len(oks), len(msgs))
	}
	for i, good := range oks {
		if !good && msgs[i] == "" {
			msgs[i] = "failed (no cause given)"
		}
	}
	return msgs, true, nil
}

// Bools reads a BOOL tensor's data.
func (t *Tensor) Bools() ([]bool, error) {
	if t.Datatype != "BOOL" {
		return nil, fmt.Errorf("tensor %s is %s, not BOOL", t.Name, t.Datatype)
	}
	out := make([]bool, len(t.Data))
	for i, b := range t.Data {
		out[i] = b != 0
	}
	return out, nil
}

// Strings reads a BYTES tensor's elements as strings.
func (t *Tensor) Strings() ([]string, error) {
	if t.Datatype != "BYTES" {
		return nil, fmt.Errorf("tensor %s is %s, not BYTES", t.Name, t.Datatype)
	}
	elems, err := DecodeBytes(t.Data)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = string(e)
	}
	return out, nil
}

// Float32s reads an FP32 tensor's data.
func (t *Tensor) Float32s() ([]float32, error) {
	if t.Datatype != "FP32" {
		return nil, fmt.Errorf("tensor %s is %s, not FP32", t.Name, t.Datatype)
	}
	if len(t.Data)%4 != 0 {
		return nil, fmt.Errorf("tensor %s: %d bytes is not a whole number of FP32", t.Name, len(t.Data))
	}
	out := make([]float32, len(t.Data)/4)
	for i := range out {
		out[i] = float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out, nil
}

// elemSize is the byte size of one element of a fixed-size datatype, 0 for
// BYTES or an unknown type.
func elemSize(dt string) int {
	switch dt {
	case "BOOL", "UINT8", "INT8":
		return 1
	case "UINT16", "INT16", "FP16", "BF16":
		return 2
	case "UINT32", "INT32", "FP32":
		return 4
	case "UINT64", "INT64", "FP64":
		return 8
	}
	return 0
}

func float32frombits(b uint32) float32 { return math.Float32frombits(b) }
