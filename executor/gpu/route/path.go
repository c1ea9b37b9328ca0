// Package route decides where the GPU executor decodes each image, in one
// place and without a GPU: at parse time from the facts a JPEG's headers
// state and what the device offers (Decide), per batch part how many of
// the engines' JPEGs the engines take (Splitter.Split), and after a
// decoder failed on an image, where it goes next (Fallback). The executor
// only carries the decisions out.
//
//	baseline JPEG            the engines (their share of the part) | the coefficient route on the CPU
//	                         workers (the rest: SluiceCoefficients); while other executors are busy,
//	                         both from one queue, but for parts of fewer than MinSharedPart
//	  greyscale saying sampling factors other than 1x1: the same, the engines' copy saying 1x1
//	progressive JPEG         the coefficient route on the CPU workers
//	over GPUHuffmanPixels    not the coefficient route: nvJPEG's decoupled decoder, its GPU-Huffman
//	                         state (NvjpegGPUHuffman); a baseline one without the decoupled decoder:
//	                         the batched GPU hybrid decoder (Hybrid)
//	everything else, and whatever a GPU path fails on   libjpeg-turbo / the format's decoder (CPU)
//
// With Settings.SluiceGPUHuffman, the baseline JPEGs the engines leave go
// to Sluice's entropy decoding on the SMs (SluiceGPUHuffman) instead of
// the CPU workers, falling back to them.
//
// Both routes run at once because the engines alone top out, the batched
// GPU hybrid decoder runs Huffman decoding on one thread, and the
// coefficient route on the CPU workers adds its images to the engines'
// (docs/perf.md).
package route

// Path is a sample's decoder path: Decide sets it, the executor's lanes
// and CPU workers dispatch on it, Fallback moves it after a failure, and
// the executor counts decoded images by its name (the metric
// sluice_gpu_decoded_images_total). Two paths decode Huffman codes on a
// CPU worker: NvjpegCPUHuffman in nvJPEG's decoupled decoder,
// SluiceCoefficients in Sluice's own (codec.CoefDecoder).
type Path uint8

const (
	Hardware           Path = iota // nvJPEG's hardware engines
	Hybrid                         // nvJPEG's batched GPU hybrid decoder (without the decoupled one)
	CPU                            // libjpeg-turbo or another format's decoder, uploaded
	NvjpegCPUHuffman               // nvJPEG's decoupled decoder: Huffman on a CPU worker, the rest on the GPU
	NvjpegGPUHuffman               // nvJPEG's decoupled decoder with its GPU-Huffman state, for large images
	Input                          // a decoded-image input, copied here as it came (from the host or another GPU)
	Device                         // a decoded-image input in this GPU's memory, read where it lies
	SluiceCoefficients             // Sluice's own entropy decoding (codec) on a CPU worker, then sluice_idct
	SluiceGPUHuffman               // Sluice's own entropy decoding on the SMs (sluice_huffman), then sluice_idct
	NumPaths
)

var pathNames = [NumPaths]string{"hardware", "hybrid", "cpu", "cpu_huffman", "gpu_huffman", "input", "device", "coefficients",
	"sluice_gpu_huffman"}

func (p Path) String() string {
	if p < NumPaths {
		return pathNames[p]
	}
	return "unknown"
}

// OnWorkers reports whether the CPU workers carry the path out (every path
// but the engines', the batched hybrid decoder's, the SMs' and an input
// read in place).
func (p Path) OnWorkers() bool {
	return p != Hardware && p != Hybrid && p != Device && p != SluiceGPUHuffman
}

// Planes reports whether the path decodes through nvJPEG's YCbCr plane
// layout (the coefficient route writes the same), which needs arena space
// of its own before the conversion.
func (p Path) Planes() bool { return p != CPU && p != Input && p != Device }

// Fallback is where an image goes after path p failed on it, or a worker
// lacks p's state: the GPU-Huffman state's failures to the CPU-Huffman
// one (not every stream suits the GPU's Huffman decoding), the SMs' to
// the same entropy decoding on a CPU worker (what the SMs' decoder does
// not take: several scans, large MCUs; it gives the same coefficients),
// everything else to libjpeg-turbo, which also names the error.
func Fallback(p Path) Path {
	switch p {
	case NvjpegGPUHuffman:
		return NvjpegCPUHuffman
	case SluiceGPUHuffman:
		return SluiceCoefficients
	}
	return CPU
}
