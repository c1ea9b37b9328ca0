package backend

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/reclaim"
	"github.com/sluice-dev/sluice/internal/reuse"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// Instance is one model instance: an executor and the buffers of its
// Execute calls, which are reused from call to call.
type Instance struct {
	Name   string
	Kind   string // as asked for: KIND_CPU, KIND_GPU, KIND_AUTO or KIND_MODEL
	Device int
	// Executor is the executor kind it runs (executor.KindCPU or
	// KindGPU): the CPU's for a KIND_GPU instance whose pipeline the GPU
	// kernel cannot express.
	Executor string

	model *Model
	log   *zap.Logger
	blame blame // which input a failed step read, for error messages

	mu     sync.Mutex // serialises Execute and Close
	closed bool
	exec   executor.Executor
	col    *collector
	resp   *responder
	marks  marker
	reqs   []reqState
	sample []error // per sample of the batch, from the executor
	// What each request's images may decode together (budgets[i] for
	// request i), chained to the batch's; sampleBudget[s] is sample s's.
	budgets      []ops.Budget
	batchBudget  ops.Budget
	sampleBudget []*ops.Budget
	errs         []error // per request, returned by Execute
	counts       counters

	// The scratch buffers go after idleRelease without an Execute.
	idle     *time.Timer
	lastExec time.Time
}

// idleRelease is how long an instance keeps its scratch buffers (up to
// max_batch_bytes) after its last Execute. Traffic keeps them; a burst
// that ended gives them back, and internal/reclaim returns the memory to
// the OS within seconds after that.
const idleRelease = 5 * time.Second

// reqState is one request's place in the batch and its fate.
type reqState struct {
	start, n int  // its images: samples [start, start+n) of the batch
	failed   bool // its error is set; it takes no further part
	answered bool // its outcome (outputs or error) is final
}

// NewInstance makes an instance of the given kind (Triton's
// TRITONSERVER_InstanceGroupKindString): KIND_GPU runs the GPU executor on
// the given device, which a program must link in (cgo imports
// executor/gpu); KIND_CPU, KIND_AUTO and KIND_MODEL run on the CPU.
func (m *Model) NewInstance(name, kind string, device int) (*Instance, error) {
	execKind, outDevice := executor.KindCPU, -1
	switch kind {
	case "KIND_CPU", "KIND_AUTO", "KIND_MODEL":
	case "KIND_GPU":
		execKind, outDevice = executor.KindGPU, device
	default:
		return nil, &Error{Code: CodeInvalidArg, Msg: fmt.Sprintf("instance %s: unknown kind %q: use KIND_CPU or KIND_GPU", name, kind)}
	}
	// Each instance compiles its own operators: an executor links and
	// fuses them (decode learns its consumer), and instances start while
	// others execute.
	prog, err := pipeline.Compile(m.Pipeline.Def, m.Pipeline.Source)
	if err != nil {
		return nil, &Error{Code: CodeInternal, Msg: fmt.Sprintf("instance %s: %v", name, err)}
	}
	opt := executor.Options{Workers: m.Params.Workers, Limits: m.Params.Limits,
		Device: device, MemoryCap: m.Params.GPUMemory, HWShare: m.Params.HWShare}
	exec, err := executor.Open(execKind, prog, opt)
	if kind == "KIND_GPU" && errors.Is(err, ops.ErrNotOnGPU) {
		// A pipeline the kernel cannot express (resize's source_mode,
		// Pillow's resampling per image mode) still runs, with the same
		// bytes, on the CPU executor of this instance: outputs in host
		// memory, which Triton copies where the next model wants them.
		m.log.Warn("KIND_GPU instance runs its pipeline on the CPU executor", zap.String("instance", name), zap.Error(err))
		execKind, outDevice = executor.KindCPU, -1
		exec, err = executor.Open(execKind, prog, opt)
	}
	if err != nil {
		if kind == "KIND_GPU" {
			return nil, &Error{Code: CodeUnavailable, Msg: fmt.Sprintf("instance %s (KIND_GPU, device %d): %v", name, device, err)}
		}
		return nil, &Error{Code: CodeInternal, Msg: fmt.Sprintf("instance %s: %v", name, err)}
	}
	if _, ok := exec.(executor.ShapedRunner); prog.HasDecoded() && !ok {
		exec.Close()
		return nil, &Error{Code: CodeUnsupported, Msg: fmt.Sprintf("instance %s (%s): the %s executor does not take decoded-image inputs; use KIND_CPU", name, kind, execKind)}
	}
	inst := &Instance{
		Name:     name,
		Kind:     kind,
		Device:   device,
		Executor: execKind,
		model:    m,
		log:      m.log.With(zap.String("instance", name)),
		blame:    newBlame(prog, exec.Steps()),
		exec:     exec,
		col:      newCollector(newCollectInputs(m.Inputs, prog), m.MaxBatchSize, inputDevice(exec, outDevice)),
	}
	outs := make([]respondOutput, len(m.Pipeline.Outputs))
	for i, o := range m.Pipeline.Outputs {
		outs[i] = respondOutput{name: o.Name, dataType: o.Spec.DType.String(), dims: m.Outputs[i].Dims, sample: exec.SampleBytes(i)}
	}
	inst.resp = newResponder(outs, outDevice, m.Params.MaxBatchBytes)
	inst.counts.start(exec)
	if !m.register(inst) {
		exec.Close()
		return nil, &Error{Code: CodeUnavailable, Msg: fmt.Sprintf("instance %s: the model is unloading", name)}
	}
	inst.log.Debug("sluice instance created", zap.String("kind", kind), zap.Int("device", device), zap.Int("workers", exec.Workers()))
	return inst, nil
}

