package ops

// GPUDecode is what the GPU executor's decoders must produce, and how.
func (o *decodeOp) GPUDecode() DecodeSpec {
	return DecodeSpec{Color: o.color, Orient: o.orient, Background: o.bg, CMYK: o.cmyk, FastUpsample: o.fastUpsample}
}
