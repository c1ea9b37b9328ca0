// Package executor runs a compiled pipeline over batches on the CPU: a
// fixed pool of workers, each with its own operator state and tensors that
// are reused from sample to sample and batch to batch, and per-sample
// results, so that one bad image fails only itself.
package executor

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// Options tune an executor. The zero value is usable.
type Options struct {
	// Workers is the number of samples processed at once; 0 means
	// GOMAXPROCS.
	Workers int
	// Limits bound each sample; the zero value means ops.DefaultLimits.
	Limits ops.Limits
}

// Executor runs one compiled pipeline. RunInto may be called from several
// goroutines at once; the batches then share the worker pool.
type Executor struct {
	prog    *pipeline.Compiled
	steps   []step
	limits  ops.Limits
	workers []*worker
	jobs    chan *batch
	slot    []int       // bytes per sample of each output
	free    chan *batch // reused batch records; a sync.Pool would be emptied by every GC

	mu      sync.Mutex // guards result and runOuts, and serialises Run
	result  Result
	runOuts [][]byte

	serving sync.WaitGroup

	closeOnce sync.Once
}

// Result holds a batch's outputs and per-sample errors. Run reuses it: it
// is valid until the next Run.
type Result struct {
	Outputs []Output
	// Errs has one entry per sample: nil when the sample succeeded, else
	// a *SampleError. A failed sample's output rows are zero.
	Errs []error
}

// Output is one pipeline output for the whole batch: N samples of Spec,
// contiguous, in native byte order.
type Output struct {
	Name string
	Spec ops.Spec
	Data []byte
}

// SampleError says which sample failed at which node, and why.
type SampleError struct {
	Index int
	Node  string
	Err   error
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("sample %d: %s: %v", e.Index, e.Node, e.Err)
}

func (e *SampleError) Unwrap() error { return e.Err }

// Cause classifies the failure (truncated, corrupt data, ...).
func (e *SampleError) Cause() ops.Cause { return ops.CauseOf(e.Err) }