// Close stops the instance's executor, after an Execute in flight.
// Idempotent.
func (inst *Instance) Close() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.closed {
		return
	}
	inst.closed = true
	if inst.idle != nil {
		inst.idle.Stop()
	}
	reclaim.Released(inst.resp.release())
	inst.exec.Close()
	inst.model.forget(inst)
}

// releaseIdle runs idleRelease after an Execute; an Execute since then has
// set the timer again.
func (inst *Instance) releaseIdle() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if !inst.closed && time.Since(inst.lastExec) >= idleRelease {
		reclaim.Released(inst.resp.release())
		reclaim.Idle()
	}
}

// touch records an Execute and (re)starts the idle timer.
func (inst *Instance) touch() {
	inst.lastExec = time.Now()
	if inst.idle == nil {
		inst.idle = time.AfterFunc(idleRelease, inst.releaseIdle)
	} else {
		inst.idle.Reset(idleRelease)
	}
}

// Execute runs one batch of requests: it collects every request's images
// into one batch, runs the pipeline once over it and fills each request's
// response. errs[i] is nil when resps[i] got all its outputs, else the
// request's error (resps[i] may then hold some outputs, which cgo must not
// send). A bad request or a bad image fails only its own request.
//
// errs is owned by the instance and valid until the next Execute. Execute
// never panics: a panic becomes a CodeInternal error for every request not
// yet answered.
func (inst *Instance) Execute(reqs []Request, resps []Response) (errs []error, st BatchStats) {
	now := inst.model.now
	st.ExecStart = now()
	inst.mu.Lock()
	defer inst.mu.Unlock()

	inst.errs = reuse.Zeroed(inst.errs, len(reqs))
	inst.reqs = reuse.Zeroed(inst.reqs, len(reqs))
	errs = inst.errs
	defer func() {
		if p := recover(); p != nil {
			inst.recovered(p, errs, &st)
		}
		inst.col.reset()
		clear(inst.sample) // drop the per-sample errors
		// and the requests, which Triton releases once Execute returns
		for i := range inst.budgets {
			inst.budgets[i].Client = nil
		}
		if !inst.closed {
			inst.touch()
		}
	}()

	if inst.closed {
		for i := range errs {
			errs[i] = &Error{Code: CodeUnavailable, Msg: "the model instance is closed"}
		}
		st.ComputeStart, st.ComputeEnd, st.ExecEnd = now(), now(), now()
		return errs, st
	}

	n := inst.collect(reqs)
	st.ComputeStart = now()
	if inst.run(n, reqs, resps) {
		inst.countImages(&st.Images)
		inst.counts.update(inst.exec, &st)
	}
	st.ComputeEnd = now()
	inst.respond(reqs, resps)
	st.Samples = n
	st.ExecEnd = now()
	return errs, st
}

