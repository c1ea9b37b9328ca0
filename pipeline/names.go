package pipeline

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/sluice-dev/sluice/internal/excerpt"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// names checks input, node and output names and indexes the referable ones.
// Inputs and nodes share one namespace, since a reference "NAME" may mean
// either; outputs have their own (Triton's output tensor names).
func (c *compiler) names() {
	for i, in := range c.def.GetInput() {
		name, elem := in.GetName(), c.inputElem(i)
		c.inNames = append(c.inNames, name)
		c.inSpecs = append(c.inSpecs, c.inputSpec(i, in))
		if err := checkName(name, true); err != nil {
			c.fail(elem, "name", err)
			continue
		}
		if j, dup := c.inputs[name]; dup {
			c.failf(elem, "name", "%s is already the name of input #%d", excerpt.Quote(name), j+1)
			continue
		}
		c.inputs[name] = i
	}
	c.counts()

	for _, n := range c.def.GetNode() {
		ni := nodeInfo{name: n.GetName(), explicit: n.GetName() != ""}
		if !ni.explicit {
			ni.name = n.GetOp()
		}
		c.nodes = append(c.nodes, ni)
	}
	for i := range c.nodes {
		ni, elem := &c.nodes[i], c.nodeElem(i)
		if !ni.explicit {
			if ni.name == "" {
				continue // no op either: reported with the op
			}
		} else if err := checkName(ni.name, true); err != nil {
			c.fail(elem, "name", err)
			continue
		}
		if j, clash := c.inputs[ni.name]; clash {
			c.failf(elem, "name", "%s is also the name of input #%d; a reference could not tell them apart", excerpt.Quote(ni.name), j+1)
			continue
		}
		j, dup := c.byName[ni.name]
		switch {
		case !dup:
			c.byName[ni.name] = i
		case !ni.explicit:
			c.failf(elem, "name", "%s (defaulted from the op) is already used by node #%d: two %s nodes need explicit names (name: \"...\")", excerpt.Quote(ni.name), j+1, excerpt.Quote(ni.name))
		case !c.nodes[j].explicit:
			c.failf(elem, "name", "%s is already used by node #%d (defaulted from its op); give one of them another name", excerpt.Quote(ni.name), j+1)
		default:
			c.failf(elem, "name", "%s is already used by node #%d", excerpt.Quote(ni.name), j+1)
		}
	}

	seen := map[string]int{}
	for i, o := range c.def.GetOutput() {
		name, elem := o.GetName(), c.outputElem(i)
		if err := checkName(name, false); err != nil {
			c.fail(elem, "name", err)
			continue
		}
		if j, dup := seen[name]; dup {
			c.failf(elem, "name", "%s is already the name of output #%d", excerpt.Quote(name), j+1)
			continue
		}
		seen[name] = i
	}
}

// inputSpec reads an input's layout and color: none for encoded bytes,
// layout "HWC" with a color for a decoded image. A problem is reported and
// the input taken as encoded, so that later stages still run on it.
func (c *compiler) inputSpec(i int, in *pipelinepb.Input) ops.Spec {
	elem, layout, color := c.inputElem(i), in.GetLayout(), in.GetColor()
	if in.GetBoxes() != nil || in.GetCountOf() != "" {
		if layout != "" || color != "" {
			c.failf(elem, "layout", "a boxes or count input carries no image: leave out layout and color")
		}
		if in.GetBoxes() != nil && in.GetCountOf() != "" {
			c.failf(elem, "count_of", "given with boxes: an input is either boxes or the count of another input's boxes")
			return InputSpec
		}
		if in.GetCountOf() != "" {
			return CountSpec // count_of is resolved once every input is known
		}
		return c.boxesSpec(elem, in.GetBoxes())
	}
	switch layout {
	case "":
		if color != "" {
			c.failf(elem, "color", "%s given without layout: an encoded input's colour is decode's to choose; for an already-decoded image add layout: %q", excerpt.Quote(color), LayoutHWC)
		}
		return InputSpec
	case LayoutHWC:
	default:
		c.failf(elem, "layout", "%s is not a layout: leave it out for encoded image bytes, or %q for a decoded UINT8 [H, W, C] image%s",
			excerpt.Quote(layout), LayoutHWC, suggest(strings.ToUpper(layout), []string{LayoutHWC}))
		return InputSpec
	}
	if color == "" {
		c.failf(elem, "color", "missing: layout %q needs the image's channels, one of %s", LayoutHWC, decodedColors)
		return InputSpec
	}
	col, err := ops.ParseColor(color)
	if err != nil || col == ops.NoColor {
		c.failf(elem, "color", "%s is not one of %s", excerpt.Quote(color), decodedColors)
		return InputSpec
	}
	return DecodedSpec(col)
}

