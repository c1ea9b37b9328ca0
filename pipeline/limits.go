package pipeline

import (
	"fmt"

	"github.com/sluice-dev/sluice/internal/excerpt"
)

// Bounds on a definition's sizes, far above any real pipeline (the
// examples in model_repository/ and docs/pipelines.md have at most 5
// nodes, 3 inputs, 3 outputs, 4 arguments a node, 3 values a list and
// names of 20 bytes; a pipeline that serves one image at every size a
// family of models takes, as tests/test_opencv_linear.py's does, about
// 100 nodes and 70 outputs) and checked before any stage works per
// element: MaxSize alone lets through a file of 50,000 outputs, which
// takes 52 s of CPU to load, and each further stage, Triton's config and
// the server's log grow with these counts.
const (
	MaxInputs  = 64   // pipeline inputs
	MaxNodes   = 1024 // nodes
	MaxOutputs = 256  // pipeline outputs
	// MaxList bounds every list inside one element: a node's input
	// references (operators have at most 2 ports) and arguments, the
	// values of an ints or floats argument, an output's dims.
	MaxList = 64
	// MaxString bounds, in bytes, every name, reference and string value.
	MaxString = 128
)

// bounds checks the counts of inputs, nodes and outputs, then (when those
// are within bounds, so that the walk itself is bounded) every list and
// string of every element. It runs before the stages that do work per
// element, so that an oversized definition costs next to nothing.
func (c *compiler) bounds() {
	p := c.def
	over := false
	for _, n := range []struct {
		field string
		n     int
		max   int
	}{
		{"input", len(p.GetInput()), MaxInputs},
		{"node", len(p.GetNode()), MaxNodes},
		{"output", len(p.GetOutput()), MaxOutputs},
	} {
		if n.n > n.max {
			c.failf("", n.field, "%d given, over the limit of %d", n.n, n.max)
			over = true
		}
	}
	if over {
		return
	}
	c.str("", "name", p.GetName())
	for i, in := range p.GetInput() {
		elem := elemName("input", in.GetName(), i)
		c.str(elem, "name", in.GetName())
		c.str(elem, "layout", in.GetLayout())
		c.str(elem, "color", in.GetColor())
		c.str(elem, "count_of", in.GetCountOf())
		c.str(elem, "boxes.coords", in.GetBoxes().GetCoords())
	}
	for i, n := range p.GetNode() {
		name := n.GetName()
		if name == "" {
			name = n.GetOp()
		}
		elem := elemName("node", name, i)
		c.str(elem, "name", n.GetName())
		c.str(elem, "op", n.GetOp())
		if c.list(elem, "input", "references", len(n.GetInput())) {
			for _, r := range n.GetInput() {
				c.str(elem, "input", r)
			}
		}
		if !c.list(elem, "arg", "arguments", len(n.GetArg())) {
			continue
		}
		for k, a := range n.GetArg() {
			field := fmt.Sprintf("arg #%d", k+1)
			c.str(elem, field+" name", a.GetName())
			c.str(elem, field+" str", a.GetStr())
			c.list(elem, field+" ints", "values", len(a.GetInts().GetV()))
			c.list(elem, field+" floats", "values", len(a.GetFloats().GetV()))
		}
	}
	for i, o := range p.GetOutput() {
		elem := elemName("output", o.GetName(), i)
		c.str(elem, "name", o.GetName())
		c.str(elem, "source", o.GetSource())
		c.str(elem, "dtype", o.GetDtype())
		c.list(elem, "dims", "dims", len(o.GetDims()))
	}
}

// str reports a string over MaxString bytes.
func (c *compiler) str(elem, field, s string) {
	if len(s) > MaxString {
		c.failf(elem, field, "%s is %d bytes, over the limit of %d", excerpt.Quote(s), len(s), MaxString)
	}
}

// list reports a list over MaxList entries; it says whether the list is
// within bounds.
func (c *compiler) list(elem, field, what string, n int) bool {
	if n > MaxList {
		c.failf(elem, field, "%d %s, over the limit of %d", n, what, MaxList)
		return false
	}
	return true
}
