package ops

// GPU places the canvas on a larger one, as Run does.
func (o *padOp) GPU(c *Ctx, g *Geom, _ []*Tensor) error {
	h, w := g.H, g.W
	ph, pw := o.h, o.w
	if m := o.multiple; m > 0 {
		ph, pw = (h+m-1)/m*m, (w+m-1)/m*m
	} else if h > ph || w > pw {
		return Errorf(BadInput, "pad: image of %dx%d (HxW) is larger than the pad size %dx%d", h, w, ph, pw)
	}
	if err := checkPixels("pad", c, ph, pw); err != nil {
		return err
	}
	top, left := 0, 0
	if o.center {
		top, left = (ph-h)/2, (pw-w)/2
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
