// Package gpu runs a compiled pipeline over batches on an NVIDIA GPU: each
// JPEG goes to the decoder that takes it best (the GPU's hardware JPEG
// engines, nvJPEG's GPU hybrid decoder, or libjpeg-turbo on CPU threads
// for progressive, CMYK, arithmetic-coded JPEGs, PNG and whatever nvJPEG
// rejects), all paths at once; then one fused kernel launch does every
// operator after decode for the whole batch, writing each sample's output
// straight to where it goes (device memory of the next model, or host
// memory). Results and per-sample errors are those of the CPU executor,
// within the rounding of nvJPEG's IDCT.
package gpu

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// Options tune a GPU executor.
type Options struct {
	Device int
	// Workers is the number of CPU decode threads; 0 means GOMAXPROCS.
	Workers int
	// Limits bound each sample; the zero value means ops.DefaultLimits.
	Limits ops.Limits
	// MemoryCap bounds the device memory the executor allocates itself
	// (decoded images, descriptors, output staging); 0 means a
	// sixteenth of the GPU's memory, at least MinDefaultMemoryCap. A
	// batch that needs more runs in parts; an image that alone needs
	// more fails. Above ArenaKeep, memory is freed after each batch.
	MemoryCap int64
	// HWShare is the share of hardware-decodable JPEGs sent to the JPEG
	// engines, the rest going to the hybrid decoder; negative means
	// DefaultHWShare.
	HWShare float64
}

// MinDefaultMemoryCap is the default cap on a GPU of less than 16 GiB: a
// batch of 256 ImageNet-size photos needs about 120 MiB, one of 256
// 12-megapixel photos about 11 GiB (run in parts under the cap; an H200's
// default of 8.8 GiB takes it in two).
const MinDefaultMemoryCap = 1 << 30

// ArenaKeep is the device memory an executor keeps between batches: what
// a batch needs beyond it is freed when the batch is done, so that a
// burst of large photos does not hold gigabytes for the life of the model.
const ArenaKeep = 512 << 20

// DefaultHWShare is the share of JPEGs sent to the hardware engines when
// the GPU has them. Measured on an H200 (docs/perf.md): with one instance
// per GPU, Triton's default, the engines doubled the hybrid decoder's
// throughput; with four, the hybrid decoder was 15% ahead.
const DefaultHWShare = 1.0

// Dest is where one sample of one output goes: device memory on the
// executor's GPU (Dev), or host memory (Host) when Dev is 0.
type Dest struct {
	Dev  cuda.DevicePtr
	Host []byte
}

// Path names a decoder path, for statistics.
type Path int

const (
	PathHardware   Path = iota // nvJPEG's hardware engines
	PathHybrid                 // nvJPEG's GPU hybrid decoder: Huffman on the GPU
	PathCPU                    // libjpeg-turbo or the PNG decoder, uploaded
	PathCPUHuffman             // nvJPEG's decoupled decoder: Huffman on a CPU thread, the rest on the GPU
	numPaths
)

func (p Path) String() string { return [...]string{"hardware", "hybrid", "cpu", "cpu_huffman"}[p] }

// Steps are the stages a batch goes through, for per-stage timing: header
// parsing and routing (host), decoding on every path (host clock, until the
// last path is done), and the fused kernel with its descriptor upload
// (device time, from CUDA events).
var Steps = []string{"parse", "decode", "kernel"}

// Executor runs one compiled pipeline on one GPU. Calls are serialised:
// Triton gives each instance its own executor.
type Executor struct {
	prog  *pipeline.Compiled
	ch    *chain
	opt   Options
	slot  []int // bytes per sample of each output
	decNm string

	ctx   *cuda.Context
	fused *kernels.Fused
	// Events around the kernel stage: its device time for statistics.
	evStart, evEnd cuda.Event
	main           cuda.Stream
	svc            *service  // the GPU's decoders, shared with its other executors
	hw             *jpegPath // svc's hardware decoder; nil without JPEG engines or with HWShare 0
	sizers         []*sizer  // one per CPU worker thread this executor runs at once
	mem            arena
	desc           []byte // pinned: the batch's kernel descriptors
	descOff        int    // arena offset of the part's descriptors
	side           []byte // pinned: side outputs bound for device memory

	devOut  []cuda.DevicePtr // RunOnDevice's outputs
	devOutN int

	mu      sync.Mutex
	closed  bool
	samples []sample
	decoded [numPaths]atomic.Int64
	// Images an nvJPEG path failed on as a whole and the CPU decoded
	// again, and that path's last error: for tests and diagnosis.
	retried   atomic.Int64
	retryMu   sync.Mutex
	lastRetry error
	nanos     [3]atomic.Int64
	result    executor.Result
}

