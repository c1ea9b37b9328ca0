package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/ops"
)

const src = "p.pbtxt"

// header is the start of most test definitions.
const header = "version: 1\nname: \"t\"\ninput { name: \"IMAGE\" }\n"

// valid is a small chain every rejection test breaks in one place.
const valid = header + `
node { op: "test_src" }
node { name: "resize" op: "test_size" arg { name: "size" ints { v: [224, 224] } } }
node { op: "test_norm" arg { name: "layout" str: "CHW" } }
output { name: "PIXELS" dtype: "FP32" dims: [3, 224, 224] }
`

func compileText(t *testing.T, text string) (*Compiled, error) {
	t.Helper()
	p, err := ParseText([]byte(text), src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return Compile(p, src)
}

func TestCompileValid(t *testing.T) {
	c, err := compileText(t, valid)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 3 || c.Nodes[1].Name != "resize" || c.Nodes[0].Name != "test_src" {
		t.Fatalf("nodes: %+v", c.Nodes)
	}
	if got := c.Nodes[0].In; len(got) != 1 || got[0] != (Ref{InputRef, 0}) {
		t.Errorf("first node reads %v, want the input", got)
	}
	if got := c.Nodes[2].In[0]; got != (Ref{1, 0}) {
		t.Errorf("default wiring: node 3 reads %v", got)
	}
	if got := c.Nodes[1].Args.Str("interp"); got != "linear" {
		t.Errorf("default argument interp = %q", got)
	}
	o := c.Outputs[0]
	if o.Name != "PIXELS" || o.Ref != (Ref{2, 0}) || o.Spec.String() != "FP32[3,224,224]" {
		t.Errorf("output %+v", o)
	}
	if s := c.Spec(c.Nodes[1].In[0]); s.String() != "UINT8[-1,-1,3] RGB" {
		t.Errorf("spec of resize's input: %v", s)
	}
}

// Every rejection names the file, the element and the field.
func TestCompileRejects(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string // substrings of the error
	}{
		{"version missing", strings.Replace(valid, "version: 1", "", 1),
			[]string{"p.pbtxt: version: missing: this build reads version 1"}},
		{"version unsupported", strings.Replace(valid, "version: 1", "version: 2", 1),
			[]string{"p.pbtxt: version: 2 is not supported: this build reads version 1"}},
		{"no inputs", strings.Replace(valid, `input { name: "IMAGE" }`, "", 1),
			[]string{"p.pbtxt: input: the pipeline declares no inputs"}},
		{"no nodes", header + `output { name: "X" }`,
			[]string{"p.pbtxt: node: the pipeline has no nodes"}},
		{"no outputs", header + `node { op: "test_src" }`,
			[]string{"p.pbtxt: output: the pipeline declares no outputs"}},
		{"empty input name", strings.Replace(valid, `input { name: "IMAGE" }`, `input { }`, 1),
			[]string{`p.pbtxt: input #1: name: missing`}},
		{"duplicate input", strings.Replace(valid, `input { name: "IMAGE" }`, `input { name: "IMAGE" } input { name: "IMAGE" }`, 1),
			[]string{`p.pbtxt: input "IMAGE" (#2): name: "IMAGE" is already the name of input #1`}},
		{"input name with colon", strings.Replace(valid, `"IMAGE"`, `"IMAGE:0"`, 1),
			[]string{`p.pbtxt: input "IMAGE:0" (#1): name: "IMAGE:0" contains ':'`}},
		{"empty output name", strings.Replace(valid, `name: "PIXELS"`, ``, 1),
			[]string{`p.pbtxt: output #1: name: missing`}},
		{"duplicate output", valid + `output { name: "PIXELS" }`,
			[]string{`p.pbtxt: output "PIXELS" (#2): name: "PIXELS" is already the name of output #1`}},
		{"same op twice without names", header + `node { op: "test_src" } node { op: "test_src" } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_src" (#2): name: "test_src" (defaulted from the op) is already used by node #1: two "test_src" nodes need explicit names`}},
		{"explicit name clashes with defaulted", header + `node { op: "test_src" } node { name: "test_src" op: "test_size" } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_src" (#2): name: "test_src" is already used by node #1 (defaulted from its op)`}},
		{"duplicate explicit names", header + `node { name: "a" op: "test_src" } node { name: "a" op: "test_size" } output { name: "X" }`,
			[]string{`p.pbtxt: node "a" (#2): name: "a" is already used by node #1`}},
		{"node named like an input", header + `node { name: "IMAGE" op: "test_src" } output { name: "X" }`,
			[]string{`p.pbtxt: node "IMAGE" (#1): name: "IMAGE" is also the name of input #1`}},
		{"node name with space", header + `node { name: "a b" op: "test_src" } output { name: "X" }`,
			[]string{`p.pbtxt: node "a b" (#1): name: "a b" contains a space`}},
		{"missing op", header + `node { name: "a" } output { name: "X" }`,
			[]string{`p.pbtxt: node "a" (#1): op: missing (known operators: `, "test_src"}},
		{"unknown op", strings.Replace(valid, `op: "test_size"`, `op: "test_szie"`, 1),
			[]string{`p.pbtxt: node "resize" (#2): op: unknown operator "test_szie" (did you mean "test_size"?) (known: `, "test_norm"}},
		{"unknown argument", strings.Replace(valid, `name: "size"`, `name: "sise"`, 1),
			[]string{`p.pbtxt: node "resize" (#2): argument "sise": unknown argument of test_size (known: size, interp)`}},
		{"wrong argument type", strings.Replace(valid, `ints { v: [224, 224] }`, `str: "224"`, 1),
			[]string{`p.pbtxt: node "resize" (#2): argument "size": wants ints, got string "224"`}},
		{"argument out of range", strings.Replace(valid, `[224, 224]`, `[0, 224]`, 1),
			[]string{`p.pbtxt: node "resize" (#2): argument "size": 0 is out of range [1, 65535]`}},
		{"argument list length", strings.Replace(valid, `[224, 224]`, `[224]`, 1),
			[]string{`p.pbtxt: node "resize" (#2): argument "size": list of 1 values; wants 2`}},
		{"argument not in enum", strings.Replace(valid, `} } }`, `} } arg { name: "interp" str: "bilinar" } }`, 1),
			[]string{`p.pbtxt: node "resize" (#2): argument "interp": "bilinar" is not one of nearest, linear, cubic, area`}},
		{"required argument missing", strings.Replace(valid, `arg { name: "size" ints { v: [224, 224] } }`, ``, 1),
			[]string{`p.pbtxt: node "resize" (#2): argument "size": required argument of test_size is missing`}},
		{"argument twice", strings.Replace(valid, `} } }`, `} } arg { name: "size" ints { v: [1, 1] } } }`, 1),
			[]string{`p.pbtxt: node "resize" (#2): argument "size": given twice (arg #1 and #2)`}},
		{"argument without value", strings.Replace(valid, `} } }`, `} } arg { name: "interp" } }`, 1),
			[]string{`p.pbtxt: node "resize" (#2): argument "interp": has no value`}},
		{"argument without name", strings.Replace(valid, `} } }`, `} } arg { int: 3 } }`, 1),
			[]string{`p.pbtxt: node "resize" (#2): arg #2 has no name`}},
		{"New rejects", strings.Replace(valid, `op: "test_norm" arg { name: "layout" str: "CHW" }`, `op: "test_bad" arg { name: "mode" str: "reject" }`, 1),
			[]string{`p.pbtxt: node "test_bad" (#3): arg: mode reject cannot be combined`}},
		{"New rejects an argument", strings.Replace(valid, `op: "test_norm" arg { name: "layout" str: "CHW" }`, `op: "test_bad" arg { name: "mode" str: "reject_arg" }`, 1),
			[]string{`p.pbtxt: node "test_bad" (#3): argument "mode": reject_arg is refused by New`}},
		{"New builds nothing", strings.Replace(valid, `op: "test_norm" arg { name: "layout" str: "CHW" }`, `op: "test_bad" arg { name: "mode" str: "nil" }`, 1),
			[]string{`p.pbtxt: node "test_bad" (#3): arg: operator test_bad built nothing`}},
		{"New panics", strings.Replace(valid, `op: "test_norm" arg { name: "layout" str: "CHW" }`, `op: "test_bad" arg { name: "mode" str: "panic_new" }`, 1),
			[]string{`p.pbtxt: node "test_bad" (#3): arg: operator test_bad panicked while building`, "boom in New"}},
		{"unknown node reference", strings.Replace(valid, `op: "test_norm"`, `op: "test_norm" input: "resze"`, 1),
			[]string{`p.pbtxt: node "test_norm" (#3): input "resze": no pipeline input or node is named "resze" (did you mean "resize"?) (inputs: IMAGE; nodes: test_src, resize, test_norm)`}},
		{"unknown port", header + `node { op: "test_src" } node { name: "split" op: "test_split" } node { op: "test_size" input: "split:scal" arg { name: "size" ints { v: [2, 2] } } } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_size" (#3): input "split:scal": node "split" (operator test_split) has no output port "scal" (did you mean "scale"?) (ports: image, scale)`}},
		{"port on a pipeline input", strings.Replace(valid, `node { op: "test_src" }`, `node { op: "test_src" input: "IMAGE:0" }`, 1),
			[]string{`p.pbtxt: node "test_src" (#1): input "IMAGE:0": pipeline input "IMAGE" has no output ports; write "IMAGE"`}},
		{"empty reference", strings.Replace(valid, `node { op: "test_src" }`, `node { op: "test_src" input: "" }`, 1),
			[]string{`p.pbtxt: node "test_src" (#1): input "": empty reference`}},
		{"reading a node without outputs", header + `node { op: "test_src" } node { op: "test_sink" } node { op: "test_size" input: "test_sink" arg { name: "size" ints { v: [2, 2] } } } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_size" (#3): input "test_sink": node "test_sink" (operator test_sink) has no outputs`}},
		{"default wiring after a node without outputs", header + `node { op: "test_src" } node { op: "test_sink" } node { op: "test_split" } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_split" (#3): input: missing, and the node before it, node "test_sink" (#2), has no output to read`}},
		{"too few inputs", header + `node { op: "test_src" } node { op: "test_join" input: "test_src" } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_join" (#2): input: 1 given, but operator test_join has 2 input ports (a, b)`}},
		{"too many inputs", header + `node { op: "test_src" input: ["IMAGE", "IMAGE"] } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_src" (#1): input: 2 given, but operator test_src has 1 input port (in)`}},
		{"inputs for an operator without ports", header + `node { op: "test_gen" input: "IMAGE" } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_gen" (#1): input: 1 given, but operator test_gen has 0 input ports (none)`}},
		{"several ports need explicit inputs", header + `node { op: "test_src" } node { op: "test_join" } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_join" (#2): input: missing: operator test_join has 2 input ports (a, b)`}},
		{"first node with several inputs", strings.Replace(valid, `input { name: "IMAGE" }`, `input { name: "A" } input { name: "B" }`, 1),
			[]string{`p.pbtxt: node "test_src" (#1): input: missing: the pipeline has 2 inputs (A, B); name the one the first node reads, e.g. input: "A"`}},
		{"cycle", header + `node { op: "test_src" }
			node { name: "a" op: "test_join" input: ["test_src", "c"] }
			node { name: "b" op: "test_size" arg { name: "size" ints { v: [2, 2] } } }
			node { name: "c" op: "test_size" arg { name: "size" ints { v: [2, 2] } } }
			output { name: "X" }`,
			[]string{`p.pbtxt: node "b" (#3): input (by default the node before it, "a"): forms a cycle: a → b → c → a`}},
		{"self cycle", header + `node { op: "test_src" } node { name: "x" op: "test_join" input: ["test_src", "x"] } output { name: "X" }`,
			[]string{`p.pbtxt: node "x" (#2): input "x": forms a cycle: x → x`}},
		{"dead node", header + `node { op: "test_src" } node { op: "test_split" } node { op: "test_size" input: "test_src" arg { name: "size" ints { v: [2, 2] } } } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_split" (#2): its output is never used: no pipeline output depends on it`}},
		{"unread second input", strings.Replace(strings.Replace(valid, `input { name: "IMAGE" }`, `input { name: "IMAGE" } input { name: "MASK" }`, 1), `op: "test_src"`, `op: "test_src" input: "IMAGE"`, 1),
			[]string{`p.pbtxt: input "MASK" (#2): never read by any node or output`}},
		{"unknown output source", strings.Replace(valid, `name: "PIXELS"`, `name: "PIXELS" source: "nope"`, 1),
			[]string{`p.pbtxt: output "PIXELS" (#1): source "nope": no pipeline input or node is named "nope"`}},
		{"default source without outputs", header + `node { op: "test_src" } node { op: "test_sink" } output { name: "X" }`,
			[]string{`p.pbtxt: output "X" (#1): source: missing, and the last node, node "test_sink" (#2), has no output to expose`}},
		{"output not static", header + `node { op: "test_src" } output { name: "PIXELS" }`,
			[]string{`p.pbtxt: output "PIXELS" (#1): shape [-1,-1,3] is not static: a batched Triton output needs fixed dims; add a resize with size, a crop or a pad`}},
		{"output is a pipeline input", header + `node { op: "test_src" } output { name: "X" } output { name: "RAW" source: "IMAGE" }`,
			[]string{`p.pbtxt: output "X" (#1): shape [-1,-1,3] is not static`, `p.pbtxt: output "RAW" (#2): shape [-1] is not static`}},
		{"output dtype disagrees", strings.Replace(valid, `dtype: "FP32"`, `dtype: "FP16"`, 1),
			[]string{`p.pbtxt: output "PIXELS" (#1): dtype: "FP16" given, but the pipeline produces FP32`}},
		{"output dtype unknown", strings.Replace(valid, `dtype: "FP32"`, `dtype: "FP64"`, 1),
			[]string{`p.pbtxt: output "PIXELS" (#1): dtype: unknown dtype "FP64"`}},
		{"output dims disagree", strings.Replace(valid, `dims: [3, 224, 224]`, `dims: [224, 224, 3]`, 1),
			[]string{`p.pbtxt: output "PIXELS" (#1): dims: [224,224,3] given, but the pipeline produces [3,224,224]`}},
		{"output dims rank", strings.Replace(valid, `dims: [3, 224, 224]`, `dims: [3, 224]`, 1),
			[]string{`p.pbtxt: output "PIXELS" (#1): dims: [3,224] given, but the pipeline produces [3,224,224]`}},
		{"infer error", header + `node { op: "test_src" } node { name: "split" op: "test_split" } node { op: "test_size" input: "split:scale" arg { name: "size" ints { v: [2, 2] } } } output { name: "X" } output { name: "Y" source: "split" }`,
			[]string{`p.pbtxt: node "test_size" (#3): input "split:scale" (FP32[2]): test_size needs an HWC UINT8 image input, got FP32[2]`}},
		{"infer error with two inputs", header + `node { op: "test_src" } node { op: "test_size" arg { name: "size" ints { v: [2, 2] } } } node { op: "test_join" input: ["test_src", "test_size"] } output { name: "X" }`,
			[]string{`p.pbtxt: node "test_join" (#3): inputs "test_src" (UINT8[-1,-1,3] RGB), "test_size" (UINT8[2,2,3] RGB): test_join: a is`}},
		{"infer panics", strings.Replace(valid, `op: "test_norm" arg { name: "layout" str: "CHW" }`, `op: "test_bad" arg { name: "mode" str: "panic_infer" }`, 1),
			[]string{`p.pbtxt: node "test_bad" (#3): input "resize" (UINT8[224,224,3] RGB): operator test_bad panicked in shape inference`}},
		{"infer returns too many specs", strings.Replace(valid, `op: "test_norm" arg { name: "layout" str: "CHW" }`, `op: "test_bad" arg { name: "mode" str: "count" }`, 1),
			[]string{`p.pbtxt: node "test_bad" (#3): input "resize" (UINT8[224,224,3] RGB): operator test_bad inferred 2 output specs for its 1 output port`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compileText(t, tt.text)
			if err == nil {
				t.Fatalf("compiled; want an error containing %q", tt.want)
			}
			t.Log(err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, w)
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.Source != src {
				t.Errorf("error %T does not unwrap to an *Error from %s", err, src)
			}
		})
	}
}

