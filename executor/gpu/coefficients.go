package gpu

import (
	"fmt"
	"os"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
	"github.com/sluice-dev/sluice/ops"
)

// coefState is one CPU worker's coefficient route for progressive JPEGs:
// codec.CoefDecoder's entropy decoding on the worker's thread, the
// coefficients uploaded through the worker's pinned buffer, then
// sluice_idct and sluice_ycc on its stream. It gives libjpeg's decode
// exactly (nvJPEG's IDCT rounds otherwise), and its CPU step is the bound
// of progressive JPEGs on the GPU, which codec's decoder runs 1.5 to 1.9
// times as fast as libjpeg-turbo's on an H200's cores (docs/perf.md).
// Baseline JPEGs stay with nvJPEG's decoupled decoder beside the engines:
// its host step was faster there than codec's.
type coefState struct {
	dec    *codec.CoefDecoder
	nz     []uint64       // the decoder's scratch: a mask a block
	dev    cuda.DevicePtr // the upload's copy: the IDCT structs, then the blocks
	devLen int
	comps  []kernels.IDCT
}

// For measurements, SLUICE_GPU_COEFFICIENTS=0 leaves progressive JPEGs to
// nvJPEG's decoupled decoder, and =all sends the baseline JPEGs the
// engines do not take through the route too.
var coefRoute, coefSequential = os.Getenv("SLUICE_GPU_COEFFICIENTS") != "0", os.Getenv("SLUICE_GPU_COEFFICIENTS") == "all"

// coefHead is the upload's room for the IDCT structs of up to four
// components, before the blocks.
var coefHead = alignUp(4 * kernels.IDCTSize)

func newCoefState() (*coefState, error) {
	d, err := codec.NewCoefDecoder()
	if err != nil {
		return nil, err
	}
	return &coefState{dec: d}, nil
}

// takesCoefficients reports whether a JPEG nvJPEG would take goes to the
// coefficient route: progressive ones but those over gpuHuffmanPixels,
// whose Huffman decoding on one thread would hold their batch back. That
// bound also bounds the route's buffers.
func takesCoefficients(hdr codec.Header) bool {
	return coefRoute && hdr.Pixels() <= gpuHuffmanPixels && (hdr.HuffmanProgressive() || coefSequential && hdr.HuffmanSequential())
}

// decodeCoefficients decodes a JPEG into its arena slot through its
// planes, as the nvJPEG paths do, and waits. An error leaves the sample to
// libjpeg-turbo, which also names any damage.
func (w *cpuWorker) decodeCoefficients(smp *sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec) error {
	s := w.coef
	blocks, err := s.dec.Frame(smp.src)
	if err != nil {
		return err
	}
	n := coefHead + blocks*codec.CoefBlock
	w.held(n)
	if err := growPinned(&w.pinned, n); err != nil {
		return err
	}
	if err := s.grow(n); err != nil {
		return err
	}
	if len(s.nz) < blocks {
		s.nz = make([]uint64, blocks+blocks/4)
	}
	if err := s.dec.Decode(w.pinned[coefHead:n], s.nz[:blocks], smp.src); err != nil {
		return err
	}
	nc := s.dec.Components()
	if (nc == 1) != (smp.sub == nvjpeg.CSSGray) || (nc != 1 && nc != 3) {
		return fmt.Errorf("JPEG of %d components, subsampling %d", nc, smp.sub)
	}
	w.conv.reset()
	img := w.conv.planes(smp, base, dec)
	if dec.Color == ops.Gray {
		nc = 1 // the luma plane is the image
	}
	sx, sy := subsampling(smp.sub)
	first := 0
	s.comps = s.comps[:0]
	for i := range nc {
		c := s.dec.Component(i)
		// The planes the conversion reads must be libjpeg's.
		pw, ph := smp.w, smp.h
		if i > 0 {
			pw, ph = (smp.w+sx-1)/sx, (smp.h+sy-1)/sy
		}
		if c.W != pw || c.Height != ph {
			return fmt.Errorf("JPEG component %d of %dx%d samples where its planes hold %dx%d", i, c.W, c.Height, pw, ph)
		}
		m := kernels.IDCT{
			Coef: uint64(s.dev) + uint64(coefHead+c.First*codec.CoefBlock), Dst: uint64(img.Channel[i]),
			Pitch: int32(c.Pitch), BlocksW: int32(c.BlocksW), BlocksH: int32(c.BlocksH), W: int32(c.W), H: int32(c.Height),
			DstPitch: int32(img.Pitch[i]), First: int32(first), Quant: c.Quant,
		}
		if err := m.Check(); err != nil {
			return err
		}
		first += c.BlocksW * c.BlocksH
		s.comps = append(s.comps, m)
	}
	copy(w.pinned, kernels.Bytes(s.comps))
	err = cuda.MemcpyHtoDAsync(s.dev, w.pinned[:n], w.stream)
	if err == nil {
		err = f.LaunchIDCT(w.stream, s.dev, nc, first)
	}
	if err == nil {
		err = w.conv.launch(f, w.stream)
	}
	// Wait even after an error: the pinned buffer is the next image's.
	if serr := w.stream.Synchronize(); err == nil {
		err = serr
	}
	return err
}

// grow makes the device copy hold n bytes, with room to grow by a quarter.
func (s *coefState) grow(n int) error {
	if s.devLen >= n {
		return nil
	}
	s.freeDev()
	d, err := cuda.MemAlloc(n + n/4)
	if err != nil {
		return err
	}
	s.dev, s.devLen = d, n+n/4
	return nil
}

func (s *coefState) freeDev() {
	if s.dev != 0 {
		cuda.MemFree(s.dev)
		s.dev, s.devLen = 0, 0
	}
}

// trim lets go of buffers over ops.RetainBytes (cpuWorker.trim).
func (s *coefState) trim() {
	if s == nil {
		return
	}
	if s.devLen > ops.RetainBytes {
		s.freeDev()
	}
	if len(s.nz)*8 > ops.RetainBytes {
		s.nz = nil
	}
}

func (s *coefState) close() {
	if s == nil {
		return
	}
	s.dec.Close()
	s.freeDev()
}
