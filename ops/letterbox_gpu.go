package ops

import "fmt"

// GPU resizes the plain source into the canvas and writes the scale and
// offset outputs on the host, as Run does.
func (o *letterboxOp) GPU(c *Ctx, g *Geom, side []*Tensor) error {
	if g.Resized || !g.plain() {
		return fmt.Errorf("%w: letterbox after a resize, pad or letterbox", ErrNotOnGPU)
	}
	r, nh, nw, top, left := o.geometry(g.H, g.W)
	// Priced as Run prices it, so that a request is refused alike on
	// either kind of instance.
	if err := chargeResample(c, "letterbox", g.H, g.W, g.Color.Channels(), nh, nw, rect{0, 0, nh, nw}, o.f, o.aa, 0); err != nil {
		return err
	}
	if nh < o.h || nw < o.w {
		if err := g.setFill("letterbox", o.fill); err != nil {
			return err
		}
	}
	g.Rs = [2]int{nh, nw}
	g.Off = [2]int{top, left}
	g.H, g.W = o.h, o.w
	g.Resized, g.Filter = true, o.GPUFilter()
	if len(side) == 2 {
		return writePlacement(side[0], side[1], r, top, left)
	}
	return nil
}

// GPUFilter is the kernel's filter for this resampling.
func (o *letterboxOp) GPUFilter() Filter { return Filter{int(o.f), o.aa} }
