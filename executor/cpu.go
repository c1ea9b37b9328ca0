// The CPU executor: a fixed pool of workers, each with its own operator
// state and tensors that are reused from sample to sample and batch to
// batch, and per-sample results, so that one bad image fails only itself.
package executor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/internal/reuse"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// CPU is the CPU executor. RunInto may be called from several goroutines
// at once; the batches then share the worker pool.
type CPU struct {
	prog        *pipeline.Compiled
	steps       []step
	needs       [][]bool // per output, the steps it depends on (plan.go)
	limits      ops.Limits
	workers     []*worker
	jobs        chan *batch
	sampleBytes []int       // per output
	free        chan *batch // reused batch records; a sync.Pool would be emptied by every GC

	mu     sync.Mutex // guards result, and serialises Run
	result *Result

	serving sync.WaitGroup

	closeOnce sync.Once
}

// New starts an executor's workers. Close stops them.
func New(prog *pipeline.Compiled, opt Options) (*CPU, error) {
	n := opt.Workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	lim := opt.Limits
	if lim == (ops.Limits{}) {
		lim = ops.DefaultLimits
	}
	e := &CPU{prog: prog, limits: lim, jobs: make(chan *batch, n)}
	e.free = make(chan *batch, 16)
	for _, o := range prog.Outputs {
		if !o.Spec.Static() {
			return nil, fmt.Errorf("output %s: shape %v is not static", o.Name, o.Spec.Dims)
		}
		e.sampleBytes = append(e.sampleBytes, o.Spec.Elems()*o.Spec.DType.Size())
	}
	e.steps = plan(prog)
	e.needs = needs(prog, e.steps)
	for range n {
		w, err := newWorker(prog, e.steps, lim)
		if err != nil {
			e.closeWorkers()
			return nil, err
		}
		e.workers = append(e.workers, w)
	}
	e.serving.Add(len(e.workers))
	for _, w := range e.workers {
		go e.serve(w)
	}
	return e, nil
}

// Workers is the size of the worker pool.
func (e *CPU) Workers() int { return len(e.workers) }

// Steps are the operator calls a sample goes through, in order: the
// pipeline's nodes, some of them fused (resize+crop).
func (e *CPU) Steps() []Step {
	steps := make([]Step, len(e.steps))
	for i, st := range e.steps {
		steps[i] = st.Step
	}
	return steps
}

// Stats fills st.StepNanos with the worker time spent in each step, summed
// over the workers, failed samples included: the per-operator split of
// the pipeline's cost.
func (e *CPU) Stats(st *Stats) {
	st.StepNanos = reuse.Len(st.StepNanos, len(e.steps))
	clear(st.StepNanos)
	for _, w := range e.workers {
		for i := range w.nanos {
			st.StepNanos[i] += w.nanos[i].Load()
		}
	}
	st.Phases, st.Decoded = st.Phases[:0], st.Decoded[:0]
}

// SampleBytes is the byte size of one sample of output o.
func (e *CPU) SampleBytes(o int) int { return e.sampleBytes[o] }

// Close waits for the batches in flight, stops the workers and releases
// operator state. Calls to Run after Close panic; Close is idempotent.
func (e *CPU) Close() {
	e.closeOnce.Do(func() {
		close(e.jobs)
		e.serving.Wait()
		e.closeWorkers()
	})
}

func (e *CPU) closeWorkers() {
	for _, w := range e.workers {
		w.close()
	}
}

// Run processes one batch into host memory, for tools and tests: the
// Result is reused by the next Run.
func (e *CPU) Run(in [][][]byte) (*Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.result == nil {
		e.result = NewResult(e.prog)
	}
	if err := Run(e, in, e.result); err != nil {
		return nil, err
	}
	return e.result, nil
}

func (e *CPU) batchSize(in [][][]byte) (int, error) {
	if len(in) != len(e.prog.Inputs) {
		return 0, fmt.Errorf("got %d inputs, the pipeline has %d (%v)", len(in), len(e.prog.Inputs), e.prog.Inputs)
	}
	n := len(in[0])
	for i, x := range in {
		if len(x) != n {
			return 0, fmt.Errorf("input %s has %d samples, input %s has %d", e.prog.Inputs[i], len(x), e.prog.Inputs[0], n)
		}
	}
	return n, nil
}

