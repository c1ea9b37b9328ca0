// Package executor runs a compiled pipeline over batches of encoded
// images. Executor is what callers hold: New makes the CPU's, and other
// kinds register themselves (the GPU's, package executor/gpu, as image
// formats register with Go's image package), so that code which only
// opens executors (the backend) links none of their device code.
package executor

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/sluice-dev/sluice/internal/reuse"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// Executor runs one compiled pipeline over batches. RunInto may be called
// from several goroutines at once (the GPU executor serialises them).
type Executor interface {
	// RunInto processes one batch: in[i][s] is the encoded bytes of
	// pipeline input i for sample s, dst[o][s] is where sample s of
	// output o goes (SampleBytes(o) bytes), written once, and errs[s]
	// gets the sample's error: nil, or a *SampleError, and then its
	// destinations are zero (image_errors "mark" answers with them, and
	// no earlier request's bytes may show through). The error return is
	// for a malformed call (counts, sizes, a destination the executor
	// cannot write) or a failure of the executor itself, not of a sample.
	// budgets[s], when budgets is not nil, is what sample s's image draws
	// on as its header is read (the samples of one request share one; a
	// nil entry: none): an image over it fails.
	RunInto(in [][][]byte, dst [][]Dest, errs []error, budgets []*ops.Budget) error
	// Steps are the parts of the work Stats times, in order.
	Steps() []Step
	// Stats fills st with the counters since the executor was made,
	// reusing st's slices.
	Stats(st *Stats)
	// SampleBytes is the byte size of one sample of output o.
	SampleBytes(o int) int
	// Workers is the number of CPU threads that work on a batch.
	Workers() int
	// Close releases the executor, after a batch in flight. Idempotent.
	Close()
}

// ShapedRunner is an executor that takes decoded-image inputs (a pipeline
// input with layout "HWC"), whose samples are not byte strings but tensors
// of their own shape: RunShaped is RunInto with dims[i][s], the shape
// [H, W, C] of sample s of input i, for each such input (dims[i] is nil
// for an encoded input; dims itself may be nil when there is none). The
// executor checks every shape against its bytes, the declared channels
// and the pixel limits, failing only that sample. The CPU and the GPU
// executor are both.
type ShapedRunner interface {
	Executor
	RunShaped(in [][][]byte, dims [][][]int, dst [][]Dest, errs []error, budgets []*ops.Budget) error
}

// DeviceRunner is a ShapedRunner that also reads decoded-image samples
// where an upstream model left them, in GPU memory: RunDevice is
// RunShaped where dev[i][s], when its Ptr is not 0, holds sample s of
// decoded input i instead of in[i][s] (nil then). dev, and each dev[i],
// may be nil. The GPU executor is one: it reads a sample on its own GPU in
// place and copies one on another GPU.
type DeviceRunner interface {
	ShapedRunner
	RunDevice(in [][][]byte, dev [][]DevSpan, dims [][][]int, dst [][]Dest, errs []error, budgets []*ops.Budget) error
}

// DevSpan is one sample's bytes in device memory: Len bytes at Ptr on GPU
// Device.
type DevSpan struct {
	Ptr    uintptr
	Len    int
	Device int
}

// Dest is where one sample of one output goes: host memory (Host), or,
// when Dev is not 0, device memory at address Dev on GPU Device. A GPU
// executor writes its own GPU's memory in place and another GPU's through
// a copy (Stats.CrossDevice); the CPU executor writes host memory only.
// The zero Dest (Discarded) is an output nobody asked for: the executor
// writes it nowhere, and skips the work that only it needs.
type Dest struct {
	Host   []byte
	Dev    uintptr
	Device int
}

// Discarded reports whether d is the zero Dest: the sample of this output
// is not wanted.
func (d Dest) Discarded() bool { return d.Host == nil && d.Dev == 0 }

// Step is a timed part of an executor's work, named by the pipeline
// nodes it runs: one node, or several fused into one call (the CPU's
// resize+crop, the GPU's kernel doing every operator after decode).
type Step struct {
	Name  string // the nodes joined by "+": how metrics and errors name it
	Nodes []string
}

