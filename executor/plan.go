package executor

import (
	"slices"

	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// step is one operator call per sample. Usually it is one node; after
// fusion it runs several nodes' work, reading the first one's inputs and
// writing the last one's outputs (node).
type step struct {
	Step
	op   ops.Op
	in   []pipeline.Ref
	node int // whose output tensors it writes
}

// plan turns the compiled nodes into steps, fusing a node into its only
// consumer where the operator offers it, then tells operators that adapt
// to their consumers (decode's DCT scaling) who those are.
func plan(prog *pipeline.Compiled) []step {
	steps := make([]step, len(prog.Nodes))
	for i, nd := range prog.Nodes {
		steps[i] = step{Step: NewStep(nd.Name), op: nd.Op, in: nd.In, node: i}
	}
	for i := 0; i < len(steps); i++ {
		s := &steps[i]
		f, ok := s.op.(ops.Fuser)
		if !ok || isOutput(prog, s.node) {
			continue
		}
		j, port := onlyConsumer(steps, s.node)
		if j < 0 || port != 0 || len(steps[j].in) != 1 {
			continue
		}
		fused, ok := f.Fuse(steps[j].op)
		if !ok {
			continue
		}
		nodes := slices.Concat(s.Nodes, steps[j].Nodes)
		steps[j] = step{Step: NewStep(nodes...), op: fused, in: s.in, node: steps[j].node}
		steps = append(steps[:i], steps[i+1:]...)
		i-- // the fused step may fuse again
	}
	for _, s := range steps {
		l, ok := s.op.(ops.Linker)
		if !ok {
			continue
		}
		var cons []ops.Op
		for _, other := range steps {
			for _, r := range other.in {
				if r.Node == s.node {
					cons = append(cons, other.op)
					break
				}
			}
		}
		// A pipeline output is a consumer that is not an operator: the
		// node must produce its full result for it.
		if isOutput(prog, s.node) {
			cons = append(cons, nil)
		}
		l.Link(cons)
	}
	return steps
}

func isOutput(prog *pipeline.Compiled, node int) bool {
	for _, o := range prog.Outputs {
		if o.Ref.Node == node {
			return true
		}
	}
	return false
}

// onlyConsumer returns the step that reads node's outputs and the port it
// reads, or -1 when none or several steps (or several ports) read them.
func onlyConsumer(steps []step, node int) (int, int) {
	found, port := -1, -1
	for j, s := range steps {
		for _, r := range s.in {
			if r.Node != node {
				continue
			}
			if found >= 0 {
				return -1, -1
			}
			found, port = j, r.Port
		}
	}
	return found, port
}

// needs returns, per pipeline output, the steps its value depends on
// (needs[o][i]: step i), so that a sample whose other outputs are not
// wanted runs only those.
func needs(prog *pipeline.Compiled, steps []step) [][]bool {
	writer := make(map[int]int, len(steps)) // node -> the step that writes it
	for i, s := range steps {
		writer[s.node] = i
	}
	out := make([][]bool, len(prog.Outputs))
	for o, po := range prog.Outputs {
		need := make([]bool, len(steps))
		var visit func(node int)
		visit = func(node int) {
			i, ok := writer[node]
			if !ok || need[i] {
				return
			}
			need[i] = true
			for _, r := range steps[i].in {
				if r.Node != pipeline.InputRef {
					visit(r.Node)
				}
			}
		}
		visit(po.Ref.Node)
		out[o] = need
	}
	return out
}
