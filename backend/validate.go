package backend

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluice-dev/sluice/internal/excerpt"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// validate checks the model config against the pipeline. It reports every
// problem at once, each naming the input or output and what differs, with
// the fix where there is one: whoever reads it has only config.pbtxt to
// edit, and one round trip per mistake is slow with a server in between.
func validate(c *config, prog *pipeline.Compiled, p Params) error {
	v := validator{prog: prog, file: filepath.Base(prog.Source)}
	if v.file == "." || v.file == "" {
		v.file = "the pipeline"
	}
	if c.maxBatchSize <= 0 {
		v.addf("max_batch_size is %d: Sluice batches images, so it must be > 0 (for example max_batch_size: %d)",
			c.maxBatchSize, DefaultMaxBatchSize)
	}
	v.extra("input", c.inputs, prog.Inputs)
	wantOut := configOutputs(prog, p)
	if p.MarkImageErrors {
		for _, o := range prog.Outputs {
			if outputSource(o.Name) != "pipeline" {
				v.addf(`pipeline output %s: image_errors "mark" adds an output of that name: rename it`, excerpt.Quote(o.Name))
			}
		}
	}
	v.extra("output", c.outputs, outputNames(wantOut))
	for k, name := range prog.Inputs {
		i := findTensor(c.inputs, name)
		if i < 0 {
			if prog.Tensor(k) {
				v.addf("pipeline input %s has no config input: add input { name: %s data_type: %s dims: %s }",
					excerpt.Quote(name), excerpt.Quote(name), "TYPE_"+prog.InputSpecs[k].DType.String(), dimsString(inputDims(prog, k)))
				continue
			}
			v.addf("pipeline input %s has no config input: add input { name: %s data_type: TYPE_UINT8 dims: %s allow_ragged_batch: true }",
				excerpt.Quote(name), excerpt.Quote(name), dimsString(inputDims(prog, k)))
			continue
		}
		if prog.Tensor(k) {
			v.tensorInput(c.inputs[i], prog, k)
			continue
		}
		if prog.Decoded(k) {
			v.decodedInput(c, c.inputs[i], prog.InputSpecs[k])
			continue
		}
		v.input(c, c.inputs[i])
	}
	for _, want := range wantOut {
		i := findTensor(c.outputs, want.Name)
		if i < 0 {
			v.addf("%s output %s has no config output: add output { name: %s data_type: %s dims: %s }",
				outputSource(want.Name), excerpt.Quote(want.Name), excerpt.Quote(want.Name), want.DataType, dimsString(want.Dims))
			continue
		}
		v.output(c.outputs[i], want)
	}
	v.budget(c.maxBatchSize, p)
	return v.err()
}

// checkCounts bounds the config's inputs and outputs as the pipeline's
// are (with the two outputs image_errors "mark" adds), before auto-complete
// and validation match them by name, each against all.
func checkCounts(c *config) error {
	var problems []string
	if n := len(c.inputs); n > pipeline.MaxInputs {
		problems = append(problems, fmt.Sprintf("model config: %d inputs, over the limit of %d (a pipeline's inputs)", n, pipeline.MaxInputs))
	}
	if n, max := len(c.outputs), pipeline.MaxOutputs+2; n > max {
		problems = append(problems, fmt.Sprintf("model config: %d outputs, over the limit of %d (a pipeline's outputs, and the two image_errors \"mark\" adds)", n, max))
	}
	if len(problems) > 0 {
		return &Error{Code: CodeInvalidArg, Msg: strings.Join(problems, "\n")}
	}
	return nil
}

type validator struct {
	prog     *pipeline.Compiled
	file     string
	problems []string
}

func (v *validator) addf(format string, a ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, a...))
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return &Error{Code: CodeInvalidArg, Msg: joinProblems(v.problems)}
}

// maxProblems bounds the problems one load error lists, as pipeline's
// maxErrors does: enough for any real config, while a hostile one of
// thousands of tensors cannot make the error, which goes back to the
// client and into the log, megabytes long.
const maxProblems = 50

