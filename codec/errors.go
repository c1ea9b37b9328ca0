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

// allocFailures are the fragments of the C libraries' messages for a
// failed allocation: the image needed more memory than the process could
// have, which is TooLarge ("too large"), not bad data. libtiff: "Out of
// memory", "No space for <buffer>", "Failed to allocate memory for ...",
// "Cannot allocate <buffer>"; OpenJPEG: "Not enough memory to/for ...",
// "Cannot allocate ...", "Cannot decode tile, memory error" (what
// opj_tcd_init_decode_tile's failed mallocs leave), "Error allocating
// tile component data", "Failed to allocate image header", "Size of tile
// data exceeds system limits" (its tile buffer's allocation failing, or
// that size overflowing), "cannot allocate opj_tcd_seg_data_chunk_t";
// jp2mem.c's "out of memory".
var allocFailures = []string{
	"Out of memory", "out of memory", "No space for", "No space to",
	"Failed to allocate", "Cannot allocate", "cannot allocate", "Unable to allocate",
	"Not enough memory", "memory error", "Error allocating", "exceeds system limits",
}

// messageError classifies a failed library call's message: an allocation
// failure is TooLarge; otherwise the first of causes' fragments msg
// contains names the cause; anything else is Corrupt.
func messageError(format string, causes []msgCause, msg string) *Error {
	if msg == "" {
		msg = "no message"
	}
	cause := Corrupt
	for _, a := range allocFailures {
		if strings.Contains(msg, a) {
			return formatErr(TooLarge, format, "%s decode failed: out of memory (%s)", format, msg)
		}
	}
	for _, c := range causes {
		if strings.Contains(msg, c.contains) {
			cause = c.cause
			break
		}
	}
	return formatErr(cause, format, "%s decode failed (%s)", format, msg)
}
