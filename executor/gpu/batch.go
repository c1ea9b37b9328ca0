package gpu

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
)

type batch struct {
	in      [][]byte // the encoded images
	all     [][][]byte
	dev     [][]executor.DevSpan // nil, or per input: nil, or where each sample lies in device memory
	dims    [][][]int            // nil, or per input: nil, or each sample's shape
	dst     [][]Dest
	errs    []error
	budgets []*ops.Budget // nil, or one per sample
}

func (e *Executor) newBatch(all [][][]byte, dev [][]executor.DevSpan, dims [][][]int, dst [][]Dest, errs []error, budgets []*ops.Budget) *batch {
	in := all[e.chain.in]
	if cap(e.samples) < len(in) {
		e.samples = make([]sample, len(in))
	}
	e.samples = e.samples[:len(in)]
	if m := e.chain.crops; e.chain.boxes >= 0 && cap(e.crops) < len(in)*m {
		e.crops = make([]ops.Crop, len(in)*m)
	}
	return &batch{in: in, all: all, dev: dev, dims: dims, dst: dst, errs: errs, budgets: budgets}
}

// shape is sample s's shape of input i, as the request gave it; nil when
// it gave none.
func (b *batch) shape(i, s int) []int {
	if b.dims == nil || b.dims[i] == nil {
		return nil
	}
	return b.dims[i][s]
}

// crops are sample s's box crops (crop_boxes).
func (e *Executor) cropsOf(s int) []ops.Crop {
	m := e.chain.crops
	return e.crops[s*m : (s+1)*m]
}

// cropGeom checks sample s's boxes (and count) input and lets crop_boxes
// place its crops; a bad input fails the sample naming that input.
func (e *Executor) cropGeom(b *batch, s int, st *stage, ctx *ops.Ctx, g *ops.Geom, side []*ops.Tensor) error {
	c := e.chain
	boxes := b.all[c.boxes][s]
	if err := executor.CheckTensor(e.prog.InputSpecs[c.boxes], boxes, b.shape(c.boxes, s)); err != nil {
		e.fail(b, s, e.prog.Inputs[c.boxes], err)
		return err
	}
	used := c.crops
	if c.count >= 0 {
		cnt := b.all[c.count][s]
		err := executor.CheckTensor(e.prog.InputSpecs[c.count], cnt, b.shape(c.count, s))
		if err == nil {
			used, err = executor.BoxCount(cnt, c.crops)
		}
		if err != nil {
			e.fail(b, s, e.prog.Inputs[c.count], err)
			return err
		}
	}
	if err := st.crop.GPUCrops(ctx, g, boxes, used, e.cropsOf(s), side); err != nil {
		e.fail(b, s, st.name, err)
		return err
	}
	return nil
}

// fail records sample s's error at node.
func (e *Executor) fail(b *batch, s int, node string, err error) {
	b.errs[s] = &executor.SampleError{Index: s, Node: node, Err: err}
	e.samples[s].failed = true
}

// parse reads every header, applies the limits and the operators' size
// rules, and picks each image's decoder: everything per sample that needs
// no pixels, on the executor's parsers.
func (e *Executor) parse(b *batch) {
	e.parseAll(len(b.in), func(z *parser, s int) {
		smp := &e.samples[s]
		*smp = sample{src: b.in[s], stage: -1}
		b.errs[s] = nil
		if z == nil {
			e.fail(b, s, e.decNm, errNoContext)
			return
		}
		var budget *ops.Budget
		if b.budgets != nil {
			budget = b.budgets[s]
		}
		var err error
		if e.chain.decoded {
			err = e.input(b, smp, s, budget)
		} else {
			smp.hdr, err = ops.DecodeHeader(z.hdr, smp.src, e.opt.Limits, budget)
			smp.h, smp.w = smp.hdr.Height, smp.hdr.Width
		}
		if err != nil {
			e.fail(b, s, e.decNm, err)
			return
		}
		uh, uw := smp.hdr.OrientedSize(e.chain.dec.Orient)
		g := ops.NewGeom(uh, uw, e.chain.dec.Color, e.opt.Limits)
		// The operators charge their work to the sample's budget too.
		z.ctx.Budget = budget
		for k := range e.chain.stages {
			st := &e.chain.stages[k]
			side := z.bindSide(k, st, b.dst, s, e.sideBlock(s))
			if st.crop != nil {
				err = e.cropGeom(b, s, st, &z.ctx, &g, side)
			} else if err = st.op.GPU(&z.ctx, &g, side); err != nil {
				e.fail(b, s, st.name, err)
			}
			z.unbindSide(k)
			if err != nil {
				return
			}
		}
		if g.H != e.chain.outHW[0] || g.W != e.chain.outHW[1] || g.Color.Channels() < 1 {
			o := e.prog.Outputs[e.chain.image]
			e.fail(b, s, o.Name, fmt.Errorf("output of %dx%d does not fit %s's shape %v", g.H, g.W, o.Name, o.Spec.Dims))
			return
		}
		smp.geom = g
		if !e.chain.decoded {
			e.decide(smp)
			e.stageSrc(smp)
		}
	})
}

