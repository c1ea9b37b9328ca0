package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// HTTPClient speaks Triton's HTTP/REST protocol, tensors in the binary
// tensor data extension. Safe for concurrent use; connections are pooled by
// its http.Client.
type HTTPClient struct {
	base string // "http://host:port"
	hc   *http.Client
	opts Options
}

var _ Client = (*HTTPClient)(nil)

// HeaderContentLength is the header giving the size of the JSON part of a
// body that carries binary tensor data after it.
const HeaderContentLength = "Inference-Header-Content-Length"

// NewHTTP returns a client for the server at addr ("host:port" or a
// "http://host:port" URL). hc may be nil (a client of its own).
func NewHTTP(addr string, opts Options, hc *http.Client) (*HTTPClient, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("client: bad HTTP address %q", addr)
	}
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		hc = &http.Client{Transport: tr}
	}
	return &HTTPClient{base: strings.TrimRight(base, "/"), hc: hc, opts: opts}, nil
}

// Close releases idle connections.
func (c *HTTPClient) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

func httpRetryable(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

type httpReply struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request (retrying when the connection is refused) and
// returns the reply whatever its status.
func (c *HTTPClient) do(ctx context.Context, op, method, path string, header http.Header, body []byte) (*httpReply, error) {
	ctx, cancel := withTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var rep *httpReply
	err := retry(ctx, c.opts.Retry, httpRetryable, func() error {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
		if err != nil {
			return &Error{Code: CodeInvalidArg, Op: op, Message: err.Error(), Err: err}
		}
		for k, v := range header {
			req.Header[k] = v
		}
		if body != nil && req.Header.Get("Content-Type") == "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return transportError(ctx, op, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return transportError(ctx, op, err)
		}
		rep = &httpReply{status: resp.StatusCode, header: resp.Header, body: b}
		return nil
	})
	return rep, err
}

func transportError(ctx context.Context, op string, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeDeadlineExceeded, Op: op, Message: err.Error(), Err: err}
	case errors.Is(ctx.Err(), context.Canceled):
		return &Error{Code: CodeCanceled, Op: op, Message: err.Error(), Err: err}
	}
	return &Error{Code: CodeUnavailable, Op: op, Message: err.Error(), Err: err}
}

// errorFrom turns a non-200 reply into an *Error with Triton's message
// ({"error": "..."}).
func errorFrom(op string, rep *httpReply) error {
	var e struct {
		Error string `json:"error"`
	}
	msg := ""
	if json.Unmarshal(rep.body, &e) == nil {
		msg = e.Error
	} else {
		msg = strings.TrimSpace(string(rep.body))
	}
	return httpStatusError(op, rep.status, msg)
}

// callJSON does a call whose reply is JSON, decoded into out (may be nil).
func (c *HTTPClient) callJSON(ctx context.Context, op, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return &Error{Code: CodeInvalidArg, Op: op, Message: err.Error(), Err: err}
		}
	}
	rep, err := c.do(ctx, op, method, path, nil, body)
	if err != nil {
		return err
	}
	if rep.status != http.StatusOK {
		return errorFrom(op, rep)
	}
	if out != nil && len(rep.body) > 0 {
		if err := json.Unmarshal(rep.body, out); err != nil {
			return &Error{Code: CodeInternal, Op: op, Message: "bad JSON reply: " + err.Error(), Err: err}
		}
	}
	return nil
}

func modelPath(model, version string) string {
	p := "/v2/models/" + url.PathEscape(model)
	if version != "" {
		p += "/versions/" + url.PathEscape(version)
	}
	return p
}

// health: 200 is true, any other status false.
func (c *HTTPClient) health(ctx context.Context, op, path string) (bool, error) {
	rep, err := c.do(ctx, op, http.MethodGet, path, nil, nil)
	if err != nil {
		return false, err
	}
	return rep.status == http.StatusOK, nil
}

func (c *HTTPClient) ServerLive(ctx context.Context) (bool, error) {
	return c.health(ctx, "ServerLive", "/v2/health/live")
}

func (c *HTTPClient) ServerReady(ctx context.Context) (bool, error) {
	return c.health(ctx, "ServerReady", "/v2/health/ready")
}

func (c *HTTPClient) ModelReady(ctx context.Context, model, version string) (bool, error) {
	return c.health(ctx, "ModelReady "+model, modelPath(model, version)+"/ready")
}

func (c *HTTPClient) ServerMetadata(ctx context.Context) (*ServerMetadata, error) {
	var m struct {
		Name       string   `json:"name"`
		Version    string   `json:"version"`
		Extensions []string `json:"extensions"`
	}
	if err := c.callJSON(ctx, "ServerMetadata", http.MethodGet, "/v2", nil, &m); err != nil {
		return nil, err
	}
	return &ServerMetadata{Name: m.Name, Version: m.Version, Extensions: m.Extensions}, nil
}

