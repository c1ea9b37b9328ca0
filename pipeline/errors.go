package pipeline

import (
	"fmt"
	"strings"
)

// Error is one problem with a pipeline definition. It locates the problem as
// precisely as it can — file, line:column for parse errors, the element
// (node, input, output) and its field — because whoever reads it (in
// `sluice validate` or a Triton log) has only the file to fix.
type Error struct {
	Source    string // file the definition came from; may be empty
	Line, Col int    // position in the text form, for parse errors; 0 otherwise
	Elem      string // `node "resize" (#2)`, `output "PIXELS" (#1)`; empty for the whole definition
	Field     string // `version`, `input "resize:scale"`...; empty when Err names it (an *ops.ArgError does)
	Err       error
}

func (e *Error) Error() string {
	var b strings.Builder
	sep := func() {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
	}
	if e.Source != "" {
		b.WriteString(e.Source)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
		}
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d:%d", e.Line, e.Col)
	}
	for _, s := range []string{e.Elem, e.Field} {
		if s != "" {
			sep()
			b.WriteString(s)
		}
	}
	sep()
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("invalid pipeline")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorList is what Compile returns when a definition has several
// independent problems: reporting them together saves an edit-validate
// round trip per mistake. Use errors.As to reach the single errors.
type ErrorList []*Error

func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// err returns nil, the single error, or the list.
func (l ErrorList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}
