package gpu

import (
	"errors"

	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
	"github.com/sluice-dev/sluice/ops"
)

// huffman is nvJPEG's decoupled decoders, for the JPEGs the coefficient
// route does not take (over route.Settings.GPUHuffmanPixels, or all with
// the route off): each CPU worker Huffman-decodes one image on its own
// thread, and the GPU does the inverse DCT; libjpeg-turbo alone would do
// both on the CPU.
// Large images go to the GPU hybrid decoupled decoder, which decodes
// Huffman codes on the GPU (route.NvjpegGPUHuffman).
type huffman struct {
	h      *nvjpeg.Handle
	dec    *nvjpeg.Decoder
	gpuDec *nvjpeg.Decoder // nil where nvJPEG lacks it
}

func newHuffman() (hf *huffman, err error) {
	if !nvjpeg.Decoupled() {
		return nil, errors.New("nvJPEG has no decoupled decoder")
	}
	hf = &huffman{}
	defer func() {
		if err != nil {
			hf.close()
		}
	}()
	if hf.h, err = nvjpeg.NewHandle(nvjpeg.Default); err != nil {
		return nil, err
	}
	if hf.dec, err = hf.h.NewDecoder(nvjpeg.Hybrid); err != nil {
		return nil, err
	}
	hf.gpuDec, _ = hf.h.NewDecoder(nvjpeg.GPUHybrid)
	return hf, nil
}

func (hf *huffman) close() {
	if hf == nil {
		return
	}
	hf.gpuDec.Close()
	hf.dec.Close()
	hf.h.Close()
}

// huffState is one CPU worker's decoupled decode states.
type huffState struct {
	hf  *huffman
	st  *nvjpeg.DecoupledState
	gpu *nvjpeg.DecoupledState // of gpuDec; nil without it
}

func (hf *huffman) newState() (*huffState, error) {
	st, err := hf.dec.NewState(nvjpeg.OutputYUV)
	if err != nil {
		return nil, err
	}
	s := &huffState{hf: hf, st: st}
	if hf.gpuDec != nil {
		s.gpu, _ = hf.gpuDec.NewState(nvjpeg.OutputYUV)
	}
	return s, nil
}

// renew swaps the states for new ones, which let go of the buffers the
// old ones grew (nvJPEG's only grow); a state that cannot be made keeps
// its old one.
func (s *huffState) renew() {
	if s == nil {
		return
	}
	if n, err := s.hf.dec.NewState(nvjpeg.OutputYUV); err == nil {
		s.st.Close()
		s.st = n
	}
	if s.gpu != nil {
		if n, err := s.hf.gpuDec.NewState(nvjpeg.OutputYUV); err == nil {
			s.gpu.Close()
			s.gpu = n
		}
	}
}

func (s *huffState) close() {
	if s == nil {
		return
	}
	s.st.Close()
	s.gpu.Close()
}

// decodeHuffman decodes a JPEG into its arena slot (through its planes, as
// the batched decoders do) on the decoupled state its path names, and
// waits; a path this worker lacks the state of, or whose decode fails,
// takes its fallback (the CPU-Huffman state after the GPU-Huffman one),
// recorded in smp.path. An error leaves the sample to be decoded on the
// CPU.
func (w *cpuWorker) decodeHuffman(smp *sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec) error {
	s := w.huff
	w.conv.reset()
	img := w.conv.planes(smp, base, dec)
	if smp.path == route.NvjpegGPUHuffman && s.gpu == nil {
		smp.path = route.Fallback(smp.path)
	}
	var err error
	if smp.path == route.NvjpegGPUHuffman {
		if err = s.gpu.Decode(smp.src, &img, w.stream); err != nil {
			smp.path = route.Fallback(smp.path)
		}
	}
	if smp.path == route.NvjpegCPUHuffman {
		err = s.st.Decode(smp.src, &img, w.stream)
	}
	if err == nil {
		err = w.conv.launch(f, w.stream)
	}
	if serr := w.stream.Synchronize(); err == nil {
		err = serr
	}
	w.held(smp.w * smp.h * 3)
	return err
}
