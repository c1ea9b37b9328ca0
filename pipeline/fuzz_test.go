package pipeline

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
)

// fuzzSeeds are valid and nearly valid definitions over the test
// operators, so that mutations reach deep into Compile.
var fuzzSeeds = []string{
	valid, imagenet, wired,
	header + `node { name: "src" op: "test_src" }
node { name: "join" op: "test_join" input: ["small", "split:image"] }
node { name: "split" op: "test_split" input: "small" }
node { name: "small" op: "test_size" input: "src" arg { name: "size" ints { v: [8, 8] } } }
output { name: "OUT" source: "join" }
output { name: "SCALE" source: "split:scale" dtype: "FP32" dims: [2] }`,
	header + `node { op: "test_src" }
node { name: "a" op: "test_join" input: ["test_src", "c"] }
node { name: "b" op: "test_size" arg { name: "size" ints { v: [2, 2] } } }
node { name: "c" op: "test_size" arg { name: "size" ints { v: [2, 2] } } }
output { name: "X" }`,
	`version: 1 input { name: "A" } input { name: "B" }
node { op: "test_gen" } node { op: "test_sink" input: "A" }
node { op: "test_bad" input: "B" arg { name: "mode" str: "panic_infer" } }
output { name: "G" source: "test_gen" }`,
	header + `node { op: "test_src" } node { op: "test_norm" arg { name: "mean" floats { v: [1, 2, 3] } } arg { name: "scale" int: 2 } }
output { name: "X" }`,
	"version: 1\nnode {",
	"# only a comment\n",
	"",
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
		if p, err := ParseText([]byte(s), "seed"); err == nil {
			if b, err := FormatCompact(p); err == nil {
				f.Add(b)
				f.Add(b[:len(b)/2]) // truncated
			}
		}
	}
	f.Add([]byte(Magic))
	f.Add([]byte(magicFamily + "\x07"))

	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Source != "fuzz" {
				t.Fatalf("parse error %T %q does not name the source", err, err)
			}
			return
		}
		before := proto.Clone(p)
		c, err := Compile(p, "fuzz")
		if !proto.Equal(before, p) {
			t.Fatal("Compile changed the definition")
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Source != "fuzz" {
				t.Fatalf("compile error %T %q does not name the source", err, err)
			}
		} else {
			checkCompiled(t, c)
		}

		text, err := FormatText(p)
		if err != nil {
			t.Fatalf("FormatText of a parsed definition: %v", err)
		}
		fromText, err := ParseText(text, "fuzz.pbtxt")
		if err != nil {
			t.Fatalf("FormatText output does not parse: %v\n%s", err, text)
		}
		if !proto.Equal(p, fromText) {
			t.Fatalf("text round trip changed the definition:\n%s", text)
		}
		compact, err := FormatCompact(p)
		if err != nil {
			t.Fatalf("FormatCompact of a parsed definition: %v", err)
		}
		fromCompact, err := Parse(compact, "fuzz.sluice")
		if err != nil {
			t.Fatalf("FormatCompact output does not parse: %v", err)
		}
		if !proto.Equal(p, fromCompact) {
			t.Fatal("compact round trip changed the definition")
		}
	})
}

// checkCompiled asserts what the executor relies on.
func checkCompiled(t *testing.T, c *Compiled) {
	t.Helper()
	_ = c.Describe()
	for i, n := range c.Nodes {
		if n.Op == nil || n.Schema == nil || len(n.In) != len(n.Schema.Inputs) || len(n.Out) != len(n.Schema.Outputs) {
			t.Fatalf("node %d incomplete: %+v", i, n)
		}
		for _, r := range n.In {
			if r.Node >= i || (r.Node == InputRef && (r.Port < 0 || r.Port >= len(c.Inputs))) {
				t.Fatalf("node %d reads %v: not topological", i, r)
			}
		}
		for _, k := range c.Consumers(i) {
			if k <= i {
				t.Fatalf("consumer %d of node %d comes first", k, i)
			}
		}
	}
	for _, o := range c.Outputs {
		if !o.Spec.Static() {
			t.Fatalf("output %s not static", o.Name)
		}
	}
	if len(c.Def.GetNode()) != len(c.Nodes) {
		t.Fatal("nodes lost")
	}
}
