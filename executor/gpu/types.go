package gpu

import (
	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
	"github.com/sluice-dev/sluice/ops"
)

// What every file of the package shares: a sample's way through a batch,
// the arena's alignment, pinned buffers.

// sample is one image's way through a batch.
type sample struct {
	src     []byte
	dev     executor.DevSpan // a decoded-image input in device memory instead of src
	hdr     codec.Header
	path    route.Path
	failed  bool
	h, w    int // stored size of the decoded image
	c       int // its channels in device memory
	off     int // arena offset of the decoded image (interleaved)
	planes  int // arena offset of nvJPEG's YCbCr planes, converted into off
	sub     nvjpeg.Subsampling
	engines bool   // the engines may take it (route.Decision.Engines)
	pinned  []byte // src copied to pinned memory at parse, for a batched nvJPEG call; nil if not
	// factorsAt: the sampling-factor byte a batched call's copy of a
	// greyscale JPEG says 1x1 in (stageJPEG); 0 for none
	factorsAt int
	stage     int // arena offset of the image output's staging (host or another GPU's destination); -1 if none
	geom      ops.Geom
}

// hasPlanes reports whether the sample's path decodes through nvJPEG's
// YCbCr planes, which need arena space of their own.
func (smp *sample) hasPlanes() bool { return smp.path.Planes() }

// inArena reports whether the sample's decoded image is in the arena
// (everything but an input read in place).
func (smp *sample) inArena() bool { return smp.path != route.Device }

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
