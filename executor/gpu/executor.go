// Package gpu runs a compiled pipeline over batches on an NVIDIA GPU. Each
// JPEG goes where the route package decides, from the facts of its header
// (read once, by codec):
// baseline JPEGs to the GPU's hardware JPEG engines (all of them unless
// HWShare, or by default other executors of the GPU being busy with a part
// of 16 or more, moves a share of the batch's pixels to the coefficient
// route on the CPU workers; while others are busy, the engines and the
// workers take them from the two ends of one queue); progressive JPEGs
// through the coefficient route too (entropy decoding on a CPU worker, each
// worker's images gathered and sent to the GPU together for the IDCT and
// colour conversion); JPEGs over a megapixel that the engines do not take
// through nvJPEG's decoupled decoder, whose Huffman decoding then runs on
// the GPU; CMYK, arithmetic-coded JPEGs, the other formats and whatever
// nvJPEG rejects to libjpeg-turbo or the format's decoder on the CPU
// workers, uploaded; a decoded-image input is uploaded as it came, or read
// in place when it is in this GPU's memory. Headers are read on the
// executor's own parser threads, which also copy the JPEGs of nvJPEG's
// batched calls to pinned memory; then all paths run at once, and one fused
// kernel launch does every operator after decode for the whole batch
// (crop_boxes as one kernel sample per box), writing each sample's output
// straight to where it goes (deliver.go: device memory of the next model,
// another GPU's, or host memory). Results and per-sample errors are those
// of the CPU executor, within the rounding of nvJPEG's IDCT. It registers
// itself as executor.KindGPU: importing this package makes executor.Open
// run it.
//
// The files: executor.go (the executor, its calls), batch.go (a batch's
// parse, layout, decode and kernel), queue.go (carrying out route's
// decisions: a sample's path, the queue the engines and the CPU workers
// share), decode.go and huffman.go (nvJPEG's batched and decoupled
// decoders), coefficients.go (the coefficient route), workers.go (the CPU workers and the executor's parsers), service.go (the
// decoders one GPU's executors share), chain.go (the operators as one
// kernel), deliver.go, arena.go and pool.go, and types.go (what they all
// share).
package gpu

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

func init() {
	executor.Register(executor.KindGPU, func(prog *pipeline.Compiled, opt executor.Options) (executor.Executor, error) {
		e, err := New(prog, opt)
		if err != nil {
			return nil, err // not a nil *Executor in a non-nil interface
		}
		return e, nil
	})
}

// MinDefaultMemoryCap is executor.Options.MemoryCap's default here on a GPU
// of less than 16 GiB, else a sixteenth of its memory: a batch of 256
// ImageNet-size photos needs about 120 MiB, one of 256 12-megapixel photos
// about 11 GiB (run in parts under the cap; an H200's default of 8.8 GiB
// takes it in two). A batch that needs more runs in parts; an image that
// alone needs more fails.
const MinDefaultMemoryCap = 1 << 30

// ArenaKeep is the device memory an executor keeps between batches: what
// a batch needs beyond it is freed when the batch is done, so that a
// burst of large photos does not hold gigabytes for the life of the model.
const ArenaKeep = 512 << 20

// Dest is executor.Dest, under the short name the batch code uses.
type Dest = executor.Dest

// phases are the phases of a batch, timed in Executor.nanos: header
// parsing and routing (host), decoding on every path (host clock, until the
// last path is done), and the fused kernel with its descriptor upload
// (device time, from CUDA events).
var phases = [...]string{"parse", "decode", "kernel"}

