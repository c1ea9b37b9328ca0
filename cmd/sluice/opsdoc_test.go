package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

var update = flag.Bool("update", false, "rewrite the operator reference in docs/pipelines.md")

const pipelinesDoc = "docs/pipelines.md"

// TestPipelinesDocOperators fails when the operator reference in
// docs/pipelines.md differs from what the operator schemas generate.
func TestPipelinesDocOperators(t *testing.T) {
	path := repoFile(t, pipelinesDoc)
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin := bytes.Index(doc, []byte(opsDocBegin))
	end := bytes.Index(doc, []byte(opsDocEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s: markers %q and %q not found in that order", pipelinesDoc, opsDocBegin, opsDocEnd)
	}
	begin += len(opsDocBegin)
	var gen bytes.Buffer
	gen.WriteString("\n\n")
	opsMarkdown(&gen)
	if bytes.Equal(doc[begin:end], gen.Bytes()) {
		return
	}
	if !*update {
		t.Fatalf("%s: the operator reference is stale; refresh it with\n\tgo test ./cmd/sluice -run TestPipelinesDocOperators -update", pipelinesDoc)
	}
	fresh := append(append(append([]byte{}, doc[:begin]...), gen.Bytes()...), doc[end:]...)
	if err := os.WriteFile(path, fresh, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The generated reference and `sluice ops --markdown` are one code path.
func TestOpsMarkdown(t *testing.T) {
	code, out, errOut := sluice("ops", "--markdown")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var want bytes.Buffer
	opsMarkdown(&want)
	if out != want.String() {
		t.Fatal("sluice ops --markdown differs from opsMarkdown")
	}
	for _, s := range []string{"### `letterbox`", "| `size` | ints | required |", "| `interp` | string | `\"linear\"` |"} {
		if !strings.Contains(out, s) {
			t.Errorf("reference lacks %q", s)
		}
	}
}

var pbtxtBlock = regexp.MustCompile("(?s)\n```pbtxt\n(.*?)\n```\n")

// TestPipelinesDocExamples compiles every pbtxt block of docs/pipelines.md,
// so that the guide cannot show a pipeline the compiler rejects.
func TestPipelinesDocExamples(t *testing.T) {
	doc, err := os.ReadFile(repoFile(t, pipelinesDoc))
	if err != nil {
		t.Fatal(err)
	}
	blocks := pbtxtBlock.FindAllSubmatch(doc, -1)
	if len(blocks) < 6 {
		t.Fatalf("%s: found %d pbtxt blocks, want the 6 worked examples at least", pipelinesDoc, len(blocks))
	}
	names := map[string]bool{}
	for i, b := range blocks {
		c, err := pipeline.CompileText(b[1], pipelinesDoc)
		if err != nil {
			t.Errorf("block %d: %v", i+1, err)
			continue
		}
		if names[c.Def.GetName()] {
			t.Errorf("block %d: name %q used twice", i+1, c.Def.GetName())
		}
		names[c.Def.GetName()] = true
		switch c.Def.GetName() {
		case "torchvision_imagenet":
			sameAsServed(t, c, imagenet)
		case "torchvision_imagenet_decoded":
			sameAsServed(t, c, imagenetDecoded)
		case "crops_imagenet":
			sameAsServed(t, c, cropsImagenet)
		}
	}
	for _, want := range []string{"torchvision_imagenet", "torchvision_imagenet_decoded", "crops_imagenet"} {
		if !names[want] {
			t.Errorf("no block named %q", want)
		}
	}
}

// sameAsServed checks that the guide's pipeline is the one the example
// repository serves: equal nodes, arguments (defaults filled in) and
// outputs, whatever the names and spelling.
func sameAsServed(t *testing.T, c *pipeline.Compiled, served string) {
	t.Helper()
	s, err := load(repoFile(t, served))
	if err != nil {
		t.Fatal(err)
	}
	body := func(d string) string { return d[strings.Index(d, "\ninputs:"):] }
	if got, want := body(c.Describe()), body(s.Describe()); got != want {
		t.Errorf("%s's torchvision example differs from %s:\n%s\nwant\n%s", pipelinesDoc, served, got, want)
	}
}

// TestOpsJSON: `sluice ops --json` lists every operator with its ports
// and every argument as its schema declares it.
func TestOpsJSON(t *testing.T) {
	code, out, errOut := sluice("ops", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []struct {
		Name    string
		Inputs  []string
		Outputs []string
		Args    []struct {
			Name, Type string
			Required   bool
			Enum       []string
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ops.Names()) {
		t.Fatalf("%d operators, want %d", len(got), len(ops.Names()))
	}
	for _, o := range got {
		s := ops.Lookup(o.Name)
		if s == nil || len(o.Inputs) != len(s.Inputs) || len(o.Outputs) != len(s.Outputs) || len(o.Args) != len(s.Args) {
			t.Errorf("%s: %d inputs, %d outputs, %d args; the schema differs", o.Name, len(o.Inputs), len(o.Outputs), len(o.Args))
			continue
		}
		for i, a := range o.Args {
			want := s.Args[i]
			if a.Name != want.Name || a.Type != want.Type.String() || a.Required != want.Required || len(a.Enum) != len(want.Enum) {
				t.Errorf("%s.%s: %+v, schema %s %s", o.Name, a.Name, a, want.Name, want.Type)
			}
		}
	}
}
