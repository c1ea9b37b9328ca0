package gpu

import (
	"runtime"
	"slices"
	"sync"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
)

// smHuffman is an executor's route.SluiceGPUHuffman: a part's baseline
// JPEGs entropy-decoded on the SMs (kernels.HuffmanDecoder) into one
// device buffer of coefficients laid out as the CPU workers' coefficient
// route lays them out, then one IDCT and one conversion launch, as that
// route's flush: the same coefficients, so the same pixels. It runs beside
// the engines and the CPU workers, on a stream of its own.
type smHuffman struct {
	dec    *kernels.HuffmanDecoder
	stream cuda.Stream
	dev    devBuf // the images' coefficients, then the IDCT structs
	pinned []byte // the IDCT structs' upload
	comps  []kernels.IDCT
	conv   yccConv
	added  []int // the samples added to dec, in its order
	facts  []*codec.JPEGEntropy
}

func newSMHuffman(f *kernels.Fused) (*smHuffman, error) {
	d, err := kernels.NewHuffmanDecoder(f)
	if err != nil {
		return nil, err
	}
	s, err := cuda.NewStream()
	if err != nil {
		d.Close()
		return nil, err
	}
	return &smHuffman{dec: d, stream: s}, nil
}

// smChunkBytes bounds the device buffer of coefficients: a part whose
// images need more is decoded in several launches, one after another
// (about a hundred ImageNet-size photos a launch).
const smChunkBytes = 64 << 20

// decode decodes the listed samples and waits; failed are those it did
// not decode, each to take its fallback. The arena's planes and slots are
// the samples' own, as on every path.
func (h *smHuffman) decode(list []int, samples []sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec) (failed []int, err error) {
	var chunk []smImage
	bytes := 0
	flush := func() {
		if len(chunk) > 0 {
			fl, ferr := h.run(chunk, samples, base, f, dec)
			failed = append(failed, fl...)
			if ferr != nil {
				err = ferr
			}
		}
		chunk, bytes = chunk[:0], 0
	}
	h.readFacts(list, samples)
	defer clear(h.facts) // they point into the samples' inputs
	for i, s := range list {
		facts := h.facts[i]
		if facts == nil || facts.Blocks*codec.CoefBlock > smChunkBytes {
			failed = append(failed, s)
			continue
		}
		n := alignUp(facts.Blocks * codec.CoefBlock)
		if bytes+n > smChunkBytes {
			flush()
		}
		chunk = append(chunk, smImage{s, facts, bytes})
		bytes += n
	}
	flush()
	return failed, err
}

// factsPerThread is the fewest images a thread reads the facts of: a
// part's reading is spread over threads where it would otherwise hold the
// launch back (about 15 µs an ImageNet photo).
const factsPerThread = 16

// readFacts sets h.facts[i] to list[i]'s entropy facts, nil for a JPEG
// the SMs do not take, on up to GOMAXPROCS threads.
func (h *smHuffman) readFacts(list []int, samples []sample) {
	h.facts = slices.Grow(h.facts[:0], len(list))[:len(list)]
	threads := min(runtime.GOMAXPROCS(0), (len(list)+factsPerThread-1)/factsPerThread)
	next := counter(len(list))
	var wg sync.WaitGroup
	for range max(threads, 1) {
		wg.Go(func() {
			for i, ok := next(); ok; i, ok = next() {
				h.facts[i], _ = codec.ReadJPEGEntropy(samples[list[i]].src)
			}
		})
	}
	wg.Wait()
}

// smImage is one image of a launch: its facts and where its coefficients
// go in the device buffer.
type smImage struct {
	s     int
	facts *codec.JPEGEntropy
	at    int
}

// run decodes one launch's images and waits.
func (h *smHuffman) run(images []smImage, samples []sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec) (failed []int, err error) {
	h.dec.Reset()
	h.comps, h.added = h.comps[:0], h.added[:0]
	h.conv.reset()
	// The IDCT structs, with offsets into the buffer until its address
	// is known.
	var todo []smImage
	end, blocks := 0, 0
	for _, im := range images {
		comps := im.facts.Comps
		var err error
		h.comps, blocks, err = idctStructs(h.comps, &h.conv, &samples[im.s], len(comps),
			func(i int) codec.CoefComponent { return comps[i].CoefComponent }, im.at, blocks, base, dec)
		if err != nil {
			failed = append(failed, im.s)
			continue
		}
		todo = append(todo, im)
		end = im.at + alignUp(im.facts.Blocks*codec.CoefBlock)
	}
	if len(todo) == 0 {
		return failed, nil
	}
	all := func(err error) ([]int, error) {
		for _, im := range todo {
			failed = append(failed, im.s)
		}
		return failed, err
	}
	descs := len(h.comps) * kernels.IDCTSize
	if err := h.dev.grow(end + descs); err != nil {
		return all(err)
	}
	for _, im := range todo {
		if err := h.dec.Add(samples[im.s].src, im.facts, h.dev.ptr+cuda.DevicePtr(im.at)); err != nil {
			// Not taken (too many subsequences): the IDCT still runs over
			// its blocks, and the fallback writes its planes again.
			failed = append(failed, im.s)
			continue
		}
		h.added = append(h.added, im.s)
	}
	for i := range h.comps {
		h.comps[i].Coef += uint64(h.dev.ptr)
		if err := h.comps[i].Check(); err != nil {
			return all(err)
		}
	}
	if err := growPinned(&h.pinned, descs, 0); err != nil {
		return all(err)
	}
	copy(h.pinned, kernels.Bytes(h.comps))
	err = h.dec.Launch(h.stream)
	if err == nil {
		err = cuda.MemcpyHtoDAsync(h.dev.ptr+cuda.DevicePtr(end), h.pinned[:descs], h.stream)
	}
	if err == nil {
		err = f.LaunchIDCT(h.stream, h.dev.ptr+cuda.DevicePtr(end), len(h.comps), blocks)
	}
	if err == nil {
		err = h.conv.launch(f, h.stream)
	}
	// Wait even after an error: the buffers are the next launch's.
	if serr := h.stream.Synchronize(); err == nil {
		err = serr
	}
	if err != nil {
		return all(err)
	}
	// An image the kernel refused (damaged data) leaves its planes to
	// its fallback, which decodes it again and names the damage.
	for i, s := range h.added {
		if h.dec.Err(i) != nil {
			failed = append(failed, s)
		}
	}
	return failed, nil
}

func (h *smHuffman) close() {
	if h == nil {
		return
	}
	h.dec.Close()
	h.dev.free()
	freePinned(&h.pinned)
	h.conv.free()
	if h.stream != 0 {
		h.stream.Destroy()
	}
}