// CheckCall checks a RunInto call's shape for an executor of prog whose
// outputs take sampleBytes[o] bytes a sample: n destinations per output,
// host ones of exactly that size (device ones only where device) or
// discarded ones, n error slots, and none or n budgets.
func CheckCall(prog *pipeline.Compiled, sampleBytes []int, dst [][]Dest, errs []error, budgets []*ops.Budget, n int, device bool) error {
	if len(dst) != len(sampleBytes) {
		return fmt.Errorf("got %d outputs, the pipeline has %d", len(dst), len(sampleBytes))
	}
	for o, d := range dst {
		name := prog.Outputs[o].Name
		if len(d) != n {
			return fmt.Errorf("output %s: %d destinations for %d samples", name, len(d), n)
		}
		for s := range d {
			switch {
			case d[s].Dev != 0 && !device:
				return fmt.Errorf("output %s, sample %d: a device destination; this executor writes host memory", name, s)
			case d[s].Dev != 0 && d[s].Device < 0:
				return fmt.Errorf("output %s, sample %d: device destination on GPU %d", name, s, d[s].Device)
			case d[s].Discarded():
			case d[s].Dev == 0 && len(d[s].Host) != sampleBytes[o]:
				return fmt.Errorf("output %s, sample %d: host buffer of %d bytes, want %d", name, s, len(d[s].Host), sampleBytes[o])
			}
		}
	}
	if len(errs) != n {
		return fmt.Errorf("room for %d sample errors, the batch has %d samples", len(errs), n)
	}
	if budgets != nil && len(budgets) != n {
		return fmt.Errorf("%d budgets for %d samples", len(budgets), n)
	}
	return nil
}

// The input contract of the executors: what a decoded-image, boxes or
// count input must be. An executor checks each sample as it takes it
// (CheckDecoded, CheckTensor), whoever called it; the backend checks a
// request's tensor of B samples before it splits the tensor into them
// (CheckDecodedBatch, CheckTensorBatch), by the same rules, worded for the
// client that sent the batch.

// CheckDecoded refuses a decoded-image sample of n bytes whose shape dims
// is not [H, W, C] with spec's C, does not match its bytes, or is over
// the pixel limit or budget (drawn on), as decode refuses an encoded image
// over them.
func CheckDecoded(spec ops.Spec, n int, dims []int, lim ops.Limits, budget *ops.Budget) error {
	if err := checkHWC(spec, dims, n, false); err != nil {
		return err
	}
	h, w := dims[0], dims[1]
	if px := h * w; lim.MaxPixels > 0 && px > lim.MaxPixels {
		return ops.Errorf(ops.TooLarge, "image is %dx%d (%d pixels), over the limit of %d (max_image_pixels)", w, h, px, lim.MaxPixels)
	}
	if budget != nil {
		if err := budget.Take(int64(h*w), 0); err != nil {
			return err
		}
	}
	return nil
}

// CheckDecodedBatch refuses a request's tensor of decoded images for the
// input spec declares: data type dtype (as Triton names it), shape
// [B, H, W, C], n bytes. Its images are then the samples CheckDecoded
// takes, less the pixel limits and budgets, which the executor checks
// image by image.
func CheckDecodedBatch(spec ops.Spec, dtype string, shape []int64, n int64) error {
	if dtype != ops.Uint8.String() {
		return ops.Errorf(ops.BadInput, "data type %s, the model takes %v (decoded %v images)", dtype, ops.Uint8, spec.Color)
	}
	return checkHWC(spec, shape, n, true)
}

// checkHWC refuses decoded images in n bytes whose shape is not [H, W, C]
// (batched: [B, H, W, C], B images of one size) with spec's C, holds an
// empty image, or does not match the bytes. Every number is the
// client's, so the bytes are divided by the dimensions, never the
// dimensions multiplied: multiplied, they can overflow into a match.
func checkHWC[T int | int64](spec ops.Spec, shape []T, n T, batched bool) error {
	c := T(spec.Dims[2])
	lead, b := 0, T(1) // the batch dimensions, and the images they count
	if batched {
		lead = 1
	}
	if len(shape) != lead+3 {
		if batched {
			return ops.Errorf(ops.BadInput, "shape %v, want [batch, height, width, %d]: decoded %v images, HWC, the images of one request of one size",
				shape, c, spec.Color)
		}
		return ops.Errorf(ops.BadInput, "shape %v is not [height, width, channels]", shape)
	}
	if batched {
		b = shape[0]
	}
	h, w, got := shape[lead], shape[lead+1], shape[lead+2]
	if b < 0 || h < 0 || w < 0 || got < 0 {
		return ops.Errorf(ops.BadInput, "shape %v has a negative dimension", shape)
	}
	if got != c {
		if batched {
			return ops.Errorf(ops.BadInput, "color: shape %v has %d channels, but the pipeline declares color %v, %d channels", shape, got, spec.Color, c)
		}
		return ops.Errorf(ops.BadInput, "shape %v has %d channels, but the pipeline declares color %v (%d)", shape, got, spec.Color, c)
	}
	if b > 0 && (h == 0 || w == 0) {
		return ops.Errorf(ops.BadInput, "shape %v is an empty image", shape)
	}
	if b > 0 && (n%b != 0 || n/b%c != 0 || n/b/c%w != 0 || n/b/c/w != h) || b == 0 && n != 0 {
		if batched {
			return ops.Errorf(ops.BadInput, "shape %v does not match its %d bytes of data (UINT8 [batch, height, width, channels])", shape, n)
		}
		return ops.Errorf(ops.BadInput, "shape %v does not match the %d bytes of data", shape, n)
	}
	return nil
}

