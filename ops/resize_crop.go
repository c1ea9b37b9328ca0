package ops

// Fuse absorbs a crop that follows the resize (the ImageNet pipeline's
// resize shorter=256 → crop size=224): the fused operator resamples only
// the window that the crop keeps, straight into the output, and never
// holds the whole resized image. Any crop mode fuses, since the window
// follows from the resized size alone.
func (o *resizeOp) Fuse(next Op) (Op, bool) {
	c, ok := next.(*cropOp)
	if !ok {
		return nil, false
	}
	return &resizeCropOp{resize: o, crop: c}, true
}

// resizeCropOp is resize then crop in one pass. Its output is the pair's,
// byte for byte, errors included: the resize's size rule and limit apply
// first, then the crop's window and limit on the resized size. The part of
// the window inside the resized image is resampled alone (each output
// pixel of the resampler depends only on its position: the weights of its
// row and column, and Pillow's pass order, which follows from the whole
// sizes); the rest, if any, gets the crop's fill.
type resizeCropOp struct {
	resize *resizeOp
	crop   *cropOp
}

func (o *resizeCropOp) Infer(in []Spec) ([]Spec, error) {
	mid, err := o.resize.Infer(in)
	if err != nil {
		return nil, err
	}
	return o.crop.Infer(mid)
}

// OutSize is the resize's: what a decoder feeding this operator may scale
// its decode against is the resized image, not the window.
func (o *resizeCropOp) OutSize(h, w int) (oh, ow int) { return o.resize.OutSize(h, w) }

func (o *resizeCropOp) NewState() (State, error) { return o.resize.NewState() }

func (o *resizeCropOp) Run(c *Ctx, in, out []*Tensor) error {
	src := in[0]
	sh, sw, ch, err := imageIn("resize", src)
	if err != nil {
		return err
	}
	och, err := o.resize.outChannels(src, ch)
	if err != nil {
		return err
	}
	oh, ow := o.resize.OutSize(src.FullHW())
	if err := checkPixels("resize", c, oh, ow); err != nil {
		return err
	}
	top, left, wh, ww := o.crop.window(oh, ow)
	if err := checkPixels("crop", c, wh, ww); err != nil {
		return err
	}
	// The window's part inside the resized image, in resized coordinates:
	// all that is resampled, and priced. The fill of the rest is a copy
	// bounded by the pixel limit, like crop's.
	y0, y1 := max(top, 0), min(top+wh, oh)
	x0, x1 := max(left, 0), min(left+ww, ow)
	win := rect{y0, x0, y1 - y0, x1 - x0}
	if err := o.resize.charge(c, "resize", oh, ow, win, src, sh, sw, ch); err != nil {
		return err
	}
	dst, err := imageOut("crop", c, out[0], wh, ww, och, src.Color)
	if err != nil {
		return err
	}
	pat := o.crop.fill.pixel(och)
	if y0 >= y1 || x0 >= x1 {
		fillPixels(dst, pat[:och])
		return nil
	}
	fillBorder(dst, wh, ww, och, y0-top, y1-top, x0-left, x1-left, pat[:och])
	stride := ww * och
	o.resize.resampleInto(stateOf(c), dst[(y0-top)*stride+(x0-left)*och:], stride, oh, ow, win, src, sh, sw, ch)
	return nil
}
