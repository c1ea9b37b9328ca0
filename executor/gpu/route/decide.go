package route

import (
	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
)

// Decoders is what the executor has to decode JPEGs with.
type Decoders struct {
	Engines      bool // the hardware JPEG engines, given a share of the JPEGs
	Decoupled    bool // nvJPEG's decoupled decoder (Huffman on a CPU worker)
	DecoupledGPU bool // and its GPU-Huffman state
}

// Decision is where one image is decoded.
type Decision struct {
	// Path is its route off the engines; CPU for what no GPU decoder
	// takes.
	Path Path
	// Engines: a baseline JPEG the engines may take instead of Path;
	// Splitter.Split decides per part.
	Engines bool
	// Chroma is the plane layout the GPU paths decode it to (its chroma
	// subsampling; CSSGray for a greyscale JPEG, whose one plane is the
	// image); CSSUnknown on the CPU path.
	Chroma nvjpeg.Subsampling
	// GreyFactorsAt is the byte the engines' copy of a greyscale JPEG
	// says 1x1 sampling in (the engines of an H200 with driver 580 decode
	// one saying 2x2 wrongly); 0 for none.
	GreyFactorsAt int
}

// Decide routes a JPEG of the given pixels from its headers' facts; a
// zero JPEGInfo (another format) goes to the CPU.
func (s Settings) Decide(j codec.JPEGInfo, pixels int, d Decoders) Decision {
	cpu := Decision{Path: CPU, Chroma: nvjpeg.CSSUnknown}
	// nvJPEG reads three components as YCbCr: an RGB-coded JPEG (Adobe
	// transform 0) would come out in wrong colours. CMYK, arithmetic,
	// lossless and 12-bit JPEGs are libjpeg-turbo's alone.
	if j.Space != codec.SpaceYCbCr && j.Space != codec.SpaceGray || !j.Huffman() || j.Precision != 8 {
		return cpu
	}
	css := Chroma(j)
	if css == nvjpeg.CSSUnknown {
		return cpu
	}
	sequential := j.SOF != 0xC2
	// A progressive script that ends with refinement pending: libjpeg
	// (and Pillow) smooth its blocks, nvJPEG does not, and nvJPEG's
	// stream parser refused one (Go's video-001.progressive.truncated.jpeg).
	if !sequential && j.Pending {
		return cpu
	}
	dec := Decision{Chroma: css, Engines: sequential && d.Engines}
	if css == nvjpeg.CSSGray {
		dec.GreyFactorsAt = j.GreyFactorsAt
	}
	// The coefficient route's bound bounds its buffers too: one large
	// image's Huffman decoding on one thread would hold its batch back.
	large := pixels > s.GPUHuffmanPixels
	switch {
	case !large && sequential && s.SluiceGPUHuffman:
		dec.Path = SluiceGPUHuffman
	case !large && s.coefficients(sequential):
		dec.Path = SluiceCoefficients
	case d.Decoupled && large && d.DecoupledGPU:
		dec.Path = NvjpegGPUHuffman
	case d.Decoupled:
		dec.Path = NvjpegCPUHuffman
	case sequential:
		dec.Path = Hybrid
	default:
		return cpu
	}
	return dec
}

// coefficients reports whether the coefficient route takes a JPEG of
// that process, under the settings.
func (s Settings) coefficients(sequential bool) bool {
	switch s.Coefficients {
	case CoefficientsAll:
		return true
	case CoefficientsProgressive:
		return !sequential
	}
	return false
}

// Chroma is the plane layout of a JPEG's components, from its frame
// header's sampling factors: greyscale for one component; for three, the
// ratio of the luma's factors to the chroma's, both chroma components
// alike (what nvJPEG reports, and what the planes and the conversion
// kernel follow: luma 2x2 with chroma 1x2 is 4:2:2). Other layouts are
// CSSUnknown: the CPU decodes them.
func Chroma(j codec.JPEGInfo) nvjpeg.Subsampling {
	switch j.Components {
	case 1:
		return nvjpeg.CSSGray
	case 3:
	default:
		return nvjpeg.CSSUnknown
	}
	y, c := j.Sampling[0], j.Sampling[1]
	if j.Sampling[2] != c || c.H == 0 || c.V == 0 || y.H%c.H != 0 || y.V%c.V != 0 {
		return nvjpeg.CSSUnknown
	}
	switch [2]uint8{y.H / c.H, y.V / c.V} {
	case [2]uint8{1, 1}:
		return nvjpeg.CSS444
	case [2]uint8{2, 1}:
		return nvjpeg.CSS422
	case [2]uint8{2, 2}:
		return nvjpeg.CSS420
	case [2]uint8{1, 2}:
		return nvjpeg.CSS440
	}
	return nvjpeg.CSSUnknown
}
