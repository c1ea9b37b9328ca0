package backend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// blame names, for a step that failed on a sample, the request input whose
// image it was working on: a client sees "IMAGE element 3: truncated",
// not a node of a pipeline it has never read.
type blame struct {
	all    string            // every input, for steps not found
	byNode map[string]string // node or step name → the inputs it depends on
}

// newBlame maps prog's nodes and the executor's fused steps, which read
// their first node's inputs, to the inputs they depend on.
func newBlame(prog *pipeline.Compiled, steps []executor.Step) blame {
	b := blame{all: strings.Join(prog.Inputs, "/"), byNode: map[string]string{}}
	// A decoded input's checks fail as a step named by the input itself
	// (inputs and nodes share one namespace, so the names cannot clash).
	for _, in := range prog.Inputs {
		b.byNode[in] = in
	}
	// deps[i] is the set of pipeline inputs node i reads, directly or not,
	// as a bit set in input order. Nodes are topologically sorted.
	deps := make([][]bool, len(prog.Nodes))
	for i, nd := range prog.Nodes {
		d := make([]bool, len(prog.Inputs))
		for _, r := range nd.In {
			if r.Node == pipeline.InputRef {
				d[r.Port] = true
				continue
			}
			for k, on := range deps[r.Node] {
				d[k] = d[k] || on
			}
		}
		deps[i] = d
		var names []string
		for k, on := range d {
			if on {
				names = append(names, prog.Inputs[k])
			}
		}
		if len(names) > 0 {
			b.byNode[nd.Name] = strings.Join(names, "/")
		}
	}
	for _, st := range steps {
		if len(st.Nodes) < 2 {
			continue
		}
		if s, ok := b.byNode[st.Nodes[0]]; ok {
			b.byNode[st.Name] = s
		}
	}
	return b
}

// input returns the input name(s) to blame for a failure at a step.
func (b blame) input(step string) string {
	if s, ok := b.byNode[step]; ok {
		return s
	}
	return b.all
}

// sampleMessage describes a failed sample for its request's error:
// "IMAGE element 2: truncated: decode: JPEG data ends early".
func (b blame) sampleMessage(elem int, err error) string {
	node := ""
	inner := err
	var se *executor.SampleError
	if errors.As(err, &se) {
		node, inner = se.Node, se.Err
	}
	cause := ops.CauseOf(inner)
	detail := inner.Error()
	var oe *ops.Error
	if errors.As(inner, &oe) {
		detail = oe.Msg // without the cause, which comes first
	}
	// An operator's panic carries a stack trace: that is for the log,
	// not for the client.
	detail, _, _ = strings.Cut(detail, "\n")
	if node == "" {
		return fmt.Sprintf("%s element %d: %s: %s", b.all, elem, cause, detail)
	}
	return fmt.Sprintf("%s element %d: %s: %s: %s", b.input(node), elem, cause, node, detail)
}
