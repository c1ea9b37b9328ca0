package main

/*
#include <string.h>
#include "triton.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/sluice-dev/sluice/backend"
	"github.com/sluice-dev/sluice/internal/faultsafe"
)

// exchange is one request of an Execute call together with its response. It
// is both the backend.Request and the backend.Response handed to backend,
// so the two cannot get out of step.
type exchange struct {
	st   *instanceState
	req  *C.TRITONBACKEND_Request
	resp *C.TRITONBACKEND_Response
}

// Input returns a request input. Data is Triton's own memory when the
// input is one buffer (the usual case) and a copy in the instance's arena
// when it is several; either way it is valid until Execute returns.
func (x *exchange) Input(name string) (backend.Input, error) {
	in, meta, size, chunks, err := x.input(name)
	if err != nil {
		return backend.Input{}, err
	}
	meta.Data, err = x.inputData(in, name, size, chunks)
	return meta, err
}

// InputOn returns a request input where Triton holds it: in GPU memory
// when it is there in one buffer (asked for on device; Triton hands over
// the buffer as it lies, on whichever device), else as Input gives it.
func (x *exchange) InputOn(name string, device int) (backend.Input, error) {
	in, meta, size, chunks, err := x.input(name)
	if err != nil || chunks != 1 {
		if err == nil {
			meta.Data, err = x.inputData(in, name, size, chunks)
		}
		return meta, err
	}
	var (
		p     unsafe.Pointer
		n     C.uint64_t
		mem   = C.TRITONSERVER_MemoryType(C.TRITONSERVER_MEMORY_GPU)
		memID = C.int64_t(device)
	)
	if e := C.TRITONBACKEND_InputBuffer(in, 0, &p, &n, &mem, &memID); e != nil {
		return backend.Input{}, goError("input "+name, e)
	}
	if uint64(n) > math.MaxInt {
		return backend.Input{}, &backend.Error{Code: backend.CodeInvalidArg, Msg: fmt.Sprintf("input %s: %d bytes is too large", name, uint64(n))}
	}
	if mem == C.TRITONSERVER_MEMORY_GPU {
		meta.Dev, meta.DevBytes, meta.Device = uintptr(p), int(n), int(memID)
		return meta, nil
	}
	meta.Data, err = x.private(name, unsafe.Slice((*byte)(p), int(n)))
	return meta, err
}

// input looks up a request input: the handle, its data type and shape,
// its byte size and how many buffers hold it.
func (x *exchange) input(name string) (*C.TRITONBACKEND_Input, backend.Input, uint64, uint32, error) {
	var in *C.TRITONBACKEND_Input
	// Error text is only built on failure: this runs for every request.
	if e := C.TRITONBACKEND_RequestInput(x.req, x.st.names.get(name), &in); e != nil {
		return nil, backend.Input{}, 0, 0, goError("input "+name, e)
	}
	var (
		dt     C.TRITONSERVER_DataType
		shape  *C.int64_t
		dims   C.uint32_t
		size   C.uint64_t
		chunks C.uint32_t
	)
	if e := C.TRITONBACKEND_InputProperties(in, nil, &dt, &shape, &dims, &size, &chunks); e != nil {
		return nil, backend.Input{}, 0, 0, goError("input "+name, e)
	}
	return in, backend.Input{
		DataType: dataTypeName(dt),
		// A copy: backend may keep a shape longer than the request lives.
		Shape: append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(shape)), int(dims))...),
	}, uint64(size), uint32(chunks), nil
}

// inputData returns an input's bytes, without copying when Triton holds
// them in one buffer.
func (x *exchange) inputData(in *C.TRITONBACKEND_Input, name string, size uint64, chunks uint32) ([]byte, error) {
	switch chunks {
	case 0:
		return nil, nil
	case 1:
		b, err := inputBuffer(in, name, 0)
		if err != nil {
			return nil, err
		}
		return x.private(name, b)
	}
	dst, err := x.copySpace(name, size)
	if err != nil {
		return nil, err
	}
	off := 0
	for i := uint32(0); i < chunks; i++ {
		b, err := inputBuffer(in, name, i)
		if err != nil {
			return nil, err
		}
		if len(b) > len(dst)-off {
			return nil, &backend.Error{Code: backend.CodeInternal,
				Msg: fmt.Sprintf("input %s: its buffers hold more than the %d bytes Triton reports", name, size)}
		}
		if err := faultsafe.Copy(dst[off:], b); err != nil {
			return nil, faultError(name, err)
		}
		off += len(b)
	}
	if off != len(dst) {
		return nil, &backend.Error{Code: backend.CodeInternal,
			Msg: fmt.Sprintf("input %s: its buffers hold %d bytes, Triton reports %d", name, off, size)}
	}
	return dst, nil
}

// private returns b, one buffer of an input in Triton's memory, where the
// decoders may read it: in place, unless it lies in memory a client can
// take away (system shared memory, which a truncated file unmaps page by
// page, raising SIGBUS in whoever reads it), which is copied into the
// arena first, a fault failing the request instead of the server.
func (x *exchange) private(name string, b []byte) ([]byte, error) {
	if len(b) == 0 {
		return b, nil
	}
	volatile, err := x.st.volatile(b)
	if err != nil {
		return nil, &backend.Error{Code: backend.CodeInternal, Msg: fmt.Sprintf("input %s: %v", name, err)}
	}
	if !volatile {
		return b, nil
	}
	dst, err := x.copySpace(name, uint64(len(b)))
	if err != nil {
		return nil, err
	}
	if err := faultsafe.Copy(dst, b); err != nil {
		return nil, faultError(name, err)
	}
	return dst, nil
}

// copySpace takes room in the arena for a copy of an input of size bytes.
// Copying allocates: bounded by what a request can hold.
func (x *exchange) copySpace(name string, size uint64) ([]byte, error) {
	if size > uint64(x.st.maxInput) {
		return nil, &backend.Error{Code: backend.CodeInvalidArg,
			Msg: fmt.Sprintf("input %s: too large: %d bytes, over the %d that max_batch_size × max_image_bytes allows", name, size, x.st.maxInput)}
	}
	return x.st.arena.take(int(size)), nil
}

func faultError(name string, err error) error {
	return &backend.Error{Code: backend.CodeInvalidArg, Msg: fmt.Sprintf("input %s: %v", name, err)}
}

// inputBuffer returns one of an input's buffers over Triton's memory. It
// must be host memory: an input placed on a GPU by an upstream model is
// refused rather than copied (only a KIND_GPU instance's decoded images
// are read there, through InputOn).
func inputBuffer(in *C.TRITONBACKEND_Input, name string, i uint32) ([]byte, error) {
	var (
		p     unsafe.Pointer
		n     C.uint64_t
		mem   = C.TRITONSERVER_MemoryType(C.TRITONSERVER_MEMORY_CPU)
		memID C.int64_t
	)
	if e := C.TRITONBACKEND_InputBuffer(in, C.uint32_t(i), &p, &n, &mem, &memID); e != nil {
		return nil, goError("input "+name, e)
	}
	if mem == C.TRITONSERVER_MEMORY_GPU {
		return nil, &backend.Error{Code: backend.CodeUnsupported,
			Msg: fmt.Sprintf("input %s is in GPU memory (device %d); sluice reads its inputs from host memory (a KIND_GPU instance reads decoded-image inputs in place)", name, int64(memID))}
	}
	if uint64(n) > math.MaxInt {
		return nil, &backend.Error{Code: backend.CodeInvalidArg, Msg: fmt.Sprintf("input %s: %d bytes is too large", name, uint64(n))}
	}
	return unsafe.Slice((*byte)(p), int(n)), nil
}

// Requested reports whether the request lists the output. A failing
// query counts as asked for: an output too many is safer than a missing
// one.
func (x *exchange) Requested(name string) bool {
	var n C.uint32_t
	if e := C.TRITONBACKEND_RequestOutputCount(x.req, &n); e != nil {
		logIfError("TRITONBACKEND_RequestOutputCount", e)
		return true
	}
	want := x.st.names.get(name)
	for i := C.uint32_t(0); i < n; i++ {
		var got *C.char
		if e := C.TRITONBACKEND_RequestOutputName(x.req, i, &got); e != nil {
			logIfError("TRITONBACKEND_RequestOutputName", e)
			return true
		}
		if C.strcmp(got, want) == 0 {
			return true
		}
	}
	return false
}

// Cancelled reports whether the request's client cancelled it.
func (x *exchange) Cancelled() bool {
	var c C.bool
	if e := C.TRITONBACKEND_RequestIsCancelled(x.req, &c); e != nil {
		logIfError("TRITONBACKEND_RequestIsCancelled", e)
		return false
	}
	return bool(c)
}

// Output adds an output to the response and returns its buffer, Triton's
// host memory, to fill until Execute returns.
func (x *exchange) Output(name, dataType string, shape []int64) ([]byte, error) {
	return x.hostOutput(name, dataType, shape, -1)
}

// OutputSized adds an output of size bytes, for BYTES, whose size the
// shape does not fix, and returns its host buffer.
func (x *exchange) OutputSized(name, dataType string, shape []int64, size int) ([]byte, error) {
	return x.hostOutput(name, dataType, shape, size)
}

func (x *exchange) hostOutput(name, dataType string, shape []int64, size int) ([]byte, error) {
	b, err := x.output(name, dataType, shape, C.TRITONSERVER_MEMORY_CPU, 0, size)
	if err != nil {
		return nil, err
	}
	if b.Host == nil && b.Ptr != 0 {
		return nil, &backend.Error{Code: backend.CodeUnsupported,
			Msg: fmt.Sprintf("output %s: Triton gave GPU memory (device %d) for a host-memory request", name, b.Device)}
	}
	return b.Host, nil
}

// OutputOn adds an output and asks for its buffer in the memory of GPU
// device. Triton may give host memory instead, when the consumer wants it
// there; Buffer says which.
func (x *exchange) OutputOn(name, dataType string, shape []int64, device int) (backend.Buffer, error) {
	return x.output(name, dataType, shape, C.TRITONSERVER_MEMORY_GPU, device, -1)
}

// output adds an output; size is its bytes, or negative to follow from
// the shape, which a BYTES output's cannot.
func (x *exchange) output(name, dataType string, shape []int64, want C.TRITONSERVER_MemoryType, device, size int) (backend.Buffer, error) {
	dt, elemSize, ok := dataTypeByName(dataType)
	if !ok {
		return backend.Buffer{}, &backend.Error{Code: backend.CodeInvalidArg, Msg: fmt.Sprintf("output %s: unknown data type %q", name, dataType)}
	}
	if size < 0 {
		if elemSize == 0 {
			return backend.Buffer{}, &backend.Error{Code: backend.CodeUnsupported,
				Msg: fmt.Sprintf("output %s: %s has no fixed element size; the buffer size cannot follow from the shape", name, dataType)}
		}
		var err error
		if size, err = byteSize(shape, elemSize); err != nil {
			return backend.Buffer{}, &backend.Error{Code: backend.CodeInvalidArg, Msg: "output " + name + ": " + err.Error()}
		}
	}
	var cshape *C.int64_t
	if len(shape) > 0 {
		// Triton copies the shape; the Go memory is not kept.
		cshape = (*C.int64_t)(unsafe.Pointer(&shape[0]))
	}
	var out *C.TRITONBACKEND_Output
	if e := C.TRITONBACKEND_ResponseOutput(x.resp, &out, x.st.names.get(name), dt, cshape, C.uint32_t(len(shape))); e != nil {
		return backend.Buffer{}, goError("output "+name, e)
	}
	var (
		p     unsafe.Pointer
		mem   = want
		memID = C.int64_t(device)
	)
	if e := C.TRITONBACKEND_OutputBuffer(out, &p, C.uint64_t(size), &mem, &memID); e != nil {
		return backend.Buffer{}, goError("output "+name, e)
	}
	if size > 0 && p == nil {
		return backend.Buffer{}, &backend.Error{Code: backend.CodeInternal, Msg: fmt.Sprintf("output %s: Triton gave no buffer for %d bytes", name, size)}
	}
	if mem == C.TRITONSERVER_MEMORY_GPU {
		return backend.Buffer{Ptr: uintptr(p), Device: int(memID)}, nil
	}
	if size == 0 {
		return backend.Buffer{Host: []byte{}}, nil
	}
	host := unsafe.Slice((*byte)(p), size)
	volatile, err := x.st.volatile(host)
	if err != nil {
		return backend.Buffer{}, &backend.Error{Code: backend.CodeInternal, Msg: fmt.Sprintf("output %s: %v", name, err)}
	}
	if !volatile {
		return backend.Buffer{Host: host}, nil
	}
	// A client's system shared memory: the executor writes the arena, and
	// send copies it over, a fault failing the request (see private). The
	// load bounded a batch's outputs by max_batch_bytes.
	staged := x.st.arena.take(size)
	x.st.staged = append(x.st.staged, stagedOutput{x: x, name: name, dst: host, src: staged})
	return backend.Buffer{Host: staged}, nil
}

// stagedOutput is an output bound for memory a client can take away,
// written to src (the arena) and copied to dst when its response is sent.
type stagedOutput struct {
	x        *exchange
	name     string
	dst, src []byte
}

// deliverStaged copies x's staged outputs to where Triton placed them,
// returning the first that cannot be written.
func (x *exchange) deliverStaged() error {
	for i := range x.st.staged {
		o := &x.st.staged[i]
		if o.x != x {
			continue
		}
		if err := faultsafe.Copy(o.dst, o.src); err != nil {
			return &backend.Error{Code: backend.CodeInvalidArg, Msg: fmt.Sprintf("output %s: %v", o.name, err)}
		}
	}
	return nil
}
