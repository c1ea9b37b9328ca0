package pipeline

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// imagenet is the example of the text form as people write it: comments,
// several nodes on one line, odd spacing.
const imagenet = `# ImageNet preprocessing
version: 1
name: "preprocess_imagenet"
input { name: "IMAGE" }
node { op: "decode" arg { name: "color" str: "RGB" } }
node { op: "resize" arg { name: "shorter" int: 256 } arg { name: "interp" str: "linear" } }
node { op: "crop" arg { name: "size" ints { v: [224, 224] } } }
node { op: "normalize"
  arg { name: "scale" float: 0.00392156862745098 }  # 1/255
  arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } }
  arg { name: "std" floats { v: [0.229, 0.224, 0.225] } }
  arg { name: "layout" str: "CHW" } arg { name: "dtype" str: "FP32" } }
output { name: "PIXELS" dtype: "FP32" dims: [3, 224, 224] }
`

// imagenetFormatted is what FormatText makes of it: pinned, since model
// repositories are diffed and reviewed.
const imagenetFormatted = `version: 1
name: "preprocess_imagenet"

input { name: "IMAGE" }

node {
  op: "decode"
  arg { name: "color" str: "RGB" }
}
node {
  op: "resize"
  arg { name: "shorter" int: 256 }
  arg { name: "interp" str: "linear" }
}
node {
  op: "crop"
  arg { name: "size" ints { v: [224, 224] } }
}
node {
  op: "normalize"
  arg { name: "scale" float: 0.00392156862745098 }
  arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } }
  arg { name: "std" floats { v: [0.229, 0.224, 0.225] } }
  arg { name: "layout" str: "CHW" }
  arg { name: "dtype" str: "FP32" }
}

output { name: "PIXELS" dtype: "FP32" dims: [3, 224, 224] }
`

// wired exercises the rest of the schema: names, explicit inputs, sources,
// presence of zero values and empty lists, awkward floats and strings.
const wired = `version: 1
name: "w \"quoted\" \\ é 😀 \x01 \u00a0 \u2028 tab\tnl\n"
input { name: "A" }
input { name: "B" }
node {
  name: "n1"
  op: "x"
  input: "A"
  arg { name: "zero" int: 0 }
  arg { name: "neg" int: -9223372036854775808 }
  arg { name: "off" bool: false }
  arg { name: "on" bool: true }
  arg { name: "empty" str: "" }
  arg { name: "f0" float: 0 }
  arg { name: "negzero" float: -0 }
  arg { name: "tiny" float: 5e-324 }
  arg { name: "huge" float: 1.7976931348623157e+308 }
  arg { name: "third" float: 0.3333333333333333 }
  arg { name: "big" float: 1e+21 }
  arg { name: "nan" float: nan }
  arg { name: "inf" float: inf }
  arg { name: "ninf" float: -inf }
  arg { name: "noints" ints {} }
  arg { name: "nofloats" floats {} }
  arg { name: "fl" floats { v: [0.1, -2.5e-10, 3] } }
  arg { name: "unset" }
}
node { op: "y" input: ["n1:out2", "B"] }
node {}
output { name: "O" source: "y" dims: [-1, 0, 9223372036854775807] }
output { name: "P" dtype: "UINT8" }
`

