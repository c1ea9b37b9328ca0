package gpu

import (
	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
)

// Where a JPEG is decoded is decided here, and only here: route at parse
// time from its header, split per batch part between the engines and the
// CPU workers, and the fallbacks after a decoder failed on it.
//
//	baseline JPEG            engines (the share) | decoupled on the CPU workers (the rest)
//	  greyscale with sampling factors other than 1x1: the same, the engines' copy saying 1x1 (stageJPEG)
//	progressive JPEG         the coefficient route on the CPU workers (PathCoefficients)
//	over gpuHuffmanPixels    not the coefficient route: decoupled
//	decoupled, over gpuHuffmanPixels  its GPU-Huffman state (PathGPUHuffman)
//	no decoupled decoder     the batched GPU hybrid decoder instead (PathHybrid)
//	everything else, and whatever an nvJPEG path fails on   libjpeg-turbo / the format's decoder (PathCPU)
//
// Measured on an H200 (docs/perf.md): the engines alone top out near
// 20k baseline photos a second, the batched GPU hybrid decoder runs
// Huffman decoding on one thread, and the decoupled decoder on 16 CPU
// workers adds several thousand a second beside the engines: both routes
// run at once.

// route picks the decoder for a sample whose header was read: nvJPEG for
// Huffman-coded JPEGs whose chroma layout is one libjpeg's upsampling
// (which the conversion kernel follows) covers; the CPU for the rest.
// Every path writes interleaved RGB, but for a PNG's alpha when the
// pipeline keeps it and for greyscale JPEGs, whose luma plane is the
// image. smp.hw marks a baseline JPEG the engines may take; split
// decides per part.
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
		path = PathCoefficients
	case smp.hdr.HuffmanSequential() && decoupled:
		path = PathCPUHuffman
	case smp.hdr.HuffmanSequential():
		path = PathHybrid
	case smp.hdr.HuffmanProgressive() && decoupled:
		path = PathCPUHuffman
	default:
		return
	}
	info, err := e.svc.hy.h.ImageInfo(smp.src)
	if err != nil {
		return
	}
	switch info.Subsampling {
	case nvjpeg.CSSGray:
		smp.c = 1
		smp.factorsAt = smp.hdr.GreyFactorsAt()
	case nvjpeg.CSS444, nvjpeg.CSS422, nvjpeg.CSS420, nvjpeg.CSS440:
	default:
		return
	}
	smp.hw = smp.hdr.HuffmanSequential() && e.hw != nil && z.hw.supported(smp.src)
	smp.path, smp.sub = path, info.Subsampling
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
		return PathGPUHuffman
	}
	return PathCPUHuffman
}

// gpuHuffmanPixels is where the GPU's Huffman decoding takes over (DALI's
// hybrid_huffman_threshold default); SLUICE_GPU_HUFFMAN_PIXELS overrides it
// for measurements.
var gpuHuffmanPixels = envInt("SLUICE_GPU_HUFFMAN_PIXELS", 1_000_000)

// retryPath is where a sample goes after its nvJPEG path failed on it:
// libjpeg-turbo, which also names the error.
func retryPath(Path) Path { return PathCPU }

// splitter decides how many of a part's engine-decodable JPEGs go to the
// engines; the others join the CPU workers' list (decoupled).
type splitter struct {
	// Of the part's pixels on the engines and the CPU workers together,
	// the share for the engines: what the CPU workers have already (the
	// JPEGs only they decode) counts against their remainder, so a part
	// full of progressive JPEGs sends every colour baseline JPEG to the
	// engines.
	share float64
	// auto: left to the executor, whose threads share the cores; then
	// busyHWShare applies while other executors of the GPU are busy too.
	auto bool
}

// DefaultHWShare is executor.Options.HWShare's default here: every colour
// baseline JPEG the engines take goes to them. Measured on an H200
// (docs/perf.md, 2026-12-01): a share of 0.65-0.75 is 5-15% faster on
// colour baseline JPEGs alone at batch 256, but up to 40% slower at batch
// 64 and no faster on the corpus's whole mix; a controller that moved the
// share to make both routes finish together was no faster than either.
const DefaultHWShare = 1.0

// busyHWShare is the default share while two or more executors of the GPU
// have a batch in flight and share its cores (Executor.threads): each then
// leaves the other cores, and the CPU workers' route adds to the engines.
// Measured on an H200, two instances: 2-9% more colour baseline JPEGs a
// second at batches 64 and 256 than a share of 1 (docs/perf.md, 2026-12-02
// 13:53 and 14:02 UTC); with 16 threads each it was no faster (10:29).
const busyHWShare = 0.75

// newSplitter takes executor.Options.HWShare (negative: the default);
// shared says the executor's threads share the cores with its GPU's other
// executors.
func newSplitter(configured float64, shared bool) splitter {
	if configured < 0 {
		return splitter{share: DefaultHWShare, auto: shared}
	}
	return splitter{share: min(configured, 1)}
}

// count is how many of the engine-decodable images, of px pixels each, go
// to the engines (the first ones), when the CPU workers have cpuPx pixels
// to decode already and busy executors of the GPU have a batch in flight:
// the share, rounded up to whole rounds of the engines' cores.
func (sp *splitter) count(px []int, cpuPx, cores, busy int) int {
	share := sp.share
	if sp.auto && busy > 1 {
		share = busyHWShare
	}
	n := len(px)
	total := cpuPx
	for _, p := range px {
		total += p
	}
	// Pixels to move to the CPU workers, an image at a time from the end
	// while that comes nearer the share.
	move := (1-share)*float64(total) - float64(cpuPx)
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