// New starts an executor's workers. Close stops them.
func New(prog *pipeline.Compiled, opt Options) (*Executor, error) {
	n := opt.Workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	lim := opt.Limits
	if lim == (ops.Limits{}) {
		lim = ops.DefaultLimits
	}
	e := &Executor{prog: prog, limits: lim, jobs: make(chan *batch, n)}
	e.free = make(chan *batch, 16)
	for _, o := range prog.Outputs {
		if !o.Spec.Static() {
			return nil, fmt.Errorf("output %s: shape %v is not static", o.Name, o.Spec.Dims)
		}
		e.slot = append(e.slot, o.Spec.Elems()*o.Spec.DType.Size())
	}
	e.steps = plan(prog)
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
func (e *Executor) Workers() int { return len(e.workers) }

// Steps names the operator calls a sample goes through, in order: the
// pipeline's nodes, with fused ones joined by "+" ("resize+crop").
func (e *Executor) Steps() []string {
	names := make([]string, len(e.steps))
	for i, st := range e.steps {
		names[i] = st.name
	}
	return names
}

// StepNanos sets dst[i] (len(Steps()) entries) to the worker time spent in
// step i since New, summed over the workers, failed samples included: the
// per-operator split of the pipeline's cost.
func (e *Executor) StepNanos(dst []int64) {
	clear(dst)
	for _, w := range e.workers {
		for i := range w.nanos {
			dst[i] += w.nanos[i].Load()
		}
	}
}

// SampleBytes is the byte size of one sample of output i.
func (e *Executor) SampleBytes(i int) int { return e.slot[i] }

// Close waits for the batches in flight, stops the workers and releases
// operator state. Calls to Run after Close panic; Close is idempotent.
func (e *Executor) Close() {
	e.closeOnce.Do(func() {
		close(e.jobs)
		e.serving.Wait()
		e.closeWorkers()
	})
}

func (e *Executor) closeWorkers() {
	for _, w := range e.workers {
		w.close()
	}
}

// Run processes one batch: in[i][s] is the encoded bytes of pipeline input
// i for sample s. The returned Result is reused by the next Run.
func (e *Executor) Run(in [][][]byte) (*Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, err := e.batchSize(in)
	if err != nil {
		return nil, err
	}
	r := &e.result
	if r.Outputs == nil {
		for _, o := range e.prog.Outputs {
			r.Outputs = append(r.Outputs, Output{Name: o.Name, Spec: o.Spec})
		}
	}
	if e.runOuts == nil {
		e.runOuts = make([][]byte, len(r.Outputs))
	}
	outs := e.runOuts
	for i := range r.Outputs {
		need := n * e.slot[i]
		if cap(r.Outputs[i].Data) < need {
			r.Outputs[i].Data = make([]byte, need)
		}
		r.Outputs[i].Data = r.Outputs[i].Data[:need]
		outs[i] = r.Outputs[i].Data
	}
	if cap(r.Errs) < n {
		r.Errs = make([]error, n)
	}
	r.Errs = r.Errs[:n]
	if err := e.RunInto(in, outs, r.Errs); err != nil {
		return nil, err
	}
	return r, nil
}

func (e *Executor) batchSize(in [][][]byte) (int, error) {
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

// RunInto processes one batch into caller-owned buffers: outs[i] holds
// n samples of output i (n × SampleBytes(i) bytes), errs gets one entry
// per sample. The error return is for a malformed call only; failures of
// single samples go to errs.
func (e *Executor) RunInto(in [][][]byte, outs [][]byte, errs []error) error {
	n, err := e.batchSize(in)
	if err != nil {
		return err
	}
	if len(outs) != len(e.slot) {
		return fmt.Errorf("got %d output buffers, the pipeline has %d outputs", len(outs), len(e.slot))
	}
	for i, o := range outs {
		if len(o) != n*e.slot[i] {
			return fmt.Errorf("output %s: buffer of %d bytes, want %d samples × %d", e.prog.Outputs[i].Name, len(o), n, e.slot[i])
		}
	}
	if len(errs) != n {
		return fmt.Errorf("got %d error slots for %d samples", len(errs), n)
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
	b.in, b.outs, b.errs, b.n = in, outs, errs, n
	b.next.Store(0)
	k := min(n, len(e.workers))
	b.wg.Add(k)
	for range k {
		e.jobs <- b
	}
	b.wg.Wait()
	b.in, b.outs, b.errs = nil, nil, nil // do not keep the caller's buffers alive
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
func (e *Executor) Warm(in [][][]byte) ([]error, error) {
	r, err := e.Run(in)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	outs := make([][]byte, len(r.Outputs))
	for i := range r.Outputs {
		outs[i] = r.Outputs[i].Data
	}
	b := &batch{in: in, outs: outs, errs: make([]error, len(in[0])), n: len(in[0])}
	for _, w := range e.workers {
		for s := range b.n {
			b.errs[s] = e.runSample(w, b, s)
		}
	}
	return b.errs, nil
}

// batch is one RunInto call shared by the workers that take part in it.
type batch struct {
	in   [][][]byte
	outs [][]byte
	errs []error
	n    int
	next atomic.Int64
	wg   sync.WaitGroup
}

func (e *Executor) serve(w *worker) {
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
func (e *Executor) runSample(w *worker, b *batch, s int) (err error) {
	node := "pipeline"
	defer func() {
		if p := recover(); p != nil {
			err = &SampleError{Index: s, Node: node, Err: fmt.Errorf("internal error: %v\n%s", p, debug.Stack())}
		}
		if err != nil {
			for i, o := range b.outs {
				clear(o[s*e.slot[i] : (s+1)*e.slot[i]])
			}
		}
		w.unbind()
		w.trim(ops.RetainBytes)
	}()
	for i := range w.inputs {
		t := &w.inputs[i]
		t.Data = b.in[i][s]
		t.Dims = append(t.Dims[:0], len(t.Data))
	}
	for i, o := range e.prog.Outputs {
		w.bind(o.Ref, b.outs[i][s*e.slot[i]:(s+1)*e.slot[i]])
	}
	t0 := time.Now()
	for i := range e.steps {
		st := &e.steps[i]
		node = st.name
		err := st.op.Run(&w.ctx[i], w.in[i], w.out[i])
		t1 := time.Now()
		w.nanos[i].Add(int64(t1.Sub(t0)))
		t0 = t1
		if err != nil {
			return &SampleError{Index: s, Node: st.name, Err: err}
		}
	}
	// Outputs that share a tensor with another output get a copy.
	for i, o := range e.prog.Outputs {
		t := w.tensor(o.Ref)
		slot := b.outs[i][s*e.slot[i] : (s+1)*e.slot[i]]
		if len(slot) > 0 && (len(t.Data) == 0 || &t.Data[0] != &slot[0]) {
			if len(t.Data) != len(slot) {
				return &SampleError{Index: s, Node: o.Name, Err: errors.New("output size does not match its inferred shape")}
			}
			copy(slot, t.Data)
		}
	}
	return nil
}

// worker owns one set of tensors and operator states.
type worker struct {
	inputs []ops.Tensor    // pipeline inputs, pointing at the request bytes
	vals   [][]ops.Tensor  // vals[node][port]
	in     [][]*ops.Tensor // in[step][port]: where each input port reads
	out    [][]*ops.Tensor // out[step][port]
	ctx    []ops.Ctx       // per step
	nanos  []atomic.Int64  // per step: time spent, read by StepNanos
	bound  []*ops.Tensor   // tensors bound to output slots this sample
}

func newWorker(prog *pipeline.Compiled, steps []step, lim ops.Limits) (*worker, error) {
	w := &worker{
		inputs: make([]ops.Tensor, len(prog.Inputs)),
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
				return nil, fmt.Errorf("node %s: %w", st.name, err)
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

// bind points an operator output at a batch slot so that the operator
// writes its result in place. A tensor that is already bound (two outputs
// naming it) keeps its first slot; runSample copies into the second.
func (w *worker) bind(r pipeline.Ref, slot []byte) {
	if r.Node == pipeline.InputRef {
		return // validated away: outputs must be static, inputs are not
	}
	t := w.tensor(r)
	for _, b := range w.bound {
		if b == t {
			return
		}
	}
	t.Bind(slot)
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
