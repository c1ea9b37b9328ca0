package pipeline

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// limitsDef is valid with n outputs, all exposing the last node.
func limitsDef(outputs int) *pipelinepb.Pipeline {
	p := &pipelinepb.Pipeline{Version: Version, Input: []*pipelinepb.Input{{Name: "IMAGE"}}, Node: []*pipelinepb.Node{
		{Op: "test_src"},
		{Op: "test_size", Arg: []*pipelinepb.Arg{Ints("size", 8, 8)}},
	}}
	for i := range outputs {
		p.Output = append(p.Output, &pipelinepb.Output{Name: fmt.Sprintf("O%d", i), Source: "test_size"})
	}
	return p
}

// The counts at their limits compile; one over, the definition is refused
// by the count alone, naming it and the limit, before any work per
// element: 50,000 outputs (a 1.4 MB text file) are refused in well under a
// second, where they took 52 s to load.
func TestLimitsCounts(t *testing.T) {
	if _, err := Compile(limitsDef(MaxOutputs), src); err != nil {
		t.Fatalf("%d outputs: %v", MaxOutputs, err)
	}
	chain := limitsDef(1)
	for len(chain.Node) < MaxNodes {
		prev := chain.Node[len(chain.Node)-1]
		name := fmt.Sprintf("s%d", len(chain.Node))
		chain.Node = append(chain.Node, &pipelinepb.Node{Name: name, Op: "test_size", Input: []string{nodeName(prev)},
			Arg: []*pipelinepb.Arg{Ints("size", 8, 8)}})
		chain.Output[0].Source = name
	}
	if _, err := Compile(chain, src); err != nil {
		t.Fatalf("%d nodes: %v", MaxNodes, err)
	}

	many := func(edit func(p *pipelinepb.Pipeline)) *pipelinepb.Pipeline {
		p := limitsDef(1)
		edit(p)
		return p
	}
	for _, tc := range []struct {
		name string
		def  *pipelinepb.Pipeline
		want string
	}{
		{"outputs", limitsDef(MaxOutputs + 1), fmt.Sprintf("p.pbtxt: output: %d given, over the limit of %d", MaxOutputs+1, MaxOutputs)},
		{"50000 outputs", limitsDef(50000), fmt.Sprintf("output: 50000 given, over the limit of %d", MaxOutputs)},
		{"nodes", many(func(p *pipelinepb.Pipeline) {
			for len(p.Node) <= MaxNodes {
				p.Node = append(p.Node, &pipelinepb.Node{Op: "test_size"})
			}
		}), fmt.Sprintf("node: %d given, over the limit of %d", MaxNodes+1, MaxNodes)},
		{"inputs", many(func(p *pipelinepb.Pipeline) {
			for i := range 100000 {
				p.Input = append(p.Input, &pipelinepb.Input{Name: fmt.Sprint("I", i)})
			}
		}), fmt.Sprintf("input: 100001 given, over the limit of %d", MaxInputs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Compile(tc.def, src)
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error is %d bytes: %.300s", len(err.Error()), err)
			}
			if took > 100*time.Millisecond {
				t.Errorf("took %v", took)
			}
		})
	}

	// Through the text parser too, as a model's file arrives.
	var b strings.Builder
	b.WriteString("version: 1\ninput { name: \"IMAGE\" }\nnode { op: \"test_src\" }\n")
	for i := range 50000 {
		fmt.Fprintf(&b, "output { name: \"O%d\" }\n", i)
	}
	start := time.Now()
	_, err := CompileText([]byte(b.String()), src)
	if err == nil || !strings.Contains(err.Error(), "50000 given, over the limit") {
		t.Fatalf("text of 50000 outputs: %v", err)
	}
	t.Logf("%d bytes of text, 50000 outputs: refused in %v", b.Len(), time.Since(start))
}

func nodeName(n *pipelinepb.Node) string {
	if n.GetName() != "" {
		return n.GetName()
	}
	return n.GetOp()
}