// New builds the executor: the pipeline's GPU form, the device's primary
// context, a stream, the kernel module, and a hold on the GPU's shared
// decoders (nvJPEG and CPU workers). Close releases all of it.
func New(prog *pipeline.Compiled, opt Options) (e *Executor, err error) {
	ch, err := newChain(prog)
	if err != nil {
		return nil, err
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if opt.Limits == (ops.Limits{}) {
		opt.Limits = ops.DefaultLimits
	}
	if opt.HWShare < 0 {
		opt.HWShare = DefaultHWShare
	}
	opt.HWShare = min(opt.HWShare, 1)
	e = &Executor{prog: prog, ch: ch, opt: opt, decNm: prog.Nodes[0].Name}
	for _, o := range prog.Outputs {
		if !o.Spec.Static() {
			return nil, fmt.Errorf("output %s: shape %v is not static", o.Name, o.Spec.Dims)
		}
		e.slot = append(e.slot, o.Spec.Elems()*o.Spec.DType.Size())
	}
	if err := cuda.Init(); err != nil {
		return nil, err
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, err
	}
	if opt.Device < 0 || opt.Device >= n {
		return nil, fmt.Errorf("GPU %d does not exist: this host has %d", opt.Device, n)
	}
	unbind, err := bindNew(opt.Device, &e.ctx)
	if err != nil {
		return nil, err
	}
	defer unbind()
	defer func() {
		if err != nil {
			e.release()
		}
	}()
	if e.main, err = cuda.NewStream(); err != nil {
		return nil, err
	}
	if e.fused, err = kernels.LoadFused(); err != nil {
		return nil, err
	}
	if e.evStart, err = cuda.NewEvent(true); err != nil {
		return nil, err
	}
	if e.evEnd, err = cuda.NewEvent(true); err != nil {
		return nil, err
	}
	if e.opt.MemoryCap <= 0 {
		_, total, err := cuda.MemGetInfo()
		if err != nil {
			return nil, err
		}
		e.opt.MemoryCap = max(int64(total/16), MinDefaultMemoryCap)
	}
	e.mem.cap = int(e.opt.MemoryCap)
	if e.svc, err = acquireService(opt.Device); err != nil {
		return nil, err
	}
	if opt.HWShare > 0 {
		e.hw = e.svc.hw
	}
	for range opt.Workers {
		e.sizers = append(e.sizers, newSizer(ch, opt.Limits))
	}
	return e, nil
}

// bindNew retains the device's primary context into *ctx and makes it
// current on this goroutine's locked thread.
func bindNew(dev int, ctx **cuda.Context) (func(), error) {
	runtime.LockOSThread()
	c, err := cuda.RetainPrimary(dev)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	if err := c.SetCurrent(); err != nil {
		c.Release()
		runtime.UnlockOSThread()
		return nil, err
	}
	*ctx = c
	return runtime.UnlockOSThread, nil
}

// bind makes the executor's context current on this goroutine's thread,
// which stays locked until the returned func runs.
func (e *Executor) bind() (func(), error) {
	runtime.LockOSThread()
	if err := e.ctx.SetCurrent(); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return runtime.UnlockOSThread, nil
}

// Device is the GPU ordinal the executor runs on.
func (e *Executor) Device() int { return e.opt.Device }

// Workers is the number of CPU decode threads the executor runs at once,
// drawn from its GPU's shared pool.
func (e *Executor) Workers() int { return len(e.sizers) }

// SampleBytes is the byte size of one sample of output i.
func (e *Executor) SampleBytes(i int) int { return e.slot[i] }

// Decoded returns how many images each path has decoded since New.
func (e *Executor) Decoded() (n [numPaths]int64) {
	for p := range n {
		n[p] = e.decoded[p].Load()
	}
	return n
}

// StepNanos sets dst[i] to the time spent in Steps[i] since New.
func (e *Executor) StepNanos(dst []int64) {
	for i := range dst {
		dst[i] = e.nanos[i].Load()
	}
}

// Close waits for a batch in flight and releases every device resource.
// Idempotent.
func (e *Executor) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.closed = true
	unbind, err := e.bind()
	if err != nil {
		return // the context is gone with the device; nothing to free
	}
	defer unbind()
	e.release()
}

// release frees what New made, in reverse; the context goes last.
func (e *Executor) release() {
	if e.main != 0 {
		e.main.Synchronize()
	}
	if e.svc != nil {
		e.svc.release()
		e.svc = nil
	}
	e.mem.free()
	e.freeDeviceOut()
	for _, b := range [][]byte{e.desc, e.side} {
		if b != nil {
			cuda.MemFreeHost(b)
		}
	}
	e.desc, e.side = nil, nil
	for _, ev := range []cuda.Event{e.evStart, e.evEnd} {
		if ev != 0 {
			ev.Destroy()
		}
	}
	if e.fused != nil {
		e.fused.Close()
	}
	if e.main != 0 {
		e.main.Destroy()
	}
	if e.ctx != nil {
		e.ctx.Release()
	}
}