// joinProblems joins problems one a line, the first maxProblems of them.
func joinProblems(problems []string) string {
	if len(problems) <= maxProblems {
		return strings.Join(problems, "\n")
	}
	return strings.Join(problems[:maxProblems], "\n") + fmt.Sprintf("\n… and %d more problems", len(problems)-maxProblems)
}

// extra reports config tensors the pipeline does not have, and duplicates:
// Triton would accept requests carrying them and Sluice would ignore them.
func (v *validator) extra(kind string, ts []TensorConfig, names []string) {
	for i, t := range ts {
		switch {
		case t.Name == "":
			v.addf("config %s #%d has no name", kind, i+1)
		case !slices.Contains(names, t.Name):
			v.addf("config %s %s is not a pipeline %s (%s has %s %s): remove it or rename it",
				kind, excerpt.Quote(t.Name), kind, v.file, plural(kind, len(names)), excerpt.List(names, 10))
		case findTensor(ts[:i], t.Name) >= 0:
			v.addf("config %s %s is listed twice", kind, excerpt.Quote(t.Name))
		}
	}
}

func (v *validator) input(c *config, t TensorConfig) {
	if t.reshape {
		v.addf("config input %s: reshape is not supported: each batch element is one encoded image", excerpt.Quote(t.Name))
	}
	if t.optional {
		v.addf("config input %s: optional inputs are not supported: the pipeline reads every input of every request", excerpt.Quote(t.Name))
	}
	switch t.DataType {
	case typeUint8:
		if !slices.Equal(t.Dims, rawDims) {
			v.addf("config input %s: TYPE_UINT8 needs dims [-1] (the encoded bytes of one image per batch element), not %s",
				excerpt.Quote(t.Name), dimsString(t.Dims))
		}
		if c.maxBatchSize > 0 && c.dynamicBatch && !t.AllowRaggedBatch {
			v.addf("config input %s: set allow_ragged_batch: true: encoded images differ in size, and without it the dynamic batcher only batches requests whose images have the same byte length",
				excerpt.Quote(t.Name))
		}
	case typeString:
		if !slices.Equal(t.Dims, bytesDims) {
			v.addf("config input %s: TYPE_STRING needs dims [1] (one encoded image per BYTES element), not %s",
				excerpt.Quote(t.Name), dimsString(t.Dims))
		}
	default:
		v.addf("config input %s: data_type %s is not supported: a pipeline input takes encoded images, as TYPE_UINT8 with dims [-1] or TYPE_STRING with dims [1]",
			excerpt.Quote(t.Name), t.DataType)
	}
}

// inputDims are the config dims pipeline input k needs: [-1] for encoded
// bytes (as TYPE_UINT8), [-1, -1, C] for a decoded image.
func inputDims(prog *pipeline.Compiled, k int) []int64 {
	if prog.Tensor(k) {
		d := make([]int64, len(prog.InputSpecs[k].Dims))
		for i, x := range prog.InputSpecs[k].Dims {
			d[i] = int64(x)
		}
		return d
	}
	if prog.Decoded(k) {
		return []int64{-1, -1, int64(prog.InputSpecs[k].Dims[2])}
	}
	return rawDims
}

// decodedInput checks the config input of a pipeline input with layout
// "HWC": decoded images of the declared channels, of any height and width.
func (v *validator) decodedInput(c *config, t TensorConfig, spec ops.Spec) {
	want := []int64{-1, -1, int64(spec.Dims[2])}
	what := fmt.Sprintf("%s declares it a decoded %v image, layout HWC", v.file, spec.Color)
	if t.reshape {
		v.addf("config input %s: reshape is not supported: each batch element is one decoded image", excerpt.Quote(t.Name))
	}
	if t.optional {
		v.addf("config input %s: optional inputs are not supported: the pipeline reads every input of every request", excerpt.Quote(t.Name))
	}
	if t.DataType != typeUint8 {
		v.addf("config input %s: data_type %s, but %s: give data_type TYPE_UINT8 dims %s", excerpt.Quote(t.Name), t.DataType, what, dimsString(want))
	} else if !slices.Equal(t.Dims, want) {
		v.addf("config input %s: dims %s, but %s: give dims %s (height and width per request, %d channels)",
			excerpt.Quote(t.Name), dimsString(t.Dims), what, dimsString(want), spec.Dims[2])
	}
	if c.maxBatchSize > 0 && c.dynamicBatch && !t.AllowRaggedBatch {
		v.addf("config input %s: set allow_ragged_batch: true: decoded images differ in height and width, and without it the dynamic batcher only batches requests of the same size",
			excerpt.Quote(t.Name))
	}
}