func mustParseText(t *testing.T, text string) *pipelinepb.Pipeline {
	t.Helper()
	p, err := ParseText([]byte(text), src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return p
}

func TestFormatTextGolden(t *testing.T) {
	p := mustParseText(t, imagenet)
	got, err := FormatText(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != imagenetFormatted {
		t.Errorf("FormatText:\n%s\nwant:\n%s", got, imagenetFormatted)
	}
	// Formatting is idempotent: the formatted text formats to itself.
	again, err := FormatText(mustParseText(t, string(got)))
	if err != nil || !bytes.Equal(again, got) {
		t.Errorf("not idempotent (%v):\n%s", err, again)
	}
}

// text → compact → text → message gives back the original, bit for bit.
func TestRoundTrip(t *testing.T) {
	for name, text := range map[string]string{"imagenet": imagenet, "wired": wired, "valid": valid} {
		t.Run(name, func(t *testing.T) {
			orig := mustParseText(t, text)
			compact, err := FormatCompact(orig)
			if err != nil {
				t.Fatal(err)
			}
			fromCompact, err := Parse(compact, "p.sluice")
			if err != nil {
				t.Fatal(err)
			}
			text2, err := FormatText(fromCompact)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(text2, "p.pbtxt")
			if err != nil {
				t.Fatalf("%v\n%s", err, text2)
			}
			if !proto.Equal(orig, back) || !proto.Equal(orig, fromCompact) {
				t.Fatalf("round trip changed the definition:\n%s", text2)
			}
			// proto.Equal treats -0 as 0 and any NaN as NaN; the compact
			// bytes, which are deterministic, compare the bits. Only the
			// NaN payload may differ, and the text form has none.
			compact2, err := FormatCompact(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(compact, compact2) {
				t.Errorf("compact bytes differ after the text round trip")
			}
		})
	}
}

func TestRoundTripValues(t *testing.T) {
	p := mustParseText(t, wired)
	args := p.GetNode()[0].GetArg()
	byName := map[string]*pipelinepb.Arg{}
	for _, a := range args {
		byName[a.GetName()] = a
	}
	if x := byName["negzero"].GetFloat(); x != 0 || !math.Signbit(x) {
		t.Errorf("negzero = %v", x)
	}
	if x := byName["tiny"].GetFloat(); x != 5e-324 {
		t.Errorf("tiny = %v", x)
	}
	if x := byName["third"].GetFloat(); x != 1.0/3 {
		t.Errorf("third = %v", x)
	}
	if !math.IsNaN(byName["nan"].GetFloat()) || !math.IsInf(byName["ninf"].GetFloat(), -1) {
		t.Errorf("nan/-inf lost")
	}
	if byName["zero"].GetValue() == nil || byName["noints"].GetInts() == nil || byName["unset"].GetValue() != nil {
		t.Errorf("oneof presence lost")
	}
	text, err := FormatText(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`arg { name: "zero" int: 0 }`, `arg { name: "off" bool: false }`, `arg { name: "empty" str: "" }`,
		`arg { name: "negzero" float: -0 }`, `arg { name: "big" float: 1e+21 }`,
		`arg { name: "nan" float: nan }`, `arg { name: "ninf" float: -inf }`,
		`arg { name: "noints" ints {} }`, `arg { name: "unset" }`, `node {}`,
		`input: ["n1:out2", "B"]`, `input: "A"`, `dims: [-1, 0, 9223372036854775807]`,
		`name: "w \"quoted\" \\ é 😀 \x01 \u00a0 \u2028 tab\tnl\n"`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("FormatText lacks %s:\n%s", want, text)
		}
	}
}

func TestFormatDeterministic(t *testing.T) {
	p := mustParseText(t, wired)
	a, _ := FormatText(p)
	b, _ := FormatText(proto.Clone(p).(*pipelinepb.Pipeline))
	ca, _ := FormatCompact(p)
	cb, _ := FormatCompact(proto.Clone(p).(*pipelinepb.Pipeline))
	if !bytes.Equal(a, b) || !bytes.Equal(ca, cb) {
		t.Error("formatting is not deterministic")
	}
	if !bytes.HasPrefix(ca, []byte(Magic)) {
		t.Errorf("compact form starts %q", ca[:8])
	}
}

func TestMagic(t *testing.T) {
	if len(Magic) != 8 || !strings.HasPrefix(Magic, "SLUICE") {
		t.Errorf("Magic %q", Magic)
	}
}

func TestFormatErrors(t *testing.T) {
	if _, err := FormatText(nil); err == nil {
		t.Error("FormatText(nil) succeeded")
	}
	if _, err := FormatCompact(nil); err == nil {
		t.Error("FormatCompact(nil) succeeded")
	}
	bad := &pipelinepb.Pipeline{Version: 1, Name: "bad \xff"}
	if _, err := FormatText(bad); err == nil || !strings.Contains(err.Error(), "invalid UTF-8") {
		t.Errorf("FormatText(invalid UTF-8) = %v", err)
	}
	if _, err := FormatCompact(bad); err == nil {
		t.Error("FormatCompact(invalid UTF-8) succeeded")
	}
}

// Parse errors name the file and line:column.
func TestParseTextErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"version: 1\nnmae: \"x\"\n", `p.pbtxt:2:1: unknown field: nmae`},
		{"version: 1\nnode { op: \"a\" arg { name: \"x\" int: 1 str: \"y\" } }\n", `p.pbtxt:2:39: error parsing "str", oneof sluice.pipeline.Arg.value is already set`},
		{"version: 1\nnode { op: \"a\" \n", `p.pbtxt:3:1: unexpected end of file`},
		{"version: -1\n", `p.pbtxt:1:10: invalid value for uint32 type: -1`},
		{"version: 1\nnode { op: 'a\n' }\n", `p.pbtxt:2:`},
		{"version: 1 version: 2\n", `p.pbtxt:1:12: non-repeated field "version" is repeated`},
		{"node { op: \"a\" } }", `p.pbtxt:1:18: syntax error: invalid field name: }`},
	}
	for _, tt := range tests {
		_, err := ParseText([]byte(tt.text), src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseText(%q) = %v, want %s", tt.text, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "proto:") {
			t.Errorf("protobuf's prefix left in %q", err)
		}
		var e *Error
		if !errors.As(err, &e) || e.Line == 0 {
			t.Errorf("%v: no line", err)
		}
		if !errors.Is(err, proto.Error) {
			t.Errorf("%v: does not wrap proto.Error", err)
		}
	}
}

