package gpu

import (
	"sync"
	"time"

	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
	"github.com/sluice-dev/sluice/ops"
)

// jpegPath is one nvJPEG batched decoder of a GPU — the hardware JPEG
// engines, or the GPU hybrid decoder — with a pool of lanes that the GPU's
// executors share, each a decode state that takes one part of a batch in
// one call. A batch's share goes to up to route.Settings.CallsPerBatch lanes at once: nvJPEG
// spreads a call over every engine, but parses its images on the calling
// thread first, and a second call keeps the engines busy meanwhile.
type jpegPath struct {
	path  route.Path
	h     *nvjpeg.Handle
	lanes []*lane
	free  *pool[*lane] // the lanes not in use, shared by the executors
	// The hardware decoder's engines and cores per engine: a call fills
	// them when it holds a multiple of engines x cores images.
	engines, cores int
}

// lane is one batched-decode state with its own stream and pinned staging
// for the encoded bytes.
type lane struct {
	id     int // its number in the path's pool, for traces
	main   callState
	grey   callState // the greyscale JPEGs' call beside main's RGB one (created when first needed)
	stream cuda.Stream
	pinned []byte
	staged [][]byte // the encoded bytes in pinned memory of each entry of order
	order  []int    // the part, colour JPEGs first when greys take a call of their own
	data   nvjpeg.Bitstreams
	imgs   []nvjpeg.Image
	conv   yccConv
}

// callState is one nvJPEG batched state and the batch size and output
// format of its last BatchedInitialize (zero: initialise again).
type callState struct {
	st     *nvjpeg.State
	inited int
	format nvjpeg.OutputFormat
}

// yccConv turns the YCbCr planes nvJPEG decodes colour images to into
// interleaved RGB with libjpeg's upsampling (fancy, or replicated with
// FastUpsample) and colour conversion, so that GPU and CPU decodes differ
// only by the IDCT: one kernel launch for the images gathered.
type yccConv struct {
	ycc        []kernels.YCC
	host       []byte // pinned copy of ycc
	dev        cuda.DevicePtr
	maxW, maxH int
}

// planes returns where nvJPEG writes sample smp (its planes in the arena
// at base, or for a greyscale JPEG the image itself) and, for a colour
// image in a colour pipeline, adds its conversion. A grey pipeline reads
// the luma plane as the image, as libjpeg does.
func (c *yccConv) planes(smp *sample, base cuda.DevicePtr, dec ops.DecodeSpec) nvjpeg.Image {
	if smp.sub == nvjpeg.CSSGray {
		return slot(smp, base, 1)
	}
	var img nvjpeg.Image
	sx, sy := subsampling(smp.sub)
	cw, ch := (smp.w+sx-1)/sx, (smp.h+sy-1)/sy
	y := uintptr(base) + uintptr(smp.planes)
	cb := y + uintptr(alignUp(smp.w*smp.h))
	cr := cb + uintptr(alignUp(cw*ch))
	img.Channel = [4]uintptr{y, cb, cr}
	img.Pitch = [4]uint64{uint64(smp.w), uint64(cw), uint64(cw)}
	if dec.Color == ops.Gray {
		smp.off, smp.c = smp.planes, 1
		return img
	}
	m := kernels.YCC{
		Y: uint64(y), Cb: uint64(cb), Cr: uint64(cr), Dst: uint64(base) + uint64(smp.off),
		W: int32(smp.w), H: int32(smp.h), YPitch: int32(smp.w), CPitch: int32(cw),
		CW: int32(cw), CH: int32(ch), SubX: int32(sx), SubY: int32(sy), DstPitch: int32(smp.w * 3),
	}
	if dec.FastUpsample {
		m.Simple = 1
	}
	c.ycc = append(c.ycc, m)
	c.maxW, c.maxH = max(c.maxW, smp.w), max(c.maxH, smp.h)
	return img
}

// slot is sample smp's arena slot at base as nvJPEG's output: c
// interleaved channels (one for a greyscale JPEG's luma, three for RGB).
func slot(smp *sample, base cuda.DevicePtr, c int) nvjpeg.Image {
	var img nvjpeg.Image
	img.Channel[0] = uintptr(base) + uintptr(smp.off)
	img.Pitch[0] = uint64(smp.w * c)
	return img
}

// reset forgets the images gathered.
func (c *yccConv) reset() { c.ycc, c.maxW, c.maxH = c.ycc[:0], 0, 0 }

// launch converts the images gathered, on stream s, after what s has
// queued already (their decode).
func (c *yccConv) launch(f *kernels.Fused, s cuda.Stream) error {
	if len(c.ycc) == 0 {
		return nil
	}
	for i := range c.ycc {
		if err := c.ycc[i].Check(); err != nil {
			return err
		}
	}
	b := kernels.Bytes(c.ycc)
	if len(c.host) < len(b) {
		c.free()
		if err := growPinned(&c.host, len(b), 0); err != nil {
			return err
		}
		var err error
		if c.dev, err = cuda.MemAlloc(len(c.host)); err != nil {
			return err
		}
	}
	copy(c.host, b)
	if err := cuda.MemcpyHtoDAsync(c.dev, c.host[:len(b)], s); err != nil {
		return err
	}
	return f.LaunchYCC(s, c.dev, len(c.ycc), c.maxW, c.maxH)
}

