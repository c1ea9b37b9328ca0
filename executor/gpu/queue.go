package gpu

import (
	"math"
	"sync"

	"github.com/sluice-dev/sluice/kernels/nvjpeg"
)

// decide carries out the route package's decision for a sample whose
// header was read: every path writes interleaved RGB, but for a PNG's
// alpha when the pipeline keeps it and for greyscale JPEGs, whose luma
// plane is the image.
func (e *Executor) decide(smp *sample) {
	d := e.set.Decide(smp.hdr.JPEG(), smp.hdr.Pixels(), e.decoders)
	smp.path, smp.engines, smp.sub, smp.factorsAt = d.Path, d.Engines, d.Chroma, d.GreyFactorsAt
	switch {
	case smp.hdr.Format != "JPEG":
		smp.c = e.chain.srcC
	case d.Chroma == nvjpeg.CSSGray:
		smp.c = 1
	default:
		smp.c = 3
	}
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

// twoEnds hands a part's engine-decodable JPEGs (largest first) to both
// routes when they share them (route.Plan.Queue): the engines' calls take
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