// maxSrcs bounds the pinned memory an executor keeps for its batches'
// encoded JPEGs; a batch whose encoded bytes are more goes without it.
var maxSrcs = 64 << 20

// growSrcs readies the pinned memory the parsers copy the batch's JPEGs to
// (stageSrc): enough for every input; none over maxSrcs or when pinning
// fails, and then the lanes copy the JPEGs themselves.
func (e *Executor) growSrcs(b *batch) {
	total := 0
	for _, src := range b.in {
		total += len(src)
	}
	e.srcUsed.Store(0)
	e.srcOn = total <= maxSrcs && !e.chain.decoded && growPinned(&e.srcs, total, 0) == nil
}

// stageSrc copies a JPEG that goes to one of nvJPEG's batched decoders to
// pinned memory, on the parser's thread: the lane's thread, which also
// parses every image of its call inside nvJPEG, then need not copy them
// one after another.
func (e *Executor) stageSrc(smp *sample) {
	if !e.srcOn || !smp.engines && smp.path != route.Hybrid {
		return
	}
	n := len(smp.src)
	off := int(e.srcUsed.Add(int64(n))) - n
	smp.pinned = stageJPEG(e.srcs[off:off+n], smp)
}

// input takes sample s of a decoded-image input: its shape checked as the
// CPU executor checks it; read in place when it lies in this GPU's memory
// (route.Device), else copied as it came (route.Input).
func (e *Executor) input(b *batch, smp *sample, s int, budget *ops.Budget) error {
	i := e.chain.in
	dims := b.shape(i, s)
	n := len(smp.src)
	if b.dev != nil && b.dev[i] != nil && b.dev[i][s].Ptr != 0 {
		smp.dev, smp.src = b.dev[i][s], nil
		n = smp.dev.Len
	}
	if err := executor.CheckDecoded(e.prog.InputSpecs[i], n, dims, e.opt.Limits, budget); err != nil {
		return err
	}
	smp.h, smp.w, smp.c = dims[0], dims[1], dims[2]
	smp.hdr = codec.Header{Height: smp.h, Width: smp.w}
	smp.path = route.Input
	if smp.dev.Ptr != 0 && smp.dev.Device == e.opt.Device {
		smp.path = route.Device
	}
	return nil
}

// errNoContext fails the samples of a worker that could not make the
// executor's CUDA context current.
var errNoContext = ops.Errorf(ops.BadInput, "no CUDA context on this thread")

// sideBlock is where sample s's side outputs bound for device memory
// wait in pinned memory.
func (e *Executor) sideBlock(s int) []byte {
	n := e.chain.sideN
	if n == 0 {
		return nil
	}
	return e.side[s*n : (s+1)*n]
}