// RunInto is Executor's: it writes host destinations only.
func (e *CPU) RunInto(in [][][]byte, dst [][]Dest, errs []error, budgets []*ops.Budget) error {
	return e.RunShaped(in, nil, dst, errs, budgets)
}

// RunShaped is ShapedRunner's: RunInto with the shapes of the samples of
// decoded-image inputs.
func (e *CPU) RunShaped(in [][][]byte, dims [][][]int, dst [][]Dest, errs []error, budgets []*ops.Budget) error {
	n, err := e.batchSize(in)
	if err != nil {
		return err
	}
	if dims != nil && len(dims) != len(in) {
		return fmt.Errorf("shapes for %d inputs, the pipeline has %d", len(dims), len(in))
	}
	for i := range dims {
		if dims[i] != nil && len(dims[i]) != n {
			return fmt.Errorf("input %s: %d shapes for %d samples", e.prog.Inputs[i], len(dims[i]), n)
		}
	}
	if err := CheckCall(e.prog, e.sampleBytes, dst, errs, budgets, n, false); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	var b *batch
	select {
	case b = <-e.free:
	default:
		b = new(batch)
	}
	b.in, b.dims, b.dst, b.errs, b.budgets, b.n = in, dims, dst, errs, budgets, n
	b.next.Store(0)
	k := min(n, len(e.workers))
	b.wg.Add(k)
	for range k {
		e.jobs <- b
	}
	b.wg.Wait()
	b.in, b.dims, b.dst, b.errs, b.budgets = nil, nil, nil, nil, nil // do not keep the caller's buffers alive
	select {
	case e.free <- b:
	default:
	}
	return nil
}

// Warm runs every sample of in on every worker, outputs discarded, so that
// each worker's operator state and buffers reach the size these images
// need: which worker takes which sample of a batch is the scheduler's
// choice. Per-sample errors are returned as Run would report them.
func (e *CPU) Warm(in [][][]byte) ([]error, error) {
	r, err := e.Run(in)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	b := &batch{in: in, dst: r.dst, errs: make([]error, len(in[0])), n: len(in[0])}
	if e.prog.HasDecoded() || e.prog.HasTensors() {
		return nil, errors.New("Warm takes encoded inputs only")
	}
	for _, w := range e.workers {
		for s := range b.n {
			b.errs[s] = e.runSample(w, b, s)
		}
	}
	return b.errs, nil
}

// batch is one RunInto call shared by the workers that take part in it.
type batch struct {
	in      [][][]byte
	dims    [][][]int // nil, or per input: nil, or each sample's [H, W, C]
	dst     [][]Dest
	errs    []error
	budgets []*ops.Budget // nil, or one per sample
	n       int
	next    atomic.Int64
	wg      sync.WaitGroup
}

func (e *CPU) serve(w *worker) {
	defer e.serving.Done()
	for b := range e.jobs {
		for {
			s := int(b.next.Add(1) - 1)
			if s >= b.n {
				break
			}
			b.errs[s] = e.runSample(w, b, s)
		}
		b.wg.Done()
	}
}

