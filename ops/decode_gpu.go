package ops

// GPUDecode is the colour the GPU executor's decoders must produce, whether
// they apply the EXIF orientation, and the background alpha is flattened
// onto (nil: none), as codec.Options.Background.
func (o *decodeOp) GPUDecode() (Color, bool, *[3]byte) { return o.color, o.orient, o.bg }
