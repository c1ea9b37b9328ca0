package gpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/internal/debounce"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// service is one GPU's decoders, shared by every executor on that GPU: the
// hardware JPEG engines and the hybrid decoder, each a pool of lanes, and a
// pool of CPU decode workers, one per core. Triton instances of one model,
// and of several models, on one GPU then feed the same engines and cores
// instead of each holding a full set and contending for the device.
type service struct {
	dev  int
	refs int
	hw   *jpegPath // nil where the GPU has no JPEG engines
	hy   *jpegPath
	// nvJPEG's decoupled decoder, which the CPU workers run the JPEGs
	// the coefficient route does not take through (those over
	// route.Settings.GPUHuffmanPixels); nil where nvJPEG lacks it.
	huff *huffman
	cpu  []*cpuWorker
	free *pool[*cpuWorker]
	// busy counts the executors with a batch in flight, which share the
	// cores (Executor.threads).
	busy atomic.Int32

	// The idle sweep (sweep), noted when a worker that grew comes back;
	// mu orders it against close.
	idle   debounce.Timer
	mu     sync.Mutex
	closed bool
}

// idleRelease is how long a GPU's decoders must have been idle before the
// scratch that large images grew is freed. Freeing it after each image
// instead (pinned buffers, nvJPEG's decoupled states: cudaFreeHost and
// cudaFree synchronise the device, and pinning is slow) cost more than
// decoding the large photos themselves.
const idleRelease = 2 * time.Second

var services = struct {
	sync.Mutex
	m map[int]*service
}{m: map[int]*service{}}

// acquireService returns device dev's service, made on first use. The
// device's primary context must be current.
func acquireService(dev int) (*service, error) {
	services.Lock()
	defer services.Unlock()
	if s := services.m[dev]; s != nil {
		s.refs++
		return s, nil
	}
	s, err := newService(dev)
	if err != nil {
		return nil, err
	}
	services.m[dev] = s
	return s, nil
}

// executors is how many executors hold the service now.
func (s *service) executors() int {
	services.Lock()
	defer services.Unlock()
	return s.refs
}

// release drops one executor's hold; the last one frees the decoders. The
// device's primary context must be current.
func (s *service) release() {
	services.Lock()
	defer services.Unlock()
	if s.refs--; s.refs > 0 {
		return
	}
	delete(services.m, s.dev)
	s.close()
}

func newService(dev int) (s *service, err error) {
	s = &service{dev: dev, refs: 1}
	s.idle = debounce.Timer{Quiet: idleRelease, Fn: s.sweep}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.hy, err = newJPEGPath(route.Hybrid, hybridLanes, route.Env().EngineCalls); err != nil {
		return nil, err
	}
	// Not every GPU has JPEG engines: without them the hybrid decoder
	// takes everything.
	s.hw, _ = newJPEGPath(route.Hardware, 0, route.Env().EngineCalls)
	// Without it progressive JPEGs decode on the CPU alone.
	s.huff, _ = newHuffman()
	n := runtime.GOMAXPROCS(0)
	s.free = newPool[*cpuWorker](n)
	for i := range n {
		w, err := newCPUWorker(i, s.huff)
		if err != nil {
			return nil, err
		}
		s.cpu = append(s.cpu, w)
		s.free.put(w)
	}
	return s, nil
}

// getWorker waits for a CPU worker; putWorker returns it.
func (s *service) getWorker() *cpuWorker { return s.free.get() }

func (s *service) putWorker(w *cpuWorker) {
	if w.grown > 0 {
		s.idle.Note(true)
	}
	s.free.put(w)
}

// sweep trims the workers that hold large scratch once no worker has come
// back for idleRelease; workers busy then are left for the next sweep.
func (s *service) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx, err := cuda.RetainPrimary(s.dev)
	if err != nil {
		return
	}
	defer ctx.Release()
	if ctx.SetCurrent() != nil {
		return
	}
	// A worker busy now arms the next sweep when it comes back.
	s.free.each((*cpuWorker).trim)
}

func (s *service) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for _, w := range s.cpu {
		w.close()
	}
	for _, p := range []*jpegPath{s.hw, s.hy} {
		if p != nil {
			p.close()
		}
	}
	s.huff.close()
}