// tensorInput checks the config input of a boxes or count input: its
// fixed type and dims.
func (v *validator) tensorInput(t TensorConfig, prog *pipeline.Compiled, k int) {
	spec := prog.InputSpecs[k]
	dt, want := "TYPE_"+spec.DType.String(), inputDims(prog, k)
	what := fmt.Sprintf("%s declares it boxes, %v", v.file, spec)
	if !spec.IsBoxes() {
		what = fmt.Sprintf("%s declares it the count of input %s, %v", v.file, excerpt.Quote(prog.Inputs[prog.CountOf[k]]), spec)
	}
	if t.reshape {
		v.addf("config input %s: reshape is not supported: give dims %s", excerpt.Quote(t.Name), dimsString(want))
	}
	if t.optional {
		v.addf("config input %s: optional inputs are not supported: the pipeline reads every input of every request", excerpt.Quote(t.Name))
	}
	if t.DataType != dt || !slices.Equal(t.Dims, want) {
		v.addf("config input %s: data_type %s dims %s, but %s: give data_type %s dims %s", excerpt.Quote(t.Name), t.DataType, dimsString(t.Dims), what, dt, dimsString(want))
	}
}

func (v *validator) output(t, want TensorConfig) {
	if t.reshape {
		v.addf("config output %s: reshape is not supported: give the pipeline's dims %s", excerpt.Quote(t.Name), dimsString(want.Dims))
	}
	if t.DataType != want.DataType {
		v.addf("config output %s: data_type %s, but %s produces %s", excerpt.Quote(t.Name), t.DataType, v.file, want.DataType)
	}
	if !slices.Equal(t.Dims, want.Dims) {
		v.addf("config output %s: dims %s, but %s produces %s", excerpt.Quote(t.Name), dimsString(t.Dims), v.file, dimsString(want.Dims))
	}
}

// outputConfig is the config output a pipeline output needs.
func outputConfig(o pipeline.Output) TensorConfig {
	dims := make([]int64, len(o.Spec.Dims))
	for i, d := range o.Spec.Dims {
		dims[i] = int64(d)
	}
	return TensorConfig{Name: o.Name, DataType: "TYPE_" + o.Spec.DType.String(), Dims: dims}
}

// The outputs image_errors "mark" adds: per image, whether it succeeded
// and, when not, why.
const (
	OutputImageOK    = "IMAGE_OK"
	OutputImageError = "IMAGE_ERROR"
)

// configOutputs are the config outputs the model needs: the pipeline's,
// then, with image_errors "mark", IMAGE_OK and IMAGE_ERROR ("mark_ok":
// IMAGE_OK alone).
func configOutputs(prog *pipeline.Compiled, p Params) []TensorConfig {
	out := make([]TensorConfig, 0, len(prog.Outputs)+2)
	for _, o := range prog.Outputs {
		out = append(out, outputConfig(o))
	}
	if p.MarkImageErrors {
		out = append(out, TensorConfig{Name: OutputImageOK, DataType: "TYPE_BOOL", Dims: []int64{1}})
	}
	if p.ImageErrorMessages {
		out = append(out, TensorConfig{Name: OutputImageError, DataType: "TYPE_STRING", Dims: []int64{1}})
	}
	return out
}

// outputSource says where a needed output comes from, for messages.
func outputSource(name string) string {
	if name == OutputImageOK || name == OutputImageError {
		return `image_errors "mark"`
	}
	return "pipeline"
}

func outputNames(ts []TensorConfig) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}

func plural(kind string, n int) string {
	if n == 1 {
		return kind
	}
	return kind + "s"
}