// layout places samples start.. in device memory until the memory cap is
// reached, and returns where the part ends. A sample that does not fit
// alone fails.
func (e *Executor) layout(b *batch, start int) (int, error) {
	img := e.chain.image
	off, count, end := 0, 0, start
	for ; end < len(b.in); end++ {
		smp := &e.samples[end]
		if smp.failed {
			continue
		}
		need := 0
		if smp.inArena() {
			need = alignUp(smp.h * smp.w * smp.c)
		}
		if smp.hasPlanes() {
			need += smp.planeBytes()
		}
		if !e.local(b.dst[img][end]) {
			need += alignUp(e.sampleBytes[img])
		}
		if off+need+e.descBytes(count+1) > e.mem.cap {
			if count > 0 {
				break
			}
			e.fail(b, end, e.decNm, ops.Errorf(ops.TooLarge, "image of %dx%d needs %d bytes of GPU memory, over the instance's cap of %d",
				smp.w, smp.h, need, e.mem.cap))
			continue
		}
		smp.off = off
		if smp.inArena() {
			off += alignUp(smp.h * smp.w * smp.c)
		}
		if smp.hasPlanes() {
			smp.planes = off
			off += smp.planeBytes()
		}
		if !e.local(b.dst[img][end]) {
			smp.stage = off
			off += alignUp(e.sampleBytes[img])
		}
		count++
	}
	e.descOff = off
	if err := e.mem.reserve(off + e.descBytes(count)); err != nil {
		return 0, err
	}
	return end, nil
}

// descBytes is the arena space of n images' kernel descriptors.
func (e *Executor) descBytes(n int) int {
	return alignUp(n * e.chain.crops * int(unsafe.Sizeof(kernels.Sample{})))
}

// runPart decodes samples [start, end) on every path at once, then runs
// the kernel over them.
func (e *Executor) runPart(b *batch, start, end int) error {
	t0 := time.Now()
	// nvJPEG decodes some damaged streams without a word and leaves parts
	// of the image unwritten: those read zeros, not an earlier batch's
	// pixels (about 30 us for a part of 256 photos).
	if e.descOff > 0 {
		if err := cuda.MemsetD8Async(e.mem.base, 0, e.descOff, e.main); err != nil {
			return err
		}
		if err := e.main.Synchronize(); err != nil {
			return err
		}
	}
	var hwList, hyList, cpuList, smList []int
	// add puts a sample on the list of the path its decision gave.
	add := func(s int) {
		switch p := e.samples[s].path; {
		case p.OnWorkers():
			cpuList = append(cpuList, s)
		case p == route.SluiceGPUHuffman:
			smList = append(smList, s)
		default:
			hyList = append(hyList, s)
		}
	}
	for s := start; s < end; s++ {
		smp := &e.samples[s]
		switch {
		case smp.failed, smp.path == route.Device: // nothing to decode or copy
		case smp.engines: // split below between the engines and its path
			hwList = append(hwList, s)
		default:
			add(s)
		}
	}
	cores, otherPx := 1, 0
	if e.hw != nil {
		cores = e.hw.cores
	}
	// What the engines leave goes to the SMs or to the CPU workers: what
	// that route has already counts against its part.
	other := cpuList
	if e.set.SluiceGPUHuffman {
		other = smList
	}
	for _, s := range other {
		otherPx += e.samples[s].w * e.samples[s].h
	}
	plan := e.split.Plan(len(hwList), int(e.svc.busy.Load()), e.decoders)
	if plan.Queue > 0 {
		// The engines take from the front, the CPU workers from the
		// back: they meet on the smallest images (decodeCPU has why).
		e.largestFirst(hwList)
	}
	px := e.hwPx[:0]
	for _, s := range hwList {
		px = append(px, e.samples[s].w*e.samples[s].h)
	}
	e.hwPx = px
	plan.Count(px, otherPx, cores)
	if plan.Queue == 0 && plan.Engines < len(hwList) {
		// The rest take the path their decision gave: the coefficient
		// route or decoupled on the CPU workers, the SMs, or the batched
		// hybrid decoder without the others.
		for _, s := range hwList[plan.Engines:] {
			add(s)
		}
		hwList = hwList[:plan.Engines]
	}
	// Shared, the CPU workers take from the back of the engines' queue;
	// else each path's lanes take an even run each.
	var q *twoEnds
	var eng runs = &evenRuns{list: hwList}
	if plan.Queue > 0 {
		q = newTwoEnds(hwList, plan.Engines, plan.Queue, cores)
		eng = q
	}
	hy := &evenRuns{list: hyList}
	// The two nvJPEG paths and the CPU workers run at once; what nvJPEG
	// rejects is decoded again on the CPU, which also names the error.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var retry []int
	var retryErr error
	for _, job := range []struct {
		p  *jpegPath
		r  runs
		on bool
		n  int // the images the path is planned to take
	}{{e.hw, eng, len(hwList) > 0, plan.Engines}, {e.svc.hy, hy, len(hyList) > 0, len(hyList)}} {
		if !job.on {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			failed, err := e.decodeOn(job.p, job.r, job.n)
			if err != nil {
				mu.Lock()
				retry, retryErr = append(retry, failed...), err
				mu.Unlock()
			}
		}()
	}
	var smFailed []int
	if len(smList) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			failed, err := e.decodeSMs(smList)
			mu.Lock()
			smFailed = failed
			if err != nil {
				retryErr = err
			}
			mu.Unlock()
		}()
	}
	e.decodeCPU(b, cpuList, q)
	tw := time.Now()
	wg.Wait()
	trace(ActorExecutor, e.id, StepWait, len(hwList)+len(hyList), tw)
	engines, left := eng.taken()
	for _, s := range engines {
		e.samples[s].path = route.Hardware
	}
	// What a lane failed on, and what no lane took (they could not
	// start): the batched decoders' fallback (the engines' and the hybrid
	// decoder's are libjpeg-turbo); a JPEG has no alpha, so its retry
	// fits its slot (RGB, or the luma plane of a greyscale JPEG).
	_, hyLeft := hy.taken()
	retry = append(append(retry, left...), hyLeft...)
	for _, s := range retry {
		e.samples[s].path = route.Fallback(route.Hardware)
	}
	for _, s := range smFailed {
		e.samples[s].path = route.Fallback(route.SluiceGPUHuffman)
	}
	retry = append(retry, smFailed...)
	if len(retry) > 0 {
		e.noteRetry(len(retry), retryErr)
	}
	e.decodeCPU(b, retry, nil)
	for s := start; s < end; s++ {
		if smp := &e.samples[s]; !smp.failed {
			e.decoded[smp.path].Add(1)
		}
	}
	t1 := time.Now()
	e.nanos[1].Add(int64(t1.Sub(t0)))
	trace(ActorExecutor, e.id, StepDecode, end-start, t0)
	err := e.launch(b, start, end, t1)
	trace(ActorExecutor, e.id, StepKernel, end-start, t1)
	return err
}

