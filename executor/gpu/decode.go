package gpu

import (
	"os"
	"strconv"

	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
)

// jpegPath is one nvJPEG decoder — the hardware JPEG engines, or the GPU
// hybrid decoder — with lanes, each a batched-decode state that takes one
// part of a batch in one call. The engines are fed by one call for the
// hardware share split in two (nvJPEG spreads each call over every engine,
// and parses its images on the calling thread while the other call's are
// decoded); the hybrid decoder runs two lanes too.
type jpegPath struct {
	path  Path
	h     *nvjpeg.Handle
	lanes []*lane
	free  chan *lane // the lanes not in use, shared by the executors
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
	inited int // batch size of the last BatchedInitialize

	// Colour images come out of nvJPEG as YCbCr planes; a kernel turns
	// them into interleaved RGB with libjpeg's upsampling and colour
	// conversion, so that GPU and CPU decodes differ only by the IDCT.
	ycc     []kernels.YCC
	yccHost []byte // pinned copy of ycc
	yccDev  cuda.DevicePtr
}

// The hybrid decoder's lanes on one GPU, and the smallest part of a batch
// worth a lane of its own (docs/perf.md has the measurements these come
// from).
const (
	hybridLanes = 4
	minPerLane  = 8
)

// callLanes is how many lanes one batch's share takes at most: two calls
// at once beat one by 6-19% and four by 4-5% on an H200's engines at
// batches of 64 and 256 (docs/perf.md). SLUICE_GPU_HW_LANES overrides it
// for measurements.
var callLanes = envInt("SLUICE_GPU_HW_LANES", 2)

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
	j.free = make(chan *lane, n)
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
			// than 20% from this).
			if err = j.h.BatchedPreAllocate(l.st, preallocBatch, 1, 1, nvjpeg.CSS444, nvjpeg.OutputYUV); err != nil {
				return nil, err
			}
		}
		j.free <- l
	}
	return j, nil
}

// preallocBatch is the batch size the hardware state is pre-allocated
// for; SLUICE_GPU_HW_PREALLOC overrides it for measurements.
var preallocBatch = envInt("SLUICE_GPU_HW_PREALLOC", 1)

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
// to callLanes lanes take a part each, as many as are free (one, waited
// for, at least: an executor never waits for a lane while it holds one, so
// executors sharing the pool cannot deadlock). bind makes the context
// current on a lane's thread. An error leaves every listed sample to be
// decoded again elsewhere.
func (j *jpegPath) decode(list []int, samples []sample, base cuda.DevicePtr, f *kernels.Fused, gray bool, bind func() (func(), error)) error {
	want := min(callLanes, max(len(list)/minPerLane, 1))
	lanes := make([]*lane, 1, want)
	lanes[0] = <-j.free
fill:
	for len(lanes) < want {
		select {
		case l := <-j.free:
			lanes = append(lanes, l)
		default:
			break fill
		}
	}
	defer func() {
		for _, l := range lanes {
			j.free <- l
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
			errs <- l.decode(j.h, part, samples, base, f, gray)
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
// plane as the image, as libjpeg does.
func (l *lane) decode(h *nvjpeg.Handle, list []int, samples []sample, base cuda.DevicePtr, f *kernels.Fused, gray bool) error {
	if len(list) == 0 {
		return nil
	}
	total := 0
	for _, s := range list {
		total += len(samples[s].src)
	}
	if len(l.pinned) < total {
		if l.pinned != nil {
			cuda.MemFreeHost(l.pinned)
			l.pinned = nil
		}
		p, err := cuda.MemHostAlloc(total + total/4)
		if err != nil {
			return err
		}
		l.pinned = p
	}
	l.data.Reset()
	l.imgs, l.ycc = l.imgs[:0], l.ycc[:0]
	off, maxW, maxH := 0, 0, 0
	for _, s := range list {
		smp := &samples[s]
		n := copy(l.pinned[off:], smp.src)
		l.data.Add(l.pinned[off : off+n])
		off += n
		var img nvjpeg.Image
		if smp.sub == nvjpeg.CSSGray {
			// The luma plane is the image: one channel, read as grey.
			img.Channel[0] = uintptr(base) + uintptr(smp.off)
			img.Pitch[0] = uint64(smp.w)
			l.imgs = append(l.imgs, img)
			continue
		}
		sx, sy := subsampling(smp.sub)
		cw, ch := (smp.w+sx-1)/sx, (smp.h+sy-1)/sy
		y := uintptr(base) + uintptr(smp.planes)
		cb := y + uintptr(alignUp(smp.w*smp.h))
		cr := cb + uintptr(alignUp(cw*ch))
		img.Channel = [4]uintptr{y, cb, cr}
		img.Pitch = [4]uint64{uint64(smp.w), uint64(cw), uint64(cw)}
		l.imgs = append(l.imgs, img)
		if gray {
			smp.off, smp.c = smp.planes, 1
			continue
		}
		l.ycc = append(l.ycc, kernels.YCC{
			Y: uint64(y), Cb: uint64(cb), Cr: uint64(cr), Dst: uint64(base) + uint64(smp.off),
			W: int32(smp.w), H: int32(smp.h), YPitch: int32(smp.w), CPitch: int32(cw),
			CW: int32(cw), CH: int32(ch), SubX: int32(sx), SubY: int32(sy), DstPitch: int32(smp.w * 3),
		})
		maxW, maxH = max(maxW, smp.w), max(maxH, smp.h)
	}
	if l.inited != len(list) {
		if err := h.BatchedInitialize(l.st, len(list), 1, nvjpeg.OutputYUV); err != nil {
			return err
		}
		l.inited = len(list)
	}
	if err := h.DecodeBatched(l.st, &l.data, l.imgs, l.stream); err != nil {
		l.inited = 0 // the state may be half-used: initialise again
		l.stream.Synchronize()
		return err
	}
	if len(l.ycc) > 0 {
		for i := range l.ycc {
			if err := l.ycc[i].Check(); err != nil {
				return err
			}
		}
		if err := l.uploadYCC(); err != nil {
			return err
		}
		if err := f.LaunchYCC(l.stream, l.yccDev, len(l.ycc), maxW, maxH); err != nil {
			return err
		}
	}
	return l.stream.Synchronize()
}

// uploadYCC copies the conversion descriptors to the device.
func (l *lane) uploadYCC() error {
	b := kernels.YCCBytes(l.ycc)
	if len(l.yccHost) < len(b) {
		l.freeYCC()
		n := max(len(b)*2, 4096)
		var err error
		if l.yccHost, err = cuda.MemHostAlloc(n); err != nil {
			return err
		}
		if l.yccDev, err = cuda.MemAlloc(n); err != nil {
			return err
		}
	}
	copy(l.yccHost, b)
	return cuda.MemcpyHtoDAsync(l.yccDev, l.yccHost[:len(b)], l.stream)
}

func (l *lane) freeYCC() {
	if l.yccHost != nil {
		cuda.MemFreeHost(l.yccHost)
		l.yccHost = nil
	}
	if l.yccDev != 0 {
		cuda.MemFree(l.yccDev)
		l.yccDev = 0
	}
}

// subsampling gives the chroma subsampling factors across and down.
func subsampling(s nvjpeg.Subsampling) (x, y int) {
	switch s {
	case nvjpeg.CSS422:
		return 2, 1
	case nvjpeg.CSS420:
		return 2, 2
	case nvjpeg.CSS440:
		return 1, 2
	}
	return 1, 1
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
	l.freeYCC()
	if l.stream != 0 {
		l.stream.Destroy()
	}
}

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
