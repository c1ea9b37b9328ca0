package gpu

import (
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// chain is a pipeline in the form the GPU executor runs: decode, then
// operators that only move pixels (GPUStage), then at most one that maps
// their values (GPUValues), all of it after decode done by one kernel.
type chain struct {
	in      int            // the image input: what decode reads, or the decoded image
	decoded bool           // in is a decoded image (layout HWC): no decode node
	boxes   int            // the boxes input crop_boxes reads; -1 without crop_boxes
	count   int            // that input's count input; -1 without
	crops   int            // kernel samples per image: crop_boxes' rows, else 1
	dec     ops.DecodeSpec // what decode produces; the CPU workers flatten alpha and convert CMYK
	srcC    int            // channels of the decoded intermediate: 3, or 4 when alpha is kept
	stages  []stage
	params  kernels.Params
	image   int // index of the image among the pipeline outputs
	outC    int // channels of the image output
	outDT   ops.DType
	outHW   [2]int // static height and width of the image output
	side    []sideOut
	sideN   int   // bytes of a sample's block of side outputs
	perm    []int // image channel of each output channel
}

type stage struct {
	name string
	op   ops.GPUStage
	crop ops.GPUCropper // instead of op: crop_boxes
	node int
	side []int // pipeline output index of each port after the image, -1 if not an output
	at   []int // where that output sits in a sample's block of side outputs
	size []int // and its bytes
}

// sideOut is a pipeline output computed on the host (letterbox's scale).
// Those bound for device memory wait in a pinned block per sample, at.
type sideOut struct {
	output int // pipeline output index
	at     int
	size   int
}

// newChain checks that prog has the shape the fused kernel runs and
// derives the kernel's batch-wide parameters.
func newChain(prog *pipeline.Compiled) (*chain, error) {
	notGPU := func(format string, a ...any) error {
		return fmt.Errorf("pipeline %s: %w: %s", prog.Source, ops.ErrNotOnGPU, fmt.Sprintf(format, a...))
	}
	// One image input, encoded (decode comes first) or decoded (its
	// pixels are uploaded as they came); boxes and counts beside it.
	c := &chain{image: -1, in: -1, boxes: -1, count: -1, crops: 1}
	images := 0
	for i := range prog.Inputs {
		if !prog.Tensor(i) {
			images++
			c.in = i
		}
	}
	if images != 1 || len(prog.Nodes) == 0 {
		return nil, notGPU("the GPU executor runs one image input through what follows it")
	}
	first := 1 // the first node after the image: decode's image, or the decoded input
	if prog.Decoded(c.in) {
		c.decoded, c.dec, first = true, ops.DecodeSpec{Color: prog.InputSpecs[c.in].Color}, 0
	}
	var values *ops.Values
	var filter ops.Filter
	for i, nd := range prog.Nodes {
		if i < first {
			d, ok := nd.Op.(ops.GPUDecoder)
			if !ok || nd.In[0] != (pipeline.Ref{Node: pipeline.InputRef, Port: c.in}) {
				return nil, notGPU("the first node must decode the input, not %s", nd.Name)
			}
			c.dec = d.GPUDecode()
			continue
		}
		prev := pipeline.Ref{Node: i - 1}
		if i == 0 {
			prev = pipeline.Ref{Node: pipeline.InputRef, Port: c.in}
		}
		ports := 1 // the image; crop_boxes reads its boxes too
		if _, ok := nd.Op.(ops.GPUCropper); ok {
			ports = 2
		}
		if len(nd.In) != ports || nd.In[0] != prev {
			return nil, notGPU("node %s does not read the image of the node before it", nd.Name)
		}
		if values != nil {
			return nil, notGPU("node %s follows %s, which must be last", nd.Name, prog.Nodes[i-1].Name)
		}
		if c.boxes >= 0 && !isValues(nd.Op) {
			return nil, notGPU("node %s follows crop_boxes, which only normalize may follow", nd.Name)
		}
		if r, ok := nd.Op.(ops.GPUResampler); ok {
			filter = r.GPUFilter()
		}
		st := stage{name: nd.Name, node: i}
		for p := 1; p < len(nd.Out); p++ {
			st.side = append(st.side, -1)
			st.at = append(st.at, -1)
			st.size = append(st.size, 0)
		}
		switch op := nd.Op.(type) {
		case ops.GPUCropper:
			// The boxes are in the decoded image's pixels: the kernel
			// crops from it directly.
			if i != first {
				return nil, notGPU("node %s crops boxes from %s's image; on the GPU it must read the decoded image itself", nd.Name, prog.Nodes[i-1].Name)
			}
			st.crop = op
			c.boxes = nd.In[1].Port
			c.count = prog.CountFor(c.boxes)
			c.crops = op.MaxCrops()
			c.stages = append(c.stages, st)
		case ops.GPUStage:
			st.op = op
			c.stages = append(c.stages, st)
		case ops.GPUValues:
			v := op.GPUValues()
			values = &v
		default:
			return nil, notGPU("operator %s (%s) has no GPU form", nd.Name, nd.Schema.Name)
		}
	}
	last := len(prog.Nodes) - 1
	for i, o := range prog.Outputs {
		switch {
		case o.Ref == pipeline.Ref{Node: last, Port: 0} && c.image < 0:
			c.image = i
		case o.Ref.Port > 0 && o.Ref.Node > 0:
			k := stageOf(c.stages, o.Ref.Node)
			if k < 0 {
				return nil, notGPU("output %s is not one the GPU path produces", o.Name)
			}
			size := o.Spec.Elems() * o.Spec.DType.Size()
			c.stages[k].side[o.Ref.Port-1] = i
			c.stages[k].at[o.Ref.Port-1] = c.sideN
			c.stages[k].size[o.Ref.Port-1] = size
			c.side = append(c.side, sideOut{output: i, at: c.sideN, size: size})
			c.sideN += size
		default:
			return nil, notGPU("output %s is an intermediate image; only the last node's image leaves the GPU", o.Name)
		}
	}
	if c.image < 0 {
		return nil, notGPU("no output reads the last node's image")
	}
	spec := prog.Outputs[c.image].Spec
	ch := c.dec.Color.Channels()
	if values == nil {
		v := ops.IdentityValues(ch)
		values = &v
	}
	c.outC, c.outDT, c.perm = len(values.Perm), values.DType, values.Perm
	dims := spec.Dims
	if c.boxes >= 0 {
		dims = dims[1:] // one image per crop
	}
	if values.CHW {
		c.outHW = [2]int{dims[1], dims[2]}
	} else {
		c.outHW = [2]int{dims[0], dims[1]}
	}
	// With a background the colour has no alpha (decode refuses RGBA and
	// BGRA with it): the CPU workers flatten an image's alpha while
	// decoding, and the intermediate is RGB like a JPEG's.
	c.srcC = 3
	kcol := c.dec.Color
	switch {
	case c.decoded:
		// Stored as it came, in its own channel order.
		c.srcC = ch
		switch kcol {
		case ops.BGR:
			kcol = ops.RGB
		case ops.BGRA:
			kcol = ops.RGBA
		}
	case ch == 4:
		c.srcC = 4
	}
	c.params = kernelParams(kcol, *values, filter)
	// Whether the operators compose is a matter of their order, mostly:
	// try the chain on a small and a large image so that a pipeline the
	// kernel cannot run fails here rather than on every sample.
	for _, hw := range [][2]int{{17, 23}, {3000, 4000}} {
		g := ops.NewGeom(hw[0], hw[1], c.dec.Color, ops.Limits{})
		for _, st := range c.stages {
			if st.op == nil {
				break // crop_boxes: checked above, and it needs boxes
			}
			if err := st.op.GPU(nil, &g, nil); err != nil {
				if errors.Is(err, ops.ErrNotOnGPU) {
					return nil, fmt.Errorf("pipeline %s: node %s: %w", prog.Source, st.name, err)
				}
				break
			}
		}
	}
	return c, nil
}

func isValues(op ops.Op) bool {
	_, ok := op.(ops.GPUValues)
	return ok
}

func stageOf(st []stage, node int) int {
	for k, s := range st {
		if s.node == node {
			return k
		}
	}
	return -1
}

// sourceChannel maps a channel of the pipeline's decoded colour to the
// channel of the intermediate image every decode path produces (RGB, or
// RGBA): BGR reads it backwards, GRAY is its luma (-2).
func sourceChannel(col ops.Color, k int) int32 {
	switch col {
	case ops.BGR, ops.BGRA:
		if k < 3 {
			return int32(2 - k)
		}
	case ops.Gray:
		return kernels.ChanLuma
	}
	return int32(k)
}

func kernelParams(col ops.Color, v ops.Values, f ops.Filter) kernels.Params {
	p := kernels.Params{
		Interp: int32(f.Interp), // ops' interp order is the kernel's
		OutC:   int32(len(v.Perm)),
		Layout: kernels.LayoutHWC,
		DType:  dtypeCode(v.DType),
	}
	if f.Antialias {
		p.Antialias = 1
	}
	if v.CHW {
		p.Layout = kernels.LayoutCHW
	}
	for k, in := range v.Perm {
		p.SrcChan[k] = sourceChannel(col, in)
		p.Mul[k], p.Add[k] = v.Mul[k], v.Add[k]
	}
	return p
}

func dtypeCode(d ops.DType) int32 {
	switch d {
	case ops.Float16:
		return kernels.DTypeFloat16
	case ops.Float32:
		return kernels.DTypeFloat32
	}
	return kernels.DTypeUint8
}