// decodeSMs decodes the listed samples' entropy-coded data on the SMs
// (smHuffman), on a thread with the executor's context; failed are those
// that take their fallback.
func (e *Executor) decodeSMs(list []int) (failed []int, err error) {
	t := time.Now()
	defer func() { trace(ActorSMs, e.id, StepCall, len(list)-len(failed), t) }()
	if e.sm == nil {
		return list, nil
	}
	unbind, err := e.bind()
	if err != nil {
		return list, err
	}
	defer unbind()
	return e.sm.decode(list, e.samples, e.mem.base, e.fused, e.chain.dec)
}

// largestFirst sorts samples by their pixels, largest first.
func (e *Executor) largestFirst(list []int) {
	slices.SortStableFunc(list, func(a, b int) int {
		return e.samples[b].w*e.samples[b].h - e.samples[a].w*e.samples[a].h
	})
}

// decodeOn runs one nvJPEG path's runs of n images on its lanes: the
// engines' in as many calls at once as keep EngineCalls in flight when
// every executor on the GPU decodes at once, the hybrid decoder's in up to
// EngineCalls.
func (e *Executor) decodeOn(p *jpegPath, r runs, n int) ([]int, error) {
	calls := e.set.EngineCalls
	if p == e.hw {
		calls = e.set.CallsPerBatch(e.svc.executors())
	}
	return p.decode(r, n, calls, e.samples, e.mem.base, e.fused, e.chain.dec, e.bind)
}

