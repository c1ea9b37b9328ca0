package ops

import "fmt"

// GPU resizes the canvas, which must still be the plain (maybe cropped)
// source: the kernel resamples once.
func (o *resizeOp) GPU(c *Ctx, g *Geom, _ []*Tensor) error {
	if o.source {
		return fmt.Errorf("%w: resize with source_mode (Pillow's resampling per image mode) runs on the CPU executor only", ErrNotOnGPU)
	}
	if g.Resized || !g.plain() {
		return fmt.Errorf("%w: resize after another resize, pad or letterbox", ErrNotOnGPU)
	}
	oh, ow := o.OutSize(g.H, g.W)
	if err := checkPixels("resize", c, oh, ow); err != nil {
		return err
	}
	// Priced as Run prices it (the whole resized image: a crop after it is
	// not known yet), so that a request is refused alike on either kind of
	// instance.
	if err := chargeResample(c, "resize", g.H, g.W, g.Color.Channels(), oh, ow, rect{0, 0, oh, ow}, o.f, o.aa, 0); err != nil {
		return err
	}
	g.Rs = [2]int{oh, ow}
	g.H, g.W = oh, ow
	g.Resized, g.Filter = true, o.GPUFilter()
	return nil
}

// GPUFilter is the kernel's filter for this resampling.
func (o *resizeOp) GPUFilter() Filter { return Filter{int(o.f), o.aa} }
