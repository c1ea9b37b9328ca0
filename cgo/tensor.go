package main

import (
	"fmt"
	"math"

	"github.com/sluice-dev/sluice/backend"
)

// byteSize is the size in bytes of a tensor of the given shape with
// elemSize-byte elements, or an error for negative dimensions and sizes
// that do not fit in an int.
func byteSize(shape []int64, elemSize int64) (int, error) {
	n := elemSize
	for _, d := range shape {
		if d < 0 {
			return 0, &backend.Error{Code: backend.CodeInvalidArg, Msg: fmt.Sprintf("shape %v has a negative dimension", shape)}
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, &backend.Error{Code: backend.CodeInvalidArg, Msg: fmt.Sprintf("shape %v is too large", shape)}
		}
		n *= d
	}
	return int(n), nil
}

// timeline turns one Execute's timestamps into the four Triton reports,
// keeping them ordered even where backend left one at zero (a batch that
// failed before computing). execStart and execEnd are taken by the entry
// point around everything it does, response creation and sending
// included, as Triton's reference backends do; the compute span is
// backend's.
func timeline(execStart, execEnd uint64, s backend.BatchStats) (start, computeStart, computeEnd, end uint64) {
	computeStart = max(s.ComputeStart, execStart)
	computeEnd = max(s.ComputeEnd, computeStart)
	return execStart, computeStart, computeEnd, max(execEnd, computeEnd)
}