// dims decodes a JSON array of integers written as numbers or strings.
type dims []int64

func (d *dims) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make([]int64, len(raw))
	for i, r := range raw {
		s := strings.Trim(string(r), `"`)
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("dimension %s: %w", r, err)
		}
		out[i] = v
	}
	*d = out
	return nil
}

type jsonTensorMeta struct {
	Name     string `json:"name"`
	Datatype string `json:"datatype"`
	Shape    dims   `json:"shape"`
}

func fromJSONMeta(ts []jsonTensorMeta) []TensorMetadata {
	out := make([]TensorMetadata, len(ts))
	for i, t := range ts {
		out[i] = TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape}
	}
	return out
}

func (c *HTTPClient) ModelMetadata(ctx context.Context, model, version string) (*ModelMetadata, error) {
	var m struct {
		Name     string           `json:"name"`
		Versions []string         `json:"versions"`
		Platform string           `json:"platform"`
		Inputs   []jsonTensorMeta `json:"inputs"`
		Outputs  []jsonTensorMeta `json:"outputs"`
	}
	if err := c.callJSON(ctx, "ModelMetadata "+model, http.MethodGet, modelPath(model, version), nil, &m); err != nil {
		return nil, err
	}
	return &ModelMetadata{Name: m.Name, Versions: m.Versions, Platform: m.Platform,
		Inputs: fromJSONMeta(m.Inputs), Outputs: fromJSONMeta(m.Outputs)}, nil
}

// ModelConfigJSON returns the model configuration as the server writes it.
func (c *HTTPClient) ModelConfigJSON(ctx context.Context, model, version string) ([]byte, error) {
	op := "ModelConfig " + model
	rep, err := c.do(ctx, op, http.MethodGet, modelPath(model, version)+"/config", nil, nil)
	if err != nil {
		return nil, err
	}
	if rep.status != http.StatusOK {
		return nil, errorFrom(op, rep)
	}
	return rep.body, nil
}

func (c *HTTPClient) ModelConfig(ctx context.Context, model, version string) (*ModelConfig, error) {
	b, err := c.ModelConfigJSON(ctx, model, version)
	if err != nil {
		return nil, err
	}
	return parseModelConfigJSON(b)
}

