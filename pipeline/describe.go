package pipeline

import (
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/ops"
)

// String names the node as errors do: `node "resize" (#2)`, 1-based in
// file order.
func (n *Node) String() string { return elemName("node", n.Name, n.Index) }

// RefName spells a reference as a definition would: "IMAGE", "resize" (a
// node's first output) or "letterbox:scale".
func (c *Compiled) RefName(r Ref) string {
	switch {
	case r.Node == InputRef:
		if r.Port >= 0 && r.Port < len(c.Inputs) {
			return c.Inputs[r.Port]
		}
	case r.Node >= 0 && r.Node < len(c.Nodes):
		n := &c.Nodes[r.Node]
		if r.Port == 0 {
			return n.Name
		}
		if n.Schema != nil && r.Port > 0 && r.Port < len(n.Schema.Outputs) {
			return n.Name + ":" + n.Schema.Outputs[r.Port].Name
		}
	}
	return fmt.Sprintf("<invalid ref %d:%d>", r.Node, r.Port)
}

// Consumers lists, in order, the nodes reading any output of node: what
// the executor hands an ops.Linker. It is nil for an out-of-range node.
func (c *Compiled) Consumers(node int) []int {
	var out []int
	for i := range c.Nodes {
		for _, r := range c.Nodes[i].In {
			if r.Node == node {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// Describe summarises the compiled pipeline for people (`sluice
// validate`): its inputs, each node in execution order with its checked
// arguments (defaults included) and output specs, and the outputs as
// Triton will see them.
func (c *Compiled) Describe() string {
	var b strings.Builder
	name := ""
	if c.Def != nil {
		name = c.Def.GetName()
	}
	fmt.Fprintf(&b, "pipeline %q (version %d)", name, c.Def.GetVersion())
	if c.Source != "" {
		fmt.Fprintf(&b, " from %s", c.Source)
	}
	b.WriteString("\ninputs:\n")
	for i, in := range c.Inputs {
		if i < len(c.CountOf) && c.CountOf[i] >= 0 {
			fmt.Fprintf(&b, "  %s: %v, the count of %s\n", in, c.Spec(Ref{Node: InputRef, Port: i}), c.Inputs[c.CountOf[i]])
			continue
		}
		fmt.Fprintf(&b, "  %s: %v\n", in, c.Spec(Ref{Node: InputRef, Port: i}))
	}
	b.WriteString("nodes (in execution order):\n")
	for i := range c.Nodes {
		n := &c.Nodes[i]
		from := make([]string, len(n.In))
		for k, r := range n.In {
			from[k] = c.RefName(r)
		}
		op := "?"
		if n.Schema != nil {
			op = n.Schema.Name + "(" + argsString(n.Schema, n.Args) + ")"
		}
		fmt.Fprintf(&b, "  #%d %s = %s", n.Index+1, n.Name, op)
		if len(from) > 0 {
			fmt.Fprintf(&b, " ← %s", strings.Join(from, ", "))
		}
		b.WriteByte('\n')
		for p, s := range n.Out {
			port := "out"
			if n.Schema != nil && p < len(n.Schema.Outputs) {
				port = n.Schema.Outputs[p].Name
			}
			fmt.Fprintf(&b, "      %s: %v\n", port, s)
		}
	}
	b.WriteString("outputs:\n")
	for _, o := range c.Outputs {
		fmt.Fprintf(&b, "  %s: %v dims %s ← %s\n", o.Name, o.Spec.DType, dimsString(o.Spec.Dims), c.RefName(o.Ref))
	}
	return b.String()
}

// argsString lists arguments in schema order, so that the summary is
// stable and reads like the operator's documentation.
func argsString(s *ops.Schema, a ops.Args) string {
	var parts []string
	for _, spec := range s.Args {
		if v, ok := a[spec.Name]; ok {
			parts = append(parts, spec.Name+"="+v.String())
		}
	}
	return strings.Join(parts, ", ")
}
