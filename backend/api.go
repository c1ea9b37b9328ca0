// Package backend is Sluice's Triton backend in plain Go: model state
// (parsed config, compiled pipeline, parameters), instance state (an
// executor), the input collector that gathers one Execute's requests into
// a batch, and the output responder that scatters results back. It speaks
// to Triton only through the small interfaces below, which package cgo
// implements over the C API; tests implement them with plain structs.
package backend

// Input is one request input as Triton holds it: its data type name as
// in the model config without the TYPE_ prefix ("UINT8", "BYTES"), its
// shape including the batch dimension, and its bytes (for BYTES: Triton's
// serialization, a 4-byte little-endian length before each element). Data
// is valid only during Execute.
type Input struct {
	DataType string
	Shape    []int64
	Data     []byte
	// Dev, when not 0, is where the bytes are instead of Data: DevBytes
	// of device memory of GPU Device (an input given by InputOn).
	Dev      uintptr
	DevBytes int
	Device   int
}

// DeviceRequest is a Request that can hand over an input where Triton
// holds it, GPU memory included: a KIND_GPU instance reads the decoded
// images an upstream model left on a GPU in place. InputOn prefers
// device's memory; Triton has the last word (host memory when the input is
// there, or in several buffers).
type DeviceRequest interface {
	InputOn(name string, device int) (Input, error)
}

// Request is one inference request of an Execute call.
type Request interface {
	// Input returns the named input, or an error when the request does
	// not carry it.
	Input(name string) (Input, error)
	// Requested reports whether the request asks for the named output.
	// Triton lists every output of the model for a request that names
	// none, so an output not listed is one the client does not want: it
	// must not be returned (over HTTP an unwanted tensor costs the server
	// its JSON text, many times its size).
	Requested(output string) bool
	// Cancelled reports whether the request was cancelled (its client
	// gave up): its work may stop, and its response carries CodeCancelled.
	Cancelled() bool
}

// Response is the response to one request. Output allocates the named
// output with its data type ("FP32", "FP16", "UINT8") and shape (batch
// dimension first) and returns the CPU buffer to fill, exactly as many
// bytes as the shape holds, valid until Execute returns. shape is valid
// only during the call: copy it to keep it.
type Response interface {
	Output(name, dataType string, shape []int64) ([]byte, error)
}

// Buffer is an output buffer where Triton placed it: host memory (Host),
// or device memory of GPU Device at Ptr when Host is nil.
type Buffer struct {
	Host   []byte
	Ptr    uintptr
	Device int
}

// DeviceResponse is a Response that can place outputs in GPU memory, for
// KIND_GPU instances. Triton has the last word: it hands out host memory
// when the consumer (a client, a CPU model) wants it there.
type DeviceResponse interface {
	OutputOn(name, dataType string, shape []int64, device int) (Buffer, error)
}

// Code classifies an error for Triton (TRITONSERVER_Error_Code).
type Code int

const (
	CodeInternal Code = iota
	CodeInvalidArg
	CodeUnsupported
	CodeNotFound
	CodeUnavailable
	CodeCancelled
)

// Error is an error with the code Triton should report it under.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// The rest of the package's surface, for package cgo:
//
//	func LoadModel(a ModelArgs) (*Model, error)                        model.go
//	    reads the pipeline from the version folder, auto-completes the
//	    config when a.AutoComplete, validates it against the pipeline;
//	    m.NewConfig is set when the config changed (cgo hands it to
//	    TRITONBACKEND_ModelSetConfig).
//	func (m *Model) NewInstance(name, kind string, device int) (*Instance, error)   instance.go
//	func (m *Model) Close()
//	func (i *Instance) Execute(reqs []Request, resps []Response) ([]error, BatchStats)
//	    one error per request (nil: all outputs filled), owned by the
//	    instance until its next Execute; BatchStats (stats.go) holds the
//	    timestamps for every request's and the batch's statistics, and
//	    the image counts (successes, bytes, failures by cause) for
//	    Sluice's metrics.
//	func (i *Instance) Close()
//
// Every error these return is an *Error.