func (c *yccConv) free() {
	freePinned(&c.host)
	if c.dev != 0 {
		cuda.MemFree(c.dev)
		c.dev = 0
	}
}

// The hybrid decoder's lanes on one GPU, and the smallest part of a batch
// worth a lane of its own (docs/perf.md has the measurements these come
// from).
const (
	hybridLanes = 4
	minPerLane  = 8
)

// newJPEGPath makes a decoder with n lanes; n = 0 sizes the hardware
// decoder's pool from its engines, one call in flight per engine at most.
func newJPEGPath(p route.Path, n, calls int) (j *jpegPath, err error) {
	if err := nvjpeg.Init(); err != nil {
		return nil, err
	}
	b := nvjpeg.GPUHybrid
	if p == route.Hardware {
		b = nvjpeg.Hardware
	}
	j = &jpegPath{path: p}
	defer func() {
		if err != nil {
			j.close()
		}
	}()
	if j.h, err = nvjpeg.NewHandle(b); err != nil {
		return nil, err
	}
	if p == route.Hardware {
		if j.engines, j.cores, err = j.h.HardwareInfo(); err != nil {
			return nil, err
		}
	}
	if n <= 0 {
		n = max(j.engines, calls)
	}
	j.free = newPool[*lane](n)
	for range n {
		l := &lane{id: len(j.lanes)}
		j.lanes = append(j.lanes, l)
		if err = j.newState(&l.main); err != nil {
			return nil, err
		}
		if l.stream, err = cuda.NewStream(); err != nil {
			return nil, err
		}
		j.free.put(l)
	}
	return j, nil
}

// newState makes cs's nvJPEG state. The engines then draw their buffers
// from a pool rather than allocating in the decode call (nvImageCodec
// measured more than 20% from this; here, hints of batch 256 did no
// better than nvImageCodec's minimal ones).
func (j *jpegPath) newState(cs *callState) (err error) {
	if cs.st, err = j.h.NewState(); err != nil {
		return err
	}
	if j.path == route.Hardware {
		return j.h.BatchedPreAllocate(cs.st, 1, 1, 1, nvjpeg.CSS444, nvjpeg.OutputYUV)
	}
	return nil
}

// runs hands a path's lanes their runs of a part: start says how many
// lanes took it, next gives a lane its next run (nil: none is left), and
// taken, once the lanes are done, what they were given and what no lane
// took (they could not start).
type runs interface {
	start(lanes int)
	next() []int
	taken() (took, left []int)
}

// evenRuns is a list in one run a lane.
type evenRuns struct {
	mu      sync.Mutex
	list    []int
	per, at int
}

func (r *evenRuns) start(lanes int) { r.per = (len(r.list) + lanes - 1) / lanes }

func (r *evenRuns) next() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.list[r.at:min(r.at+r.per, len(r.list))]
	r.at += len(run)
	return run
}

func (r *evenRuns) taken() (took, left []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.list[:r.at], r.list[r.at:]
}

// decode decodes the runs of a part of n images into their arena slots
// and waits: up to calls lanes take runs, as many as are free (one,
// waited for, at least: an executor never waits for a lane while it holds
// one, so executors sharing the pool cannot deadlock). bind makes the
// context current on a lane's thread. A run a lane failed on is returned,
// to be decoded again elsewhere, with the first error.
func (j *jpegPath) decode(r runs, n, calls int, samples []sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec, bind func() (func(), error)) (failed []int, first error) {
	// Replicated chroma is what the engines' own RGB output does
	// (nvImageCodec's and DALI's "fancy upsampling" off): they then
	// write each colour image's slot themselves, with no planes or
	// conversion kernel.
	rgb := j.path == route.Hardware && dec.FastUpsample && dec.Color != ops.Gray
	want := min(calls, max(n/minPerLane, 1))
	lanes := make([]*lane, 1, want)
	lanes[0] = j.free.get()
	for len(lanes) < want {
		l, ok := j.free.tryGet()
		if !ok {
			break
		}
		lanes = append(lanes, l)
	}
	defer func() {
		for _, l := range lanes {
			j.free.put(l)
		}
	}()
	r.start(len(lanes))
	type result struct {
		failed []int
		err    error
	}
	done := make(chan result, len(lanes))
	for _, l := range lanes {
		go func() {
			unbind, err := bind()
			if err != nil {
				done <- result{err: err} // the other lanes take its runs
				return
			}
			defer unbind()
			actor := ActorHybrid
			if j.path == route.Hardware {
				actor = ActorEngines
			}
			for run := r.next(); len(run) > 0; run = r.next() {
				t := time.Now()
				err := l.decode(j, run, samples, base, f, dec, rgb)
				trace(actor, l.id, StepCall, len(run), t)
				if err != nil {
					done <- result{run, err}
					return
				}
			}
			done <- result{}
		}()
	}
	for range lanes {
		res := <-done
		failed = append(failed, res.failed...)
		if first == nil {
			first = res.err
		}
	}
	return failed, first
}