// decodeCPU decodes the listed samples, then those the CPU workers take
// from q's back (q may be nil), on the CPU workers: with libjpeg-turbo (or
// the PNG decoder), uploaded through pinned memory, or through the
// coefficient route or nvJPEG's decoupled decoder, which fall back to the
// former.
func (e *Executor) decodeCPU(b *batch, list []int, q *twoEnds) {
	n := len(list) + q.open()
	if n == 0 {
		return
	}
	// Largest first: workers take images in list order, and a large
	// photo started last would hold the part up while the others idle.
	e.largestFirst(list)
	own := counter(len(list))
	next := func() (int, bool) {
		if i, ok := own(); ok {
			return list[i], true
		}
		return q.back()
	}
	e.parallel(n, next, func(w *cpuWorker, s int) {
		if w != nil {
			defer trace(ActorWorker, w.id, StepImage, 1, time.Now())
		}
		smp := &e.samples[s]
		if smp.path == route.Input {
			if err := w.upload(smp, e.mem.base); err != nil {
				e.fail(b, s, e.decNm, err)
			}
			return
		}
		// Each path the worker lacks the state of, or that fails,
		// hands the sample to its fallback, down to libjpeg-turbo.
		for smp.path != route.CPU {
			took, err := w.decodeOwn(s, smp, e.mem.base, e.fused, e.chain.dec)
			if took && err == nil {
				if w.coef.full() {
					e.flushCoefficients(b, w)
				}
				return
			}
			if took {
				e.noteRetry(1, err)
			}
			smp.path = route.Fallback(smp.path)
		}
		e.decodeLibrary(b, w, s)
	}, func(w *cpuWorker) { e.flushCoefficients(b, w) })
}

// decodeLibrary decodes sample s with libjpeg-turbo or its format's
// decoder on worker w, uploaded.
func (e *Executor) decodeLibrary(b *batch, w *cpuWorker, s int) {
	if err := w.decode(&e.samples[s], e.chain.dec, e.opt.Limits, e.mem.base); err != nil {
		e.fail(b, s, e.decNm, err)
	}
}

// flushCoefficients sends what worker w gathered on the coefficient route
// to the GPU; if that fails, each of those images is decoded again on the
// CPU, which also names the error.
func (e *Executor) flushCoefficients(b *batch, w *cpuWorker) {
	t := time.Now()
	n := len(w.coef.pending)
	failed, err := w.coef.flush(e.fused, w.stream)
	if n > 0 {
		trace(ActorWorker, w.id, StepFlush, n, t)
	}
	if err == nil {
		return
	}
	e.noteRetry(len(failed), err)
	for _, s := range failed {
		e.samples[s].path = route.Fallback(e.samples[s].path)
		e.decodeLibrary(b, w, s)
	}
}

// noteRetry counts n images an nvJPEG decoder failed on, now decoded on
// the CPU, and keeps the error.
func (e *Executor) noteRetry(n int, err error) {
	e.retried.Add(int64(n))
	e.retryMu.Lock()
	e.lastRetry = err
	e.retryMu.Unlock()
}

// parseAll runs fn for 0..n-1 on up to Workers threads, each with one of
// the executor's parsers and its context current (nvJPEG's header calls
// need it). A thread that cannot bind calls fn with a nil parser for what
// is left. Each thread loops over the counter rather than each JPEG having
// a goroutine, which would bind the context for every JPEG and make the
// step longer (docs/perf.md).
func (e *Executor) parseAll(n int, fn func(z *parser, i int)) {
	next := counter(n)
	e.spread(n, func(bound bool, t int) {
		z := e.parsers[t]
		if !bound {
			z = nil
		}
		for i, ok := next(); ok; i, ok = next() {
			fn(z, i)
		}
	})
}

// parallel runs fn for each sample next hands out (at most n) on up to
// Workers threads, each with a CPU worker from the GPU's pool (waited for:
// other executors share it) and the executor's context current, as
// workers issue copies; then done with each worker before it goes back.
// A thread that cannot bind calls fn with a nil worker for what is left.
func (e *Executor) parallel(n int, next func() (int, bool), fn func(w *cpuWorker, s int), done func(w *cpuWorker)) {
	e.spread(n, func(bound bool, _ int) {
		var w *cpuWorker
		if bound {
			w = e.svc.getWorker()
			defer e.svc.putWorker(w)
		}
		for s, ok := next(); ok; s, ok = next() {
			fn(w, s)
		}
		if w != nil {
			done(w)
		}
	})
}

// counter hands out 0..n-1, each once, to whichever thread asks first.
func counter(n int) func() (int, bool) {
	var at atomic.Int64
	return func() (int, bool) {
		i := int(at.Add(1) - 1)
		return i, i < n
	}
}