// CheckTensor refuses a boxes or count sample whose shape is not spec's
// fixed one or whose bytes do not match it. dims is the request's shape
// for the sample, nil when the caller gave none (the bytes alone are then
// checked).
func CheckTensor(spec ops.Spec, data []byte, dims []int) error {
	return checkTensor(spec, dims, len(data), false)
}

// CheckTensorBatch refuses a request's tensor of boxes or counts for the
// input spec declares: data type dtype (as Triton names it), shape
// [B, ...spec's dims], n bytes: B samples CheckTensor takes.
func CheckTensorBatch(spec ops.Spec, dtype string, shape []int64, n int64) error {
	if dtype != spec.DType.String() {
		return ops.Errorf(ops.BadInput, "data type %s, the model takes %v (%s)", dtype, spec.DType, tensorWhat(spec))
	}
	return checkTensor(spec, shape, n, true)
}

// checkTensor refuses boxes or counts in n bytes whose shape is not spec's
// (batched: [B, ...spec's dims], B samples; unbatched, a nil shape is not
// checked) or does not match the bytes, divided as in checkHWC.
func checkTensor[T int | int64](spec ops.Spec, shape []T, n T, batched bool) error {
	size := T(spec.Elems() * spec.DType.Size())
	lead, b := 0, T(1)
	if batched {
		lead = 1
	}
	if shape != nil || batched {
		ok := len(shape) == lead+len(spec.Dims) && (!batched || shape[0] >= 0)
		for k, d := range spec.Dims {
			ok = ok && shape[lead+k] == T(d)
		}
		if !ok && batched {
			dims := make([]string, len(spec.Dims))
			for k, d := range spec.Dims {
				dims[k] = fmt.Sprint(d)
			}
			return ops.Errorf(ops.BadInput, "shape %v, want [batch, %s]: %s, %v per image", shape, strings.Join(dims, ", "), tensorWhat(spec), spec)
		}
		if !ok {
			return ops.Errorf(ops.BadInput, "shape %v, but the pipeline declares %v", shape, spec)
		}
		if batched {
			b = shape[0]
		}
	}
	if n%size != 0 || n/size != b {
		if !batched {
			return ops.Errorf(ops.BadInput, "%d bytes of data, but %v is %d bytes", n, spec, size)
		}
		// The batch size is the client's: the bytes it implies may not fit.
		if int64(b) > math.MaxInt64/int64(size) {
			return ops.Errorf(ops.BadInput, "%d bytes of data, but shape %v of %v is over %d bytes", n, shape, spec.DType, int64(math.MaxInt64))
		}
		return ops.Errorf(ops.BadInput, "%d bytes of data, but shape %v of %v is %d bytes", n, shape, spec.DType, int64(b)*int64(size))
	}
	return nil
}

// tensorWhat says what a boxes or count input holds, for a client that
// sent the wrong thing.
func tensorWhat(spec ops.Spec) string {
	if spec.IsBoxes() {
		return "boxes, rows x1, y1, x2, y2"
	}
	return "the count of its boxes"
}

// BoxCount reads a count input's sample (checked by CheckTensor): how
// many of its boxes' rows are used. A count outside 0..rows is an error.
func BoxCount(data []byte, rows int) (int, error) {
	n := int32(binary.LittleEndian.Uint32(data))
	if n < 0 || int(n) > rows {
		return 0, ops.Errorf(ops.BadInput, "count %d is outside 0..%d, the rows of its boxes", n, rows)
	}
	return int(n), nil
}

// NewStep makes the step that runs nodes.
func NewStep(nodes ...string) Step {
	return Step{Name: strings.Join(nodes, "+"), Nodes: nodes}
}

// Stats are an executor's counters since it was made. An executor fills
// those it keeps, always in the same order, and leaves the others empty.
type Stats struct {
	// StepNanos[i] is the time spent in Steps()[i]. On the CPU it is
	// worker time summed over the workers, so it can exceed wall time.
	StepNanos []int64
	// Phases is the time spent in each phase of a batch, for executors
	// whose phases are not their steps (the GPU's parse, decode, kernel).
	Phases []Counter
	// Decoded counts images by the decoder that took them (the GPU's
	// hardware, hybrid, cpu).
	Decoded []Counter
	// CrossDevice counts the copies a GPU executor made to another GPU's
	// memory (outputs whose destination is there), CrossDeviceBytes their
	// bytes.
	CrossDevice, CrossDeviceBytes int64
}

// Counter is one named count.
type Counter struct {
	Name string
	N    int64
}

