package gpu

import (
	"fmt"
	"slices"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
	"github.com/sluice-dev/sluice/ops"
)

// coefState is one CPU worker's coefficient route: codec.CoefDecoder's
// entropy decoding on the worker's thread into a pinned buffer of its own,
// gathered over several images; then one upload, one sluice_idct and one
// sluice_ycc launch for them all (flush). It gives libjpeg's decode
// exactly (nvJPEG's IDCT rounds otherwise). Gathering is what makes the
// route pay beside the engines: nvJPEG's decoupled decoder issues its
// upload and its GPU steps image by image, and with a thread per core
// doing that, the engines' calls and each thread's images slow down, where
// Huffman decoding alone slows neither; gathered, baseline JPEGs beside the
// engines decode faster than through the decoupled decoder (docs/perf.md).
type coefState struct {
	dec    *codec.CoefDecoder
	nz     []uint64 // the decoder's scratch: a mask a block
	pinned []byte   // the gathered images' blocks, then at flush their IDCT structs
	at     int      // bytes of pinned the gathered blocks take
	blocks int      // the gathered components' blocks together
	comps  []kernels.IDCT
	conv   yccConv // the gathered colour images' conversions
	dev    devBuf  // the upload's copy
	// pending are the gathered samples, in the order gathered: a flush
	// that fails hands them back to be decoded another way.
	pending []int
}

// coefFlushBytes is how many bytes of coefficients a worker gathers
// before it sends them to the GPU: about a dozen ImageNet-size photos, so
// that a worker's share of a batch goes in one or two uploads. A variable
// for a test.
var coefFlushBytes = 4 << 20

func newCoefState() (*coefState, error) {
	d, err := codec.NewCoefDecoder()
	if err != nil {
		return nil, err
	}
	return &coefState{dec: d}, nil
}

// gather entropy-decodes sample s's JPEG into the worker's pinned buffer,
// to be sent to the GPU at the next flush, which the caller makes once
// full says so and before the worker lets go of the part. An error leaves
// the sample to libjpeg-turbo, which also names any damage; the samples
// gathered before it stay gathered.
func (c *coefState) gather(s int, smp *sample, base cuda.DevicePtr, dec ops.DecodeSpec) error {
	blocks, err := c.dec.Frame(smp.src)
	if err != nil {
		return err
	}
	n := blocks * codec.CoefBlock
	// coefFlushBytes and a quarter at least: room for flush's structs.
	if err := growPinned(&c.pinned, max(c.at+n, coefFlushBytes), c.at); err != nil {
		return err
	}
	if len(c.nz) < blocks {
		c.nz = make([]uint64, blocks+blocks/4)
	}
	if err := c.dec.Decode(c.pinned[c.at:c.at+n], c.nz[:blocks], smp.src); err != nil {
		return err
	}
	comps, first, err := idctStructs(c.comps, &c.conv, smp, c.dec.Components(), c.dec.Component, c.at, c.blocks, base, dec)
	if err != nil {
		return err
	}
	c.comps, c.blocks = comps, first
	c.at += n
	c.pending = append(c.pending, s)
	return nil
}

// idctStructs appends to comps the IDCT structs of sample smp's nc
// components, component(i) laid out in a coefficient buffer at byte at (an
// offset until the caller adds the buffer's address; codec's layout, which
// both entropy decoders write), its blocks after the launch's first ones,
// and its conversion to conv; it returns them and the launch's blocks
// after it. Every plane is checked before anything is added, so that a
// refused image leaves nothing of its own behind. A grey pipeline reads
// the luma plane alone.
func idctStructs(comps []kernels.IDCT, conv *yccConv, smp *sample, nc int, component func(int) codec.CoefComponent,
	at, first int, base cuda.DevicePtr, dec ops.DecodeSpec) ([]kernels.IDCT, int, error) {
	if (nc == 1) != (smp.sub == nvjpeg.CSSGray) || (nc != 1 && nc != 3) {
		return comps, first, fmt.Errorf("JPEG of %d components, subsampling %d", nc, smp.sub)
	}
	if dec.Color == ops.Gray {
		nc = 1
	}
	sx, sy := subsampling(smp.sub)
	for i := range nc {
		cp := component(i)
		// The planes the conversion reads must be libjpeg's.
		pw, ph := smp.w, smp.h
		if i > 0 {
			pw, ph = (smp.w+sx-1)/sx, (smp.h+sy-1)/sy
		}
		if cp.W != pw || cp.Height != ph {
			return comps, first, fmt.Errorf("JPEG component %d of %dx%d samples where its planes hold %dx%d", i, cp.W, cp.Height, pw, ph)
		}
	}
	img := conv.planes(smp, base, dec)
	for i := range nc {
		cp := component(i)
		comps = append(comps, kernels.IDCT{
			Coef: uint64(at + cp.First*codec.CoefBlock), Dst: uint64(img.Channel[i]),
			Pitch: int32(cp.Pitch), BlocksW: int32(cp.BlocksW), BlocksH: int32(cp.BlocksH), W: int32(cp.W), H: int32(cp.Height),
			DstPitch: int32(img.Pitch[i]), First: int32(first), Quant: cp.Quant,
		})
		first += cp.BlocksW * cp.BlocksH
	}
	return comps, first, nil
}

// full reports whether the gathered images are worth a flush now.
func (c *coefState) full() bool { return c != nil && c.at >= coefFlushBytes }

// flush sends the gathered images to the GPU on stream s and waits for
// their planes and conversion. On an error it returns the samples
// gathered, none of which may be taken as decoded; either way the worker
// then gathers afresh.
func (c *coefState) flush(f *kernels.Fused, s cuda.Stream) (failed []int, err error) {
	if c == nil || len(c.pending) == 0 {
		return nil, nil
	}
	defer c.reset()
	// The IDCT structs follow the blocks in the one upload.
	head := alignUp(c.at)
	descs := len(c.comps) * kernels.IDCTSize
	if err := growPinned(&c.pinned, head+descs, c.at); err != nil {
		return slices.Clone(c.pending), err
	}
	if err := c.dev.grow(head + descs); err != nil {
		return slices.Clone(c.pending), err
	}
	for i := range c.comps {
		c.comps[i].Coef += uint64(c.dev.ptr)
		if err := c.comps[i].Check(); err != nil {
			return slices.Clone(c.pending), err
		}
	}
	copy(c.pinned[head:], kernels.Bytes(c.comps))
	err = cuda.MemcpyHtoDAsync(c.dev.ptr, c.pinned[:head+descs], s)
	if err == nil {
		err = f.LaunchIDCT(s, c.dev.ptr+cuda.DevicePtr(head), len(c.comps), c.blocks)
	}
	if err == nil {
		err = c.conv.launch(f, s)
	}
	// Wait even after an error: the pinned buffer is the next images'.
	if serr := s.Synchronize(); err == nil {
		err = serr
	}
	if err != nil {
		return slices.Clone(c.pending), err
	}
	return nil, nil
}

func (c *coefState) reset() {
	c.at, c.blocks = 0, 0
	c.comps, c.pending = c.comps[:0], c.pending[:0]
	c.conv.reset()
}

// trim lets go of buffers over ops.RetainBytes (cpuWorker.trim); nothing
// is gathered then.
func (s *coefState) trim() {
	if s == nil {
		return
	}
	if s.dev.n > ops.RetainBytes {
		s.dev.free()
	}
	if len(s.pinned) > ops.RetainBytes {
		freePinned(&s.pinned)
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
	s.dev.free()
	freePinned(&s.pinned)
	s.conv.free()
}