// collect gathers every request's images; a request that cannot be read
// gets its error and no place in the batch.
func (inst *Instance) collect(reqs []Request) int {
	for i, req := range reqs {
		if req != nil && req.Cancelled() {
			inst.fail(i, errCancelled)
			continue
		}
		start, n, err := inst.col.add(req)
		inst.reqs[i] = reqState{start: start, n: n}
		if err != nil {
			inst.fail(i, err)
		}
	}
	return inst.col.n
}

// run places every request's outputs, then runs the batch of n samples
// once, the executor writing each sample straight into its response. It
// reports whether the executor ran (its per-sample results are valid).
func (inst *Instance) run(n int, reqs []Request, resps []Response) bool {
	inst.resp.prepare(n)
	inst.sample = reuse.Zeroed(inst.sample, n)
	err := inst.placeAll(n, reqs, resps)
	if err == nil {
		if inst.col.onDev > 0 {
			// Only an executor that reads device memory has them (inputDevice).
			err = inst.exec.(executor.DeviceRunner).RunDevice(inst.col.batch, inst.col.dev, inst.col.dims, inst.resp.dst, inst.sample, inst.drawBudgets(n, reqs))
		} else if inst.col.dims != nil {
			// NewInstance checked that the executor takes them.
			err = inst.exec.(executor.ShapedRunner).RunShaped(inst.col.batch, inst.col.dims, inst.resp.dst, inst.sample, inst.drawBudgets(n, reqs))
		} else {
			err = inst.exec.RunInto(inst.col.batch, inst.resp.dst, inst.sample, inst.drawBudgets(n, reqs))
		}
	}
	if err == nil {
		return true
	}
	// A malformed call (a bug here) or the GPU's failure, not the
	// requests'.
	for i := range inst.reqs {
		if !inst.reqs[i].failed {
			inst.fail(i, &Error{Code: CodeInternal, Msg: fmt.Sprintf("executor: %v", err)})
		}
	}
	return false
}

// drawBudgets gives the samples of each request still standing one
// budget, chained to the batch's.
func (inst *Instance) drawBudgets(n int, reqs []Request) []*ops.Budget {
	p := &inst.model.Params
	inst.batchBudget.Reset("batch", p.BatchQuota, nil)
	if len(inst.budgets) < len(inst.reqs) {
		inst.budgets = make([]ops.Budget, len(inst.reqs))
	}
	inst.sampleBudget = reuse.Zeroed(inst.sampleBudget, n)
	for i := range inst.reqs {
		r := &inst.reqs[i]
		if r.failed {
			continue
		}
		b := &inst.budgets[i]
		b.Reset("request", p.RequestQuota, &inst.batchBudget)
		b.Client = reqs[i] // asked whether it was cancelled as its images run
		for s := r.start; s < r.start+r.n; s++ {
			inst.sampleBudget[s] = b
		}
	}
	return inst.sampleBudget
}

