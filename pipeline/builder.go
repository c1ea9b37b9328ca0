package pipeline

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// Builder writes a definition in Go — the same message the text form
// parses to — for tests and for programs that generate model repositories:
//
//	p, err := pipeline.New("preprocess_imagenet").
//		Input("IMAGE").
//		Node("decode", pipeline.Str("color", "RGB")).
//		Node("resize", pipeline.Int("shorter", 256)).
//		NamedNode("crop224", "crop", []string{"resize"}, pipeline.Ints("size", 224, 224)).
//		Output("PIXELS", "crop224").
//		Build()
//
// Methods chain and follow the text form's rules (default wiring, default
// names); Build validates, so mistakes surface where the code is.
type Builder struct {
	p   *pipelinepb.Pipeline
	err error // first misuse, reported by Build
}

// New starts a definition of the current schema Version.
func New(name string) *Builder {
	return &Builder{p: &pipelinepb.Pipeline{Version: Version, Name: name}}
}

// Input declares pipeline inputs, in order.
func (b *Builder) Input(names ...string) *Builder {
	for _, n := range names {
		b.p.Input = append(b.p.Input, &pipelinepb.Input{Name: n})
	}
	return b
}

// Node appends a node named after its operator that reads the node before
// it (or the only input).
func (b *Builder) Node(op string, args ...*pipelinepb.Arg) *Builder {
	return b.NamedNode("", op, nil, args...)
}

// NamedNode appends a node with an explicit name and inputs. An empty name
// defaults to op; nil inputs means default wiring.
func (b *Builder) NamedNode(name, op string, inputs []string, args ...*pipelinepb.Arg) *Builder {
	n := &pipelinepb.Node{Name: name, Op: op, Input: append([]string(nil), inputs...)}
	for i, a := range args {
		if a == nil {
			if b.err == nil {
				b.err = fmt.Errorf("pipeline: node #%d (%s): argument #%d is nil", len(b.p.Node)+1, op, i+1)
			}
			continue
		}
		// A copy: helpers' results may be reused across nodes and builders.
		n.Arg = append(n.Arg, proto.Clone(a).(*pipelinepb.Arg))
	}
	b.p.Node = append(b.p.Node, n)
	return b
}

// Output declares a pipeline output reading source ("" for the last node's
// first output).
func (b *Builder) Output(name, source string) *Builder {
	b.p.Output = append(b.p.Output, &pipelinepb.Output{Name: name, Source: source})
	return b
}

// TypedOutput declares an output whose dtype and dims Compile checks
// against inference, pinning the model's interface.
func (b *Builder) TypedOutput(name, source, dtype string, dims ...int64) *Builder {
	b.p.Output = append(b.p.Output, &pipelinepb.Output{Name: name, Source: source, Dtype: dtype, Dims: append([]int64(nil), dims...)})
	return b
}

// Def returns a copy of the definition so far, unchecked.
func (b *Builder) Def() *pipelinepb.Pipeline {
	return proto.Clone(b.p).(*pipelinepb.Pipeline)
}

// Build returns the definition once Compile accepts it (with the operators
// registered in this program).
func (b *Builder) Build() (*pipelinepb.Pipeline, error) {
	if _, err := b.Compile(); err != nil {
		return nil, err
	}
	return b.Def(), nil
}

// Compile builds and compiles the definition; errors name it as
// `pipeline "NAME"` in place of a file.
func (b *Builder) Compile() (*Compiled, error) {
	if b.err != nil {
		return nil, b.err
	}
	return Compile(b.Def(), fmt.Sprintf("pipeline %q", b.p.GetName()))
}