func TestCompileNil(t *testing.T) {
	if _, err := Compile(nil, src); err == nil || !strings.Contains(err.Error(), "p.pbtxt: no pipeline definition") {
		t.Errorf("Compile(nil) = %v", err)
	}
}

// Independent problems of one stage are reported together, and each is
// reachable with errors.As.
func TestCompileCollects(t *testing.T) {
	text := header + `node { op: "test_src" arg { name: "color" str: "CMYK" } }
		node { op: "test_nope" }
		node { name: "resize" op: "test_size" }
		node { name: "resize" op: "test_norm" }
		output { name: "X" }`
	_, err := compileText(t, text)
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 4 {
		t.Fatalf("want 4 errors, got %v", err)
	}
	for i, w := range []string{
		`node "resize" (#4): name: "resize" is already used by node #3`,
		`node "test_src" (#1): argument "color"`,
		`node "test_nope" (#2): op: unknown operator`,
		`node "resize" (#3): argument "size": required`,
	} {
		if !strings.Contains(list[i].Error(), w) {
			t.Errorf("error %d = %v, want %s", i, list[i], w)
		}
	}
	var ae *ops.ArgError
	if !errors.As(err, &ae) || ae.Arg != "color" {
		t.Errorf("errors.As ArgError: %v", ae)
	}
}

