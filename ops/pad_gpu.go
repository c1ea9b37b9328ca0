package ops

// GPU places the canvas on a larger one, as Run does.
func (o *padOp) GPU(c *Ctx, g *Geom, _ []*Tensor) error {
	h, w := g.H, g.W
	ph, pw, top, left, err := o.placement(h, w)
	if err != nil {
		return err
	}
	if err := checkPixels("pad", c, ph, pw); err != nil {
		return err
	}
	if ph > h || pw > w {
		if err := g.setFill("pad", o.fill); err != nil {
			return err
		}
	}
	g.Off = [2]int{g.Off[0] + top, g.Off[1] + left}
	g.H, g.W = ph, pw
	return nil
}
