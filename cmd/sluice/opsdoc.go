package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/sluice-dev/sluice/ops"
)

// The operator reference in docs/pipelines.md lies between these markers;
// TestPipelinesDocOperators keeps it equal to opsMarkdown's output.
const (
	opsDocBegin = "<!-- BEGIN OPERATORS: generated from the operator schemas by `sluice ops --markdown`; do not edit -->"
	opsDocEnd   = "<!-- END OPERATORS -->"
)

// opsMarkdown writes every registered operator's ports and arguments as
// Markdown, from the same schemas the compiler checks pipelines against.
func opsMarkdown(w io.Writer) {
	for _, name := range ops.Names() {
		s := ops.Lookup(name)
		fmt.Fprintf(w, "### `%s`\n\n%s\n\n", name, s.Doc)
		ports(w, "Inputs", s.Inputs)
		ports(w, "Outputs", s.Outputs)
		if len(s.Args) == 0 {
			continue
		}
		fmt.Fprint(w, "| argument | type | default | accepts | meaning |\n|---|---|---|---|---|\n")
		for _, a := range s.Args {
			fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", a.Name, a.Type, argDefault(a), cell(accepts(a)), cell(a.Doc))
		}
		fmt.Fprintln(w)
	}
}

func ports(w io.Writer, title string, ps []ops.Port) {
	fmt.Fprintf(w, "%s:\n\n", title)
	for _, p := range ps {
		fmt.Fprintf(w, "- `%s`: %s\n", p.Name, p.Doc)
	}
	fmt.Fprintln(w)
}

func argDefault(a ops.ArgSpec) string {
	switch {
	case a.Required:
		return "required"
	case a.Default.Type != 0:
		return "`" + a.Default.String() + "`"
	}
	return "none"
}

// accepts describes what the schema's check lets through beyond the type.
func accepts(a ops.ArgSpec) string {
	var parts []string
	if len(a.Enum) > 0 {
		parts = append(parts, "`"+strings.Join(a.Enum, "`, `")+"`")
	}
	if len(a.Lens) > 0 {
		n := make([]string, len(a.Lens))
		for i, l := range a.Lens {
			n[i] = fmt.Sprint(l)
		}
		parts = append(parts, strings.Join(n, " or ")+" values")
	}
	lo, hi := a.Min > -math.MaxFloat32, a.Max < math.MaxFloat32
	switch {
	case a.Min == 0 && a.Max == 0:
	case lo && hi:
		parts = append(parts, fmt.Sprintf("%g to %g", a.Min, a.Max))
	case lo:
		parts = append(parts, fmt.Sprintf("at least %g", a.Min))
	case hi:
		parts = append(parts, fmt.Sprintf("at most %g", a.Max))
	}
	return strings.Join(parts, "; ")
}

// cell keeps text inside one Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
