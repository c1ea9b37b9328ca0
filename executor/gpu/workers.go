package gpu

import (
	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/internal/reclaim"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
)

// cpuWorker is one CPU decode thread of a GPU's service: a
// libjpeg-turbo/PNG decoder, a pinned buffer the decoded pixels are
// uploaded from, and its own stream so that workers' uploads overlap.
type cpuWorker struct {
	id     int // its number in the service, for traces
	dec    *codec.Decoder
	huff   *huffState // nil without the decoupled decoder
	coef   *coefState // nil if it could not be made: progressive JPEGs then take another route
	conv   yccConv    // the YCbCr planes of huff's image to RGB
	stream cuda.Stream
	pinned []byte
	// grown is the most scratch an image over ops.RetainBytes made the
	// worker hold since its last trim (0: none), which the service's
	// idle sweep lets go of.
	grown int
}

func newCPUWorker(id int, huff *huffman) (*cpuWorker, error) {
	s, err := cuda.NewStream()
	if err != nil {
		return nil, err
	}
	w := &cpuWorker{id: id, dec: codec.NewDecoder(), stream: s}
	if huff != nil {
		// Without a state of its own the worker decodes progressive
		// JPEGs with libjpeg-turbo (decodeCPU).
		w.huff, _ = huff.newState()
	}
	w.coef, _ = newCoefState()
	return w, nil
}

// parser is one executor's state for parsing a batch's samples on one
// thread: codec's header reader (whose facts route the JPEG: its header is
// read once), the operators' context and the side-output tensors their
// size rules fill. An executor's parsers are its own, so that it parses its
// next batch while the service's workers decode another executor's.
type parser struct {
	hdr   *codec.Decoder
	ctx   ops.Ctx
	side  [][]ops.Tensor  // per stage, per side port
	sideP [][]*ops.Tensor // pointers to side, as GPU takes them
}

func newParser(ch *chain, lim ops.Limits) *parser {
	z := &parser{hdr: codec.NewDecoder(), ctx: ops.Ctx{Limits: lim}}
	for _, st := range ch.stages {
		ts := make([]ops.Tensor, len(st.side))
		ps := make([]*ops.Tensor, len(st.side))
		for i := range ts {
			ps[i] = &ts[i]
		}
		z.side = append(z.side, ts)
		z.sideP = append(z.sideP, ps)
	}
	return z
}

func (z *parser) close() { z.hdr.Close() }

// bindSide points stage k's side outputs that are pipeline outputs at
// sample s's destination: its host buffer, or for device memory its place
// in the sample's pinned block, uploaded after the kernel.
func (z *parser) bindSide(k int, st *stage, dst [][]Dest, s int, block []byte) []*ops.Tensor {
	for p, out := range st.side {
		if out < 0 {
			continue
		}
		switch d := dst[out][s]; {
		case d.Discarded():
			// Computed beside the image, written nowhere.
		case d.Dev == 0:
			z.side[k][p].Bind(d.Host)
		default:
			z.side[k][p].Bind(block[st.at[p] : st.at[p]+st.size[p]])
		}
	}
	return z.sideP[k]
}

func (z *parser) unbindSide(k int) {
	for i := range z.side[k] {
		z.side[k][i].Unbind()
	}
}

// decode decodes one sample at its stored orientation (the kernel
// applies EXIF orientation for every path alike) and uploads it; dec's
// background and CMYK rule apply as in the CPU executor's decode.
func (w *cpuWorker) decode(smp *sample, dec ops.DecodeSpec, lim ops.Limits, base cuda.DevicePtr) error {
	if w == nil {
		return errNoContext
	}
	hdr, err := w.dec.Header(smp.src, lim)
	if err != nil {
		return ops.DecodeError(err)
	}
	opt := codec.Options{Color: codec.RGB, Background: dec.Background, CMYK: dec.CMYK, FastUpsample: dec.FastUpsample}
	switch {
	case dec.Color == ops.Gray, smp.c == 1:
		// libjpeg's own grey (the luma plane), as the CPU executor; for
		// a greyscale JPEG the kernel repeats it into the colours.
		opt.Color, smp.c = codec.Gray, 1
	case smp.c == 4:
		opt.Color = codec.RGBA
	}
	n := smp.h * smp.w * smp.c
	w.held(hdr.Scratch(opt))
	if err := growPinned(&w.pinned, n, 0); err != nil {
		return err
	}
	err = w.dec.Decode(w.pinned[:n], smp.src, hdr, opt)
	reclaim.ReleasedC(hdr.Memory) // what the C decoder freed, into glibc's arenas
	if err != nil {
		return ops.DecodeError(err)
	}
	if err := cuda.MemcpyHtoDAsync(base+cuda.DevicePtr(smp.off), w.pinned[:n], w.stream); err != nil {
		return err
	}
	return w.stream.Synchronize()
}

// decodeOwn decodes sample s on its GPU-side path that runs on the
// worker's thread (route.SluiceCoefficients, gathered until the worker's
// next coefState.flush; nvJPEG's decoupled paths); took is false where the
// worker lacks that path's state.
func (w *cpuWorker) decodeOwn(s int, smp *sample, base cuda.DevicePtr, f *kernels.Fused, dec ops.DecodeSpec) (took bool, err error) {
	switch {
	case w == nil:
	case smp.path == route.SluiceCoefficients && w.coef != nil:
		err := w.coef.gather(s, smp, base, dec)
		w.held(len(w.coef.pinned))
		return true, err
	case (smp.path == route.NvjpegCPUHuffman || smp.path == route.NvjpegGPUHuffman) && w.huff != nil:
		return true, w.decodeHuffman(smp, base, f, dec)
	}
	return false, nil
}

// upload copies a decoded-image input's pixels to the sample's place,
// from host memory or another GPU's.
func (w *cpuWorker) upload(smp *sample, base cuda.DevicePtr) error {
	if w == nil {
		return errNoContext
	}
	dst := base + cuda.DevicePtr(smp.off)
	var err error
	if smp.dev.Ptr != 0 {
		err = cuda.MemcpyPeerAsync(dst, cuda.DevicePtr(smp.dev.Ptr), smp.dev.Len, w.stream)
	} else {
		err = cuda.MemcpyHtoDAsync(dst, smp.src, w.stream)
	}
	if err != nil {
		return err
	}
	return w.stream.Synchronize()
}

// held notes that an image made the worker hold up to n bytes of scratch:
// the pinned buffer and the decoder's (CMYK samples, at most 4 bytes a
// pixel), or nvJPEG's decoupled state, or the coefficient route's.
func (w *cpuWorker) held(n int) {
	if n > ops.RetainBytes {
		w.grown = max(w.grown, n)
	}
}

// trim lets go of what images over ops.RetainBytes grew: the pinned buffer,
// the decoder's scratch and the decoupled states. Kept, they would be held
// per core for as long as the model stays loaded; the service calls it once
// the GPU has been idle a while (see service.sweep), since freeing and
// pinning them again for every large photo costs more than its decode.
func (w *cpuWorker) trim() {
	if w.grown == 0 {
		return
	}
	if len(w.pinned) > ops.RetainBytes {
		freePinned(&w.pinned)
	}
	w.dec.Close()
	w.dec = codec.NewDecoder()
	w.huff.renew()
	w.coef.trim()
	reclaim.Released(w.grown)
	w.grown = 0
}

func (w *cpuWorker) close() {
	w.dec.Close()
	w.huff.close()
	w.coef.close()
	w.conv.free()
	freePinned(&w.pinned)
	if w.stream != 0 {
		w.stream.Destroy()
	}
}