// Executor runs one compiled pipeline on one GPU. Calls are serialised:
// Triton gives each instance its own executor.
type Executor struct {
	prog        *pipeline.Compiled
	chain       *chain
	opt         executor.Options
	sampleBytes []int // bytes per sample of each output
	decNm       string
	steps       []executor.Step // decode, then the kernel's operators

	ctx   *cuda.Context
	fused *kernels.Fused
	// Events around the kernel stage: its device time for statistics.
	evStart, evEnd cuda.Event
	main           cuda.Stream
	svc            *service  // the GPU's decoders, shared with its other executors
	hw             *jpegPath // svc's hardware decoder; nil without JPEG engines or with HWShare 0
	parsers        []*parser // one per CPU thread this executor may run at once
	shared         bool      // Workers was left to the executor: threads shares the cores
	mem            arena
	desc           []byte // pinned: the batch's kernel descriptors
	descOff        int    // arena offset of the part's descriptors
	side           []byte // pinned: side outputs bound for device memory
	// pinned: the batch's JPEGs for nvJPEG's batched calls, copied by the
	// parsers (stageSrc), and how much of it is handed out
	srcs    []byte
	srcUsed atomic.Int64
	srcOn   bool

	devOut  []cuda.DevicePtr // RunOnDevice's outputs
	devOutN int

	// Other GPUs' primary contexts, retained on their first destination
	// there (peer access enabled where the devices allow it), and zeros
	// for a failed sample's destination there.
	peers map[int]*cuda.Context
	zeros []byte

	mu       sync.Mutex
	closed   bool
	samples  []sample
	crops    []ops.Crop     // crop_boxes: the batch's crops, chain.crops per image
	id       int            // its number in the process, for traces
	set      route.Settings // read once per process (route.Env)
	split    route.Splitter // the engines' share of the JPEGs they take
	decoders route.Decoders // what the JPEG route may choose from
	sm       *smHuffman     // route.SluiceGPUHuffman's decoder; nil unless set.SluiceGPUHuffman
	hwPx     []int          // runPart's pixels of the engine-decodable samples, kept for the next part
	decoded  [route.NumPaths]atomic.Int64
	// Images an nvJPEG path failed on as a whole and the CPU decoded
	// again, and that path's last error: for tests and diagnosis.
	retried   atomic.Int64
	retryMu   sync.Mutex
	lastRetry error
	nanos     [len(phases)]atomic.Int64
	// Copies to other GPUs' memory, and their bytes.
	crossN, crossBytes atomic.Int64
	runMu              sync.Mutex // serialises Run, which reuses result
	result             *executor.Result
}

