package pipeline

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// The builder and the text form make the same definition.
func TestBuilderMatchesText(t *testing.T) {
	built, err := New("letterboxed").
		Input("IMAGE").
		Node("test_src", Str("color", "BGR")).
		NamedNode("split", "test_split", nil).
		NamedNode("small", "test_size", []string{"split:image"}, Ints("size", 8, 8), Str("interp", "area")).
		Node("test_norm", Float("scale", 1.0/255), Floats("mean", 0.485, 0.456, 0.406), Str("layout", "CHW")).
		TypedOutput("PIXELS", "test_norm", "FP32", 3, 8, 8).
		Output("SCALE", "split:scale").
		Build()
	if err != nil {
		t.Fatal(err)
	}
	text := `version: 1
name: "letterboxed"
input { name: "IMAGE" }
node { op: "test_src" arg { name: "color" str: "BGR" } }
node { name: "split" op: "test_split" }
node { name: "small" op: "test_size" input: "split:image"
       arg { name: "size" ints { v: [8, 8] } } arg { name: "interp" str: "area" } }
node { op: "test_norm" arg { name: "scale" float: 0.00392156862745098 }
       arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } } arg { name: "layout" str: "CHW" } }
output { name: "PIXELS" source: "test_norm" dtype: "FP32" dims: [3, 8, 8] }
output { name: "SCALE" source: "split:scale" }
`
	parsed := mustParseText(t, text)
	if !proto.Equal(built, parsed) {
		got, _ := FormatText(built)
		t.Errorf("builder made:\n%s\ntext parses to:\n%s", got, text)
	}
}

func TestBuilderErrors(t *testing.T) {
	_, err := New("p").Input("IMAGE").Node("test_size", Str("interp", "bilinar")).Output("X", "").Build()
	if err == nil || !strings.Contains(err.Error(), `pipeline "p": node "test_size" (#1): argument "interp": "bilinar" is not one of`) {
		t.Errorf("Build = %v", err)
	}
	_, err = New("p").Input("IMAGE").Node("test_src", nil).Output("X", "").Build()
	if err == nil || !strings.Contains(err.Error(), "node #1 (test_src): argument #1 is nil") {
		t.Errorf("Build with a nil argument = %v", err)
	}
}

// The builder copies what it is given and what it returns.
func TestBuilderCopies(t *testing.T) {
	size := Ints("size", 4, 4)
	b := New("p").Input("IMAGE").Node("test_src").Node("test_size", size).Output("X", "")
	size.GetInts().V[0] = 0
	def := b.Def()
	def.Node[0].Op = "changed"
	c, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Outputs[0].Spec.String(); got != "UINT8[4,4,3] RGB" {
		t.Errorf("output %s", got)
	}
}

func TestArgConversion(t *testing.T) {
	values := []ops.Value{
		ops.IntVal(-3), ops.FloatVal(math.Pi), ops.StrVal("é"), ops.BoolVal(true),
		ops.IntsVal(1, 2, 3), ops.FloatsVal(0.5, -1e-9), ops.IntsVal(), ops.FloatsVal(),
	}
	for _, v := range values {
		a, err := ArgOf("x", v)
		if err != nil {
			t.Fatalf("ArgOf(%v): %v", v, err)
		}
		back, err := ValueOf(a)
		if err != nil || back.String() != v.String() || back.Type != v.Type {
			t.Errorf("ValueOf(ArgOf(%v)) = %v, %v", v, back, err)
		}
	}
	if _, err := ArgOf("x", ops.Value{}); err == nil {
		t.Error("ArgOf of an untyped value succeeded")
	}
	// Lists are copied both ways.
	list := []int64{1, 2}
	a, _ := ArgOf("x", ops.IntsVal(list...))
	list[0] = 9
	v, _ := ValueOf(a)
	v.Ints[1] = 9
	if got := a.GetInts().GetV(); got[0] != 1 || got[1] != 2 {
		t.Errorf("aliasing: %v", got)
	}
	// Values that only Go code can build: none set, typed nils.
	for _, a := range []*pipelinepb.Arg{
		nil, {Name: "x"},
		{Name: "x", Value: (*pipelinepb.Arg_Int)(nil)},
		{Name: "x", Value: (*pipelinepb.Arg_Floats)(nil)},
	} {
		if _, err := ValueOf(a); err == nil {
			t.Errorf("ValueOf(%v) succeeded", a)
		}
	}
	if v, err := ValueOf(&pipelinepb.Arg{Name: "x", Value: &pipelinepb.Arg_Ints{}}); err != nil || v.Type != ops.IntsArg || len(v.Ints) != 0 {
		t.Errorf("ValueOf(ints with nil list) = %v, %v", v, err)
	}
	if v, err := ValueOf(Bool("x", true)); err != nil || v.Type != ops.BoolArg || !v.Bool {
		t.Errorf("ValueOf(Bool) = %v, %v", v, err)
	}
}

func TestRawArgs(t *testing.T) {
	n := &pipelinepb.Node{Arg: []*pipelinepb.Arg{Int("a", 1), Str("b", "x")}}
	raw, err := RawArgs(n)
	if err != nil || raw.Int("a") != 1 || raw.Str("b") != "x" {
		t.Errorf("RawArgs = %v, %v", raw, err)
	}
	n.Arg = append(n.Arg, Int("a", 2))
	if _, err := RawArgs(n); err == nil || err.Error() != `argument "a": given twice (arg #1 and #3)` {
		t.Errorf("RawArgs(duplicate) = %v", err)
	}
}
