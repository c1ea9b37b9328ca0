package gpu

import (
	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/reclaim"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
)

// cpuWorker is one CPU decode thread: a libjpeg-turbo/PNG decoder, a
// pinned buffer the decoded pixels are uploaded from, and its own stream
// so that workers' uploads overlap. It also parses headers and runs the
// operators' size rules, for which it holds side-output tensors.
type cpuWorker struct {
	dec    *codec.Decoder
	stream cuda.Stream
	pinned []byte
	ctx    ops.Ctx
	side   [][]ops.Tensor  // per stage, per side port
	sideP  [][]*ops.Tensor // pointers to side, as GPU takes them
}

func newCPUWorker(ch *chain, lim ops.Limits) (*cpuWorker, error) {
	s, err := cuda.NewStream()
	if err != nil {
		return nil, err
	}
	w := &cpuWorker{dec: codec.NewDecoder(), stream: s, ctx: ops.Ctx{Limits: lim}}
	for _, st := range ch.stages {
		ts := make([]ops.Tensor, len(st.side))
		ps := make([]*ops.Tensor, len(st.side))
		for i := range ts {
			ps[i] = &ts[i]
		}
		w.side = append(w.side, ts)
		w.sideP = append(w.sideP, ps)
	}
	return w, nil
}

// bindSide points stage k's side outputs that are pipeline outputs at
// sample s's destination: its host buffer, or for device memory its place
// in the sample's pinned block, uploaded after the kernel.
func (w *cpuWorker) bindSide(k int, st *stage, dst [][]Dest, s int, block []byte) []*ops.Tensor {
	for p, out := range st.side {
		if out < 0 {
			continue
		}
		if d := dst[out][s]; d.Dev == 0 {
			w.side[k][p].Bind(d.Host)
		} else {
			w.side[k][p].Bind(block[st.at[p] : st.at[p]+st.size[p]])
		}
	}
	return w.sideP[k]
}

func (w *cpuWorker) unbindSide(k int) {
	for i := range w.side[k] {
		w.side[k][i].Unbind()
	}
}

// decode decodes one sample at its stored orientation (the kernel
// applies EXIF orientation for every path alike) and uploads it.
func (w *cpuWorker) decode(smp *sample, col ops.Color, lim ops.Limits, base cuda.DevicePtr) error {
	if w == nil {
		return ops.Errorf(ops.BadInput, "no CUDA context for the upload")
	}
	hdr, err := w.dec.Header(smp.src, lim.MaxPixels)
	if err != nil {
		return ops.DecodeError(err)
	}
	opt := codec.Options{Color: codec.RGB}
	switch {
	case col == ops.Gray:
		// libjpeg's own grey (the luma plane), as the CPU executor.
		opt.Color, smp.c = codec.Gray, 1
	case smp.c == 4:
		opt.Color = codec.RGBA
	}
	n := smp.h * smp.w * smp.c
	defer w.trim(smp.h * smp.w * 4)
	if len(w.pinned) < n {
		if w.pinned != nil {
			cuda.MemFreeHost(w.pinned)
			w.pinned = nil
		}
		if w.pinned, err = cuda.MemHostAlloc(n + n/4); err != nil {
			return err
		}
	}
	if err := w.dec.Decode(w.pinned[:n], smp.src, hdr, opt); err != nil {
		return ops.DecodeError(err)
	}
	if err := cuda.MemcpyHtoDAsync(base+cuda.DevicePtr(smp.off), w.pinned[:n], w.stream); err != nil {
		return err
	}
	return w.stream.Synchronize()
}

// trim lets go of what an image of up to held bytes of scratch grew, when
// that is over ops.RetainBytes: the pinned buffer (pinning is slow, but so
// is decoding such an image on the CPU) and the decoder's scratch (CMYK
// samples, at most 4 bytes a pixel).
func (w *cpuWorker) trim(held int) {
	if held <= ops.RetainBytes {
		return
	}
	if len(w.pinned) > ops.RetainBytes {
		cuda.MemFreeHost(w.pinned)
		w.pinned = nil
	}
	w.dec.Close()
	w.dec = codec.NewDecoder()
	reclaim.Released(held)
}

func (w *cpuWorker) close() {
	w.dec.Close()
	if w.pinned != nil {
		cuda.MemFreeHost(w.pinned)
		w.pinned = nil
	}
	if w.stream != 0 {
		w.stream.Destroy()
	}
}