// Lists and strings inside the elements are bounded too, each problem
// reported with the element and field, and a long string quoted only by
// its start and length.
func TestLimitsLists(t *testing.T) {
	long := strings.Repeat("9", 1000000)
	q := `"` + strings.Repeat("9", 32) + `…" (1000000 bytes)`
	ints := make([]int64, MaxList+1)
	for _, tc := range []struct {
		name string
		edit func(p *pipelinepb.Pipeline)
		want []string
	}{
		{"node name", func(p *pipelinepb.Pipeline) { p.Node[0].Name = long },
			[]string{"node " + q + " (#1): name: " + q + " is 1000000 bytes, over the limit of 128"}},
		{"pipeline name", func(p *pipelinepb.Pipeline) { p.Name = long }, []string{"p.pbtxt: name: ", "(1000000 bytes) is 1000000 bytes, over the limit of 128"}},
		{"input layout", func(p *pipelinepb.Pipeline) { p.Input[0].Layout = long }, []string{`input "IMAGE" (#1): layout: `, "over the limit of 128"}},
		{"op", func(p *pipelinepb.Pipeline) { p.Node[1].Op = long }, []string{"(#2): op: ", "over the limit of 128"}},
		{"reference", func(p *pipelinepb.Pipeline) { p.Node[1].Input = []string{long} }, []string{`node "test_size" (#2): input: `, "over the limit of 128"}},
		{"references", func(p *pipelinepb.Pipeline) { p.Node[1].Input = make([]string, MaxList+1) },
			[]string{fmt.Sprintf(`node "test_size" (#2): input: %d references, over the limit of %d`, MaxList+1, MaxList)}},
		{"arg name", func(p *pipelinepb.Pipeline) { p.Node[1].Arg[0].Name = long }, []string{"(#2): arg #1 name: ", "over the limit of 128"}},
		{"arg str", func(p *pipelinepb.Pipeline) { p.Node[1].Arg = append(p.Node[1].Arg, Str("interp", long)) },
			[]string{"(#2): arg #2 str: ", "over the limit of 128"}},
		{"args", func(p *pipelinepb.Pipeline) {
			for i := range MaxList {
				p.Node[1].Arg = append(p.Node[1].Arg, Int(fmt.Sprint("a", i), 1))
			}
		}, []string{fmt.Sprintf("(#2): arg: %d arguments, over the limit of %d", MaxList+1, MaxList)}},
		{"ints", func(p *pipelinepb.Pipeline) { p.Node[1].Arg[0] = Ints("size", ints...) },
			[]string{fmt.Sprintf("(#2): arg #1 ints: %d values, over the limit of %d", MaxList+1, MaxList)}},
		{"floats", func(p *pipelinepb.Pipeline) { p.Node[1].Arg[0] = Floats("size", make([]float64, 1000)...) },
			[]string{fmt.Sprintf("(#2): arg #1 floats: 1000 values, over the limit of %d", MaxList)}},
		{"output source", func(p *pipelinepb.Pipeline) { p.Output[0].Source = long }, []string{`output "O0" (#1): source: `, "over the limit of 128"}},
		{"output dims", func(p *pipelinepb.Pipeline) { p.Output[0].Dims = ints },
			[]string{fmt.Sprintf(`output "O0" (#1): dims: %d dims, over the limit of %d`, MaxList+1, MaxList)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := limitsDef(1)
			tc.edit(p)
			_, err := Compile(p, src)
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if len(err.Error()) > 400 {
				t.Errorf("error is %d bytes: %.500s", len(err.Error()), err)
			}
		})
	}
	// At the limit, a string is fine as far as the bounds go (the name is
	// then checked as a name).
	p := limitsDef(1)
	p.Node[1].Name = strings.Repeat("n", MaxString)
	p.Output[0].Source = p.Node[1].Name
	if _, err := Compile(p, src); err != nil {
		t.Errorf("a name of %d bytes: %v", MaxString, err)
	}
}

// The text parser quotes the token it stops at whole; a file of one
// megabyte-long token gets an error of its start and position only.
func TestParseErrorShort(t *testing.T) {
	for _, text := range []string{
		"version: 1 name: " + strings.Repeat("x", 1<<20),
		"version: 1 " + strings.Repeat("y", 1<<20) + ": 1",
		"version: " + strings.Repeat("9", 1<<20),
	} {
		_, err := ParseText([]byte(text), src)
		if err == nil || !strings.HasPrefix(err.Error(), "p.pbtxt:1:") || !strings.Contains(err.Error(), "more bytes)") {
			t.Errorf("got %.300v", err)
		}
		if n := len(err.Error()); n > 300 {
			t.Errorf("error is %d bytes: %.300s", n, err)
		}
	}
}
