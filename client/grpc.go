package client

import (
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/sluice-dev/sluice/client/inferencepb"
)

// GRPCClient speaks Triton's gRPC protocol over one connection, shared by
// every call (safe for concurrent use).
type GRPCClient struct {
	conn *grpc.ClientConn
	rpc  pb.GRPCInferenceServiceClient
	opts Options
}

var _ Client = (*GRPCClient)(nil)

// NewGRPC returns a client for the server at addr ("host:port"). It does not
// connect: the first call does, and reconnects happen by themselves.
// Extra dial options (TLS, interceptors) may be given; the default is a
// plaintext connection with no message size limit.
func NewGRPC(addr string, opts Options, dial ...grpc.DialOption) (*GRPCClient, error) {
	// The channel's own reconnect backoff follows the retry policy: with
	// gRPC's default (1s, growing to 120s) a server that comes back would
	// not be seen by the retries.
	rp := opts.Retry.withDefaults()
	do := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: rp.InitialBackoff, Multiplier: 2, Jitter: 0.1, MaxDelay: rp.MaxBackoff},
			MinConnectTimeout: 5 * time.Second,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.MaxCallSendMsgSize(math.MaxInt32)),
	}, dial...)
	conn, err := grpc.NewClient(addr, do...)
	if err != nil {
		return nil, fmt.Errorf("client: gRPC %s: %w", addr, err)
	}
	return &GRPCClient{conn: conn, rpc: pb.NewGRPCInferenceServiceClient(conn), opts: opts}, nil
}

// Close closes the connection.
func (c *GRPCClient) Close() error { return c.conn.Close() }

// Conn is the shared connection.
func (c *GRPCClient) Conn() *grpc.ClientConn { return c.conn }

// Raw is the generated stub, for the parts of the protocol this type does
// not wrap.
func (c *GRPCClient) Raw() pb.GRPCInferenceServiceClient { return c.rpc }

func grpcRetryable(err error) bool { return IsUnavailable(err) }

// do runs one RPC with the client's timeout and retry policy.
func grpcDo[T any](ctx context.Context, c *GRPCClient, op string, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := withTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var out T
	err := retry(ctx, c.opts.Retry, grpcRetryable, func() error {
		var err error
		out, err = call(ctx)
		return grpcError(op, err)
	})
	return out, err
}

func (c *GRPCClient) ServerLive(ctx context.Context) (bool, error) {
	r, err := grpcDo(ctx, c, "ServerLive", func(ctx context.Context) (*pb.ServerLiveResponse, error) {
		return c.rpc.ServerLive(ctx, &pb.ServerLiveRequest{})
	})
	if err != nil {
		return false, err
	}
	return r.GetLive(), nil
}

func (c *GRPCClient) ServerReady(ctx context.Context) (bool, error) {
	r, err := grpcDo(ctx, c, "ServerReady", func(ctx context.Context) (*pb.ServerReadyResponse, error) {
		return c.rpc.ServerReady(ctx, &pb.ServerReadyRequest{})
	})
	if err != nil {
		return false, err
	}
	return r.GetReady(), nil
}

func (c *GRPCClient) ModelReady(ctx context.Context, model, version string) (bool, error) {
	r, err := grpcDo(ctx, c, "ModelReady "+model, func(ctx context.Context) (*pb.ModelReadyResponse, error) {
		return c.rpc.ModelReady(ctx, &pb.ModelReadyRequest{Name: model, Version: version})
	})
	if err != nil {
		return false, err
	}
	return r.GetReady(), nil
}

func (c *GRPCClient) ServerMetadata(ctx context.Context) (*ServerMetadata, error) {
	r, err := grpcDo(ctx, c, "ServerMetadata", func(ctx context.Context) (*pb.ServerMetadataResponse, error) {
		return c.rpc.ServerMetadata(ctx, &pb.ServerMetadataRequest{})
	})
	if err != nil {
		return nil, err
	}
	return &ServerMetadata{Name: r.GetName(), Version: r.GetVersion(), Extensions: r.GetExtensions()}, nil
}

func tensorMetadata(ts []*pb.ModelMetadataResponse_TensorMetadata) []TensorMetadata {
	out := make([]TensorMetadata, len(ts))
	for i, t := range ts {
		out[i] = TensorMetadata{Name: t.GetName(), Datatype: t.GetDatatype(), Shape: t.GetShape()}
	}
	return out
}

