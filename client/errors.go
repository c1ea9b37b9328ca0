package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Code classifies an error the way Triton does (TRITONSERVER_Error_Code),
// plus the transport's own conditions.
type Code int

const (
	CodeUnknown Code = iota
	CodeInternal
	CodeNotFound
	CodeInvalidArg
	CodeUnavailable
	CodeUnsupported
	CodeAlreadyExists
	CodeDeadlineExceeded
	CodeCanceled
)

func (c Code) String() string {
	switch c {
	case CodeInternal:
		return "INTERNAL"
	case CodeNotFound:
		return "NOT_FOUND"
	case CodeInvalidArg:
		return "INVALID_ARG"
	case CodeUnavailable:
		return "UNAVAILABLE"
	case CodeUnsupported:
		return "UNSUPPORTED"
	case CodeAlreadyExists:
		return "ALREADY_EXISTS"
	case CodeDeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case CodeCanceled:
		return "CANCELED"
	}
	return "UNKNOWN"
}

// Error is an error reported by the server or by the transport. Message is
// Triton's own message when the server answered.
type Error struct {
	Code       Code
	Message    string
	HTTPStatus int    // the HTTP status, for HTTPClient errors the server answered
	Op         string // the call, e.g. "ModelInfer preprocess_imagenet"
	Err        error  // the underlying transport error, if any
}

func (e *Error) Error() string {
	s := e.Code.String() + ": " + e.Message
	if e.Op != "" {
		s = e.Op + ": " + s
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

func codeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeUnknown
}

// IsNotFound reports whether err says a model (or version) does not exist
// or is not loaded.
func IsNotFound(err error) bool { return codeOf(err) == CodeNotFound }

// IsInvalidArg reports whether the server rejected the request's contents.
func IsInvalidArg(err error) bool { return codeOf(err) == CodeInvalidArg }

// IsUnavailable reports whether the server could not be reached or is not
// ready.
func IsUnavailable(err error) bool { return codeOf(err) == CodeUnavailable }

// Triton reports an unknown or unloaded model with INVALID_ARG/400 on some
// paths ("Request for unknown model: 'x' is not found"); those are NotFound.
func refine(c Code, msg string) Code {
	if c == CodeInvalidArg || c == CodeUnknown {
		m := strings.ToLower(msg)
		if strings.Contains(m, "unknown model") || strings.Contains(m, "is not found") {
			return CodeNotFound
		}
	}
	return c
}

func grpcError(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: CodeDeadlineExceeded, Message: err.Error(), Op: op, Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Code: CodeCanceled, Message: err.Error(), Op: op, Err: err}
	}
	st, ok := status.FromError(err)
	if !ok {
		return &Error{Code: CodeUnknown, Message: err.Error(), Op: op, Err: err}
	}
	var c Code
	switch st.Code() {
	case codes.NotFound:
		c = CodeNotFound
	case codes.InvalidArgument:
		c = CodeInvalidArg
	case codes.Unavailable:
		c = CodeUnavailable
	case codes.Unimplemented:
		c = CodeUnsupported
	case codes.AlreadyExists:
		c = CodeAlreadyExists
	case codes.Internal:
		c = CodeInternal
	case codes.DeadlineExceeded:
		c = CodeDeadlineExceeded
	case codes.Canceled:
		c = CodeCanceled
	default:
		c = CodeUnknown
	}
	return &Error{Code: refine(c, st.Message()), Message: st.Message(), Op: op, Err: err}
}

func httpStatusError(op string, httpStatus int, msg string) error {
	var c Code
	switch httpStatus {
	case http.StatusBadRequest:
		c = CodeInvalidArg
	case http.StatusNotFound:
		c = CodeNotFound
	case http.StatusServiceUnavailable:
		c = CodeUnavailable
	case http.StatusNotImplemented:
		c = CodeUnsupported
	case http.StatusConflict:
		c = CodeAlreadyExists
	case http.StatusInternalServerError:
		c = CodeInternal
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		c = CodeDeadlineExceeded
	default:
		c = CodeUnknown
	}
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d %s", httpStatus, http.StatusText(httpStatus))
	}
	return &Error{Code: refine(c, msg), Message: msg, HTTPStatus: httpStatus, Op: op}
}
