package gpu

import (
	"errors"

	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
)

// huffman is nvJPEG's decoupled decoder for progressive JPEGs, which no
// batched decoder takes: each CPU worker Huffman-decodes one image on its
// own thread, and the GPU does the inverse DCT; libjpeg-turbo alone would
// do both on the CPU.
type huffman struct {
	h   *nvjpeg.Handle
	dec *nvjpeg.Decoder
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
	return hf, nil
}

func (hf *huffman) close() {
	if hf == nil {
		return
	}
	hf.dec.Close()
	hf.h.Close()
}

// huffState is one CPU worker's decode state, with the conversion of its
// image's planes to RGB.
type huffState struct {
	hf   *huffman
	st   *nvjpeg.DecoupledState
	conv yccConv
}

func (hf *huffman) newState() (*huffState, error) {
	st, err := hf.dec.NewState(nvjpeg.OutputYUV)
	if err != nil {
		return nil, err
	}
	return &huffState{hf: hf, st: st}, nil
}

func (s *huffState) close() {
	if s == nil {
		return
	}
	s.st.Close()
	s.conv.free()
}

// decodeHuffman decodes a progressive JPEG into its arena slot (through its
// planes, as the batched decoders do) and waits. An error leaves the
// sample to be decoded on the CPU.
func (w *cpuWorker) decodeHuffman(smp *sample, base cuda.DevicePtr, f *kernels.Fused, gray bool) error {
	s := w.huff
	s.conv.reset()
	img := s.conv.planes(smp, base, gray)
	err := s.st.Decode(smp.src, &img, w.stream)
	if err == nil {
		err = s.conv.launch(f, w.stream)
	}
	if serr := w.stream.Synchronize(); err == nil {
		err = serr
	}
	if smp.w*smp.h*3 > pinnedKeep {
		// nvJPEG's buffers only grow: a large image's go with a new state.
		if st, nerr := s.hf.dec.NewState(nvjpeg.OutputYUV); nerr == nil {
			s.st.Close()
			s.st = st
		}
	}
	return err
}
