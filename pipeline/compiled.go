package pipeline

import (
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// Compiled is a validated pipeline with every operator built and every
// tensor's spec inferred: what an executor runs.
type Compiled struct {
	Def     *pipelinepb.Pipeline
	Source  string // file it came from, for messages; may be empty
	Inputs  []string
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

// InputSpec is the spec of a pipeline input: one encoded image, bytes.
var InputSpec = ops.Spec{DType: ops.Uint8, Dims: []int{ops.Dynamic}}

// Spec returns the spec of the tensor r points at.
func (c *Compiled) Spec(r Ref) ops.Spec {
	if r.Node == InputRef {
		return InputSpec
	}
	return c.Nodes[r.Node].Out[r.Port]
}
