package pipeline

import (
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// Compiled is a validated pipeline with every operator built and every
// tensor's spec inferred: what an executor runs.
type Compiled struct {
	Def    *pipelinepb.Pipeline
	Source string // file it came from, for messages; may be empty
	Inputs []string
	// InputSpecs[i] is the spec of one sample of Inputs[i]: InputSpec for
	// encoded bytes, or a decoded image's (UINT8 [-1, -1, C] with its
	// colour) for an input declared with layout "HWC".
	InputSpecs []ops.Spec
	// CountOf[i] is, for a count input (count_of), the index of the boxes
	// input it counts; -1 for any other input.
	CountOf []int
	Nodes   []Node // topologically sorted: a node reads only earlier ones
	Outputs []Output
}

// Node is one built operator of a compiled pipeline.
type Node struct {
	Name   string
	Index  int // position in Def.Node (file order), for messages
	Schema *ops.Schema
	Args   ops.Args
	Op     ops.Op
	In     []Ref      // one per input port of the schema
	Out    []ops.Spec // one per output port of the schema
}

// Ref points at a tensor: output Port of Nodes[Node], or pipeline input
// Port when Node is InputRef.
type Ref struct {
	Node int
	Port int
}

// InputRef is Ref.Node for a pipeline input.
const InputRef = -1

// Output is a named pipeline output: a node output of static spec.
type Output struct {
	Name string
	Ref  Ref
	Spec ops.Spec
}

// InputSpec is the spec of an encoded pipeline input: one image's bytes.
var InputSpec = ops.Spec{DType: ops.Uint8, Dims: []int{ops.Dynamic}}

// LayoutHWC is Input.layout for an input that carries decoded images.
const LayoutHWC = "HWC"

// DecodedSpec is the spec of a decoded-image input of colour col: H and W
// per sample, C fixed by the colour.
func DecodedSpec(col ops.Color) ops.Spec {
	return ops.Spec{DType: ops.Uint8, Dims: []int{ops.Dynamic, ops.Dynamic, col.Channels()}, Color: col}
}

// BoxesSpec is the spec of a boxes input of max rows: FP32 [max, 4].
func BoxesSpec(max int, co ops.Coords) ops.Spec {
	return ops.Spec{DType: ops.Float32, Dims: []int{max, 4}, Coords: co}
}

// CountSpec is the spec of a count input: INT32 [1].
var CountSpec = ops.Spec{DType: ops.Int32, Dims: []int{1}}

// Tensor reports whether input i carries a tensor of fixed shape per
// sample (boxes, or their count) rather than an image.
func (c *Compiled) Tensor(i int) bool {
	return i < len(c.InputSpecs) && c.InputSpecs[i].DType != ops.Uint8
}

// HasTensors reports whether any input carries fixed-shape tensors.
func (c *Compiled) HasTensors() bool {
	for i := range c.Inputs {
		if c.Tensor(i) {
			return true
		}
	}
	return false
}

// CountFor is the index of the count input of boxes input i, or -1.
func (c *Compiled) CountFor(i int) int {
	for k, j := range c.CountOf {
		if j == i {
			return k
		}
	}
	return -1
}

// Decoded reports whether input i carries decoded images (layout "HWC").
func (c *Compiled) Decoded(i int) bool {
	return i < len(c.InputSpecs) && c.InputSpecs[i].IsImage()
}

// HasDecoded reports whether any input carries decoded images.
func (c *Compiled) HasDecoded() bool {
	for i := range c.Inputs {
		if c.Decoded(i) {
			return true
		}
	}
	return false
}

// Spec returns the spec of the tensor r points at.
func (c *Compiled) Spec(r Ref) ops.Spec {
	if r.Node == InputRef {
		if r.Port < len(c.InputSpecs) {
			return c.InputSpecs[r.Port]
		}
		return InputSpec
	}
	return c.Nodes[r.Node].Out[r.Port]
}