// spread runs body on min(n, threads()) threads, thread t of them with
// the executor's context current when bound.
func (e *Executor) spread(n int, body func(bound bool, t int)) {
	var wg sync.WaitGroup
	k := min(n, e.threads())
	wg.Add(k)
	for t := range k {
		go func() {
			defer wg.Done()
			unbind, err := e.bind()
			if err == nil {
				defer unbind()
			}
			body(err == nil, t)
		}()
	}
	wg.Wait()
}

// launch writes the descriptors of samples [start, end), runs the fused
// kernel once over them, then delivers what goes to host memory. The
// kernel stage's time is the device's, from events around the upload and
// the launch; the host's clock from t0 stands in if events fail.
func (e *Executor) launch(b *batch, start, end int, t0 time.Time) error {
	img := e.chain.image
	base := e.mem.base
	descSize := int(unsafe.Sizeof(kernels.Sample{}))
	count, maxH, maxW := 0, 0, 0
	if err := growPinned(&e.desc, (end-start)*e.chain.crops*descSize, 0); err != nil {
		return err
	}
	desc := unsafe.Slice((*kernels.Sample)(unsafe.Pointer(&e.desc[0])), (end-start)*e.chain.crops)
	p := e.chain.params
	for s := start; s < end; s++ {
		smp := &e.samples[s]
		if smp.failed {
			continue
		}
		g := &smp.geom
		dst := base + cuda.DevicePtr(smp.stage)
		if d := b.dst[img][s]; e.local(d) {
			dst = cuda.DevicePtr(d.Dev)
		}
		orient := 1
		if e.chain.dec.Orient && smp.hdr.Orientation > 0 {
			orient = smp.hdr.Orientation
		}
		src := uint64(base) + uint64(smp.off)
		if !smp.inArena() {
			src = uint64(smp.dev.Ptr)
		}
		one := kernels.Sample{
			Src: src, Dst: uint64(dst),
			SrcH: int32(smp.h), SrcW: int32(smp.w), SrcPitch: int32(smp.w * smp.c), SrcC: int32(smp.c),
			Orient: int32(orient),
			WinY:   int32(g.Win[0]), WinX: int32(g.Win[1]), WinH: int32(g.Win[2]), WinW: int32(g.Win[3]),
			RsH: int32(g.Rs[0]), RsW: int32(g.Rs[1]),
			OffY: int32(g.Off[0]), OffX: int32(g.Off[1]),
			OutH: int32(g.H), OutW: int32(g.W),
		}
		if g.HasFill {
			for k, in := range e.chain.perm {
				p.Fill[k] = float32(g.Fill[in])
			}
		}
		maxH, maxW = max(maxH, g.H), max(maxW, g.W)
		if e.chain.boxes < 0 {
			desc[count] = one
			count++
			continue
		}
		// One kernel sample per box, each writing its row of the output.
		row := uint64(e.sampleBytes[img] / e.chain.crops)
		for k, cr := range e.cropsOf(s) {
			d := one
			d.Dst += uint64(k) * row
			d.RsH, d.RsW, d.OffY, d.OffX = int32(cr.Rs[0]), int32(cr.Rs[1]), int32(cr.Off[0]), int32(cr.Off[1])
			d.BoxX0, d.BoxY0, d.BoxX1, d.BoxY1 = cr.Box[0], cr.Box[1], cr.Box[2], cr.Box[3]
			if !cr.Used {
				d.Zero = 1
			}
			desc[count] = d
			count++
		}
	}
	if count == 0 {
		return nil
	}
	descDev := base + cuda.DevicePtr(e.descOff)
	timed := e.evStart.Record(e.main) == nil
	if err := cuda.MemcpyHtoDAsync(descDev, e.desc[:count*descSize], e.main); err != nil {
		return err
	}
	for i := 0; i < count; i += kernels.MaxSamples {
		n := min(count-i, kernels.MaxSamples)
		if err := e.fused.Launch(e.main, &p, descDev+cuda.DevicePtr(i*descSize), n, maxH, maxW); err != nil {
			return err
		}
	}
	timed = timed && e.evEnd.Record(e.main) == nil
	if err := e.deliver(b, start, end); err != nil {
		return err
	}
	if err := e.main.Synchronize(); err != nil {
		return err
	}
	d, err := cuda.Elapsed(e.evStart, e.evEnd)
	if !timed || err != nil {
		d = time.Since(t0)
	}
	e.nanos[2].Add(int64(d))
	return nil
}
