package ops

// GPU crops the canvas. Before any resize it moves the window read from
// the source (a window reaching outside reads the fill); after one, it
// moves the resized image on a smaller canvas.
func (o *cropOp) GPU(c *Ctx, g *Geom, _ []*Tensor) error {
	top, left, wh, ww := o.window(g.H, g.W)
	if err := checkPixels("crop", c, wh, ww); err != nil {
		return err
	}
	outside := top < 0 || left < 0 || top+wh > g.H || left+ww > g.W
	if outside {
		if err := g.setFill("crop", o.fill); err != nil {
			return err
		}
	}
	if !g.Resized && g.plain() {
		g.Win = [4]int{g.Win[0] + top, g.Win[1] + left, wh, ww}
		g.Rs = [2]int{wh, ww}
	} else {
		g.Off = [2]int{g.Off[0] - top, g.Off[1] - left}
	}
	g.H, g.W = wh, ww
	return nil
}
