// Package ops holds Sluice's operators: one file each, with its argument
// schema, shape rule and CPU implementation. Operators register themselves
// from init; the pipeline package validates definitions against the
// schemas, and the executor runs them one sample at a time.
package ops

import (
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/codec"
)

// Op is a built operator. Infer runs once at compile time; Run runs once per
// sample, possibly on several goroutines at once, each with its own Ctx.
type Op interface {
	// Infer gives the output specs for the input specs, or an error that
	// names what does not fit (wrong dtype, channel count...).
	Infer(in []Spec) ([]Spec, error)
	// Run computes one sample. Outputs are sized with Tensor.Reshape.
	Run(c *Ctx, in []*Tensor, out []*Tensor) error
}

// Stateful operators keep per-worker state (a decoder handle, scratch
// buffers). The executor calls NewState once per worker and hands the
// result back in Ctx.State; Close releases it.
type Stateful interface {
	NewState() (State, error)
}

// State is per-worker operator state.
type State interface {
	Close()
}

// Trimmer is implemented by states whose scratch buffers grow with the
// images they see. The executor calls Trim after each sample: it releases
// buffers over keep bytes and returns how many bytes it released.
type Trimmer interface {
	Trim(keep int) int
}

// Sizer is implemented by operators whose output height and width follow
// from the input's full-resolution height and width alone (resize,
// letterbox). A decoder feeding one may decode at a reduced DCT scale.
type Sizer interface {
	OutSize(h, w int) (oh, ow int)
}

// Linker is implemented by operators that adapt to their consumers. The
// executor calls Link once after building the graph with the operators
// that read this one's outputs.
type Linker interface {
	Link(consumers []Op)
}

// Fuser is implemented by operators that can absorb their only consumer
// into one pass: a resize that computes only the window a following crop
// keeps. Fuse returns an operator that reads this one's inputs and writes
// next's outputs exactly as the two would in sequence, or false when it
// cannot. Both operators have been through Infer.
type Fuser interface {
	Fuse(next Op) (Op, bool)
}

// Limits bound what one sample may cost, checked before allocating. They
// are the codec's limits, one type, because decode hands them to the codec
// as they are: the encoded bytes (checked by decode itself), the decoded
// pixels, the decode work (and each operator's, Ctx.Charge) and the
// decoder's memory.
type Limits = codec.Limits

// DefaultLimits: 64 MiB encoded, 64 megapixels decoded, and the work and
// memory limits codec derives from that pixel limit (6.4 G units, 1 GiB).
var DefaultLimits = WithPixels(Limits{MaxBytes: 64 << 20}, 64<<20)

// WithPixels sets l's pixel limit and the work and memory limits that
// codec derives from it.
func WithPixels(l Limits, maxPixels int) Limits {
	c := codec.LimitsFor(maxPixels)
	l.MaxPixels, l.MaxWork, l.MaxMemory = c.MaxPixels, c.MaxWork, c.MaxMemory
	return l
}

// Ctx is what a Run call gets besides its tensors.
type Ctx struct {
	State  State
	Limits Limits
	// Budget is what the sample's request may still cost (nil: no
	// limit beyond Limits); decode and Charge draw on it.
	Budget *Budget
}

// Cause classifies why a sample failed, so that callers (error responses,
// metrics) can tell a truncated upload from a hostile one. The decoders'
// causes are the codec's own; BadInput covers the rest.
type Cause = codec.Cause

const (
	Truncated   = codec.Truncated
	NotImage    = codec.NotImage
	Corrupt     = codec.Corrupt
	Unsupported = codec.Unsupported
	TooLarge    = codec.TooLarge
	Cancelled   = Cause("cancelled")
	BadInput    = Cause("invalid input")
)

// Error is a per-sample failure with its cause.
type Error struct {
	Cause Cause
	Msg   string
}

func (e *Error) Error() string { return string(e.Cause) + ": " + e.Msg }

// Errorf makes a per-sample error.
func Errorf(c Cause, format string, a ...any) error {
	return &Error{Cause: c, Msg: fmt.Sprintf(format, a...)}
}

// CauseOf returns the cause of a sample error, BadInput when it has none.
func CauseOf(err error) Cause {
	var e *Error
	if errors.As(err, &e) {
		return e.Cause
	}
	return BadInput
}

// needImage checks that an input spec is an HWC uint8 image.
func needImage(op string, s Spec) error {
	if !s.IsImage() {
		return fmt.Errorf("%s needs an HWC UINT8 image input, got %v", op, s)
	}
	return nil
}
