package ops

// GPUValues is the affine form of the normalization's table: the kernel
// computes v*(scale/std) - mean/std in float32 instead of looking it up.
func (n *normalize) GPUValues() Values {
	v := Values{Perm: n.perm, DType: n.dtype, CHW: n.chw}
	for k := range n.perm {
		mean, std := pick(n.mean, k), pick(n.std, k)
		v.Mul = append(v.Mul, float32(n.scale/std))
		v.Add = append(v.Add, float32(-mean/std))
	}
	return v
}
