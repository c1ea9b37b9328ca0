package pipeline

import (
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/internal/excerpt"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// Version is the schema version this build reads (Pipeline.version).
const Version = 1

// Compile validates a definition, builds its operators and infers every
// tensor's spec. source names the file in errors; it may be empty.
//
// Problems are checked in stages — header; sizes (limits.go); names, and
// operators with their arguments; references; graph; shapes; outputs —
// and Compile stops after the first stage that finds any, reporting all of
// that stage's problems together (an ErrorList when there are several):
// later stages would only repeat them as confusing consequences. Every
// error is an *Error naming the file, the element and the field.
func Compile(p *pipelinepb.Pipeline, source string) (*Compiled, error) {
	if p == nil {
		return nil, &Error{Source: source, Err: errors.New("no pipeline definition")}
	}
	c := &compiler{def: p, src: source, inputs: map[string]int{}, byName: map[string]int{}}
	stages := [][]func(){
		{c.header},
		{c.bounds},
		{c.names, c.operators},
		{c.wiring, c.outputSources},
		{c.graph, c.boxUse, c.sourceModeUse},
		{c.infer},
		{c.outputSpecs},
	}
	for _, stage := range stages {
		for _, check := range stage {
			check()
		}
		if len(c.errs) > 0 {
			if c.dropped > 0 {
				c.errs = append(c.errs, &Error{Source: source, Err: fmt.Errorf("… and %d more problems", c.dropped)})
			}
			return nil, c.errs.err()
		}
	}
	return c.result(), nil
}

// CompileText parses a definition in text form and compiles it.
func CompileText(text []byte, source string) (*Compiled, error) {
	p, err := ParseText(text, source)
	if err != nil {
		return nil, err
	}
	return Compile(p, source)
}

// compiler holds the state of one Compile. Node indexes in it are positions
// in the definition (file order); result renumbers them topologically.
type compiler struct {
	def     *pipelinepb.Pipeline
	src     string
	errs    ErrorList
	dropped int // problems beyond maxErrors, counted but not kept

	inputs  map[string]int // input name → index
	inNames []string
	inSpecs []ops.Spec // per input: encoded bytes or a decoded image
	countOf []int      // per input: the boxes input it counts, or -1
	nodes   []nodeInfo
	byName  map[string]int // node name → index
	outs    []outInfo
	order   []int // topological order, set by graph
}

type nodeInfo struct {
	name     string // explicit, or defaulted to the op
	explicit bool
	schema   *ops.Schema
	args     ops.Args
	op       ops.Op
	in       []Ref
	inText   []string // how each input was written, for messages
	wired    bool     // inputs came from default wiring
	out      []ops.Spec
}

type outInfo struct {
	ref   Ref
	text  string
	wired bool // source came from default wiring
}

// maxErrors bounds the problems reported at once: enough for any real
// definition, and a hostile one cannot make the report huge.
const maxErrors = 50

func (c *compiler) fail(elem, field string, err error) {
	if len(c.errs) >= maxErrors {
		c.dropped++
		return
	}
	c.errs = append(c.errs, &Error{Source: c.src, Elem: elem, Field: field, Err: err})
}

func (c *compiler) failf(elem, field, format string, a ...any) {
	c.fail(elem, field, fmt.Errorf(format, a...))
}

// header checks what makes the rest meaningless when wrong.
func (c *compiler) header() {
	switch v := c.def.GetVersion(); {
	case v == 0:
		c.failf("", "version", "missing: this build reads version %d; add `version: %d`", Version, Version)
		return // another schema's rules may differ: check nothing more
	case v != Version:
		c.failf("", "version", "%d is not supported: this build reads version %d", v, Version)
		return
	}
	if len(c.def.GetInput()) == 0 {
		c.failf("", "input", "the pipeline declares no inputs; add e.g. `input { name: \"IMAGE\" }`")
	}
	if len(c.def.GetNode()) == 0 {
		c.failf("", "node", "the pipeline has no nodes; add e.g. `node { op: \"decode\" }`")
	}
	if len(c.def.GetOutput()) == 0 {
		c.failf("", "output", "the pipeline declares no outputs; add e.g. `output { name: \"PIXELS\" }`")
	}
}

// operators looks up each node's operator, checks its arguments and builds
// it.
func (c *compiler) operators() {
	for i, n := range c.def.GetNode() {
		ni, elem := &c.nodes[i], c.nodeElem(i)
		name := n.GetOp()
		if name == "" {
			c.failf(elem, "op", "missing (known operators: %s)", knownOps())
			continue
		}
		s := ops.Lookup(name)
		if s == nil {
			c.failf(elem, "op", "unknown operator %s%s (known: %s)", excerpt.Quote(name), suggest(name, ops.Names()), knownOps())
			continue
		}
		ni.schema = s
		raw, err := RawArgs(n)
		if err != nil {
			c.fail(elem, "", err)
			continue
		}
		args, err := s.Check(raw)
		if err != nil {
			c.fail(elem, "", err)
			continue
		}
		op, err := buildOp(s, args)
		if err != nil {
			field := "arg"
			var ae *ops.ArgError
			if errors.As(err, &ae) {
				field = "" // it names the argument itself
			}
			c.fail(elem, field, err)
			continue
		}
		ni.args, ni.op = args, op
	}
}

// infer runs shape inference in topological order.
func (c *compiler) infer() {
	for _, i := range c.order {
		ni := &c.nodes[i]
		in := make([]ops.Spec, len(ni.in))
		for k, r := range ni.in {
			in[k] = c.spec(r)
			// A copy, so that an operator scribbling on its input specs
			// cannot change its producer's.
			in[k].Dims = append([]int(nil), in[k].Dims...)
		}
		out, err := inferOp(ni.schema, ni.op, in)
		if err == nil && len(out) != len(ni.schema.Outputs) {
			err = fmt.Errorf("operator %s inferred %s for its %s (a bug in the operator)", ni.schema.Name, plural(len(out), "output spec"), plural(len(ni.schema.Outputs), "output port"))
		}
		if err != nil {
			c.fail(c.nodeElem(i), c.inputsField(i, in), err)
			return // its consumers cannot be inferred either
		}
		ni.out = out
	}
}

// outputSpecs checks what Triton needs of an output: a static shape, and
// agreement with the dtype and dims the file states.
func (c *compiler) outputSpecs() {
	for i, o := range c.def.GetOutput() {
		elem, s := c.outputElem(i), c.spec(c.outs[i].ref)
		if s.DType.Size() == 0 {
			c.failf(elem, "", "dtype %v is not a tensor type (a bug in operator of %s)", s.DType, excerpt.Quote(c.outs[i].text))
			continue
		}
		if !s.Static() {
			c.failf(elem, "", "shape %s is not static: a batched Triton output needs fixed dims; add a resize with size, a crop or a pad", dimsString(s.Dims))
		}
		if dt := o.GetDtype(); dt != "" {
			want, err := ops.ParseDType(dt)
			switch {
			case err != nil:
				c.fail(elem, "dtype", err)
			case want != s.DType:
				c.failf(elem, "dtype", "%s given, but the pipeline produces %v", excerpt.Quote(dt), s.DType)
			}
		}
		if dims := o.GetDims(); len(dims) > 0 && !sameDims(dims, s.Dims) {
			given := make([]int, len(dims))
			for k, d := range dims {
				given[k] = int(d)
			}
			c.failf(elem, "dims", "%s given, but the pipeline produces %s", dimsString(given), dimsString(s.Dims))
		}
	}
}

// result renumbers the nodes topologically and assembles the Compiled.
func (c *compiler) result() *Compiled {
	pos := make([]int, len(c.nodes))
	for k, i := range c.order {
		pos[i] = k
	}
	remap := func(r Ref) Ref {
		if r.Node != InputRef {
			r.Node = pos[r.Node]
		}
		return r
	}
	cp := &Compiled{Def: c.def, Source: c.src, Inputs: append([]string(nil), c.inNames...),
		InputSpecs: append([]ops.Spec(nil), c.inSpecs...), CountOf: append([]int(nil), c.countOf...)}
	for _, i := range c.order {
		ni := c.nodes[i]
		in := make([]Ref, len(ni.in))
		for k, r := range ni.in {
			in[k] = remap(r)
		}
		cp.Nodes = append(cp.Nodes, Node{
			Name: ni.name, Index: i, Schema: ni.schema, Args: ni.args, Op: ni.op, In: in, Out: ni.out,
		})
	}
	for i, o := range c.def.GetOutput() {
		ref := c.outs[i].ref
		cp.Outputs = append(cp.Outputs, Output{Name: o.GetName(), Ref: remap(ref), Spec: c.spec(ref)})
	}
	return cp
}

// boxUse checks who reads boxes and count inputs: a boxes input only a
// crop_boxes node's boxes port, a count input nothing (the executor applies
// it to its boxes), and the boxes port nothing but a boxes input.
func (c *compiler) boxUse() {
	readers := make([]int, len(c.inNames))
	for i := range c.nodes {
		ni := &c.nodes[i]
		if ni.schema == nil {
			continue
		}
		for p, r := range ni.in {
			if r.Node != InputRef {
				if ni.schema.Name == cropBoxes && p == 1 {
					c.failf(c.nodeElem(i), "input", "port boxes reads %s, a node's output: it takes a boxes pipeline input (input { name: \"BOXES\" boxes { max: 8 coords: \"pixel\" } })", excerpt.Quote(ni.inText[p]))
				}
				continue
			}
			k, spec := r.Port, c.inSpecs[r.Port]
			switch {
			case c.countOf[k] >= 0:
				c.failf(c.nodeElem(i), "input", "reads input %s, the count of input %s: a count is applied to its boxes, which crop_boxes reads; read %s instead", excerpt.Quote(c.inNames[k]), excerpt.Quote(c.inNames[c.countOf[k]]), excerpt.Quote(c.inNames[c.countOf[k]]))
			case spec.IsBoxes() && (ni.schema.Name != cropBoxes || p != 1):
				c.failf(c.nodeElem(i), "input", "reads boxes input %s on port %s: boxes are read by a crop_boxes node's boxes port (input: [\"decode\", %s])", excerpt.Quote(c.inNames[k]), ni.schema.Inputs[p].Name, excerpt.Quote(c.inNames[k]))
			case spec.IsBoxes():
				readers[k]++
			case ni.schema.Name == cropBoxes && p == 1:
				c.failf(c.nodeElem(i), "input", "port boxes reads input %s, which is not a boxes input: declare it input { name: %s boxes { max: 8 coords: \"pixel\" } }", excerpt.Quote(c.inNames[k]), excerpt.Quote(c.inNames[k]))
			}
		}
	}
	for k := range c.inNames {
		if c.inSpecs[k].IsBoxes() && readers[k] == 0 {
			c.failf(c.inputElem(k), "boxes", "no crop_boxes node reads it: add node { op: \"crop_boxes\" input: [\"decode\", %s] arg { name: \"size\" ints { v: [224, 224] } } }", excerpt.Quote(c.inNames[k]))
		}
	}
}

// cropBoxes is the operator that reads boxes inputs.
const cropBoxes = "crop_boxes"

// sourceModeUse checks each resize with source_mode: the decode that hands
// it every image as Pillow's Image.open holds it (four channels for some
// modes) must be directly before it, read by nothing else, and follow
// Pillow there too (no background, cmyk "pillow").
func (c *compiler) sourceModeUse() {
	for i := range c.nodes {
		ni := &c.nodes[i]
		if ni.schema == nil || ni.schema.Name != "resize" || !ni.args.Bool("source_mode") || len(ni.in) != 1 {
			continue
		}
		fail := func(format string, a ...any) {
			c.fail(c.nodeElem(i), "", &ops.ArgError{Arg: "source_mode", Msg: fmt.Sprintf(format, a...)})
		}
		r := ni.in[0]
		if r.Node == InputRef || c.nodes[r.Node].schema.Name != "decode" {
			fail("needs a decode directly before it, which knows the mode Pillow opens each image in; it reads %s", excerpt.Quote(ni.inText[0]))
			continue
		}
		d := &c.nodes[r.Node]
		if n := c.readers(r.Node); n > 1 {
			fail("needs the %s it reads to have no other reader (it hands this resize images in four channels), but %d read it", c.nodeElem(r.Node), n)
		}
		if d.args.Has("background") {
			fail("resizes alpha as Pillow does, but %s composites it onto a background first: drop one of them", c.nodeElem(r.Node))
		}
		if rule := d.args.Str("cmyk"); rule != "pillow" {
			fail("converts CMYK as Pillow does, but %s says cmyk %s", c.nodeElem(r.Node), excerpt.Quote(rule))
		}
	}
}

// readers counts the nodes and pipeline outputs that read node's outputs.
func (c *compiler) readers(node int) int {
	n := 0
	for i := range c.nodes {
		for _, r := range c.nodes[i].in {
			if r.Node == node {
				n++
				break
			}
		}
	}
	for _, o := range c.outs {
		if o.ref.Node == node {
			n++
		}
	}
	return n
}

// spec is the spec of a tensor by file-order Ref, once inferred.
func (c *compiler) spec(r Ref) ops.Spec {
	if r.Node == InputRef {
		return c.inSpecs[r.Port]
	}
	return c.nodes[r.Node].out[r.Port]
}

// buildOp calls the operator's constructor. A panic there is an operator
// bug, but one malformed definition must not take down a Triton server
// serving other models, so it becomes an error.
func buildOp(s *ops.Schema, a ops.Args) (op ops.Op, err error) {
	defer func() {
		if r := recover(); r != nil {
			op, err = nil, fmt.Errorf("operator %s panicked while building (a bug in the operator): %v", s.Name, r)
		}
	}()
	if s.New == nil {
		return nil, fmt.Errorf("operator %s cannot be built: its schema has no New", s.Name)
	}
	op, err = s.New(a)
	if err == nil && op == nil {
		err = fmt.Errorf("operator %s built nothing (a bug in the operator)", s.Name)
	}
	return op, err
}

// inferOp calls Infer, turning a panic into an error for buildOp's reason.
func inferOp(s *ops.Schema, op ops.Op, in []ops.Spec) (out []ops.Spec, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("operator %s panicked in shape inference (a bug in the operator): %v", s.Name, r)
		}
	}()
	return op.Infer(in)
}

func sameDims(given []int64, dims []int) bool {
	if len(given) != len(dims) {
		return false
	}
	for i := range given {
		if given[i] != int64(dims[i]) {
			return false
		}
	}
	return true
}