func (c *GRPCClient) ModelMetadata(ctx context.Context, model, version string) (*ModelMetadata, error) {
	r, err := grpcDo(ctx, c, "ModelMetadata "+model, func(ctx context.Context) (*pb.ModelMetadataResponse, error) {
		return c.rpc.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: model, Version: version})
	})
	if err != nil {
		return nil, err
	}
	return &ModelMetadata{Name: r.GetName(), Versions: r.GetVersions(), Platform: r.GetPlatform(),
		Inputs: tensorMetadata(r.GetInputs()), Outputs: tensorMetadata(r.GetOutputs())}, nil
}

func (c *GRPCClient) ModelConfig(ctx context.Context, model, version string) (*ModelConfig, error) {
	r, err := grpcDo(ctx, c, "ModelConfig "+model, func(ctx context.Context) (*pb.ModelConfigResponse, error) {
		return c.rpc.ModelConfig(ctx, &pb.ModelConfigRequest{Name: model, Version: version})
	})
	if err != nil {
		return nil, err
	}
	cfg := r.GetConfig()
	mc := &ModelConfig{Name: cfg.GetName(), Platform: cfg.GetPlatform(), Backend: cfg.GetBackend(),
		MaxBatchSize: int(cfg.GetMaxBatchSize())}
	for _, in := range cfg.GetInput() {
		mc.Inputs = append(mc.Inputs, ConfigTensor{Name: in.GetName(), DataType: in.GetDataType().String(),
			Dims: in.GetDims(), AllowRaggedBatch: in.GetAllowRaggedBatch()})
	}
	for _, o := range cfg.GetOutput() {
		mc.Outputs = append(mc.Outputs, ConfigTensor{Name: o.GetName(), DataType: o.GetDataType().String(), Dims: o.GetDims()})
	}
	return mc, nil
}

