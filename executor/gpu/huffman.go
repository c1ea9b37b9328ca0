package gpu

import (
	"errors"

	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
	"github.com/sluice-dev/sluice/ops"
)

// huffman is nvJPEG's decoupled decoders for progressive JPEGs, which no
// batched decoder takes: each CPU worker Huffman-decodes one image on its
// own thread, and the GPU does the inverse DCT; libjpeg-turbo alone would
// do both on the CPU. A large image's Huffman decoding on one thread would
// hold its whole batch back (a 16-megapixel progressive JPEG takes about
// 0.25 s), so images of more than gpuHuffmanPixels go to the GPU hybrid
// decoupled decoder, which decodes Huffman codes on the GPU, where it
// takes them.
type huffman struct {
	h      *nvjpeg.Handle
	dec    *nvjpeg.Decoder
	gpuDec *nvjpeg.Decoder // nil where nvJPEG lacks it
}

// gpuHuffmanPixels is where the GPU's Huffman decoding takes over (DALI's
// hybrid_huffman_threshold default); SLUICE_GPU_HUFFMAN_PIXELS overrides it
// for measurements.
var gpuHuffmanPixels = envInt("SLUICE_GPU_HUFFMAN_PIXELS", 1_000_000)

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

// huffState is one CPU worker's decode state, with the conversion of its
// image's planes to RGB.
type huffState struct {
	hf   *huffman
	st   *nvjpeg.DecoupledState
	gpu  *nvjpeg.DecoupledState // of gpuDec; nil without it
	conv yccConv
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

func (s *huffState) close() {
	if s == nil {
		return
	}
	s.st.Close()
	s.gpu.Close()
	s.conv.free()
}

// decodeHuffman decodes a progressive JPEG into its arena slot (through its
// planes, as the batched decoders do) and waits. An error leaves the
// sample to be decoded on the CPU.
func (w *cpuWorker) decodeHuffman(smp *sample, base cuda.DevicePtr, f *kernels.Fused, gray bool) error {
	s := w.huff
	s.conv.reset()
	img := s.conv.planes(smp, base, gray)
	st, dec := &s.st, s.hf.dec
	if s.gpu != nil && smp.w*smp.h > gpuHuffmanPixels {
		st, dec = &s.gpu, s.hf.gpuDec
	}
	err := (*st).Decode(smp.src, &img, w.stream)
	if err != nil && *st == s.gpu {
		// Not every stream suits the GPU's Huffman decoding: the CPU's
		// then, on the other state.
		st, dec = &s.st, s.hf.dec
		err = (*st).Decode(smp.src, &img, w.stream)
	}
	if err == nil {
		err = s.conv.launch(f, w.stream)
	}
	if serr := w.stream.Synchronize(); err == nil {
		err = serr
	}
	if smp.w*smp.h*3 > ops.RetainBytes {
		// nvJPEG's buffers only grow: a large image's go with a new state.
		if n, nerr := dec.NewState(nvjpeg.OutputYUV); nerr == nil {
			(*st).Close()
			*st = n
		}
	}
	return err
}