// A hostile definition with thousands of problems gets a bounded report.
func TestCompileErrorCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(header)
	for i := range MaxNodes {
		fmt.Fprintf(&b, "node { name: \"n%d\" op: \"test_nope\" }\n", i)
	}
	b.WriteString(`output { name: "X" }`)
	_, err := compileText(t, b.String())
	var list ErrorList
	if !errors.As(err, &list) || len(list) != maxErrors+1 {
		t.Fatalf("want %d errors, got %d", maxErrors+1, len(list))
	}
	if want := fmt.Sprintf("and %d more problems", MaxNodes-maxErrors); !strings.Contains(list[maxErrors].Error(), want) {
		t.Errorf("last: %v", list[maxErrors])
	}
	if len(err.Error()) > 20000 {
		t.Errorf("report is %d bytes", len(err.Error()))
	}
}

// Nodes come out producers first even when the file lists a consumer
// before its producer, and refs follow the renumbering.
func TestCompileTopologicalOrder(t *testing.T) {
	text := header + `
node { name: "src" op: "test_src" }
node { name: "join" op: "test_join" input: ["small", "split:image"] }
node { name: "split" op: "test_split" input: "small" }
node { name: "small" op: "test_size" input: "src" arg { name: "size" ints { v: [8, 8] } } }
output { name: "OUT" source: "join" }
output { name: "SCALE" source: "split:scale" }
`
	c, err := compileText(t, text)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	pos := map[string]int{}
	for i, n := range c.Nodes {
		order = append(order, n.Name)
		pos[n.Name] = i
		for _, r := range n.In {
			if r.Node >= i {
				t.Errorf("node %s reads node %d, not earlier", n.Name, r.Node)
			}
		}
	}
	if got := strings.Join(order, " "); got != "src small split join" {
		t.Errorf("order %s", got)
	}
	if c.Nodes[pos["join"]].Index != 1 {
		t.Errorf("join's Index = %d, want its file position 1", c.Nodes[pos["join"]].Index)
	}
	if got := c.Nodes[pos["join"]].In; got[0] != (Ref{pos["small"], 0}) || got[1] != (Ref{pos["split"], 0}) {
		t.Errorf("join reads %v", got)
	}
	if got := c.Outputs[1]; got.Ref != (Ref{pos["split"], 1}) || got.Spec.String() != "FP32[2]" {
		t.Errorf("SCALE output %+v", got)
	}
	if got := fmt.Sprint(c.Consumers(pos["small"])); got != fmt.Sprint([]int{pos["split"], pos["join"]}) {
		t.Errorf("Consumers(small) = %s", got)
	}
	if got := c.Consumers(pos["join"]); len(got) != 0 {
		t.Errorf("Consumers(join) = %v", got)
	}
	if got := c.Consumers(99); got != nil {
		t.Errorf("Consumers(99) = %v", got)
	}
	if got := c.RefName(Ref{pos["split"], 1}); got != "split:scale" {
		t.Errorf("RefName = %q", got)
	}
	if got := c.Nodes[pos["join"]].String(); got != `node "join" (#2)` {
		t.Errorf("Node.String = %q", got)
	}
}

