package ops

import (
	"encoding/binary"
	"fmt"
)

// GPUCrops describes one sample's crops for the fused kernel: crops[k]
// for row k of boxes (FP32 [max, 4]; rows at or past used are unused, as
// a count input marks them), each clipped and placed as Run does. g is
// the upright decoded image; it becomes the crops' canvas. The count
// goes to side[0] and the boxes sampled to side[1] when they are
// pipeline outputs.
func (o *cropBoxesOp) GPUCrops(c *Ctx, g *Geom, boxes []byte, used int, crops []Crop, side []*Tensor) error {
	if g.Resized || !g.plain() || g.Win != [4]int{0, 0, g.H, g.W} {
		return fmt.Errorf("%w: crop_boxes after another operator: it must read decode's image", ErrNotOnGPU)
	}
	if len(boxes) != o.max*16 || len(crops) != o.max {
		return Errorf(BadInput, "crop_boxes: %d bytes of boxes for %d crops, want FP32 [%d, 4]", len(boxes), len(crops), o.max)
	}
	n := 0
	var work float64
	for k := range crops {
		cr := &crops[k]
		*cr = Crop{}
		if k >= used {
			continue
		}
		b, ok, err := o.box(boxes[k*16:], k, g.H, g.W)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		cr.Box, cr.Used = b, true
		// Priced as Run prices it, so that a request is refused alike on
		// either kind of instance.
		work += float64(o.work(g.H, g.W, g.Color.Channels(), b))
		cr.Rs = [2]int{o.h, o.w}
		if o.letterbox {
			nh, nw, top, left := o.fit(float64(b[3]-b[1]), float64(b[2]-b[0]))
			cr.Rs, cr.Off = [2]int{nh, nw}, [2]int{top, left}
			if nh < o.h || nw < o.w {
				if err := g.setFill("crop_boxes", o.fill); err != nil {
					return err
				}
			}
		}
		n++
	}
	if err := c.Charge("crop_boxes", satWork(work), func() string { return o.workDetail(n, g.H, g.W) }); err != nil {
		return err
	}
	g.H, g.W = o.h, o.w
	g.Rs = [2]int{o.h, o.w}
	g.Resized, g.Filter = true, o.GPUFilter()
	if len(side) > 0 && side[0] != nil {
		cnt, err := side[0].Reshape(Int32, 1)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(cnt, uint32(n))
	}
	if len(side) > 1 && side[1] != nil {
		sampled, err := side[1].Reshape(Float32, o.max, 4)
		if err != nil {
			return err
		}
		for k := range crops {
			putBox(sampled[k*16:], crops[k].Box, crops[k].Used)
		}
	}
	return nil
}

// GPUFilter is the kernel's filter for the crops.
func (o *cropBoxesOp) GPUFilter() Filter { return Filter{int(o.f), o.aa} }

// MaxCrops is the rows of the boxes input: the crops of every sample.
func (o *cropBoxesOp) MaxCrops() int { return o.max }