// decode decodes one part and converts the colour images to interleaved
// RGB — or, for a grey pipeline, reads the luma plane as the image, as
// libjpeg does. With rgb, nvJPEG writes the colour JPEGs' RGB itself; one
// call has one output format and a greyscale JPEG's slot holds one
// channel, so the part's greyscale JPEGs then take a call of their own.
func (l *lane) decode(j *jpegPath, list []int, samples []sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec, rgb bool) error {
	if len(list) == 0 {
		return nil
	}
	// l.order[:split] decode to RGB: with rgb, the colour JPEGs.
	l.order = l.order[:0]
	if rgb {
		for _, s := range list {
			if samples[s].sub != nvjpeg.CSSGray {
				l.order = append(l.order, s)
			}
		}
	}
	split := len(l.order)
	for _, s := range list {
		if !rgb || samples[s].sub == nvjpeg.CSSGray {
			l.order = append(l.order, s)
		}
	}
	if err := l.stage(samples); err != nil {
		return err
	}
	err := l.queue(j, split, samples, base, f, dec)
	// After an error too: nothing queued for this part may still write
	// its slots when the caller decodes it again elsewhere.
	if serr := l.stream.Synchronize(); err == nil {
		err = serr
	}
	return err
}

// queue queues the part's calls on the lane's stream, l.order[:split] to
// RGB and the rest to planes, then their conversion.
func (l *lane) queue(j *jpegPath, split int, samples []sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec) error {
	l.conv.reset()
	if split > 0 {
		if err := l.call(j, &l.main, 0, split, samples, base, dec, nvjpeg.OutputRGBI); err != nil {
			return err
		}
	}
	if split < len(l.order) {
		// A state of its own beside the RGB call's, so that neither is
		// initialised again for the other's format.
		cs := &l.main
		if split > 0 {
			cs = &l.grey
			if cs.st == nil {
				if err := j.newState(cs); err != nil {
					return err
				}
			}
		}
		if err := l.call(j, cs, split, len(l.order), samples, base, dec, nvjpeg.OutputYUV); err != nil {
			return err
		}
	}
	return l.conv.launch(f, l.stream)
}

// stage copies the encoded bytes of l.order's samples into pinned memory,
// but for those the parsers staged already.
func (l *lane) stage(samples []sample) error {
	total := 0
	for _, s := range l.order {
		if samples[s].pinned == nil {
			total += len(samples[s].src)
		}
	}
	if err := growPinned(&l.pinned, total, 0); err != nil {
		return err
	}
	l.staged = l.staged[:0]
	off := 0
	for _, s := range l.order {
		smp := &samples[s]
		if smp.pinned != nil {
			l.staged = append(l.staged, smp.pinned)
			continue
		}
		l.staged = append(l.staged, stageJPEG(l.pinned[off:], smp))
		off += len(smp.src)
	}
	return nil
}

// call queues one batched decode on cs of l.order[from:to] in the given
// output format: RGB into each slot, or YCbCr planes (a greyscale JPEG's
// one plane in its slot) with their conversion gathered in l.conv.
func (l *lane) call(j *jpegPath, cs *callState, from, to int, samples []sample, base cuda.DevicePtr, dec ops.DecodeSpec, format nvjpeg.OutputFormat) error {
	l.data.Reset()
	l.imgs = l.imgs[:0]
	for i := from; i < to; i++ {
		smp := &samples[l.order[i]]
		l.data.Add(l.staged[i])
		if format == nvjpeg.OutputRGBI {
			l.imgs = append(l.imgs, slot(smp, base, 3))
		} else {
			l.imgs = append(l.imgs, l.conv.planes(smp, base, dec))
		}
	}
	n := to - from
	if cs.inited != n || cs.format != format {
		if err := j.h.BatchedInitialize(cs.st, n, 1, format); err != nil {
			return err
		}
		cs.inited, cs.format = n, format
	}
	if err := j.h.DecodeBatched(cs.st, &l.data, l.imgs, l.stream); err != nil {
		cs.inited = 0 // the state may be half-used: initialise again
		return err
	}
	return nil
}

func (j *jpegPath) close() {
	for _, l := range j.lanes {
		l.close()
	}
	if j.h != nil {
		j.h.Close()
	}
}

func (l *lane) close() {
	if l.stream != 0 {
		l.stream.Synchronize()
	}
	for _, cs := range []*callState{&l.main, &l.grey} {
		if cs.st != nil {
			cs.st.Close()
		}
	}
	freePinned(&l.pinned)
	l.conv.free()
	if l.stream != 0 {
		l.stream.Destroy()
	}
}
