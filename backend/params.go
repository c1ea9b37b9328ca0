package backend

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-dev/sluice/ops"
)

// Params are the model's settings from the config's parameters (string
// values, as Triton has them):
//
//	parameters { key: "workers" value { string_value: "8" } }
type Params struct {
	// Pipeline names the definition file in the version folder; empty
	// means model.sluice, else pipeline.pbtxt.
	Pipeline string
	// Workers is the number of images one instance processes at once.
	Workers int
	// Limits bound each image, checked before anything is allocated.
	Limits ops.Limits
}

// Parameter names.
const (
	ParamPipeline       = "pipeline"
	ParamWorkers        = "workers"
	ParamMaxImagePixels = "max_image_pixels"
	ParamMaxImageBytes  = "max_image_bytes"
)

var knownParams = []string{ParamPipeline, ParamWorkers, ParamMaxImagePixels, ParamMaxImageBytes}

// maxWorkers bounds the workers parameter: each worker holds its own
// decode state and image buffers, so a typo of a few extra digits would
// otherwise cost gigabytes.
const maxWorkers = 1024

// parseParams reads the parameters. An unknown name fails the load rather
// than being ignored: a misspelt "max_image_pixel" must not silently leave
// the default limit in place.
func parseParams(p map[string]string) (Params, error) {
	out := Params{Workers: runtime.GOMAXPROCS(0), Limits: ops.DefaultLimits}
	names := make([]string, 0, len(p))
	for k := range p {
		names = append(names, k)
	}
	slices.Sort(names) // report the same problem first every time
	var problems []string
	for _, k := range names {
		v := p[k]
		var err error
		switch k {
		case ParamPipeline:
			out.Pipeline = v
		case ParamWorkers:
			out.Workers, err = intParam(k, v, maxWorkers)
		case ParamMaxImagePixels:
			out.Limits.MaxPixels, err = intParam(k, v, 0)
		case ParamMaxImageBytes:
			out.Limits.MaxBytes, err = intParam(k, v, 0)
		default:
			err = fmt.Errorf("unknown parameter %q: Sluice knows %s", k, strings.Join(knownParams, ", "))
		}
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return out, &Error{Code: CodeInvalidArg, Msg: strings.Join(problems, "\n")}
	}
	return out, nil
}

// intParam reads a positive integer, at most max when max > 0. Zero is
// refused for the limits too although ops reads it as "unlimited": a
// server should not take unbounded images from clients by accident.
func intParam(name, v string, max int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || (max > 0 && n > max) {
		want := "an integer ≥ 1"
		if max > 0 {
			want = fmt.Sprintf("an integer from 1 to %d", max)
		}
		return 0, fmt.Errorf("parameter %q: %q is not %s", name, v, want)
	}
	return n, nil
}