// runSample runs every node for sample s. A panic in an operator becomes
// that sample's error: in a server, one bad input must not take down the
// process.
func (e *CPU) runSample(w *worker, b *batch, s int) (err error) {
	node := "pipeline"
	defer func() {
		if p := recover(); p != nil {
			err = &SampleError{Index: s, Node: node, Err: fmt.Errorf("internal error: %v\n%s", p, debug.Stack())}
		}
		if err != nil {
			for o := range b.dst {
				clear(b.dst[o][s].Host)
			}
		}
		w.unbind()
		w.trim(ops.RetainBytes)
	}()
	var budget *ops.Budget
	if b.budgets != nil {
		budget = b.budgets[s]
	}
	for i := range w.inputs {
		t := &w.inputs[i]
		t.Data = b.in[i][s]
		if e.prog.Tensor(i) {
			var dims []int
			if b.dims != nil && b.dims[i] != nil {
				dims = b.dims[i][s]
			}
			if err := tensorInput(t, e.prog.InputSpecs[i], dims); err != nil {
				node = e.prog.Inputs[i]
				return &SampleError{Index: s, Node: node, Err: err}
			}
			continue
		}
		if !e.prog.Decoded(i) {
			t.Dims = append(t.Dims[:0], len(t.Data))
			continue
		}
		var dims []int
		if b.dims != nil && b.dims[i] != nil {
			dims = b.dims[i][s]
		}
		// An encoded image is priced from its header by decode; a decoded
		// one is here, before any operator sizes a buffer from it.
		if err := decodedInput(t, e.prog.InputSpecs[i], dims, e.limits, budget); err != nil {
			node = e.prog.Inputs[i]
			return &SampleError{Index: s, Node: node, Err: err}
		}
	}
	// Counts apply to their boxes once both are checked.
	for k, j := range e.prog.CountOf {
		if j >= 0 {
			if err := w.applyCount(j, k); err != nil {
				node = e.prog.Inputs[k]
				return &SampleError{Index: s, Node: node, Err: err}
			}
		}
	}
	for o, out := range e.prog.Outputs {
		if !b.dst[o][s].Discarded() {
			w.bind(out.Ref, b.dst[o][s].Host)
		}
	}
	for i := range w.ctx {
		w.ctx[i].Budget = budget
	}
	skip := w.unwanted(e, b.dst, s)
	t0 := time.Now()
	for i := range e.steps {
		if skip != nil && skip[i] {
			continue
		}
		st := &e.steps[i]
		node = st.Name
		err := st.op.Run(&w.ctx[i], w.in[i], w.out[i])
		t1 := time.Now()
		w.nanos[i].Add(int64(t1.Sub(t0)))
		t0 = t1
		if err != nil {
			return &SampleError{Index: s, Node: st.Name, Err: err}
		}
	}
	// Outputs that share a tensor with another output get a copy.
	for o, out := range e.prog.Outputs {
		t := w.tensor(out.Ref)
		dst := b.dst[o][s].Host
		if len(dst) > 0 && (len(t.Data) == 0 || &t.Data[0] != &dst[0]) {
			if len(t.Data) != len(dst) {
				return &SampleError{Index: s, Node: out.Name, Err: errors.New("output size does not match its inferred shape")}
			}
			copy(dst, t.Data)
		}
	}
	return nil
}

// decodedInput makes t, holding a decoded-image sample's bytes, the image
// of shape dims that spec declares (CheckDecoded).
func decodedInput(t *ops.Tensor, spec ops.Spec, dims []int, lim ops.Limits, budget *ops.Budget) error {
	if err := CheckDecoded(spec, len(t.Data), dims, lim, budget); err != nil {
		return err
	}
	t.DType, t.Color, t.Full = ops.Uint8, spec.Color, [2]int{}
	t.Dims = append(t.Dims[:0], dims...)
	return nil
}

// tensorInput makes t, holding a boxes or count sample's bytes, the tensor
// of spec's fixed shape (CheckTensor).
func tensorInput(t *ops.Tensor, spec ops.Spec, dims []int) error {
	if err := CheckTensor(spec, t.Data, dims); err != nil {
		return err
	}
	t.DType, t.Color, t.Full = spec.DType, ops.NoColor, [2]int{}
	t.Dims = append(t.Dims[:0], spec.Dims...)
	return nil
}

// applyCount marks the rows of boxes input j at or past the count in count
// input k unused, NaN, in a copy: the request's buffer is not ours to
// write.
func (w *worker) applyCount(j, k int) error {
	bx, cnt := &w.inputs[j], &w.inputs[k]
	rows := bx.Dims[0]
	n, err := BoxCount(cnt.Data, rows)
	if err != nil {
		return err
	}
	w.boxes[j] = append(w.boxes[j][:0], bx.Data...)
	nan := math.Float32bits(float32(math.NaN()))
	for i := n * 4; i < rows*4; i++ {
		binary.LittleEndian.PutUint32(w.boxes[j][4*i:], nan)
	}
	bx.Data = w.boxes[j]
	return nil
}