// Operators with no inputs and several pipeline inputs wire up.
func TestCompileSourcesAndInputs(t *testing.T) {
	text := `version: 1
input { name: "A" } input { name: "B" }
node { name: "a" op: "test_src" input: "A" }
node { name: "b" op: "test_src" input: "B" }
node { name: "sa" op: "test_size" input: "a" arg { name: "size" ints { v: [4, 4] } } }
node { name: "sb" op: "test_size" input: "b" arg { name: "size" ints { v: [4, 4] } } }
node { op: "test_join" input: ["sa", "sb"] }
node { op: "test_gen" }
output { name: "J" source: "test_join" dtype: "UINT8" dims: [4, 4, 3] }
output { name: "G" }
`
	c, err := compileText(t, text)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Nodes[1].In[0]; got != (Ref{InputRef, 1}) {
		t.Errorf("b reads %v, want input 1", got)
	}
	if got := c.Outputs[1].Spec.String(); got != "FP32[4]" {
		t.Errorf("G = %s", got)
	}
}

func TestDescribe(t *testing.T) {
	c, err := compileText(t, valid)
	if err != nil {
		t.Fatal(err)
	}
	want := `pipeline "t" (version 1) from p.pbtxt
inputs:
  IMAGE: UINT8[-1]
nodes (in execution order):
  #1 test_src = test_src(color="RGB") ← IMAGE
      out: UINT8[-1,-1,3] RGB
  #2 resize = test_size(size=[224 224], interp="linear") ← test_src
      out: UINT8[224,224,3] RGB
  #3 test_norm = test_norm(scale=1, mean=[0], layout="CHW", dtype="FP32") ← resize
      out: FP32[3,224,224]
outputs:
  PIXELS: FP32 dims [3,224,224] ← test_norm
`
	if got := c.Describe(); got != want {
		t.Errorf("Describe:\n%s\nwant:\n%s", got, want)
	}
}

// The largest definitions the limits allow compile (or fail) quickly: a
// chain of MaxNodes nodes, and MaxNodes dangling references. Larger ones
// are refused by their counts (limits_test.go).
func TestCompileLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString(header + "node { op: \"test_src\" }\n")
	for i := range MaxNodes - 1 {
		fmt.Fprintf(&b, "node { name: \"s%d\" op: \"test_split\" }\n", i)
	}
	fmt.Fprintf(&b, "output { name: \"X\" source: \"s%d:scale\" }", MaxNodes-2)
	c, err := compileText(t, b.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != MaxNodes {
		t.Errorf("%d nodes", len(c.Nodes))
	}

	b.Reset()
	b.WriteString(header)
	for i := range MaxNodes {
		fmt.Fprintf(&b, "node { name: \"n%05d\" op: \"test_split\" input: \"m%05d\" }\n", i, i)
	}
	b.WriteString(`output { name: "X" }`)
	if _, err := compileText(t, b.String()); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("and %d more problems", MaxNodes-maxErrors)) {
		t.Errorf("dangling references: %.300v", err)
	}
}