func TestParseTextBOM(t *testing.T) {
	if _, err := ParseText([]byte(utf8BOM+valid), src); err != nil {
		t.Error(err)
	}
}

func TestParseCompactErrors(t *testing.T) {
	good, err := FormatCompact(mustParseText(t, valid))
	if err != nil {
		t.Fatal(err)
	}
	// An unknown field deep inside: node #2, arg #1.
	unknownInArg := proto.Clone(mustParseText(t, valid)).(*pipelinepb.Pipeline)
	arg := unknownInArg.GetNode()[1].GetArg()[0]
	arg.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
	withUnknown, err := proto.MarshalOptions{Deterministic: true}.Marshal(unknownInArg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		data []byte
		want string
	}{
		{append([]byte(Magic), 0xff, 0xff), `p.sluice: compact form: cannot parse invalid wire-format data`},
		{append([]byte(Magic), withUnknown...), `p.sluice: compact form, node #2, arg #1: unknown field number 99 (written for a newer Sluice?`},
		{append([]byte(magicFamily+"\x02"), good[len(Magic):]...), `p.sluice: compact form revision 2 is not supported: this build reads revision 1`},
		{[]byte("version: 1"), `p.sluice: not a compact pipeline definition`},
		{append([]byte(Magic), protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "\xff")...), `p.sluice: compact form: `},
	}
	for _, tt := range tests {
		_, err := ParseCompact(tt.data, "p.sluice")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseCompact(%q) = %v, want %s", tt.data, err, tt.want)
		}
	}
	// Parse sniffs the magic family, so a newer revision is not read as
	// (broken) text.
	if _, err := Parse(tests[2].data, "p.sluice"); err == nil || !strings.Contains(err.Error(), "revision 2") {
		t.Errorf("Parse(revision 2) = %v", err)
	}
}

func TestTooLarge(t *testing.T) {
	big := make([]byte, MaxSize+1)
	if _, err := Parse(big, src); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("Parse(big) = %v", err)
	}
	if _, err := ParseCompact(append([]byte(Magic), big...), src); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("ParseCompact(big) = %v", err)
	}
	path := filepath.Join(t.TempDir(), "big.pbtxt")
	if err := os.WriteFile(path, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+": ") {
		t.Errorf("Load(big) = %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	want := mustParseText(t, imagenet)
	compact, err := FormatCompact(want)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"p.pbtxt": []byte(imagenet), "p.sluice": compact} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		if err != nil || !proto.Equal(got, want) {
			t.Errorf("Load(%s) = %v", name, err)
		}
	}
	broken := filepath.Join(dir, "broken.pbtxt")
	if err := os.WriteFile(broken, []byte("version: 1\nbogus: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(broken); err == nil || !strings.Contains(err.Error(), broken+":2:1: unknown field: bogus") {
		t.Errorf("Load(broken) = %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.pbtxt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v", err)
	}
}