// unwanted returns the steps sample s need not run because only outputs
// nobody asked for depend on them, or nil when every output is wanted.
func (w *worker) unwanted(e *CPU, dst [][]Dest, s int) []bool {
	all := true
	for o := range dst {
		all = all && !dst[o][s].Discarded()
	}
	if all {
		return nil
	}
	w.skip = reuse.Len(w.skip, len(e.steps))
	for i := range w.skip {
		w.skip[i] = true
	}
	for o := range dst {
		if dst[o][s].Discarded() {
			continue
		}
		for i, need := range e.needs[o] {
			if need {
				w.skip[i] = false
			}
		}
	}
	return w.skip
}

// worker owns one set of tensors and operator states.
type worker struct {
	inputs []ops.Tensor    // pipeline inputs, pointing at the request bytes
	boxes  [][]byte        // per input: a boxes input's rows with its count applied
	vals   [][]ops.Tensor  // vals[node][port]
	in     [][]*ops.Tensor // in[step][port]: where each input port reads
	out    [][]*ops.Tensor // out[step][port]
	ctx    []ops.Ctx       // per step
	nanos  []atomic.Int64  // per step: time spent, read by Stats
	bound  []*ops.Tensor   // tensors bound to output destinations this sample
	skip   []bool          // per step: not run for this sample (unwanted)
}

func newWorker(prog *pipeline.Compiled, steps []step, lim ops.Limits) (*worker, error) {
	w := &worker{
		inputs: make([]ops.Tensor, len(prog.Inputs)),
		boxes:  make([][]byte, len(prog.Inputs)),
		vals:   make([][]ops.Tensor, len(prog.Nodes)),
		in:     make([][]*ops.Tensor, len(steps)),
		out:    make([][]*ops.Tensor, len(steps)),
		ctx:    make([]ops.Ctx, len(steps)),
		nanos:  make([]atomic.Int64, len(steps)),
	}
	for i := range w.inputs {
		w.inputs[i].DType = ops.Uint8
	}
	for i, nd := range prog.Nodes {
		w.vals[i] = make([]ops.Tensor, len(nd.Out))
	}
	for i, st := range steps {
		for p := range w.vals[st.node] {
			w.out[i] = append(w.out[i], &w.vals[st.node][p])
		}
		for _, r := range st.in {
			w.in[i] = append(w.in[i], w.tensor(r))
		}
		w.ctx[i].Limits = lim
		if sf, ok := st.op.(ops.Stateful); ok {
			state, err := sf.NewState()
			if err != nil {
				w.close()
				return nil, fmt.Errorf("node %s: %w", st.Name, err)
			}
			w.ctx[i].State = state
		}
	}
	return w, nil
}

func (w *worker) tensor(r pipeline.Ref) *ops.Tensor {
	if r.Node == pipeline.InputRef {
		return &w.inputs[r.Port]
	}
	return &w.vals[r.Node][r.Port]
}

// bind points an operator output at its destination so that the operator
// writes its result in place. A tensor that is already bound (two outputs
// naming it) keeps its first destination; runSample copies into the second.
func (w *worker) bind(r pipeline.Ref, dst []byte) {
	if r.Node == pipeline.InputRef {
		return // validated away: outputs must be static, inputs are not
	}
	t := w.tensor(r)
	for _, b := range w.bound {
		if b == t {
			return
		}
	}
	t.Bind(dst)
	w.bound = append(w.bound, t)
}

func (w *worker) unbind() {
	for _, t := range w.bound {
		t.Unbind()
	}
	w.bound = w.bound[:0]
	for i := range w.inputs {
		w.inputs[i].Data = nil // do not keep request bytes alive
	}
}

// trim lets go of the tensors and operator scratch over keep bytes that
// the last sample grew, and returns how many bytes it let go of.
func (w *worker) trim(keep int) int {
	n := 0
	for i := range w.vals {
		for p := range w.vals[i] {
			n += w.vals[i][p].Release(keep)
		}
	}
	for i := range w.ctx {
		if t, ok := w.ctx[i].State.(ops.Trimmer); ok {
			n += t.Trim(keep)
		}
	}
	return n
}

func (w *worker) close() {
	// Counted as let go of, so that an unloaded model's memory goes back
	// to the OS soon.
	w.trim(0)
	for i := range w.ctx {
		if st := w.ctx[i].State; st != nil {
			st.Close()
			w.ctx[i].State = nil
		}
	}
}
