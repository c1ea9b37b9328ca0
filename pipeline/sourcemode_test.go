package pipeline

import (
	"strings"
	"testing"
)

// A resize with source_mode needs the decode before it to itself, following
// Pillow: each refusal names the resize node and the argument.
func TestCompileSourceMode(t *testing.T) {
	const rs = `node { name: "rs" op: "resize" arg { name: "size" ints { v: [8, 8] } } arg { name: "source_mode" bool: true } }`
	const out = ` output { name: "O" source: "rs" }`
	for _, c := range []struct{ text, want string }{
		{`node { op: "decode" } ` + rs + out, ""},
		{`node { op: "decode" arg { name: "color" str: "BGR" } } ` + rs + ` node { op: "crop" arg { name: "size" ints { v: [4, 4] } } } output { name: "O" }`, ""},
		{`node { op: "decode" arg { name: "color" str: "GRAY" } } ` + rs + out, ""},
		{`node { op: "decode" arg { name: "color" str: "BGRA" } } ` + rs + out, ""},
		{`node { op: "decode" arg { name: "color" str: "GRAY" } arg { name: "background" ints { v: [0, 0, 0] } } } ` + rs + out,
			`argument "source_mode": resizes alpha as Pillow does, but node "decode" (#1) composites it onto a background first`},
		{`node { op: "decode" } node { op: "crop" arg { name: "size" ints { v: [9, 9] } } } ` + rs + out,
			`node "rs" (#3): argument "source_mode": needs a decode directly before it, which knows the mode Pillow opens each image in; it reads "crop"`},
		{`node { op: "decode" } ` + rs + out + ` output { name: "D" source: "decode" }`,
			`node "rs" (#2): argument "source_mode": needs the node "decode" (#1) it reads to have no other reader (it hands this resize images in four channels), but 2 read it`},
		{`node { op: "decode" arg { name: "background" ints { v: [255, 255, 255] } } } ` + rs + out,
			`argument "source_mode": resizes alpha as Pillow does, but node "decode" (#1) composites it onto a background first`},
		{`node { op: "decode" arg { name: "cmyk" str: "opencv" } } ` + rs + out,
			`argument "source_mode": converts CMYK as Pillow does, but node "decode" (#1) says cmyk "opencv"`},
	} {
		_, err := compileText(t, `version: 1 input { name: "I" } `+c.text)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.text, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.text, err, c.want)
		}
	}
}
