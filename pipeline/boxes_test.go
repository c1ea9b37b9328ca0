package pipeline

import (
	"strings"
	"testing"
)

// boxesText is a box-crop pipeline with input and node lines replaceable.
func boxesText(inputs, node string) string {
	return `version: 1 input { name: "IMAGE" } ` + inputs + ` node { op: "decode" input: "IMAGE" } ` + node +
		` output { name: "CROPS" } output { name: "N" source: "crop_boxes:count" }`
}

const cropNode = `node { op: "crop_boxes" input: ["decode", "BOXES"] arg { name: "size" ints { v: [16, 16] } } }`

// TestBoxesInput: a boxes input is FP32 [max, 4] with its coordinates, a
// count input INT32 [1] tied to it; crop_boxes reads them and gives
// [max, H, W, C] crops and a count. Every problem names the input or node
// and the field.
func TestBoxesInput(t *testing.T) {
	c, err := CompileText([]byte(boxesText(`input { name: "BOXES" boxes { max: 8 coords: "relative" } } input { name: "COUNT" count_of: "BOXES" }`, cropNode)), "b.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.InputSpecs[1].String(); got != "FP32[8,4] relative" || c.InputSpecs[2].String() != "INT32[1]" {
		t.Errorf("input specs %v", c.InputSpecs)
	}
	if !c.Tensor(1) || !c.Tensor(2) || c.Tensor(0) || c.CountFor(1) != 2 || c.CountOf[2] != 1 || c.CountFor(0) != -1 || !c.HasTensors() {
		t.Errorf("Tensor/CountFor: %v", c.CountOf)
	}
	if c.Outputs[0].Spec.String() != "UINT8[8,16,16,3] RGB" || c.Outputs[1].Spec.String() != "INT32[1]" {
		t.Errorf("outputs %v %v", c.Outputs[0].Spec, c.Outputs[1].Spec)
	}
	if d := c.Describe(); !strings.Contains(d, "COUNT: INT32[1], the count of BOXES") || !strings.Contains(d, "BOXES: FP32[8,4] relative") {
		t.Errorf("Describe:\n%s", d)
	}

	boxes := `input { name: "BOXES" boxes { max: 8 coords: "pixel" } }`
	for _, tc := range []struct{ inputs, node, want string }{
		{`input { name: "BOXES" boxes { max: 0 coords: "pixel" } }`, cropNode, `input "BOXES" (#2): boxes.max: 0 is out of range: the rows per sample, 1 to 256`},
		{`input { name: "BOXES" boxes { max: 257 coords: "pixel" } }`, cropNode, `boxes.max: 257 is out of range`},
		{`input { name: "BOXES" boxes { max: 8 } }`, cropNode, `input "BOXES" (#2): boxes.coords: missing`},
		{`input { name: "BOXES" boxes { max: 8 coords: "norm" } }`, cropNode, `boxes.coords: "norm" is not "pixel" or "relative"`},
		{`input { name: "BOXES" layout: "HWC" color: "RGB" boxes { max: 8 coords: "pixel" } }`, cropNode, `input "BOXES" (#2): layout: a boxes or count input carries no image`},
		{boxes + ` input { name: "COUNT" count_of: "BOX" }`, cropNode, `input "COUNT" (#3): count_of: no input is named "BOX" (inputs: IMAGE, BOXES, COUNT)`},
		{boxes + ` input { name: "COUNT" count_of: "IMAGE" }`, cropNode, `input "COUNT" (#3): count_of: input "IMAGE" is not a boxes input`},
		{boxes + ` input { name: "C1" count_of: "BOXES" } input { name: "C2" count_of: "BOXES" }`, cropNode, `input "C2" (#4): count_of: input "BOXES" is already counted by input #3`},
		{boxes, `node { op: "crop_boxes" input: ["decode", "IMAGE"] arg { name: "size" ints { v: [16, 16] } } }`, `port boxes reads input "IMAGE", which is not a boxes input`},
		{boxes, `node { op: "crop_boxes" input: ["BOXES", "BOXES"] arg { name: "size" ints { v: [16, 16] } } }`, `reads boxes input "BOXES" on port image`},
		{boxes + ` input { name: "COUNT" count_of: "BOXES" }`, `node { op: "crop_boxes" input: ["decode", "COUNT"] arg { name: "size" ints { v: [16, 16] } } }`, `reads input "COUNT", the count of input "BOXES"`},
		{boxes, `node { name: "d2" op: "decode" input: "IMAGE" } node { op: "crop_boxes" input: ["decode", "d2"] arg { name: "size" ints { v: [16, 16] } } }`, `port boxes reads "d2", a node's output`},
		{boxes, `node { op: "crop_boxes" input: ["decode", "BOXES"] arg { name: "size" ints { v: [16, 16] } } arg { name: "interp" str: "opencv_linear" } }`, `"opencv_linear" has no box crop form`},
	} {
		_, err := CompileText([]byte(boxesText(tc.inputs, tc.node)), "b.pbtxt")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s:\n got %v\nwant %q", tc.inputs, tc.node, err, tc.want)
		}
	}

	_, err = CompileText([]byte(`version: 1 input { name: "IMAGE" } `+boxes+` node { op: "decode" input: "IMAGE" } output { name: "O" }`), "b.pbtxt")
	if want := `input "BOXES" (#2): boxes: no crop_boxes node reads it`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("unread boxes: %v, want %q", err, want)
	}

	// The fields round-trip through both file forms.
	p, err := ParseText([]byte(boxesText(`input { name: "BOXES" boxes { max: 8 coords: "pixel" } } input { name: "COUNT" count_of: "BOXES" }`, cropNode)), "")
	if err != nil {
		t.Fatal(err)
	}
	text, err := FormatText(p)
	if err != nil || !strings.Contains(string(text), `boxes { max: 8 coords: "pixel" }`) || !strings.Contains(string(text), `count_of: "BOXES"`) {
		t.Errorf("FormatText: %v\n%s", err, text)
	}
	bin, err := FormatCompact(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCompact(bin, "")
	if err != nil || back.GetInput()[1].GetBoxes().GetMax() != 8 || back.GetInput()[2].GetCountOf() != "BOXES" {
		t.Errorf("compact round trip: %v %v", err, back)
	}
}
