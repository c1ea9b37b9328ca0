package pipeline

import (
	"strings"
	"testing"
)

// TestDecodedInput: an input with layout "HWC" and a colour is an image of
// per-sample height and width that image operators read directly; the
// problems with its declaration name the input and the field.
func TestDecodedInput(t *testing.T) {
	for color, want := range map[string]string{"RGB": "UINT8[-1,-1,3] RGB", "BGR": "UINT8[-1,-1,3] BGR", "GRAY": "UINT8[-1,-1,1] GRAY", "BGRA": "UINT8[-1,-1,4] BGRA"} {
		c, err := CompileText([]byte(`version: 1 input { name: "F" layout: "HWC" color: "`+color+`" }
			node { op: "resize" arg { name: "size" ints { v: [8, 8] } } } output { name: "O" }`), "d.pbtxt")
		if err != nil {
			t.Fatalf("%s: %v", color, err)
		}
		if got := c.Spec(Ref{Node: InputRef}).String(); got != want || !c.Decoded(0) || !c.HasDecoded() {
			t.Errorf("%s: input spec %s, want %s", color, got, want)
		}
		if !strings.Contains(c.Describe(), "F: "+want) {
			t.Errorf("%s: Describe does not show the input's spec:\n%s", color, c.Describe())
		}
	}
	enc, err := CompileText([]byte(`version: 1 input { name: "I" } node { op: "decode" }
		node { op: "resize" arg { name: "size" ints { v: [8, 8] } } } output { name: "O" }`), "e.pbtxt")
	if err != nil || enc.Decoded(0) || enc.HasDecoded() {
		t.Fatalf("an encoded input: %v", err)
	}

	for _, c := range []struct{ input, node, want string }{
		{`layout: "HWC"`, "", `input "F" (#1): color: missing: layout "HWC" needs the image's channels`},
		{`layout: "HWC" color: "YUV"`, "", `input "F" (#1): color: "YUV" is not one of "RGB" or "BGR" (3 channels)`},
		{`color: "RGB"`, "", `input "F" (#1): color: "RGB" given without layout`},
		{`layout: "CHW" color: "RGB"`, "", `input "F" (#1): layout: "CHW" is not a layout`},
		{`layout: "hwc" color: "RGB"`, "", `(did you mean "HWC"?)`},
		{`layout: "HWC" color: "RGB"`, `node { op: "decode" }`, `decode needs encoded bytes, UINT8 [-1], got an image already decoded, UINT8[-1,-1,3] RGB`},
	} {
		text := `version: 1 input { name: "F" ` + c.input + ` } ` + c.node +
			` node { op: "resize" arg { name: "size" ints { v: [8, 8] } } } output { name: "O" }`
		_, err := CompileText([]byte(text), "d.pbtxt")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.input, c.node, err, c.want)
		}
	}

	// The fields round-trip through both file forms.
	p, err := ParseText([]byte(`version: 1 input { name: "F" layout: "HWC" color: "BGR" } node { op: "crop" arg { name: "size" ints { v: [2, 2] } } } output { name: "O" }`), "")
	if err != nil {
		t.Fatal(err)
	}
	text, err := FormatText(p)
	if err != nil || !strings.Contains(string(text), `input { name: "F" layout: "HWC" color: "BGR" }`) {
		t.Errorf("FormatText: %v\n%s", err, text)
	}
	bin, err := FormatCompact(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCompact(bin, "")
	if err != nil || back.GetInput()[0].GetLayout() != "HWC" || back.GetInput()[0].GetColor() != "BGR" {
		t.Errorf("compact round trip: %v %v", err, back)
	}
}