// boxesSpec reads a boxes input's declaration: FP32 [max, 4] with its
// coordinates. A problem is reported and the input taken as encoded.
func (c *compiler) boxesSpec(elem string, b *pipelinepb.Boxes) ops.Spec {
	ok := true
	if n := b.GetMax(); n < 1 || n > ops.MaxBoxes {
		c.failf(elem, "boxes.max", "%d is out of range: the rows per sample, 1 to %d", n, ops.MaxBoxes)
		ok = false
	}
	var co ops.Coords
	switch strings.ToLower(b.GetCoords()) {
	case "pixel":
		co = ops.PixelCoords
	case "relative":
		co = ops.RelativeCoords
	case "":
		c.failf(elem, "boxes.coords", `missing: "pixel" (pixels of the decoded, oriented image) or "relative" (fractions 0..1 of its width and height)`)
		ok = false
	default:
		c.failf(elem, "boxes.coords", `%s is not "pixel" or "relative"`, excerpt.Quote(b.GetCoords()))
		ok = false
	}
	if !ok {
		return InputSpec
	}
	return BoxesSpec(int(b.GetMax()), co)
}

// counts resolves each count input's count_of, which must name a boxes
// input that no other count input counts.
func (c *compiler) counts() {
	c.countOf = make([]int, len(c.inNames))
	by := map[int]int{}
	for i, in := range c.def.GetInput() {
		c.countOf[i] = -1
		name := in.GetCountOf()
		if name == "" || in.GetBoxes() != nil {
			continue
		}
		elem := c.inputElem(i)
		j, ok := c.inputs[name]
		switch {
		case !ok:
			c.failf(elem, "count_of", "no input is named %s%s (inputs: %s)", excerpt.Quote(name), suggest(name, c.inNames), excerpt.List(c.inNames, 20))
			continue
		case !c.inSpecs[j].IsBoxes():
			c.failf(elem, "count_of", "input %s is not a boxes input (give it boxes { max: N coords: \"pixel\" }): a count counts boxes", excerpt.Quote(name))
			continue
		}
		if k, dup := by[j]; dup {
			c.failf(elem, "count_of", "input %s is already counted by input #%d", excerpt.Quote(name), k+1)
			continue
		}
		by[j] = i
		c.countOf[i] = j
	}
}

// decodedColors are the colours a decoded input may declare, with the
// channel count each fixes.
const decodedColors = `"RGB" or "BGR" (3 channels), "GRAY" (1), "RGBA" or "BGRA" (4)`

// checkName rejects names that would be ambiguous or invisible in messages
// and Triton configs. Referable names (inputs, nodes) may not contain ':',
// which separates a node from its port in a reference.
func checkName(name string, referable bool) error {
	if name == "" {
		return fmt.Errorf("missing")
	}
	for _, r := range name {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("%s contains a space or control character", excerpt.Quote(name))
		}
	}
	if referable && strings.Contains(name, ":") {
		return fmt.Errorf("%s contains ':', which separates a node from its output port in references", excerpt.Quote(name))
	}
	return nil
}

// Element names for messages: 1-based positions, as people count.

func (c *compiler) inputElem(i int) string {
	return elemName("input", c.def.GetInput()[i].GetName(), i)
}

func (c *compiler) nodeElem(i int) string { return elemName("node", c.nodes[i].name, i) }

func (c *compiler) outputElem(i int) string {
	return elemName("output", c.def.GetOutput()[i].GetName(), i)
}

func elemName(kind, name string, i int) string {
	if name == "" {
		return fmt.Sprintf("%s #%d", kind, i+1)
	}
	return fmt.Sprintf("%s %s (#%d)", kind, excerpt.Quote(name), i+1)
}

// inputsField names a node's inputs with their specs, for shape errors.
func (c *compiler) inputsField(i int, in []ops.Spec) string {
	ni := &c.nodes[i]
	parts := make([]string, len(in))
	for k := range in {
		parts[k] = fmt.Sprintf("%s (%v)", excerpt.Quote(ni.inText[k]), in[k])
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return "input " + parts[0]
	}
	return "inputs " + strings.Join(parts, ", ")
}

// plural spells a count of things: "1 input port", "2 input ports".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func knownOps() string {
	names := ops.Names()
	if len(names) == 0 {
		return "none registered"
	}
	return excerpt.List(names, 20)
}

func portNames(ports []ops.Port) string {
	if len(ports) == 0 {
		return "none"
	}
	n := make([]string, len(ports))
	for i, p := range ports {
		n[i] = p.Name
	}
	return strings.Join(n, ", ")
}

func dimsString(dims []int) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// suggest returns ` (did you mean "x"?)` for the closest candidate within a
// couple of typos, or "".
func suggest(got string, candidates []string) string {
	if len(got) > 64 || len(candidates) > 200 {
		return "" // not a real definition's typo: spare hostile ones the work
	}
	best, bestD := "", 3
	if len(got) <= 3 {
		bestD = 2
	}
	for _, c := range candidates {
		if d := editDistance(got, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b, or max when it is at
// least max (names in a definition are short; the cap keeps hostile ones
// cheap).
func editDistance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= max {
			return max
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], max)
}
