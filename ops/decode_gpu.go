package ops

// GPUDecode is the colour the GPU executor's decoders must produce and
// whether they apply the EXIF orientation.
func (o *decodeOp) GPUDecode() (Color, bool) { return o.color, o.orient }
