package main

/*
#include <stdlib.h>
#include "triton.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"

	"go.uber.org/zap"

	"github.com/sluice-dev/sluice/backend"
)

// tritonCodes maps backend's error classes onto Triton's.
var tritonCodes = map[backend.Code]C.TRITONSERVER_Error_Code{
	backend.CodeInternal:    C.TRITONSERVER_ERROR_INTERNAL,
	backend.CodeInvalidArg:  C.TRITONSERVER_ERROR_INVALID_ARG,
	backend.CodeUnsupported: C.TRITONSERVER_ERROR_UNSUPPORTED,
	backend.CodeNotFound:    C.TRITONSERVER_ERROR_NOT_FOUND,
	backend.CodeUnavailable: C.TRITONSERVER_ERROR_UNAVAILABLE,
	backend.CodeCancelled:   C.TRITONSERVER_ERROR_CANCELLED,
}

// backendCode is the reverse of tritonCodes; Triton's codes with no
// counterpart in backend (UNKNOWN, ALREADY_EXISTS) count as
// internal, their number kept in the message by goError.
func backendCode(c C.TRITONSERVER_Error_Code) backend.Code {
	for bc, tc := range tritonCodes {
		if tc == c {
			return bc
		}
	}
	return backend.CodeInternal
}

// newTritonError makes a TRITONSERVER_Error from err (nil for nil). The
// caller owns the result: returned from an entry point, Triton takes it;
// passed to TRITONBACKEND_ResponseSend, the caller still deletes it.
func newTritonError(err error) *C.TRITONSERVER_Error {
	if err == nil {
		return nil
	}
	code, msg := classify(err)
	cmsg := C.CString(msg)
	defer C.free(unsafe.Pointer(cmsg))
	return C.TRITONSERVER_ErrorNew(code, cmsg)
}

// classify returns err's Triton code, that of a *backend.Error anywhere in
// its chain and INTERNAL otherwise, and its message. err may come from
// backend: a panicking Error, Unwrap or As method (or a typed nil) must
// not keep a response from being sent, so a panic is recovered into a
// generic description.
func classify(err error) (code C.TRITONSERVER_Error_Code, msg string) {
	code = C.TRITONSERVER_ERROR_INTERNAL
	defer func() {
		if r := recover(); r != nil {
			code, msg = C.TRITONSERVER_ERROR_INTERNAL, fmt.Sprintf("sluice: unreadable error %T (%v)", err, r)
		}
	}()
	var be *backend.Error
	if errors.As(err, &be) && be != nil {
		if c, ok := tritonCodes[be.Code]; ok {
			code = c
		}
	}
	return code, err.Error()
}

// goError turns the result of a Triton call into a Go error, nil for
// success, and deletes the Triton error. what names the call.
func goError(what string, e *C.TRITONSERVER_Error) error {
	if e == nil {
		return nil
	}
	defer C.TRITONSERVER_ErrorDelete(e)
	code := C.TRITONSERVER_ErrorCode(e)
	msg := what + ": " + C.GoString(C.TRITONSERVER_ErrorMessage(e))
	bc := backendCode(code)
	if tritonCodes[bc] != code {
		msg += fmt.Sprintf(" (Triton error code %d)", int(code))
	}
	return &backend.Error{Code: bc, Msg: msg}
}

// logIfError logs the failure of a Triton call whose error has nowhere
// else to go (releasing a request, reporting statistics).
func logIfError(what string, e *C.TRITONSERVER_Error) {
	if err := goError(what, e); err != nil {
		logger().Error("Triton call failed", zap.Error(err))
	}
}

// panicError describes a recovered panic as an internal error and logs it
// with its stack.
func panicError(where string, r any) error {
	logger().Error("panic recovered", zap.String("in", where), zap.Any("panic", r),
		zap.ByteString("stack", debug.Stack()))
	return &backend.Error{Code: backend.CodeInternal, Msg: fmt.Sprintf("sluice: panic in %s: %v", where, r)}
}

// recoverError is deferred by every entry point: it turns a panic into the
// entry point's error result so that no Go panic unwinds into Triton.
func recoverError(where string, result **C.TRITONSERVER_Error) {
	if r := recover(); r != nil {
		*result = newTritonError(panicError(where, r))
	}
}
