package backend

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-dev/sluice/internal/excerpt"
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
	// Workers is the number of images one instance processes at once; 0
	// (the default) leaves it to the executor: every core, which KIND_GPU
	// instances of one GPU share while their batches run together.
	Workers int
	// Limits bound each image, checked before anything is allocated.
	Limits ops.Limits
	// RequestQuota bounds what one request's images decode together,
	// BatchQuota what one batch's do (max_request_*, max_batch_*).
	RequestQuota, BatchQuota ops.Quota
	// GPUMemory caps the device memory a KIND_GPU instance allocates for
	// its batches; 0 means the executor's default (a sixteenth of the
	// GPU's memory, at least 1 GiB).
	GPUMemory int64
	// HWShare is the share of hardware-decodable JPEGs a KIND_GPU
	// instance sends to the GPU's JPEG engines; negative means the
	// executor's default.
	HWShare float64
	// MaxBatchBytes bounds one batch's outputs, all of them together:
	// max_batch_size × the bytes of one sample's outputs must fit.
	MaxBatchBytes int64
	// MarkImageErrors answers a request whose images partly failed with
	// zeros for the failed ones and IMAGE_OK/IMAGE_ERROR saying which,
	// instead of failing the request.
	MarkImageErrors bool
	// ImageErrorMessages adds IMAGE_ERROR, each failed image's error
	// message, beside IMAGE_OK ("mark"). Without it ("mark_ok") the model
	// has no string output: Triton before 2.60 dies classifying one
	// (docs/reliability.md).
	ImageErrorMessages bool
}

// DefaultMaxBatchBytes is max_batch_bytes when the config does not set
// it: 2 GiB. An instance holds one batch of outputs and Triton its
// responses' copy, so this bounds a model to about 4 GiB per instance; it
// is 50 times what the ImageNet example needs at batch 64 (38.5 MB) and
// still takes 64 samples of 1024x1024 RGB FP32 (805 MB) or 640x640
// letterboxes (315 MB).
const DefaultMaxBatchBytes = 2 << 30

// Parameter names.
const (
	ParamPipeline       = "pipeline"
	ParamWorkers        = "workers"
	ParamMaxImagePixels = "max_image_pixels"
	ParamMaxImageWork   = "max_image_work"
	ParamMaxImageMemory = "max_image_memory"
	ParamMaxReqPixels   = "max_request_pixels"
	ParamMaxReqWork     = "max_request_work"
	ParamMaxBatchPixels = "max_batch_pixels"
	ParamMaxBatchWork   = "max_batch_work"
	ParamMaxImageBytes  = "max_image_bytes"
	ParamGPUMemory      = "gpu_memory_bytes"
	ParamHWShare        = "gpu_hardware_decode_share"
	ParamMaxBatchBytes  = "max_batch_bytes"
	ParamImageErrors    = "image_errors"
)

// The values of image_errors.
const (
	ImageErrorsFail   = "fail_request"
	ImageErrorsMark   = "mark"
	ImageErrorsMarkOK = "mark_ok"
)

var knownParams = []string{ParamPipeline, ParamWorkers, ParamMaxImagePixels, ParamMaxImageWork, ParamMaxImageMemory, ParamMaxImageBytes,
	ParamMaxReqPixels, ParamMaxReqWork, ParamMaxBatchPixels, ParamMaxBatchWork, ParamMaxBatchBytes,
	ParamGPUMemory, ParamHWShare, ParamImageErrors}

// maxWorkers bounds the workers parameter: each worker holds its own
// decode state and image buffers, so a typo of a few extra digits would
// otherwise cost gigabytes.
const maxWorkers = 1024

// parseParams reads the parameters. An unknown name fails the load rather
// than being ignored: a misspelt "max_image_pixel" must not silently leave
// the default limit in place.
func parseParams(p map[string]string) (Params, error) {
	out := Params{Limits: ops.DefaultLimits, HWShare: -1, MaxBatchBytes: DefaultMaxBatchBytes,
		RequestQuota: ops.DefaultRequestQuota, BatchQuota: ops.DefaultBatchQuota}
	names := make([]string, 0, len(p))
	for k := range p {
		names = append(names, k)
	}
	slices.Sort(names) // report the same problem first every time
	var problems []string
	var work, memory int // 0: derived from the pixel limit
	for _, k := range names {
		v := p[k]
		var err error
		switch k {
		case ParamPipeline:
			out.Pipeline = v
		case ParamWorkers:
			out.Workers, err = intParam(k, v, maxWorkers)
		case ParamMaxImagePixels:
			var n int
			if n, err = intParam(k, v, 0); err == nil {
				out.Limits = ops.WithPixels(out.Limits, n)
			}
		case ParamMaxImageWork:
			work, err = intParam(k, v, 0)
		case ParamMaxImageMemory:
			memory, err = intParam(k, v, 0)
		case ParamMaxReqPixels:
			err = int64Param(k, v, &out.RequestQuota.MaxPixels)
		case ParamMaxReqWork:
			err = int64Param(k, v, &out.RequestQuota.MaxWork)
		case ParamMaxBatchPixels:
			err = int64Param(k, v, &out.BatchQuota.MaxPixels)
		case ParamMaxBatchWork:
			err = int64Param(k, v, &out.BatchQuota.MaxWork)
		case ParamMaxImageBytes:
			out.Limits.MaxBytes, err = intParam(k, v, 0)
		case ParamMaxBatchBytes:
			var n int
			n, err = intParam(k, v, 0)
			out.MaxBatchBytes = int64(n)
		case ParamGPUMemory:
			var n int
			n, err = intParam(k, v, 0)
			out.GPUMemory = int64(n)
		case ParamHWShare:
			out.HWShare, err = shareParam(k, v)
		case ParamImageErrors:
			switch v {
			case ImageErrorsFail:
			case ImageErrorsMark:
				out.MarkImageErrors, out.ImageErrorMessages = true, true
			case ImageErrorsMarkOK:
				out.MarkImageErrors = true
			default:
				err = fmt.Errorf("parameter %s: %s is not %s, %s or %s", excerpt.Quote(k), excerpt.Quote(v), ImageErrorsFail, ImageErrorsMark, ImageErrorsMarkOK)
			}
		default:
			err = fmt.Errorf("unknown parameter %s: Sluice knows %s", excerpt.Quote(k), strings.Join(knownParams, ", "))
		}
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if work > 0 {
		out.Limits.MaxWork = int64(work)
	}
	if memory > 0 {
		out.Limits.MaxMemory = int64(memory)
	}
	if len(problems) > 0 {
		return out, &Error{Code: CodeInvalidArg, Msg: joinProblems(problems)}
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
		return 0, fmt.Errorf("parameter %q: %s is not %s", name, excerpt.Quote(v), want)
	}
	return n, nil
}

// shareParam reads a fraction from 0 to 1.
func shareParam(name, v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return 0, fmt.Errorf("parameter %q: %s is not a number from 0 to 1", name, excerpt.Quote(v))
	}
	return f, nil
}

// int64Param reads a positive integer into *dst.
func int64Param(name, v string, dst *int64) error {
	n, err := intParam(name, v, 0)
	if err == nil {
		*dst = int64(n)
	}
	return err
}