// Options tune an executor. The zero value is usable.
type Options struct {
	// Workers is the number of CPU threads working on a batch (on the
	// GPU: decoding); 0 means GOMAXPROCS, which a GPU executor shares
	// with the other executors on its GPU that have a batch in flight.
	Workers int
	// Limits bound each sample; the zero value means ops.DefaultLimits.
	Limits ops.Limits

	// The rest is for GPU executors; the CPU executor ignores it.

	// Device is the GPU's ordinal.
	Device int
	// MemoryCap bounds the device memory the executor allocates itself
	// (decoded images, descriptors, output staging); 0 means its
	// default. A batch that needs more runs in parts; an image that
	// alone needs more fails.
	MemoryCap int64
	// HWShare is the share of hardware-decodable JPEGs, by their pixels,
	// sent to the GPU's JPEG engines; the rest take the route the GPU
	// executor gave them at parse: the coefficient route on its CPU
	// workers (Sluice's entropy decoding there, the IDCT on the GPU) for
	// those of up to a megapixel; for larger ones nvJPEG's decoupled
	// decoder, or its batched GPU hybrid decoder where nvJPEG lacks the
	// decoupled one. 0 sends none to the engines; negative means the
	// executor's default.
	HWShare float64
}

// The kinds of executor Open knows: KindGPU once package executor/gpu is
// linked in.
const (
	KindCPU = "cpu"
	KindGPU = "gpu"
)

// Opener makes an executor of one kind.
type Opener func(prog *pipeline.Compiled, opt Options) (Executor, error)

var (
	kindsMu sync.RWMutex
	kinds   = map[string]Opener{}
)

// Register makes an executor kind available to Open. Packages call it
// from init.
func Register(kind string, open Opener) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[kind]; dup {
		panic("executor: kind registered twice: " + kind)
	}
	kinds[kind] = open
}

// Open makes an executor of the given kind for prog.
func Open(kind string, prog *pipeline.Compiled, opt Options) (Executor, error) {
	kindsMu.RLock()
	open := kinds[kind]
	kindsMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("no %s executor in this program: its package is not linked in", kind)
	}
	return open(prog, opt)
}

func init() {
	Register(KindCPU, func(prog *pipeline.Compiled, opt Options) (Executor, error) {
		e, err := New(prog, opt)
		if err != nil {
			return nil, err // not a nil *CPU in a non-nil interface
		}
		return e, nil
	})
}

// SampleError says which sample failed at which step, and why.
type SampleError struct {
	Index int
	Node  string // the Step's name, or an output's
	Err   error
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("sample %d: %s: %v", e.Index, e.Node, e.Err)
}

func (e *SampleError) Unwrap() error { return e.Err }

// Cause classifies the failure (truncated, corrupt data, ...).
func (e *SampleError) Cause() ops.Cause { return ops.CauseOf(e.Err) }

// Result holds a batch's outputs in host memory and its per-sample
// errors, for tools and tests (Run).
type Result struct {
	Outputs []Output
	// Errs has one entry per sample: nil when the sample succeeded, else
	// a *SampleError. A failed sample's output rows are zero.
	Errs []error
	dst  [][]Dest
}

// Output is one pipeline output for the whole batch: N samples of Spec,
// contiguous, in native byte order.
type Output struct {
	Name string
	Spec ops.Spec
	Data []byte
}

// NewResult makes an empty Result for prog's outputs.
func NewResult(prog *pipeline.Compiled) *Result {
	r := &Result{dst: make([][]Dest, len(prog.Outputs))}
	for _, o := range prog.Outputs {
		r.Outputs = append(r.Outputs, Output{Name: o.Name, Spec: o.Spec})
	}
	return r
}

// Run processes one batch with x into r, whose buffers it reuses: the
// batch's outputs are valid until the next Run with r.
func Run(x Executor, in [][][]byte, r *Result) error {
	return RunShaped(x, in, nil, r)
}

// RunShaped is Run for a pipeline with decoded-image inputs, dims as
// ShapedRunner's; x must be a ShapedRunner when dims is not nil.
func RunShaped(x Executor, in [][][]byte, dims [][][]int, r *Result) error {
	n := 0
	if len(in) > 0 {
		n = len(in[0])
	}
	for o := range r.Outputs {
		size := x.SampleBytes(o)
		r.Outputs[o].Data = reuse.Len(r.Outputs[o].Data, n*size)
		r.dst[o] = reuse.Len(r.dst[o], n)
		for s := range n {
			r.dst[o][s] = Dest{Host: r.Outputs[o].Data[s*size : (s+1)*size]}
		}
	}
	r.Errs = reuse.Len(r.Errs, n)
	clear(r.Errs)
	if dims == nil {
		return x.RunInto(in, r.dst, r.Errs, nil)
	}
	sr, ok := x.(ShapedRunner)
	if !ok {
		return fmt.Errorf("this executor (%T) does not take decoded-image inputs", x)
	}
	return sr.RunShaped(in, dims, r.dst, r.Errs, nil)
}
