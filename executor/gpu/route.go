package gpu

import (
	"math"
	"sync"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
)

// Where a JPEG is decoded is decided mostly here: route at parse time from
// its header, split per batch part between the engines and the CPU workers
// (or the queue they share), and the fallback after a decoder failed on it.
// The rest of the decision lies beside it: takesCoefficients
// (coefficients.go), runPart's lists and decodeCPU's retries (batch.go),
// whether a CPU worker has a path's state (workers.go), huffmanPath's
// choice of decoupled state (huffman.go), which decoders the executor has
// (executor.go, service.go), and codec.Header's HuffmanSequential,
// HuffmanProgressive and GreyFactorsAt, which say what nvJPEG takes.
//
//	baseline JPEG            engines (the share) | the coefficient route on the CPU workers
//	                         (the rest; PathSluiceCoefficients); while other executors are busy,
//	                         both from one queue (twoEnds), but for parts of fewer than minSharedPart
//	  greyscale with sampling factors other than 1x1: the same, the engines' copy saying 1x1 (stageJPEG)
//	progressive JPEG         the coefficient route on the CPU workers
//	over gpuHuffmanPixels    not the coefficient route: nvJPEG's decoupled decoder, with its GPU-Huffman
//	                         state (PathNvjpegGPUHuffman); a baseline one without the decoupled decoder:
//	                         the batched GPU hybrid decoder (PathHybrid)
//	everything else, and whatever an nvJPEG path fails on   libjpeg-turbo / the format's decoder (PathCPU)
//
// Both routes run at once because the engines alone top out, the batched
// GPU hybrid decoder runs Huffman decoding on one thread, and the
// coefficient route on the CPU workers adds its images to the engines'
// (docs/perf.md).

// route picks the decoder for a sample whose header was read: nvJPEG for
// Huffman-coded JPEGs whose chroma layout is one libjpeg's upsampling
// (which the conversion kernel follows) covers; the CPU for the rest.
// Every path writes interleaved RGB, but for a PNG's alpha when the
// pipeline keeps it and for greyscale JPEGs, whose luma plane is the
// image. smp.hw marks a baseline JPEG the engines may take; split (and
// twoEnds) decide per part.
func (e *Executor) route(z *parser, smp *sample) {
	smp.path, smp.c = PathCPU, 3
	decoupled := e.svc.huff != nil
	var path Path
	switch cs := smp.hdr.ColorSpace(); {
	case smp.hdr.Format != "JPEG":
		smp.c = e.chain.srcC
		return
	case cs != codec.SpaceYCbCr && cs != codec.SpaceGray:
		// nvJPEG reads three components as YCbCr: an RGB-coded JPEG
		// (Adobe transform 0) would come out in wrong colours.
		return
	case takesCoefficients(smp.hdr):
		path = PathSluiceCoefficients
	case smp.hdr.HuffmanSequential() && decoupled:
		path = PathNvjpegCPUHuffman
	case smp.hdr.HuffmanSequential():
		path = PathHybrid
	case smp.hdr.HuffmanProgressive() && decoupled:
		path = PathNvjpegCPUHuffman
	default:
		return
	}
	css, err := z.nv.read(smp.src)
	if err != nil {
		return
	}
	switch css {
	case nvjpeg.CSSGray:
		smp.c = 1
		smp.factorsAt = smp.hdr.GreyFactorsAt()
	case nvjpeg.CSS444, nvjpeg.CSS422, nvjpeg.CSS420, nvjpeg.CSS440:
	default:
		return
	}
	smp.hw = smp.hdr.HuffmanSequential() && z.nv.hwTakes()
	smp.path, smp.sub = path, css
}

// stageJPEG copies smp's JPEG into dst for one of nvJPEG's batched calls,
// a greyscale one saying 1x1 sampling: its one component's blocks are
// coded the same whatever the factors, and the engines decode one saying
// 2x2 wrongly (on an H200 with driver 580, a corpus photo came out 39
// levels off on average; nvjpeg's TestGPUHardwareGrey). dst must hold it.
func stageJPEG(dst []byte, smp *sample) []byte {
	n := copy(dst, smp.src)
	if smp.factorsAt > 0 {
		dst[smp.factorsAt] = 0x11
	}
	return dst[:n:n]
}

