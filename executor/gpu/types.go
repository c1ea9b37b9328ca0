package gpu

import (
	"os"
	"strconv"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
	"github.com/sluice-dev/sluice/ops"
)

// What every file of the package shares: a sample's way through a batch,
// the decoder paths, the arena's alignment, pinned buffers.

// sample is one image's way through a batch.
type sample struct {
	src    []byte
	dev    executor.DevSpan // a decoded-image input in device memory instead of src
	hdr    codec.Header
	path   Path
	failed bool
	h, w   int // stored size of the decoded image
	c      int // its channels in device memory
	off    int // arena offset of the decoded image (interleaved)
	planes int // arena offset of nvJPEG's YCbCr planes, converted into off
	sub    nvjpeg.Subsampling
	hw     bool   // the hardware decoder takes it
	pinned []byte // src copied to pinned memory at parse, for a batched nvJPEG call; nil if not
	// factorsAt: the sampling-factor byte a batched call's copy of a
	// greyscale JPEG says 1x1 in (stageJPEG); 0 for none
	factorsAt int
	stage     int // arena offset of the image output's staging (host or another GPU's destination); -1 if none
	geom      ops.Geom
}

// Path is a sample's decoder path: route sets it, runPart and the CPU
// workers dispatch on it, a failure (or a worker without the path's
// state) moves it to PathCPU (retryPath), and the executor counts decoded
// images by its name (Stats, the metric sluice_gpu_decoded_images_total).
// Two paths decode Huffman codes on a CPU worker: PathNvjpegCPUHuffman in
// nvJPEG's decoupled decoder, PathSluiceCoefficients in Sluice's own
// (codec.CoefDecoder).
type Path int

const (
	PathHardware           Path = iota // nvJPEG's hardware engines
	PathHybrid                         // nvJPEG's batched GPU hybrid decoder (without the decoupled one)
	PathCPU                            // libjpeg-turbo or another format's decoder, uploaded
	PathNvjpegCPUHuffman               // nvJPEG's decoupled decoder: Huffman on a CPU worker, the rest on the GPU
	PathNvjpegGPUHuffman               // nvJPEG's decoupled decoder with its GPU-Huffman state, for large images
	PathInput                          // a decoded-image input, copied here as it came (from the host or another GPU)
	PathDevice                         // a decoded-image input in this GPU's memory, read where it lies
	PathSluiceCoefficients             // Sluice's own entropy decoding (codec) on a CPU worker, then sluice_idct (coefficients.go)
	numPaths
)

func (p Path) String() string {
	return [...]string{"hardware", "hybrid", "cpu", "cpu_huffman", "gpu_huffman", "input", "device", "coefficients"}[p]
}

// hasPlanes reports whether the sample's path decodes through nvJPEG's
// YCbCr planes, which need arena space of their own.
func (smp *sample) hasPlanes() bool {
	return smp.path != PathCPU && smp.path != PathInput && smp.path != PathDevice
}

// inArena reports whether the sample's decoded image is in the arena
// (everything but an input read in place).
func (smp *sample) inArena() bool { return smp.path != PathDevice }

// planeBytes is the arena space of nvJPEG's YCbCr planes of the sample, in
// the order lane.decode lays them out.
func (smp *sample) planeBytes() int {
	if smp.sub == nvjpeg.CSSGray {
		return 0 // its one plane is the image
	}
	sx, sy := subsampling(smp.sub)
	cw, ch := (smp.w+sx-1)/sx, (smp.h+sy-1)/sy
	return alignUp(smp.w*smp.h) + 2*alignUp(cw*ch)
}

const align = 256

func alignUp(n int) int { return (n + align - 1) &^ (align - 1) }

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

// growPinned makes *b a pinned buffer of at least n bytes, with room to
// grow by a quarter; its first keep bytes carry over, the rest is lost.
func growPinned(b *[]byte, n, keep int) error {
	if *b != nil && len(*b) >= n {
		return nil
	}
	if keep == 0 {
		freePinned(b) // before the new one: pinned memory is scarce
	}
	nb, err := cuda.MemHostAlloc(max(n+n/4, 4096))
	if err != nil {
		return err
	}
	copy(nb, (*b)[:keep])
	freePinned(b)
	*b = nb
	return nil
}

// freePinned lets go of the pinned buffer *b, if any.
func freePinned(b *[]byte) {
	if *b != nil {
		cuda.MemFreeHost(*b)
		*b = nil
	}
}

// envPercent reads a percentage from the environment as a fraction (0 to
// 1), else def percent.
func envPercent(name string, def int) float64 {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil || n < 0 {
		n = def
	}
	return float64(min(n, 100)) / 100
}

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
