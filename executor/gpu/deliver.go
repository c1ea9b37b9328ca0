package gpu

import (
	"fmt"

	"github.com/sluice-dev/sluice/kernels/cuda"
)

// Where a batch's outputs go once the kernel has run: host memory, this
// GPU's memory (written in place by the kernel), or another GPU's, over
// the GPUs' link where they have one.

// deliver queues the copies of samples [start, end)'s outputs that the
// kernel did not write in place: the image output from its staging, the
// side outputs from their pinned block.
func (e *Executor) deliver(b *batch, start, end int) error {
	img, base := e.chain.image, e.mem.base
	for s := start; s < end; s++ {
		smp := &e.samples[s]
		if smp.failed {
			continue
		}
		stage := base + cuda.DevicePtr(smp.stage)
		var err error
		switch d := b.dst[img][s]; {
		case d.Dev == 0:
			err = cuda.MemcpyDtoHAsync(d.Host, stage, e.main)
		case !e.local(d):
			err = e.stageToPeer(d, stage, e.sampleBytes[img])
		}
		if err != nil {
			return err
		}
		for _, so := range e.chain.side {
			src := e.sideBlock(s)[so.at : so.at+so.size]
			switch d := b.dst[so.output][s]; {
			case e.local(d):
				err = cuda.MemcpyHtoDAsync(cuda.DevicePtr(d.Dev), src, e.main)
			case d.Dev != 0:
				err = e.toPeer(d, src)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// local reports whether d is device memory of the executor's own GPU,
// which the kernel writes in place.
func (e *Executor) local(d Dest) bool { return d.Dev != 0 && d.Device == e.opt.Device }

// reach retains GPU dev's primary context on the first destination there,
// with this context's access to it enabled where the devices allow: copies
// then go over the GPUs' link instead of through host memory. The
// executor's context is current.
func (e *Executor) reach(dev int) error {
	if e.peers[dev] != nil {
		return nil
	}
	c, err := cuda.RetainPrimary(dev)
	if err != nil {
		return fmt.Errorf("output on GPU %d: %w", dev, err)
	}
	// Without direct access (not possible, or refused: too many peers)
	// the driver stages the copies through host memory: slower, still
	// right.
	if ok, err := cuda.CanAccessPeer(e.opt.Device, dev); err == nil && ok {
		cuda.EnablePeerAccess(c)
	}
	if e.peers == nil {
		e.peers = map[int]*cuda.Context{}
	}
	e.peers[dev] = c
	return nil
}

// toPeer queues a copy of host bytes to d, on another GPU, and counts it.
func (e *Executor) toPeer(d Dest, src []byte) error {
	if err := e.reach(d.Device); err != nil {
		return err
	}
	if err := cuda.MemcpyHtoPeerAsync(cuda.DevicePtr(d.Dev), src, e.main); err != nil {
		return err
	}
	e.crossN.Add(1)
	e.crossBytes.Add(int64(len(src)))
	return nil
}

// stageToPeer queues a copy of n staged bytes at src to d, on another
// GPU, and counts it.
func (e *Executor) stageToPeer(d Dest, src cuda.DevicePtr, n int) error {
	if err := e.reach(d.Device); err != nil {
		return err
	}
	if err := cuda.MemcpyPeerAsync(cuda.DevicePtr(d.Dev), src, n, e.main); err != nil {
		return err
	}
	e.crossN.Add(1)
	e.crossBytes.Add(int64(n))
	return nil
}
