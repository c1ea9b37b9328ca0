package pipeline

import (
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/internal/excerpt"
)

// graph orders the nodes topologically and rejects cycles, nodes whose
// output nothing uses and inputs nothing reads.
func (c *compiler) graph() {
	if !c.sort() {
		return // a cycle: liveness means little until it is broken
	}
	c.liveness()
}

// sort sets c.order by depth-first search from each node in file order,
// producers before consumers: the order is topological and otherwise keeps
// file order, so Describe reads like the file. It is iterative so that a
// long hostile chain cannot exhaust the stack. It reports the first cycle
// found and returns false.
func (c *compiler) sort() bool {
	const (
		unseen = iota
		onStack
		done
	)
	state := make([]uint8, len(c.nodes))
	order := make([]int, 0, len(c.nodes))
	for root := range c.nodes {
		if state[root] != unseen {
			continue
		}
		state[root] = onStack
		stack := []dfsFrame{{root, 0}}
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			in := c.nodes[top.node].in
			if top.next == len(in) {
				state[top.node] = done
				order = append(order, top.node)
				stack = stack[:len(stack)-1]
				continue
			}
			k := top.next
			top.next++
			r := in[k]
			if r.Node == InputRef {
				continue
			}
			switch state[r.Node] {
			case unseen:
				state[r.Node] = onStack
				stack = append(stack, dfsFrame{r.Node, 0})
			case onStack:
				c.cycle(stack, r.Node, k)
				return false
			}
		}
	}
	c.order = order
	return true
}

// dfsFrame is a node being visited and the next of its inputs to follow.
type dfsFrame struct{ node, next int }

// cycle reports the cycle closed when the node on top of stack reads input
// k from v, which is further down the stack. Each frame reads the next, so
// in data-flow order the cycle is v, then the frames above it from the top
// down, then v again.
func (c *compiler) cycle(stack []dfsFrame, v, k int) {
	from := len(stack) - 1
	for stack[from].node != v {
		from--
	}
	names := []string{c.nodes[v].name}
	for f := len(stack) - 1; f > from; f-- {
		names = append(names, c.nodes[stack[f].node].name)
	}
	names = append(names, c.nodes[v].name)
	u := stack[len(stack)-1].node
	field := "input " + excerpt.Quote(c.nodes[u].inText[k])
	if c.nodes[u].wired {
		field = fmt.Sprintf("input (by default the node before it, %s)", excerpt.Quote(c.nodes[u].inText[k]))
	}
	c.failf(c.nodeElem(u), field, "forms a cycle: %s (each feeds the next)", strings.Join(names, " → "))
}

// liveness rejects nodes no output depends on — dead work on every request
// in a hot path — and inputs nothing reads, which Triton would still make
// every client send.
func (c *compiler) liveness() {
	live := make([]bool, len(c.nodes))
	read := make([]bool, len(c.inNames))
	var stack []int
	mark := func(r Ref) {
		switch {
		case r.Node == InputRef:
			read[r.Port] = true
		case !live[r.Node]:
			live[r.Node] = true
			stack = append(stack, r.Node)
		}
	}
	for _, o := range c.outs {
		mark(o.ref)
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, r := range c.nodes[i].in {
			mark(r)
		}
	}
	for i := range c.nodes {
		if !live[i] {
			c.failf(c.nodeElem(i), "", "its output is never used: no pipeline output depends on it, so it would be dead work on every request; remove it or expose it with an output")
		}
	}
	for i := range c.inNames {
		// A count is read with its boxes; boxes nothing reads, boxUse
		// reports with what should read them.
		if !read[i] && c.countOf[i] < 0 && !c.inSpecs[i].IsBoxes() {
			c.failf(c.inputElem(i), "", "never read by any node or output; remove it (Triton would make every request carry it)")
		}
	}
}
