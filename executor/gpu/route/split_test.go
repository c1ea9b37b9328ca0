package route

import (
	"slices"
	"testing"
)

// TestSplit: the share of the pixels, what the CPU workers have already
// counted against theirs, rounded up to whole rounds of the engines'
// cores; a negative one is the default, the busy share with the queue
// while other executors are busy when the executor's threads share the
// cores, a set one whatever the others do; no queue without the
// decoupled decoder.
func TestSplit(t *testing.T) {
	set := Defaults()
	dec := Decoders{Engines: true, Decoupled: true}
	same := func(n, p int) []int { return slices.Repeat([]int{p}, n) }
	count := func(p Plan, px []int, cpuPx, cores int) int {
		p.Count(px, cpuPx, cores)
		return p.Engines
	}
	sp := set.NewSplitter(0.5, true)
	p := sp.Plan(64, 1, dec)
	if n := count(p, same(64, 100), 0, 1); n != 32 {
		t.Errorf("64 images at 0.5: %d to the engines, want 32", n)
	}
	if q := sp.Plan(64, 3, dec); q != p {
		t.Errorf("a set 0.5 with 3 executors busy: planned %+v, want %+v", q, p)
	}
	if n := count(p, same(10, 100), 0, 4); n != 8 {
		t.Errorf("10 images with 4 cores a round: %d, want 8 (5 rounded up to whole rounds)", n)
	}
	if n := count(p, same(64, 100), 1600, 1); n != 40 {
		t.Errorf("64 images beside 1,600 CPU pixels at 0.5: %d to the engines, want 40", n)
	}
	if n := count(p, same(64, 100), 6400, 1); n != 64 {
		t.Errorf("64 images beside as many CPU pixels at 0.5: %d to the engines, want all", n)
	}
	if n := count(p, []int{100, 100, 1000}, 0, 1); n != 2 {
		t.Errorf("a large image last at 0.5: %d to the engines, want 2 (the large one to the CPU)", n)
	}
	for _, shared := range []bool{true, false} {
		d := set.NewSplitter(-1, shared)
		for busy := range 4 {
			want, queue := 64, 0.0
			if shared && busy > 1 {
				want, queue = int(64*set.BusyShare), set.SharedQueue
			}
			p := d.Plan(64, busy, dec)
			if n := count(p, same(64, 100), 0, 1); n != want || p.Queue != queue {
				t.Errorf("default, threads shared %v, %d executors busy: %d of 64 to the engines, queue %g; want %d, %g", shared, busy, n, p.Queue, want, queue)
			}
		}
		// A part smaller than MinSharedPart stays on the engines, busy or not.
		if p := d.Plan(MinSharedPart-1, 2, dec); p.Queue != 0 || count(p, same(MinSharedPart-1, 100), 0, 1) != MinSharedPart-1 {
			t.Errorf("default, threads shared %v, 2 busy, %d images: planned %+v, want every one on the engines", shared, MinSharedPart-1, p)
		}
		if n := count(d.Plan(64, 2, dec), same(64, 100), 2200, 1); n != 64 {
			t.Errorf("default, 2 executors busy, over a quarter of the pixels on the CPU already: %d of 64 to the engines, want all", n)
		}
	}
	if p := set.NewSplitter(-1, true).Plan(64, 2, Decoders{Engines: true}); p.Queue != 0 {
		t.Errorf("a queue of %g without the decoupled decoder", p.Queue)
	}
	z := set.NewSplitter(0, true)
	if n := count(z.Plan(64, 1, dec), same(64, 100), 0, 4); n != 0 || z.Engines() {
		t.Errorf("share 0 sent %d to the engines", n)
	}
	if n := count(p, nil, 500, 4); n != 0 {
		t.Errorf("no engine-decodable image: %d", n)
	}
}

// TestSplitSMs: with the SMs' route on, the engines take what SMShare
// leaves them, busy executors or not, or a set share; never a queue (the
// SMs' launch takes its list whole); what the SMs have already counts
// against their part.
func TestSplitSMs(t *testing.T) {
	set := Defaults()
	set.SluiceGPUHuffman, set.SMShare = true, 0.25
	dec := Decoders{Engines: true, Decoupled: true}
	px := slices.Repeat([]int{100}, 64)
	for _, c := range []struct {
		configured float64
		shared     bool
		busy       int
		want       int
	}{{-1, true, 0, 48}, {-1, true, 3, 48}, {-1, false, 2, 48}, {0.5, true, 3, 32}, {1, true, 0, 64}} {
		p := set.NewSplitter(c.configured, c.shared).Plan(len(px), c.busy, dec)
		p.Count(px, 0, 1)
		if p.Engines != c.want || p.Queue != 0 {
			t.Errorf("%+v: %d of 64 to the engines, queue %g; want %d, no queue", c, p.Engines, p.Queue, c.want)
		}
	}
	p := set.NewSplitter(-1, true).Plan(len(px), 0, dec)
	if p.Count(px, 800, 1); p.Engines != 54 {
		t.Errorf("64 images beside 800 pixels already on the SMs: %d to the engines, want 54 (a quarter of 7,200 pixels on the SMs)", p.Engines)
	}
}

// TestCallsPerBatch: EngineCalls calls in flight on a GPU's engines when
// every executor decodes at once, one at least each.
func TestCallsPerBatch(t *testing.T) {
	s := Defaults()
	for _, c := range []struct{ executors, want int }{{0, s.EngineCalls}, {1, s.EngineCalls}, {s.EngineCalls, 1}, {s.EngineCalls + 1, 1}, {64, 1}} {
		if got := s.CallsPerBatch(c.executors); got != c.want {
			t.Errorf("%d executors: %d calls a batch, want %d", c.executors, got, c.want)
		}
	}
}