// huffmanPath is the decoupled state a sample of w*h pixels uses: one
// large image's Huffman decoding on one thread would hold its whole batch
// back (a 16-megapixel progressive JPEG takes about 0.25 s), so images over
// gpuHuffmanPixels decode their Huffman codes on the GPU, where the
// decoder has that state.
func huffmanPath(w, h int, gpuState bool) Path {
	if gpuState && w*h > gpuHuffmanPixels {
		return PathNvjpegGPUHuffman
	}
	return PathNvjpegCPUHuffman
}

// gpuHuffmanPixels is where the GPU's Huffman decoding takes over (DALI's
// hybrid_huffman_threshold default); SLUICE_GPU_HUFFMAN_PIXELS overrides it
// for measurements.
var gpuHuffmanPixels = envInt("SLUICE_GPU_HUFFMAN_PIXELS", 1_000_000)

// retryPath is where a sample goes after its nvJPEG path failed on it:
// libjpeg-turbo, which also names the error.
func retryPath(Path) Path { return PathCPU }

// splitter decides how many of a part's engine-decodable JPEGs go to the
// engines; the others join the CPU workers' list (the coefficient route, or
// decoupled), or with queue both routes share them (twoEnds).
type splitter struct {
	// Of the part's pixels on the engines and the CPU workers together,
	// the share for the engines: what the CPU workers have already (the
	// JPEGs only they decode) counts against their remainder, so a part
	// full of progressive JPEGs sends every colour baseline JPEG to the
	// engines.
	share float64
	// queue: the engines' first runs from a queue they share with the
	// CPU workers are this part of their plan; 0: no queue, each route
	// takes its planned part.
	queue float64
	// auto: left to the executor, whose threads share the cores; then
	// busyHWShare and busyQueue apply while other executors of the GPU
	// are busy too.
	auto bool
}

// DefaultHWShare is executor.Options.HWShare's default here: every colour
// baseline JPEG the engines take goes to them. A smaller share is faster
// only on colour baseline JPEGs alone at large batches; it is slower at
// smaller ones and no faster on a mix of kinds, and moving the share per
// batch so that both routes finish together gains nothing (docs/perf.md).
const DefaultHWShare = 1.0

// busyHWShare is the default share while two or more executors of the GPU
// have a batch in flight and share its cores (Executor.threads): each then
// leaves the other cores, and the CPU workers' route adds to the engines.
// Three quarters is ahead of a share of 1 and of both smaller and larger
// shares, with the CPU workers' images gathered for the GPU
// (coefficients.go); it pays only while the executors share the cores:
// with a thread per core each, it is no faster (docs/perf.md).
// SLUICE_GPU_BUSY_SHARE (a percentage) overrides it for measurements.
var busyHWShare = envPercent("SLUICE_GPU_BUSY_SHARE", 75)

// busyQueue is the default queue while two or more executors are busy:
// the engines' first runs take their whole plan (one call of the part's
// planned three quarters, as DALI makes one call of its share), then each
// route takes what the other has not started, so that neither waits at
// the part's end. With two executors that gives colour baseline JPEGs more
// a second than each route taking its planned part, and the whole plan
// more than three quarters of it (docs/perf.md). One executor alone plans
// every JPEG for the engines, where the queue costs more than it gains, so
// it is not used then. SLUICE_GPU_SHARED_QUEUE (a percentage; 0: off)
// overrides it for measurements.
var busyQueue = envPercent("SLUICE_GPU_SHARED_QUEUE", 100)

// newSplitter takes executor.Options.HWShare (negative: the default);
// shared says the executor's threads share the cores with its GPU's other
// executors.
func newSplitter(configured float64, shared bool) splitter {
	if configured < 0 {
		return splitter{share: DefaultHWShare, auto: shared}
	}
	return splitter{share: min(configured, 1)}
}

// minSharedPart is the fewest engine-decodable JPEGs a part must have for
// busyHWShare and busyQueue to apply: a CPU worker's image takes longer
// than the engines take for a smaller part, so there it holds the part up.
// With two executors, parts of 8 colour baseline JPEGs go faster all on
// the engines and parts of 16 faster with the queue (docs/perf.md).
const minSharedPart = 16