func (c *GRPCClient) Infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	if err := checkInputs(req); err != nil {
		return nil, err
	}
	in := &pb.ModelInferRequest{ModelName: req.Model, ModelVersion: req.Version, Id: req.ID}
	for _, t := range req.Inputs {
		in.Inputs = append(in.Inputs, &pb.ModelInferRequest_InferInputTensor{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
		in.RawInputContents = append(in.RawInputContents, t.Data)
	}
	for _, o := range req.Outputs {
		in.Outputs = append(in.Outputs, &pb.ModelInferRequest_InferRequestedOutputTensor{Name: o})
	}
	r, err := grpcDo(ctx, c, "ModelInfer "+req.Model, func(ctx context.Context) (*pb.ModelInferResponse, error) {
		return c.rpc.ModelInfer(ctx, in)
	})
	if err != nil {
		return nil, err
	}
	resp := &InferResponse{Model: r.GetModelName(), Version: r.GetModelVersion(), ID: r.GetId()}
	raw := r.GetRawOutputContents()
	for i, o := range r.GetOutputs() {
		t := Tensor{Name: o.GetName(), Datatype: o.GetDatatype(), Shape: o.GetShape()}
		switch {
		case i < len(raw):
			t.Data = raw[i]
		case o.GetContents() != nil:
			t.Data, err = contentsBytes(o.GetDatatype(), o.GetContents())
			if err != nil {
				return nil, &Error{Code: CodeInternal, Op: "ModelInfer " + req.Model, Message: err.Error()}
			}
		}
		resp.Outputs = append(resp.Outputs, t)
	}
	return resp, nil
}

// contentsBytes turns typed contents (servers that do not send raw
// outputs) into raw bytes.
func contentsBytes(dt string, c *pb.InferTensorContents) ([]byte, error) {
	var b []byte
	switch dt {
	case "BYTES":
		return EncodeBytes(c.GetBytesContents()...), nil
	case "FP32":
		for _, v := range c.GetFp32Contents() {
			b = le32(b, math.Float32bits(v))
		}
	case "FP64":
		for _, v := range c.GetFp64Contents() {
			b = le64(b, math.Float64bits(v))
		}
	case "INT32":
		for _, v := range c.GetIntContents() {
			b = le32(b, uint32(v))
		}
	case "INT64":
		for _, v := range c.GetInt64Contents() {
			b = le64(b, uint64(v))
		}
	case "UINT8":
		for _, v := range c.GetUintContents() {
			b = append(b, byte(v))
		}
	case "UINT32":
		for _, v := range c.GetUintContents() {
			b = le32(b, v)
		}
	case "UINT64":
		for _, v := range c.GetUint64Contents() {
			b = le64(b, v)
		}
	case "BOOL":
		for _, v := range c.GetBoolContents() {
			if v {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	default:
		return nil, fmt.Errorf("typed contents of datatype %s are not supported", dt)
	}
	return b, nil
}

func le32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

func le64(b []byte, v uint64) []byte { return le32(le32(b, uint32(v)), uint32(v>>32)) }

// checkInputs catches, before sending, a data size that does not match the
// shape of a fixed-size datatype.
func checkInputs(req *InferRequest) error {
	if req.Model == "" {
		return &Error{Code: CodeInvalidArg, Op: "Infer", Message: "no model name"}
	}
	for _, t := range req.Inputs {
		n := int64(1)
		for _, d := range t.Shape {
			if d < 0 {
				return &Error{Code: CodeInvalidArg, Op: "Infer " + req.Model,
					Message: fmt.Sprintf("input %s: negative dimension in shape %v", t.Name, t.Shape)}
			}
			n *= d
		}
		if sz := elemSize(t.Datatype); sz > 0 && int64(len(t.Data)) != n*int64(sz) {
			return &Error{Code: CodeInvalidArg, Op: "Infer " + req.Model,
				Message: fmt.Sprintf("input %s: %d bytes of data for %s shape %v (want %d)", t.Name, len(t.Data), t.Datatype, t.Shape, n*int64(sz))}
		}
		if t.Datatype == "BYTES" {
			if els, err := DecodeBytes(t.Data); err != nil || int64(len(els)) != n {
				msg := fmt.Sprintf("input %s: BYTES data holds %d elements for shape %v", t.Name, len(els), t.Shape)
				if err != nil {
					msg = fmt.Sprintf("input %s: %v", t.Name, err)
				}
				return &Error{Code: CodeInvalidArg, Op: "Infer " + req.Model, Message: msg}
			}
		}
	}
	return nil
}

func duration(d *pb.StatisticDuration) Duration { return Duration{Count: d.GetCount(), Ns: d.GetNs()} }

func (c *GRPCClient) ModelStatistics(ctx context.Context, model, version string) ([]ModelStats, error) {
	r, err := grpcDo(ctx, c, "ModelStatistics "+model, func(ctx context.Context) (*pb.ModelStatisticsResponse, error) {
		return c.rpc.ModelStatistics(ctx, &pb.ModelStatisticsRequest{Name: model, Version: version})
	})
	if err != nil {
		return nil, err
	}
	var out []ModelStats
	for _, s := range r.GetModelStats() {
		is := s.GetInferenceStats()
		ms := ModelStats{Name: s.GetName(), Version: s.GetVersion(), LastInference: s.GetLastInference(),
			InferenceCount: s.GetInferenceCount(), ExecutionCount: s.GetExecutionCount(),
			Success: duration(is.GetSuccess()), Fail: duration(is.GetFail()), Queue: duration(is.GetQueue()),
			ComputeInput: duration(is.GetComputeInput()), ComputeInfer: duration(is.GetComputeInfer()),
			ComputeOutput: duration(is.GetComputeOutput())}
		for _, b := range s.GetBatchStats() {
			ms.Batches = append(ms.Batches, BatchStats{BatchSize: b.GetBatchSize(), ComputeInput: duration(b.GetComputeInput()),
				ComputeInfer: duration(b.GetComputeInfer()), ComputeOutput: duration(b.GetComputeOutput())})
		}
		out = append(out, ms)
	}
	return out, nil
}

func (c *GRPCClient) RepositoryIndex(ctx context.Context, readyOnly bool) ([]ModelIndex, error) {
	r, err := grpcDo(ctx, c, "RepositoryIndex", func(ctx context.Context) (*pb.RepositoryIndexResponse, error) {
		return c.rpc.RepositoryIndex(ctx, &pb.RepositoryIndexRequest{Ready: readyOnly})
	})
	if err != nil {
		return nil, err
	}
	var out []ModelIndex
	for _, m := range r.GetModels() {
		out = append(out, ModelIndex{Name: m.GetName(), Version: m.GetVersion(), State: m.GetState(), Reason: m.GetReason()})
	}
	return out, nil
}

func (c *GRPCClient) LoadModel(ctx context.Context, model string) error {
	_, err := grpcDo(ctx, c, "RepositoryModelLoad "+model, func(ctx context.Context) (*pb.RepositoryModelLoadResponse, error) {
		return c.rpc.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: model})
	})
	return err
}

func (c *GRPCClient) UnloadModel(ctx context.Context, model string) error {
	_, err := grpcDo(ctx, c, "RepositoryModelUnload "+model, func(ctx context.Context) (*pb.RepositoryModelUnloadResponse, error) {
		return c.rpc.RepositoryModelUnload(ctx, &pb.RepositoryModelUnloadRequest{ModelName: model})
	})
	return err
}
