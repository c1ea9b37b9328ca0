package backend

import (
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu"
	"github.com/sluice-dev/sluice/internal/reclaim"
	"github.com/sluice-dev/sluice/pipeline"
)

// Instance is one model instance: an executor and the buffers of its
// Execute calls, which are reused from call to call.
type Instance struct {
	Name   string
	Kind   string // as asked for: KIND_CPU, KIND_AUTO or KIND_MODEL
	Device int

	model *Model
	log   *zap.Logger

	mu     sync.Mutex // serialises Execute and Close
	closed bool
	exec   *executor.Executor // KIND_CPU
	gpu    *gpu.Executor      // KIND_GPU
	col    *collector
	resp   *responder
	reqs   []reqState
	sample []error // per sample of the batch, from the executor
	errs   []error // per request, returned by Execute

	// Per-operator time: the executor's cumulative counters at the last
	// Execute, and this Execute's share, which BatchStats.Ops points into.
	opTotal []int64
	opNow   []int64
	ops     []OpTime

	// GPU instances: where each sample of each output goes, a host
	// buffer for the samples of requests whose outputs could not be
	// placed, and the decoder counts at the last Execute.
	dst      [][]gpu.Dest
	scratch  [][]byte
	decTotal [len(DecodePaths)]int64

	// The batch buffers go after idleRelease without an Execute.
	idle     *time.Timer
	lastExec time.Time
}