// plan is the split for a part of n engine-decodable JPEGs while busy
// executors of the GPU have a batch in flight.
func (sp splitter) plan(busy, n int) splitter {
	if sp.auto && busy > 1 && n >= minSharedPart {
		return splitter{share: busyHWShare, queue: busyQueue}
	}
	return sp
}

// count is how many of the engine-decodable images, of px pixels each, go
// to the engines (the first ones), when the CPU workers have cpuPx pixels
// to decode already: the share, rounded up to whole rounds of the
// engines' cores.
func (sp splitter) count(px []int, cpuPx, cores int) int {
	n := len(px)
	total := cpuPx
	for _, p := range px {
		total += p
	}
	// Pixels to move to the CPU workers, an image at a time from the end
	// while that comes nearer the share.
	move := (1-sp.share)*float64(total) - float64(cpuPx)
	k, moved := n, 0
	for k > 0 && float64(moved)+float64(px[k-1])/2 < move {
		k--
		moved += px[k]
	}
	if cores > 1 && k > 0 && k%cores != 0 {
		k += cores - k%cores
	}
	return min(k, n)
}

// twoEnds hands a part's engine-decodable JPEGs (largest first) to both
// routes when they share them (splitter.queue): the engines' calls take
// runs from the front, first of all their first runs (an even run a
// lane), the CPU workers one JPEG at a time from the back; each takes what
// the other has not started, until the two ends meet, so that neither
// waits for the other at the part's end. The engines' later runs are the
// planned fraction of what is left, between their lanes.
type twoEnds struct {
	mu         sync.Mutex
	list       []int
	head, tail int // list[head:tail] is not taken yet
	planned    int // the plan's count for the engines
	first      int // the engines' first runs' JPEGs together
	unit       int // the engines' later runs hold whole multiples of unit
	lanes      int // the engines' lanes (start)
	calls      int // the engines' calls so far
}

// newTwoEnds is the queue over list, planned of them for the engines, the
// first share of those for their first runs.
func newTwoEnds(list []int, planned int, first float64, unit int) *twoEnds {
	return &twoEnds{list: list, tail: len(list), planned: planned, first: int(math.Ceil(float64(planned) * first)),
		unit: max(unit, 1), lanes: 1}
}

// start says how many lanes the engines' calls run on.
func (q *twoEnds) start(lanes int) {
	q.mu.Lock()
	q.lanes = max(lanes, 1)
	q.mu.Unlock()
}

// next is the engines' next call's run; nil once the ends met.
func (q *twoEnds) next() []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	left := q.tail - q.head
	var n int
	if q.calls < q.lanes && q.first > 0 {
		n = (q.first + q.lanes - 1) / q.lanes
	} else {
		n = roundUp(ceilDiv(float64(left)*float64(q.planned)/float64(len(q.list)), q.lanes), q.unit)
	}
	n = min(n, left)
	if n <= 0 {
		return nil
	}
	q.calls++
	run := q.list[q.head : q.head+n]
	q.head += n
	return run
}

// back is the CPU workers' next JPEG.
func (q *twoEnds) back() (int, bool) {
	if q == nil {
		return 0, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.tail <= q.free() {
		return 0, false
	}
	q.tail--
	return q.list[q.tail], true
}

// free is where the CPU workers' side may reach: the engines' first runs
// are theirs until handed out (the workers may start before the lanes do).
func (q *twoEnds) free() int {
	if q.calls < q.lanes {
		return max(q.head, q.first)
	}
	return q.head
}

// open is how many JPEGs the CPU workers may take now.
func (q *twoEnds) open() int {
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tail - q.free()
}

// taken, once both routes are done: the engines' runs and what no lane
// took (the lanes could not start).
func (q *twoEnds) taken() (took, left []int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.list[:q.head], q.list[q.head:q.tail]
}

func ceilDiv(x float64, n int) int { return int(math.Ceil(x / float64(n))) }

// roundUp rounds n up to a whole multiple of unit, one at least.
func roundUp(n, unit int) int {
	if n <= 0 {
		return unit
	}
	return (n + unit - 1) / unit * unit
}
