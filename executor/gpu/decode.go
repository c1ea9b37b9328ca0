package gpu

import (
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
	"github.com/sluice-dev/sluice/ops"
)

// jpegPath is one nvJPEG batched decoder of a GPU — the hardware JPEG
// engines, or the GPU hybrid decoder — with a pool of lanes that the GPU's
// executors share, each a decode state that takes one part of a batch in
// one call. A batch's share goes to up to callsPerBatch lanes at once: nvJPEG
// spreads a call over every engine, but parses its images on the calling
// thread first, and a second call keeps the engines busy meanwhile.
type jpegPath struct {
	path  Path
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
	st     *nvjpeg.State
	stream cuda.Stream
	pinned []byte
	data   nvjpeg.Bitstreams
	imgs   []nvjpeg.Image
	inited int                 // batch size of the last BatchedInitialize
	format nvjpeg.OutputFormat // and its output format
	conv   yccConv
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
	var img nvjpeg.Image
	if smp.sub == nvjpeg.CSSGray {
		img.Channel[0] = uintptr(base) + uintptr(smp.off)
		img.Pitch[0] = uint64(smp.w)
		return img
	}
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
	b := kernels.YCCBytes(c.ycc)
	if len(c.host) < len(b) {
		c.free()
		if err := growPinned(&c.host, len(b)); err != nil {
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
	if c.host != nil {
		cuda.MemFreeHost(c.host)
		c.host = nil
	}
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

// callLanes is how many calls the engines of a GPU should have in flight:
// two at once beat one by 6-19% and four by 4-5% on an H200 at batches of
// 64 and 256 with one executor, and with two executors sharing the
// engines, a call each beat two each by 1-16% (docs/perf.md, 2026-12-02).
// SLUICE_GPU_HW_LANES overrides it for measurements.
var callLanes = envInt("SLUICE_GPU_HW_LANES", 2)

// callsPerBatch is how many lanes one batch's share takes at most, when
// executors share the GPU's decoders: callLanes between them, one at least.
func callsPerBatch(executors int) int { return max(1, callLanes/max(executors, 1)) }

// newJPEGPath makes a decoder with n lanes; n = 0 sizes the hardware
// decoder's pool from its engines, one call in flight per engine at most.
func newJPEGPath(p Path, n int) (j *jpegPath, err error) {
	if err := nvjpeg.Init(); err != nil {
		return nil, err
	}
	b := nvjpeg.GPUHybrid
	if p == PathHardware {
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
	if p == PathHardware {
		if j.engines, j.cores, err = j.h.HardwareInfo(); err != nil {
			return nil, err
		}
	}
	if n <= 0 {
		n = max(j.engines, callLanes)
	}
	j.free = newPool[*lane](n)
	for range n {
		l := new(lane)
		j.lanes = append(j.lanes, l)
		if l.st, err = j.h.NewState(); err != nil {
			return nil, err
		}
		if l.stream, err = cuda.NewStream(); err != nil {
			return nil, err
		}
		if p == PathHardware {
			// The engines then draw their buffers from a pool rather than
			// allocating in the decode call (nvImageCodec measured more
			// than 20% from this; here, hints of batch 256 did no better
			// than nvImageCodec's minimal ones).
			if err = j.h.BatchedPreAllocate(l.st, 1, 1, 1, nvjpeg.CSS444, nvjpeg.OutputYUV); err != nil {
				return nil, err
			}
		}
		j.free.put(l)
	}
	return j, nil
}

// supporter asks the hardware decoder whether it takes a JPEG: one per
// CPU worker, as a stream object holds one parsed header.
type supporter struct {
	h  *nvjpeg.Handle
	js *nvjpeg.JpegStream
}

func (j *jpegPath) newSupporter() (*supporter, error) {
	js, err := j.h.NewJpegStream()
	if err != nil {
		return nil, err
	}
	return &supporter{h: j.h, js: js}, nil
}

// supported asks whether the batched decoder takes this JPEG (the
// hardware engines do not take every subsampling or size).
func (s *supporter) supported(src []byte) bool {
	if err := s.js.Parse(s.h, src, true); err != nil {
		return false
	}
	ok, err := s.h.BatchedSupported(s.js)
	return err == nil && ok
}

func (s *supporter) close() {
	if s != nil {
		s.js.Close()
	}
}

// decode decodes the listed samples into their arena slots and waits: up
// to calls lanes take a part each, as many as are free (one, waited
// for, at least: an executor never waits for a lane while it holds one, so
// executors sharing the pool cannot deadlock). bind makes the context
// current on a lane's thread. An error leaves every listed sample to be
// decoded again elsewhere.
func (j *jpegPath) decode(list []int, calls int, samples []sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec, bind func() (func(), error)) error {
	// Replicated chroma is what the engines' own RGB output does
	// (nvImageCodec's and DALI's "fancy upsampling" off): they then
	// write each colour image's slot themselves, with no planes or
	// conversion kernel.
	rgb := j.path == PathHardware && dec.FastUpsample && dec.Color != ops.Gray
	want := min(calls, max(len(list)/minPerLane, 1))
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
	k := len(lanes)
	per := (len(list) + k - 1) / k
	errs := make(chan error, k)
	for i, l := range lanes {
		part := list[min(i*per, len(list)):min((i+1)*per, len(list))]
		go func() {
			unbind, err := bind()
			if err != nil {
				errs <- err
				return
			}
			defer unbind()
			errs <- l.decode(j.h, part, samples, base, f, dec, rgb)
		}()
	}
	var first error
	for range k {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// decode decodes one part in one batched call and converts the colour
// images to interleaved RGB — or, for a grey pipeline, reads the luma
// plane as the image, as libjpeg does. With rgb, a part of colour JPEGs
// only is decoded to interleaved RGB by nvJPEG itself (one output format
// per call: a greyscale JPEG's slot holds one channel).
func (l *lane) decode(h *nvjpeg.Handle, list []int, samples []sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec, rgb bool) error {
	if len(list) == 0 {
		return nil
	}
	total := 0
	for _, s := range list {
		if samples[s].pinned == nil {
			total += len(samples[s].src)
		}
		rgb = rgb && samples[s].sub != nvjpeg.CSSGray
	}
	if err := growPinned(&l.pinned, total); err != nil {
		return err
	}
	l.data.Reset()
	l.imgs = l.imgs[:0]
	l.conv.reset()
	off := 0
	for _, s := range list {
		smp := &samples[s]
		if smp.pinned != nil {
			l.data.Add(smp.pinned)
		} else {
			n := copy(l.pinned[off:], smp.src)
			l.data.Add(l.pinned[off : off+n])
			off += n
		}
		if rgb {
			var img nvjpeg.Image
			img.Channel[0] = uintptr(base) + uintptr(smp.off)
			img.Pitch[0] = uint64(smp.w * 3)
			l.imgs = append(l.imgs, img)
			continue
		}
		l.imgs = append(l.imgs, l.conv.planes(smp, base, dec))
	}
	format := nvjpeg.OutputYUV
	if rgb {
		format = nvjpeg.OutputRGBI
	}
	if l.inited != len(list) || l.format != format {
		if err := h.BatchedInitialize(l.st, len(list), 1, format); err != nil {
			return err
		}
		l.inited, l.format = len(list), format
	}
	if err := h.DecodeBatched(l.st, &l.data, l.imgs, l.stream); err != nil {
		l.inited = 0 // the state may be half-used: initialise again
		l.stream.Synchronize()
		return err
	}
	if err := l.conv.launch(f, l.stream); err != nil {
		return err
	}
	return l.stream.Synchronize()
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
	if l.st != nil {
		l.st.Close()
	}
	if l.pinned != nil {
		cuda.MemFreeHost(l.pinned)
		l.pinned = nil
	}
	l.conv.free()
	if l.stream != 0 {
		l.stream.Destroy()
	}
}
