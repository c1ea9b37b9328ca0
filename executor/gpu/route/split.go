package route

// Splitter decides per batch part how many of its engine-decodable JPEGs
// go to the engines; the others join the CPU workers (the route their
// Decision gave), or with a queue both routes share them.
type Splitter struct {
	// share: of the part's pixels on the engines and the CPU workers
	// together, the engines' part. What the CPU workers have already (the
	// JPEGs only they decode) counts against their remainder, so a part
	// full of progressive JPEGs sends every colour baseline JPEG to the
	// engines.
	share float64
	// auto: left to the executor, whose threads share the cores; then
	// the busy settings apply while other executors of the GPU are busy.
	auto bool
	// busy: the busy settings apply whatever the other executors do.
	busy bool
	// sms: the JPEGs the engines leave go to the SMs
	// (Settings.SluiceGPUHuffman), whose launch takes its list whole: no
	// queue, and no busy share.
	sms bool
	set Settings
}

// DefaultHWShare is executor.Options.HWShare's default on the GPU: every
// colour baseline JPEG the engines take goes to them. A smaller share is
// faster only on colour baseline JPEGs alone at large batches; it is
// slower at smaller ones and no faster on a mix of kinds, and moving the
// share per batch so that both routes finish together gains nothing
// (docs/perf.md).
const DefaultHWShare = 1.0

// MinSharedPart is the fewest engine-decodable JPEGs a part must have for
// the busy share and the queue to apply: a CPU worker's image takes
// longer than the engines take for a smaller part, so there it holds the
// part up. With two executors, parts of 8 colour baseline JPEGs go faster
// all on the engines and parts of 16 faster with the queue (docs/perf.md).
const MinSharedPart = 16

// NewSplitter takes executor.Options.HWShare (negative: the default);
// shared says the executor's threads share the cores with its GPU's
// other executors.
func (s Settings) NewSplitter(configured float64, shared bool) Splitter {
	switch {
	case configured >= 0:
		return Splitter{share: min(configured, 1), sms: s.SluiceGPUHuffman, set: s}
	case s.SluiceGPUHuffman:
		return Splitter{share: 1 - s.SMShare, sms: true, set: s}
	}
	return Splitter{share: DefaultHWShare, auto: shared, set: s}
}

// BusySplitter splits every part of MinSharedPart or more as while other
// executors are busy (BusyShare, SharedQueue), whatever they do: for tests
// and measurements of that split.
func (s Settings) BusySplitter() Splitter { return Splitter{share: s.BusyShare, busy: true, set: s} }

// Engines reports whether the engines get any JPEGs at all.
func (sp Splitter) Engines() bool { return sp.share > 0 }

// Plan is one part's split.
type Plan struct {
	// Engines is how many of the engine-decodable JPEGs (the first ones;
	// largest first when Queue > 0) go to the engines, once Count has run.
	Engines int
	// Queue: the engines' first runs take this part of their plan from a
	// queue they share with the CPU workers, which take from its back;
	// 0: no queue, each route takes its planned part.
	Queue float64
	share float64
}

// Plan starts the split of a part of n engine-decodable JPEGs while busy
// executors of the GPU have a batch in flight. The queue needs the CPU
// workers as the other route, and the decoupled decoder: a CPU worker
// takes a large JPEG from it on that decoder's GPU-Huffman state.
func (sp Splitter) Plan(n, busy int, d Decoders) Plan {
	p := Plan{share: sp.share}
	if (sp.busy || sp.auto && busy > 1) && n >= MinSharedPart {
		p.share, p.Queue = sp.set.BusyShare, sp.set.SharedQueue
	}
	if !d.Decoupled || sp.sms {
		p.Queue = 0
	}
	return p
}

// Count sets p.Engines for JPEGs of px pixels each, in the order they
// are listed, when the route the rest take (the CPU workers, or the SMs)
// has otherPx pixels of JPEGs only it decodes and the engines have cores
// decode cores: the share, rounded up to whole rounds of the engines'
// cores.
func (p *Plan) Count(px []int, otherPx, cores int) {
	n := len(px)
	total := otherPx
	for _, x := range px {
		total += x
	}
	// Pixels to move to the other route, an image at a time from the end
	// while that comes nearer the share.
	move := (1-p.share)*float64(total) - float64(otherPx)
	k, moved := n, 0
	for k > 0 && float64(moved)+float64(px[k-1])/2 < move {
		k--
		moved += px[k]
	}
	if cores > 1 && k > 0 && k%cores != 0 {
		k += cores - k%cores
	}
	p.Engines = min(k, n)
}

// CallsPerBatch is how many engine calls one batch's share takes at most,
// when executors share the GPU's decoders: EngineCalls between them, one
// at least.
func (s Settings) CallsPerBatch(executors int) int { return max(1, s.EngineCalls/max(executors, 1)) }
