package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// load reads and compiles a pipeline file, text or compact.
func load(path string) (*pipeline.Compiled, error) {
	def, err := pipeline.Load(path)
	if err != nil {
		return nil, err
	}
	return pipeline.Compile(def, path)
}

func cmdValidate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	pos, err := parse(fs, args, stderr)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "one pipeline file"); err != nil {
		return err
	}
	c, err := load(pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok\n%s", pos[0], c.Describe())
	return nil
}

func cmdCompile(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	out := fs.String("o", "", "compact file to write (required)")
	pos, err := parse(fs, args, stderr)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "one pipeline file"); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("-o FILE is required")
	}
	c, err := load(pos[0])
	if err != nil {
		return err
	}
	b, err := pipeline.FormatCompact(c.Def)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes)\n", *out, len(b))
	return nil
}

func cmdFmt(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fmt", flag.ContinueOnError)
	pos, err := parse(fs, args, stderr)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "one pipeline file"); err != nil {
		return err
	}
	def, err := pipeline.Load(pos[0])
	if err != nil {
		return err
	}
	b, err := pipeline.FormatText(def)
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}

func cmdOps(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ops", flag.ContinueOnError)
	md := fs.Bool("markdown", false, "print the reference in docs/pipelines.md (Markdown) instead")
	js := fs.Bool("json", false, "print the operators' schemas as JSON instead, for programs")
	if _, err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *md {
		opsMarkdown(stdout)
		return nil
	}
	if *js {
		return opsJSON(stdout)
	}
	for _, name := range ops.Names() {
		s := ops.Lookup(name)
		var in, out []string
		for _, p := range s.Inputs {
			in = append(in, p.Name)
		}
		for _, p := range s.Outputs {
			out = append(out, p.Name)
		}
		fmt.Fprintf(stdout, "%s (%s) -> (%s)\n    %s\n", name, strings.Join(in, ", "), strings.Join(out, ", "), s.Doc)
		for _, a := range s.Args {
			def := ""
			switch {
			case a.Required:
				def = " required"
			case a.Default.Type != 0:
				def = " default " + a.Default.String()
			}
			enum := ""
			if len(a.Enum) > 0 {
				enum = " {" + strings.Join(a.Enum, "|") + "}"
			}
			fmt.Fprintf(stdout, "    %-10s %-6s%s%s  %s\n", a.Name, a.Type, enum, def, a.Doc)
		}
	}
	return nil
}

// opsJSON prints every operator's schema: what programs such as the
// Python exporter read to learn what this build accepts.
func opsJSON(stdout io.Writer) error {
	type arg struct {
		Name     string   `json:"name"`
		Type     string   `json:"type"`
		Doc      string   `json:"doc"`
		Required bool     `json:"required"`
		Default  string   `json:"default,omitempty"`
		Enum     []string `json:"enum,omitempty"`
	}
	type op struct {
		Name    string   `json:"name"`
		Doc     string   `json:"doc"`
		Inputs  []string `json:"inputs"`
		Outputs []string `json:"outputs"`
		Args    []arg    `json:"args"`
	}
	var all []op
	for _, name := range ops.Names() {
		s := ops.Lookup(name)
		o := op{Name: name, Doc: s.Doc, Inputs: []string{}, Outputs: []string{}, Args: []arg{}}
		for _, p := range s.Inputs {
			o.Inputs = append(o.Inputs, p.Name)
		}
		for _, p := range s.Outputs {
			o.Outputs = append(o.Outputs, p.Name)
		}
		for _, a := range s.Args {
			x := arg{Name: a.Name, Type: a.Type.String(), Doc: a.Doc, Required: a.Required, Enum: a.Enum}
			if !a.Required && a.Default.Type != 0 {
				x.Default = a.Default.String()
			}
			o.Args = append(o.Args, x)
		}
		all = append(all, o)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", " ")
	return enc.Encode(all)
}