// New builds the executor: the pipeline's GPU form, the device's primary
// context, a stream, the kernel module, and a hold on the GPU's shared
// decoders (nvJPEG and CPU workers). Close releases all of it.
func New(prog *pipeline.Compiled, opt executor.Options) (e *Executor, err error) {
	ch, err := newChain(prog)
	if err != nil {
		return nil, err
	}
	shared := opt.Workers <= 0
	if shared {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if opt.Limits == (ops.Limits{}) {
		opt.Limits = ops.DefaultLimits
	}
	e = &Executor{prog: prog, chain: ch, opt: opt, shared: shared, decNm: prog.Nodes[0].Name, set: route.Env(),
		id: int(executorIDs.Add(1) - 1)}
	rest := prog.Nodes[1:]
	if ch.decoded {
		// No decode: an image fails at its input, and the kernel is all.
		e.decNm, rest = prog.Inputs[ch.in], prog.Nodes
	} else {
		e.steps = append(e.steps, executor.NewStep(e.decNm))
	}
	if len(rest) > 0 {
		names := make([]string, len(rest))
		for i, nd := range rest {
			names[i] = nd.Name
		}
		e.steps = append(e.steps, executor.NewStep(names...))
	}
	for _, o := range prog.Outputs {
		if !o.Spec.Static() {
			return nil, fmt.Errorf("output %s: shape %v is not static", o.Name, o.Spec.Dims)
		}
		e.sampleBytes = append(e.sampleBytes, o.Spec.Elems()*o.Spec.DType.Size())
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
	if e.set.SluiceGPUHuffman {
		// Without the decoder, no JPEG is sent its way.
		if e.sm, err = newSMHuffman(e.fused); err != nil {
			e.set.SluiceGPUHuffman = false
		}
	}
	// After the SMs' decoder: the split depends on whether they take JPEGs.
	e.split = e.set.NewSplitter(opt.HWShare, shared)
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
	if e.split.Engines() && e.svc.hw != nil {
		e.hw = e.svc.hw
	}
	e.decoders = route.Decoders{Engines: e.hw != nil, Decoupled: e.svc.huff != nil,
		DecoupledGPU: e.svc.huff != nil && e.svc.huff.gpuDec != nil}
	for range opt.Workers {
		e.parsers = append(e.parsers, newParser(ch, opt.Limits))
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

// Workers is the most CPU threads the executor runs at once: its own
// parsers, and as many decode workers drawn from its GPU's shared pool.
func (e *Executor) Workers() int { return len(e.parsers) }

// threads is how many threads a batch's step runs on now: Workers when it
// was set, else the cores shared out among the GPU's executors with a
// batch in flight: two executors with a thread per core each decode
// progressive JPEGs slower than with half the cores each (docs/perf.md);
// one executor alone gets every core.
func (e *Executor) threads() int {
	n := len(e.parsers)
	if !e.shared {
		return n
	}
	busy := max(int(e.svc.busy.Load()), 1)
	return max((n+busy-1)/busy, 1)
}

// SampleBytes is the byte size of one sample of output i.
func (e *Executor) SampleBytes(i int) int { return e.sampleBytes[i] }

// Steps are decode and, when the pipeline has more, the operators the
// kernel runs.
func (e *Executor) Steps() []executor.Step { return e.steps }

// Stats reports the time of each phase, decode's step being parse and
// decode and the kernel's the kernel, and the images each decoder path
// decoded.
func (e *Executor) Stats(st *executor.Stats) {
	st.Phases = st.Phases[:0]
	for i, name := range phases {
		st.Phases = append(st.Phases, executor.Counter{Name: name, N: e.nanos[i].Load()})
	}
	st.StepNanos = append(st.StepNanos[:0], st.Phases[0].N+st.Phases[1].N)
	if len(e.steps) > 1 {
		st.StepNanos = append(st.StepNanos, st.Phases[2].N)
	} else {
		st.StepNanos[0] += st.Phases[2].N
	}
	st.Decoded = st.Decoded[:0]
	for p := range route.NumPaths {
		st.Decoded = append(st.Decoded, executor.Counter{Name: p.String(), N: e.decoded[p].Load()})
	}
	st.CrossDevice, st.CrossDeviceBytes = e.crossN.Load(), e.crossBytes.Load()
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
	for _, z := range e.parsers {
		z.close()
	}
	e.parsers = nil
	if e.svc != nil {
		e.svc.release()
		e.svc = nil
	}
	e.mem.free()
	e.freeDeviceOut()
	for _, c := range e.peers {
		c.Release()
	}
	e.peers = nil
	for _, b := range []*[]byte{&e.desc, &e.side, &e.srcs} {
		freePinned(b)
	}
	for _, ev := range []cuda.Event{e.evStart, e.evEnd} {
		if ev != 0 {
			ev.Destroy()
		}
	}
	e.sm.close() // before the module its kernel is of
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
	// Not e.mu, which RunInto takes.
	e.runMu.Lock()
	defer e.runMu.Unlock()
	if e.result == nil {
		e.result = executor.NewResult(e.prog)
	}
	if err := executor.Run(e, in, e.result); err != nil {
		return nil, err
	}
	return e.result, nil
}

// RunInto is executor.Executor's: the kernel writes destinations on this
// GPU in place, and host ones and other GPUs' through a staging copy. A
// failed sample's destinations are zeroed.
func (e *Executor) RunInto(in [][][]byte, dst [][]Dest, errs []error, budgets []*ops.Budget) error {
	return e.RunDevice(in, nil, nil, dst, errs, budgets)
}

// RunShaped is executor.ShapedRunner's: RunInto with each sample's shape
// of the decoded-image, boxes and count inputs, checked against the
// pipeline's.
func (e *Executor) RunShaped(in [][][]byte, dims [][][]int, dst [][]Dest, errs []error, budgets []*ops.Budget) error {
	return e.RunDevice(in, nil, dims, dst, errs, budgets)
}

// RunDevice is executor.DeviceRunner's: RunShaped with decoded images in
// device memory, read in place on this GPU.
func (e *Executor) RunDevice(in [][][]byte, dev [][]executor.DevSpan, dims [][][]int, dst [][]Dest, errs []error, budgets []*ops.Budget) (err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("the GPU executor is closed")
	}
	if len(in) != len(e.prog.Inputs) || dims != nil && len(dims) != len(in) || dev != nil && len(dev) != len(in) {
		return fmt.Errorf("got %d inputs (%d shapes, %d in device memory), the pipeline has %d", len(in), len(dims), len(dev), len(e.prog.Inputs))
	}
	n := len(in[e.chain.in])
	for i := range in {
		if len(in[i]) != n || dims != nil && dims[i] != nil && len(dims[i]) != n || dev != nil && dev[i] != nil && len(dev[i]) != n {
			return fmt.Errorf("input %s: %d samples, input %s has %d", e.prog.Inputs[i], len(in[i]), e.prog.Inputs[e.chain.in], n)
		}
	}
	if err := executor.CheckCall(e.prog, e.sampleBytes, dst, errs, budgets, n, true); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	e.svc.busy.Add(1)
	defer e.svc.busy.Add(-1)
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
	b := e.newBatch(in, dev, dims, dst, errs, budgets)
	if sb := e.chain.sideN; sb > 0 {
		if err := growPinned(&e.side, n*sb, 0); err != nil {
			return err
		}
	}
	e.growSrcs(b)
	t0 := time.Now()
	e.parse(b)
	t1 := time.Now()
	e.nanos[0].Add(int64(t1.Sub(t0)))
	trace(ActorExecutor, e.id, StepParse, n, t0)
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
	return e.zeroFailed(b)
}

// zeroFailed zeroes the destinations of the samples that failed, as
// executor.Executor promises.
func (e *Executor) zeroFailed(b *batch) error {
	queued := false
	for s, err := range b.errs {
		if err == nil {
			continue
		}
		for o := range b.dst {
			d := b.dst[o][s]
			var err error
			switch {
			case d.Dev == 0:
				clear(d.Host)
				continue
			case e.local(d):
				err = cuda.MemsetD8Async(cuda.DevicePtr(d.Dev), 0, e.sampleBytes[o], e.main)
			default:
				if len(e.zeros) < e.sampleBytes[o] {
					e.zeros = make([]byte, e.sampleBytes[o])
				}
				err = e.toPeer(d, e.zeros[:e.sampleBytes[o]])
			}
			if err != nil {
				return err
			}
			queued = true
		}
	}
	if queued {
		return e.main.Synchronize()
	}
	return nil
}

// RunOnDevice processes one batch into device buffers the executor keeps
// (reused by the next call), for benchmarks and tools: the outputs stay
// where the next model of an ensemble would read them.
func (e *Executor) RunOnDevice(in [][][]byte) ([]error, error) {
	if len(in) != len(e.prog.Inputs) {
		return nil, fmt.Errorf("got %d inputs, the pipeline has %d", len(in), len(e.prog.Inputs))
	}
	n := len(in[e.chain.in])
	if err := e.growDeviceOut(n); err != nil {
		return nil, err
	}
	dst := make([][]Dest, len(e.sampleBytes))
	for i := range dst {
		dst[i] = make([]Dest, n)
		for s := range n {
			dst[i][s] = Dest{Dev: uintptr(e.devOut[i]) + uintptr(s*e.sampleBytes[i]), Device: e.opt.Device}
		}
	}
	errs := make([]error, n)
	return errs, e.RunInto(in, dst, errs, nil)
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
	for _, sz := range e.sampleBytes {
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