// Run processes one batch into host memory, for tools and tests: the
// Result is reused by the next Run.
func (e *Executor) Run(in [][][]byte) (*executor.Result, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("got %d inputs, the pipeline has 1", len(in))
	}
	n := len(in[0])
	r := &e.result
	if r.Outputs == nil {
		for _, o := range e.prog.Outputs {
			r.Outputs = append(r.Outputs, executor.Output{Name: o.Name, Spec: o.Spec})
		}
	}
	dst := make([][]Dest, len(r.Outputs))
	for i := range r.Outputs {
		need := n * e.slot[i]
		if cap(r.Outputs[i].Data) < need {
			r.Outputs[i].Data = make([]byte, need)
		}
		r.Outputs[i].Data = r.Outputs[i].Data[:need]
		clear(r.Outputs[i].Data)
		dst[i] = make([]Dest, n)
		for s := range n {
			dst[i][s].Host = r.Outputs[i].Data[s*e.slot[i] : (s+1)*e.slot[i]]
		}
	}
	r.Errs = make([]error, n)
	if err := e.RunInto(in, dst, r.Errs); err != nil {
		return nil, err
	}
	return r, nil
}

// RunInto processes one batch: in[0][s] is sample s's encoded image,
// dst[i][s] where sample s of output i goes, errs[s] its error (nil on
// success; a failed sample's destinations are left as they were). The
// error return is for a malformed call or a failure of the GPU itself.
func (e *Executor) RunInto(in [][][]byte, dst [][]Dest, errs []error) (err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("the GPU executor is closed")
	}
	if len(in) != 1 {
		return fmt.Errorf("got %d inputs, the pipeline has 1", len(in))
	}
	n := len(in[0])
	if len(dst) != len(e.slot) {
		return fmt.Errorf("got %d outputs, the pipeline has %d", len(dst), len(e.slot))
	}
	for i, d := range dst {
		if len(d) != n {
			return fmt.Errorf("output %s: %d destinations for %d samples", e.prog.Outputs[i].Name, len(d), n)
		}
		for s := range d {
			if d[s].Dev == 0 && len(d[s].Host) != e.slot[i] {
				return fmt.Errorf("output %s, sample %d: host buffer of %d bytes, want %d", e.prog.Outputs[i].Name, s, len(d[s].Host), e.slot[i])
			}
		}
	}
	if len(errs) != n {
		return fmt.Errorf("got %d error slots for %d samples", len(errs), n)
	}
	if n == 0 {
		return nil
	}
	unbind, err := e.bind()
	if err != nil {
		return err
	}
	defer unbind()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in the GPU executor: %v\n%s", p, debug.Stack())
		}
	}()
	b := e.newBatch(in[0], dst, errs)
	if sb := e.ch.sideN; sb > 0 {
		if err := e.growPinned(&e.side, n*sb); err != nil {
			return err
		}
	}
	t0 := time.Now()
	e.parse(b)
	t1 := time.Now()
	e.nanos[0].Add(int64(t1.Sub(t0)))
	// Parts that fit the memory cap, in order; then what is over
	// ArenaKeep goes back (runPart has synchronised).
	defer func() {
		if e.mem.size > ArenaKeep {
			e.mem.free()
		}
	}()
	for start := 0; start < n; {
		end, err := e.layout(b, start)
		if err != nil {
			return err
		}
		if err := e.runPart(b, start, end); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// RunOnDevice processes one batch into device buffers the executor keeps
// (reused by the next call), for benchmarks and tools: the outputs stay
// where the next model of an ensemble would read them.
func (e *Executor) RunOnDevice(in [][][]byte) ([]error, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("got %d inputs, the pipeline has 1", len(in))
	}
	n := len(in[0])
	if err := e.growDeviceOut(n); err != nil {
		return nil, err
	}
	dst := make([][]Dest, len(e.slot))
	for i := range dst {
		dst[i] = make([]Dest, n)
		for s := range n {
			dst[i][s].Dev = e.devOut[i] + cuda.DevicePtr(s*e.slot[i])
		}
	}
	errs := make([]error, n)
	return errs, e.RunInto(in, dst, errs)
}

// growDeviceOut sizes the RunOnDevice buffers for n samples.
func (e *Executor) growDeviceOut(n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("the GPU executor is closed")
	}
	if n <= e.devOutN {
		return nil
	}
	unbind, err := e.bind()
	if err != nil {
		return err
	}
	defer unbind()
	e.freeDeviceOut()
	for _, sz := range e.slot {
		p, err := cuda.MemAlloc(max(n*sz, 1))
		if err != nil {
			e.freeDeviceOut()
			return err
		}
		e.devOut = append(e.devOut, p)
	}
	e.devOutN = n
	return nil
}

func (e *Executor) freeDeviceOut() {
	for _, p := range e.devOut {
		cuda.MemFree(p)
	}
	e.devOut, e.devOutN = nil, 0
}
