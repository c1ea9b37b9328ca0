package pipeline

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/internal/excerpt"
)

// errReported marks a reference that cannot be checked because its target
// is already reported as broken (an unknown operator has no known ports).
var errReported = errors.New("already reported")

// wiring resolves each node's input references. A node with no input reads
// the node before it in file order (the first node reads the only pipeline
// input): the common chain needs no wiring at all.
func (c *compiler) wiring() {
	for i, n := range c.def.GetNode() {
		ni, elem := &c.nodes[i], c.nodeElem(i)
		s, refs := ni.schema, n.GetInput()
		if s == nil {
			continue // unknown operator, already reported: its ports are unknown
		}
		if len(refs) == 0 {
			ni.wired = true
			switch len(s.Inputs) {
			case 0:
				continue
			case 1:
			default:
				c.failf(elem, "input", "missing: operator %s has %d input ports (%s); list what each reads, e.g. input: [\"a\", \"b\"]", s.Name, len(s.Inputs), portNames(s.Inputs))
				continue
			}
			ref, text, err := c.defaultRef(i)
			if err != nil {
				if err != errReported {
					c.fail(elem, "input", err)
				}
				continue
			}
			ni.in, ni.inText = []Ref{ref}, []string{text}
			continue
		}
		if len(refs) != len(s.Inputs) {
			c.failf(elem, "input", "%d given, but operator %s has %s (%s)", len(refs), s.Name, plural(len(s.Inputs), "input port"), portNames(s.Inputs))
			continue
		}
		for _, text := range refs {
			ref, err := c.resolve(text)
			if err != nil {
				if err != errReported {
					c.fail(elem, "input "+excerpt.Quote(text), err)
				}
				continue
			}
			ni.in = append(ni.in, ref)
			ni.inText = append(ni.inText, text)
		}
	}
}

// defaultRef is what node i reads when its definition names no input.
func (c *compiler) defaultRef(i int) (Ref, string, error) {
	if i == 0 {
		if len(c.inNames) == 1 {
			return Ref{Node: InputRef}, c.inNames[0], nil
		}
		return Ref{}, "", fmt.Errorf("missing: the pipeline has %d inputs (%s); name the one the first node reads, e.g. input: %s", len(c.inNames), excerpt.List(c.inNames, 20), excerpt.Quote(c.inNames[0]))
	}
	prev := &c.nodes[i-1]
	if prev.schema == nil {
		return Ref{}, "", errReported
	}
	if len(prev.schema.Outputs) == 0 {
		return Ref{}, "", fmt.Errorf("missing, and the node before it, %s, has no output to read", c.nodeElem(i-1))
	}
	return Ref{Node: i - 1}, prev.name, nil
}

// outputSources resolves each output's source; an output without one
// exposes the last node's first output.
func (c *compiler) outputSources() {
	c.outs = make([]outInfo, len(c.def.GetOutput()))
	for i, o := range c.def.GetOutput() {
		elem, text := c.outputElem(i), o.GetSource()
		if text == "" {
			last := len(c.nodes) - 1
			s := c.nodes[last].schema
			if s == nil {
				continue // unknown operator, already reported
			}
			if len(s.Outputs) == 0 {
				c.failf(elem, "source", "missing, and the last node, %s, has no output to expose", c.nodeElem(last))
				continue
			}
			c.outs[i] = outInfo{ref: Ref{Node: last}, text: c.nodes[last].name, wired: true}
			continue
		}
		ref, err := c.resolve(text)
		if err != nil {
			if err != errReported {
				c.fail(elem, "source "+excerpt.Quote(text), err)
			}
			continue
		}
		c.outs[i] = outInfo{ref: ref, text: text}
	}
}

// resolve reads a reference: "NAME" (a pipeline input, or a node's first
// output) or "NODE:PORT" (a node's named output port).
func (c *compiler) resolve(text string) (Ref, error) {
	if text == "" {
		return Ref{}, errors.New("empty reference")
	}
	name, port, hasPort := strings.Cut(text, ":")
	if i, ok := c.inputs[name]; ok {
		if hasPort {
			return Ref{}, fmt.Errorf("pipeline input %s has no output ports; write %s", excerpt.Quote(name), excerpt.Quote(name))
		}
		return Ref{Node: InputRef, Port: i}, nil
	}
	j, ok := c.byName[name]
	if !ok {
		if len(c.errs) >= maxErrors {
			return Ref{}, errors.New("unknown reference") // dropped anyway: skip the listing
		}
		return Ref{}, fmt.Errorf("no pipeline input or node is named %s%s (inputs: %s; nodes: %s)", excerpt.Quote(name), suggest(name, c.refNames()), excerpt.List(c.inNames, 20), c.nodeNames())
	}
	s := c.nodes[j].schema
	if s == nil {
		return Ref{}, errReported
	}
	if !hasPort {
		if len(s.Outputs) == 0 {
			return Ref{}, fmt.Errorf("node %s (operator %s) has no outputs", excerpt.Quote(name), s.Name)
		}
		return Ref{Node: j}, nil
	}
	p := s.Output(port)
	if p < 0 {
		names := make([]string, len(s.Outputs))
		for k, o := range s.Outputs {
			names[k] = o.Name
		}
		return Ref{}, fmt.Errorf("node %s (operator %s) has no output port %s%s (ports: %s)", excerpt.Quote(name), s.Name, excerpt.Quote(port), suggest(port, names), portNames(s.Outputs))
	}
	return Ref{Node: j, Port: p}, nil
}

// refNames lists what a reference may name, for suggestions.
func (c *compiler) refNames() []string {
	names := append([]string(nil), c.inNames...)
	for _, n := range c.nodes {
		names = append(names, n.name)
	}
	return names
}

func (c *compiler) nodeNames() string {
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.name
	}
	return excerpt.List(names, 20)
}