func parseModelConfigJSON(b []byte) (*ModelConfig, error) {
	type tensor struct {
		Name             string `json:"name"`
		DataType         string `json:"data_type"`
		Dims             dims   `json:"dims"`
		AllowRaggedBatch bool   `json:"allow_ragged_batch"`
	}
	var m struct {
		Name         string   `json:"name"`
		Platform     string   `json:"platform"`
		Backend      string   `json:"backend"`
		MaxBatchSize int      `json:"max_batch_size"`
		Input        []tensor `json:"input"`
		Output       []tensor `json:"output"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &Error{Code: CodeInternal, Op: "ModelConfig", Message: "bad JSON reply: " + err.Error(), Err: err}
	}
	mc := &ModelConfig{Name: m.Name, Platform: m.Platform, Backend: m.Backend, MaxBatchSize: m.MaxBatchSize}
	for _, t := range m.Input {
		mc.Inputs = append(mc.Inputs, ConfigTensor{Name: t.Name, DataType: t.DataType, Dims: t.Dims, AllowRaggedBatch: t.AllowRaggedBatch})
	}
	for _, t := range m.Output {
		mc.Outputs = append(mc.Outputs, ConfigTensor{Name: t.Name, DataType: t.DataType, Dims: t.Dims})
	}
	return mc, nil
}

type jsonInferInput struct {
	Name       string         `json:"name"`
	Datatype   string         `json:"datatype"`
	Shape      []int64        `json:"shape"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

type jsonInferOutputReq struct {
	Name       string         `json:"name"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

type jsonInferRequest struct {
	ID         string               `json:"id,omitempty"`
	Parameters map[string]any       `json:"parameters,omitempty"`
	Inputs     []jsonInferInput     `json:"inputs"`
	Outputs    []jsonInferOutputReq `json:"outputs,omitempty"`
}

// EncodeInferRequest builds an HTTP inference body: the JSON header, then
// every input's data in the binary tensor data extension, every output
// asked for as binary. It returns the body and the JSON header's length
// (the Inference-Header-Content-Length value).
func EncodeInferRequest(req *InferRequest) ([]byte, int, error) {
	jr := jsonInferRequest{ID: req.ID}
	size := 0
	for _, t := range req.Inputs {
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		jr.Inputs = append(jr.Inputs, jsonInferInput{Name: t.Name, Datatype: t.Datatype, Shape: shape,
			Parameters: map[string]any{"binary_data_size": len(t.Data)}})
		size += len(t.Data)
	}
	if len(req.Outputs) == 0 {
		jr.Parameters = map[string]any{"binary_data_output": true}
	}
	for _, o := range req.Outputs {
		jr.Outputs = append(jr.Outputs, jsonInferOutputReq{Name: o, Parameters: map[string]any{"binary_data": true}})
	}
	head, err := json.Marshal(jr)
	if err != nil {
		return nil, 0, err
	}
	body := make([]byte, 0, len(head)+size)
	body = append(body, head...)
	for _, t := range req.Inputs {
		body = append(body, t.Data...)
	}
	return body, len(head), nil
}

type jsonInferOutput struct {
	Name       string `json:"name"`
	Datatype   string `json:"datatype"`
	Shape      dims   `json:"shape"`
	Parameters struct {
		BinaryDataSize *int64 `json:"binary_data_size"`
	} `json:"parameters"`
	Data json.RawMessage `json:"data"`
}

// DecodeInferResponse parses an HTTP inference reply body. headerLen is the
// Inference-Header-Content-Length value, or -1 when the reply had none (all
// JSON). Binary outputs follow the JSON in the order of the outputs that
// have a binary_data_size; others carry their data as JSON.
func DecodeInferResponse(body []byte, headerLen int) (*InferResponse, error) {
	if headerLen < 0 {
		headerLen = len(body)
	}
	if headerLen > len(body) {
		return nil, fmt.Errorf("infer reply: JSON header of %d bytes in a body of %d", headerLen, len(body))
	}
	var jr struct {
		ModelName    string            `json:"model_name"`
		ModelVersion string            `json:"model_version"`
		ID           string            `json:"id"`
		Outputs      []jsonInferOutput `json:"outputs"`
	}
	if err := json.Unmarshal(body[:headerLen], &jr); err != nil {
		return nil, fmt.Errorf("infer reply: bad JSON header: %w", err)
	}
	resp := &InferResponse{Model: jr.ModelName, Version: jr.ModelVersion, ID: jr.ID}
	off := headerLen
	for _, o := range jr.Outputs {
		t := Tensor{Name: o.Name, Datatype: o.Datatype, Shape: o.Shape}
		if n := o.Parameters.BinaryDataSize; n != nil {
			if *n < 0 || *n > int64(len(body)-off) {
				return nil, fmt.Errorf("infer reply: output %s claims %d binary bytes, %d left", o.Name, *n, len(body)-off)
			}
			t.Data = body[off : off+int(*n) : off+int(*n)]
			off += int(*n)
		} else if len(o.Data) > 0 {
			d, err := jsonData(o.Datatype, o.Data)
			if err != nil {
				return nil, fmt.Errorf("infer reply: output %s: %w", o.Name, err)
			}
			t.Data = d
		}
		resp.Outputs = append(resp.Outputs, t)
	}
	if off != len(body) {
		return nil, fmt.Errorf("infer reply: %d bytes after the last output", len(body)-off)
	}
	return resp, nil
}

// jsonData converts a JSON "data" array (flat, or nested row-major) into
// raw bytes.
func jsonData(dt string, raw json.RawMessage) ([]byte, error) {
	var vals []any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return nil, err
	}
	var flatten func(v any)
	flatten = func(v any) {
		if a, ok := v.([]any); ok {
			for _, e := range a {
				flatten(e)
			}
			return
		}
		vals = append(vals, v)
	}
	flatten(top)
	var b []byte
	for _, v := range vals {
		switch dt {
		case "BYTES":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("BYTES element %v is not a string", v)
			}
			b = append(b, EncodeBytes([]byte(s))...)
		case "BOOL":
			x, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("BOOL element %v is not a boolean", v)
			}
			if x {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		default:
			n, ok := v.(json.Number)
			if !ok {
				return nil, fmt.Errorf("%s element %v is not a number", dt, v)
			}
			var err error
			if b, err = appendNumber(b, dt, n); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

func appendNumber(b []byte, dt string, n json.Number) ([]byte, error) {
	switch dt {
	case "FP32", "FP64":
		f, err := n.Float64()
		if err != nil {
			return nil, err
		}
		if dt == "FP32" {
			return le32(b, math.Float32bits(float32(f))), nil
		}
		return le64(b, math.Float64bits(f)), nil
	case "UINT8", "UINT16", "UINT32", "UINT64":
		u, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil {
			return nil, err
		}
		return appendInt(b, elemSize(dt), u), nil
	case "INT8", "INT16", "INT32", "INT64":
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			return nil, err
		}
		return appendInt(b, elemSize(dt), uint64(i)), nil
	}
	return nil, fmt.Errorf("JSON data of datatype %s is not supported", dt)
}

func appendInt(b []byte, size int, v uint64) []byte {
	for i := 0; i < size; i++ {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func (c *HTTPClient) Infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	if err := checkInputs(req); err != nil {
		return nil, err
	}
	op := "ModelInfer " + req.Model
	body, hlen, err := EncodeInferRequest(req)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArg, Op: op, Message: err.Error(), Err: err}
	}
	h := http.Header{}
	h.Set(HeaderContentLength, strconv.Itoa(hlen))
	h.Set("Content-Type", "application/octet-stream")
	rep, err := c.do(ctx, op, http.MethodPost, modelPath(req.Model, req.Version)+"/infer", h, body)
	if err != nil {
		return nil, err
	}
	if rep.status != http.StatusOK {
		return nil, errorFrom(op, rep)
	}
	hl := -1
	if v := rep.header.Get(HeaderContentLength); v != "" {
		if hl, err = strconv.Atoi(v); err != nil {
			return nil, &Error{Code: CodeInternal, Op: op, Message: "bad " + HeaderContentLength + ": " + v}
		}
	}
	resp, err := DecodeInferResponse(rep.body, hl)
	if err != nil {
		return nil, &Error{Code: CodeInternal, Op: op, Message: err.Error(), Err: err}
	}
	return resp, nil
}

type jsonDuration struct {
	Count uint64 `json:"count"`
	Ns    uint64 `json:"ns"`
}

func (d jsonDuration) d() Duration { return Duration{Count: d.Count, Ns: d.Ns} }

func (c *HTTPClient) ModelStatistics(ctx context.Context, model, version string) ([]ModelStats, error) {
	path := "/v2/models/stats"
	if model != "" {
		path = modelPath(model, version) + "/stats"
	}
	var r struct {
		ModelStats []struct {
			Name           string `json:"name"`
			Version        string `json:"version"`
			LastInference  uint64 `json:"last_inference"`
			InferenceCount uint64 `json:"inference_count"`
			ExecutionCount uint64 `json:"execution_count"`
			InferenceStats struct {
				Success       jsonDuration `json:"success"`
				Fail          jsonDuration `json:"fail"`
				Queue         jsonDuration `json:"queue"`
				ComputeInput  jsonDuration `json:"compute_input"`
				ComputeInfer  jsonDuration `json:"compute_infer"`
				ComputeOutput jsonDuration `json:"compute_output"`
			} `json:"inference_stats"`
			BatchStats []struct {
				BatchSize     uint64       `json:"batch_size"`
				ComputeInput  jsonDuration `json:"compute_input"`
				ComputeInfer  jsonDuration `json:"compute_infer"`
				ComputeOutput jsonDuration `json:"compute_output"`
			} `json:"batch_stats"`
		} `json:"model_stats"`
	}
	if err := c.callJSON(ctx, "ModelStatistics "+model, http.MethodGet, path, nil, &r); err != nil {
		return nil, err
	}
	var out []ModelStats
	for _, s := range r.ModelStats {
		is := s.InferenceStats
		ms := ModelStats{Name: s.Name, Version: s.Version, LastInference: s.LastInference,
			InferenceCount: s.InferenceCount, ExecutionCount: s.ExecutionCount,
			Success: is.Success.d(), Fail: is.Fail.d(), Queue: is.Queue.d(),
			ComputeInput: is.ComputeInput.d(), ComputeInfer: is.ComputeInfer.d(), ComputeOutput: is.ComputeOutput.d()}
		for _, b := range s.BatchStats {
			ms.Batches = append(ms.Batches, BatchStats{BatchSize: b.BatchSize, ComputeInput: b.ComputeInput.d(),
				ComputeInfer: b.ComputeInfer.d(), ComputeOutput: b.ComputeOutput.d()})
		}
		out = append(out, ms)
	}
	return out, nil
}

func (c *HTTPClient) RepositoryIndex(ctx context.Context, readyOnly bool) ([]ModelIndex, error) {
	var r []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		State   string `json:"state"`
		Reason  string `json:"reason"`
	}
	if err := c.callJSON(ctx, "RepositoryIndex", http.MethodPost, "/v2/repository/index",
		map[string]any{"ready": readyOnly}, &r); err != nil {
		return nil, err
	}
	out := make([]ModelIndex, len(r))
	for i, m := range r {
		out[i] = ModelIndex{Name: m.Name, Version: m.Version, State: m.State, Reason: m.Reason}
	}
	return out, nil
}

func (c *HTTPClient) LoadModel(ctx context.Context, model string) error {
	return c.callJSON(ctx, "RepositoryModelLoad "+model, http.MethodPost,
		"/v2/repository/models/"+url.PathEscape(model)+"/load", map[string]any{}, nil)
}

func (c *HTTPClient) UnloadModel(ctx context.Context, model string) error {
	return c.callJSON(ctx, "RepositoryModelUnload "+model, http.MethodPost,
		"/v2/repository/models/"+url.PathEscape(model)+"/unload", map[string]any{}, nil)
}