// idleRelease is how long an instance keeps its batch buffers (up to
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
// the given device; KIND_CPU, KIND_AUTO and KIND_MODEL run on the CPU.
func (m *Model) NewInstance(name, kind string, device int) (*Instance, error) {
	switch kind {
	case "KIND_CPU", "KIND_AUTO", "KIND_MODEL", "KIND_GPU":
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
	inst := &Instance{
		Name:   name,
		Kind:   kind,
		Device: device,
		model:  m,
		log:    m.log.With(zap.String("instance", name)),
		col:    newCollector(newCollectInputs(m.Inputs), m.MaxBatchSize),
	}
	var steps []string
	var sampleBytes func(int) int
	if kind == "KIND_GPU" {
		g, err := gpu.New(prog, gpu.Options{Device: device, Workers: m.Params.Workers, Limits: m.Params.Limits,
			MemoryCap: m.Params.GPUMemory, HWShare: m.Params.HWShare})
		if err != nil {
			return nil, &Error{Code: CodeUnavailable, Msg: fmt.Sprintf("instance %s (KIND_GPU, device %d): %v", name, device, err)}
		}
		inst.gpu, steps, sampleBytes = g, gpu.Steps, g.SampleBytes
		inst.dst = make([][]gpu.Dest, len(m.Pipeline.Outputs))
		inst.scratch = make([][]byte, len(m.Pipeline.Outputs))
	} else {
		exec, err := executor.New(prog, executor.Options{Workers: m.Params.Workers, Limits: m.Params.Limits})
		if err != nil {
			return nil, &Error{Code: CodeInternal, Msg: fmt.Sprintf("instance %s: %v", name, err)}
		}
		inst.exec, steps, sampleBytes = exec, exec.Steps(), exec.SampleBytes
	}
	outs := make([]respondOutput, len(m.Pipeline.Outputs))
	for i, o := range m.Pipeline.Outputs {
		outs[i] = respondOutput{name: o.Name, dataType: o.Spec.DType.String(), dims: m.Outputs[i].Dims, sample: sampleBytes(i)}
	}
	inst.resp = newResponder(outs, m.Params.MaxBatchBytes)
	for _, name := range steps {
		inst.ops = append(inst.ops, OpTime{Name: name})
	}
	inst.opTotal = make([]int64, len(inst.ops))
	inst.opNow = make([]int64, len(inst.ops))
	if !m.register(inst) {
		inst.closeExecutor()
		return nil, &Error{Code: CodeUnavailable, Msg: fmt.Sprintf("instance %s: the model is unloading", name)}
	}
	inst.log.Debug("sluice instance created", zap.String("kind", kind), zap.Int("device", device), zap.Int("workers", m.Params.Workers))
	return inst, nil
}

func (inst *Instance) closeExecutor() {
	if inst.gpu != nil {
		inst.gpu.Close()
	} else {
		inst.exec.Close()
	}
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
	inst.releaseBuffers()
	inst.closeExecutor()
	inst.model.forget(inst)
}

// releaseBuffers drops the batch buffers; the next Execute makes new ones.
func (inst *Instance) releaseBuffers() {
	n := inst.resp.release()
	for o := range inst.scratch {
		n += cap(inst.scratch[o])
		inst.scratch[o] = nil
	}
	reclaim.Released(n)
}

// releaseIdle runs idleRelease after an Execute; an Execute since then has
// set the timer again.
func (inst *Instance) releaseIdle() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if !inst.closed && time.Since(inst.lastExec) >= idleRelease {
		inst.releaseBuffers()
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

	inst.errs = resize(inst.errs, len(reqs))
	inst.reqs = resize(inst.reqs, len(reqs))
	errs = inst.errs
	defer func() {
		if p := recover(); p != nil {
			inst.recovered(p, errs, &st)
		}
		inst.col.reset()
		clear(inst.sample) // drop the per-sample errors
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
	var ran bool
	if inst.gpu != nil {
		ran = inst.runGPU(n, resps)
	} else {
		ran = inst.run(n)
	}
	if ran {
		inst.countImages(&st.Images)
		inst.countDecoded(&st.Images)
		st.Ops = inst.opTimes()
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
		start, n, err := inst.col.add(req)
		inst.reqs[i] = reqState{start: start, n: n}
		if err != nil {
			inst.fail(i, err)
		}
	}
	return inst.col.n
}

// run processes the batch of n samples into the responder's buffers and
// reports whether the executor ran (its per-sample results are valid).
func (inst *Instance) run(n int) bool {
	if err := inst.resp.prepare(n); err != nil {
		return inst.ran("responder", err)
	}
	inst.sample = resize(inst.sample, n)
	// An error is a malformed call: a bug here, not in the requests.
	return inst.ran("executor", inst.exec.RunInto(inst.col.batch, inst.resp.bufs, inst.sample))
}

// ran reports whether the executor ran; when it did not, every request
// still standing fails with its error.
func (inst *Instance) ran(what string, err error) bool {
	if err == nil {
		return true
	}
	for i := range inst.reqs {
		if !inst.reqs[i].failed {
			inst.fail(i, &Error{Code: CodeInternal, Msg: fmt.Sprintf("%s: %v", what, err)})
		}
	}
	return false
}

// respond answers every request still standing: its outputs when all its
// images succeeded, else an error naming the first that failed. A GPU
// instance's outputs are in place already.
func (inst *Instance) respond(reqs []Request, resps []Response) {
	for i := range reqs {
		r := &inst.reqs[i]
		if r.failed {
			continue
		}
		if err := inst.sampleError(r); err != nil {
			inst.fail(i, err)
			continue
		}
		if inst.gpu != nil {
			r.answered = true
			continue
		}
		var resp Response
		if i < len(resps) {
			resp = resps[i]
		}
		if err := inst.resp.respond(resp, r.start, r.n); err != nil {
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
	msg := inst.model.blame.sampleMessage(first, inst.sample[r.start+first])
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
			errs[i] = &Error{Code: CodeInternal, Msg: fmt.Sprintf("internal error in the sluice backend: %v", p)}
		}
	}
	t := inst.model.now()
	for _, ts := range []*uint64{&st.ComputeStart, &st.ComputeEnd, &st.ExecEnd} {
		if *ts == 0 {
			*ts = t
		}
	}
}

// resize returns s with length n, reusing its array when large enough,
// every element zero.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// opTimes is the worker time each operator took in this Execute's run.
func (inst *Instance) opTimes() []OpTime {
	if inst.gpu != nil {
		inst.gpu.StepNanos(inst.opNow)
	} else {
		inst.exec.StepNanos(inst.opNow)
	}
	for i, t := range inst.opNow {
		inst.ops[i].Ns = uint64(max(t-inst.opTotal[i], 0))
		inst.opTotal[i] = t
	}
	return inst.ops
}