// placeAll places the outputs of every request still standing. One whose
// outputs cannot be placed fails, its samples going to scratch memory. A
// panic (in Triton's response code) fails the request it hit and those
// after it, as Execute's recovery would; the ones before it still run.
// An error (scratch memory over the budget: a bug) leaves the batch unfit
// to run.
func (inst *Instance) placeAll(n int, reqs []Request, resps []Response) (err error) {
	i := 0
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		inst.log.Error("sluice: placing outputs panicked", zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
		for ; i < len(inst.reqs); i++ {
			if r := &inst.reqs[i]; !r.failed {
				inst.fail(i, panicError(p))
				if serr := inst.resp.scratchAll(r.start, r.n); serr != nil {
					err = serr
				}
			}
		}
	}()
	for ; i < len(inst.reqs); i++ {
		r := &inst.reqs[i]
		if r.failed {
			continue
		}
		var resp Response
		if i < len(resps) {
			resp = resps[i]
		}
		ok, msgs := inst.marksWanted(reqs[i])
		if perr := inst.resp.place(reqs[i], resp, r.start, r.n, ok || msgs); perr != nil {
			inst.fail(i, perr)
			if err = inst.resp.scratchAll(r.start, r.n); err != nil {
				return err
			}
		}
	}
	return nil
}

// respond settles every request still standing: its outputs are in
// place when all its images succeeded, else it fails naming the first
// that did not, or with image_errors "mark" it is answered with its
// images marked.
func (inst *Instance) respond(reqs []Request, resps []Response) {
	for i := range inst.reqs {
		r := &inst.reqs[i]
		if r.failed {
			continue
		}
		if reqs[i].Cancelled() {
			// Its client has gone: some of its images may not have run.
			inst.fail(i, errCancelled)
			continue
		}
		if inst.model.Params.MarkImageErrors {
			if err := inst.mark(reqs[i], resps[i], r); err != nil {
				inst.fail(i, err)
				continue
			}
		} else if err := inst.sampleError(r); err != nil {
			inst.fail(i, err)
			continue
		}
		r.answered = true
	}
}

// sampleError returns the request's error when any of its images failed.
func (inst *Instance) sampleError(r *reqState) error {
	first, failed := -1, 0
	for k, err := range inst.sample[r.start : r.start+r.n] {
		if err != nil {
			if first < 0 {
				first = k
			}
			failed++
		}
	}
	if failed == 0 {
		return nil
	}
	msg := inst.blame.sampleMessage(first, inst.sample[r.start+first])
	if failed > 1 {
		msg += fmt.Sprintf(" (and %d more of the request's %d elements failed)", failed-1, r.n)
	}
	return &Error{Code: CodeInvalidArg, Msg: msg}
}

// fail records request i's error and logs it at Debug.
func (inst *Instance) fail(i int, err error) {
	inst.errs[i] = err
	inst.reqs[i].failed = true
	inst.reqs[i].answered = true
	logRequestError(inst.log, i, err)
}

// recovered turns a panic into errors for the requests not yet answered and
// completes the timestamps, so that cgo still sends one response each.
func (inst *Instance) recovered(p any, errs []error, st *BatchStats) {
	inst.log.Error("sluice Execute panicked", zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
	for i := range errs {
		if i >= len(inst.reqs) || !inst.reqs[i].answered {
			errs[i] = panicError(p)
		}
	}
	t := inst.model.now()
	for _, ts := range []*uint64{&st.ComputeStart, &st.ComputeEnd, &st.ExecEnd} {
		if *ts == 0 {
			*ts = t
		}
	}
}

// errCancelled answers a request whose client cancelled it.
var errCancelled = &Error{Code: CodeCancelled, Msg: "the request was cancelled by its client"}

// panicError is the error of the requests a panic left unanswered.
func panicError(p any) error {
	return &Error{Code: CodeInternal, Msg: fmt.Sprintf("internal error in the sluice backend: %v", p)}
}

// inputDevice is the GPU whose memory a KIND_GPU instance on device takes
// decoded-image inputs in, when its executor reads them there; -1 (host
// memory) otherwise.
func inputDevice(exec executor.Executor, device int) int {
	if _, ok := exec.(executor.DeviceRunner); ok && device >= 0 {
		return device
	}
	return -1
}
