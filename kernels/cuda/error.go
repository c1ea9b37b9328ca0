package cuda

import (
	"errors"
	"fmt"
)

// Result is a CUresult.
type Result int

// The results callers act on; the driver has many more, which Error names all the same.
const (
	Success                       Result = 0
	ErrorInvalidValue             Result = 1
	ErrorOutOfMemory              Result = 2
	ErrorNotInitialized           Result = 3
	ErrorDeinitialized            Result = 4
	ErrorNoDevice                 Result = 100
	ErrorInvalidDevice            Result = 101
	ErrorInvalidPTX               Result = 218
	ErrorInvalidHandle            Result = 400
	ErrorNotFound                 Result = 500
	ErrorNotReady                 Result = 600
	ErrorPeerAccessAlreadyEnabled Result = 704
)

// Error is a failed driver call.
type Error struct {
	Call string // the API name, as the CUDA documentation spells it
	Code Result
	Name string // e.g. CUDA_ERROR_OUT_OF_MEMORY, from cuGetErrorName
	Msg  string // the driver's description, from cuGetErrorString
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = "CUresult"
	}
	s := fmt.Sprintf("%s: %s (%d)", e.Call, name, int(e.Code))
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// IsResult reports whether err is, or wraps, a driver error with code r.
func IsResult(err error, r Result) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == r
}

// check turns a CUresult into nil or an *Error. It runs only after load bound the error-name
// functions (cuInit's own failure included), so the names are always looked up.
func check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: call, Code: Result(r)}
	var p *byte
	if cuGetErrorName != nil && cuGetErrorName(r, &p) == 0 {
		e.Name = goString(p)
	}
	p = nil
	if cuGetErrorString != nil && cuGetErrorString(r, &p) == 0 {
		e.Msg = goString(p)
	}
	return e
}
