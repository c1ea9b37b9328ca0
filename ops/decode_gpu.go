package ops

// GPUDecode is the colour the GPU executor's decoders must produce.
func (o *decodeOp) GPUDecode() (Color, bool) { return o.color, o.orient }
