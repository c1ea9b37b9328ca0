package codec

import (
	"fmt"
	"strings"
)

// Cause classifies why an image could not be decoded; package ops uses the
// same type for every per-sample failure.
type Cause string

const (
	Truncated   Cause = "truncated"
	NotImage    Cause = "not an image"
	Corrupt     Cause = "corrupt data"
	Unsupported Cause = "unsupported"
	TooLarge    Cause = "too large"
)

// Error is a decode failure with its cause. Msg names the format and the
// detail, e.g. "JPEG data ends early (Premature end of JPEG file)".
type Error struct {
	Cause  Cause
	Format string // "JPEG", "PNG"; empty when the input was not recognised
	Msg    string
}

func (e *Error) Error() string { return string(e.Cause) + ": " + e.Msg }

func errorf(c Cause, format string, a ...any) *Error {
	return &Error{Cause: c, Msg: fmt.Sprintf(format, a...)}
}

// formatErr is errorf for a known format.
func formatErr(c Cause, fmtName, format string, a ...any) *Error {
	return &Error{Cause: c, Format: fmtName, Msg: fmt.Sprintf(format, a...)}
}

// msgCause is a fragment of a C library's error message and the cause it
// means.
type msgCause struct {
	contains string
	cause    Cause
}

// messageError classifies a failed library call's message: the first
// fragment msg contains names the cause; anything else is Corrupt.
func messageError(format string, causes []msgCause, msg string) *Error {
	if msg == "" {
		msg = "no message"
	}
	cause := Corrupt
	for _, c := range causes {
		if strings.Contains(msg, c.contains) {
			cause = c.cause
			break
		}
	}
	return formatErr(cause, format, "%s decode failed (%s)", format, msg)
}
