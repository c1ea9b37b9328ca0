package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// FormatText writes the text form: stable (the same definition always
// prints the same bytes, unlike prototext, which varies whitespace on
// purpose) and laid out for people:
//
//   - top-level fields one per line, in field-number order, with a blank
//     line before each section of inputs, nodes and outputs;
//   - each node a multi-line block, one field per line;
//   - every other message (input, arg, output) on one line;
//   - numeric lists in brackets, a repeated string as `input: "x"` when it
//     has one element and `input: ["x", "y"]` otherwise;
//   - doubles in the shortest form that parses back to the same bits
//     (strconv 'g', -1), nan and inf as the text format spells them.
//
// It walks the message by reflection, so a field added to the schema is
// printed without touching this file.
func FormatText(p *pipelinepb.Pipeline) ([]byte, error) {
	if p == nil {
		return nil, errors.New("pipeline: FormatText of a nil definition")
	}
	w := textWriter{}
	if err := w.fields(p.ProtoReflect(), 0, true); err != nil {
		return nil, err
	}
	return []byte(w.b.String()), nil
}

// blockMessages are printed as multi-line blocks; the rest inline.
var blockMessages = map[protoreflect.FullName]bool{
	(*pipelinepb.Node)(nil).ProtoReflect().Descriptor().FullName(): true,
}

type textWriter struct {
	b strings.Builder
}

// fields prints the set fields of m. In block mode each goes on its own
// line at depth; inline, they are separated by spaces.
func (w *textWriter) fields(m protoreflect.Message, depth int, block bool) error {
	fds := m.Descriptor().Fields()
	order := make([]protoreflect.FieldDescriptor, fds.Len())
	for i := range order {
		order[i] = fds.Get(i)
	}
	slices.SortFunc(order, func(a, b protoreflect.FieldDescriptor) int { return int(a.Number() - b.Number()) })
	first := true
	item := func() {
		if block {
			w.b.WriteString(strings.Repeat("  ", depth))
		} else if !first {
			w.b.WriteByte(' ')
		}
		first = false
	}
	end := func() {
		if block {
			w.b.WriteByte('\n')
		}
	}
	for _, fd := range order {
		if !m.Has(fd) {
			continue
		}
		name := string(fd.Name())
		v := m.Get(fd)
		switch {
		case fd.IsMap():
			return fmt.Errorf("pipeline: FormatText: map field %s is not supported", fd.FullName())
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			if block && depth == 0 && w.b.Len() > 0 {
				w.b.WriteByte('\n') // a blank line between top-level sections
			}
			for i := 0; i < l.Len(); i++ {
				item()
				if err := w.message(name, l.Get(i).Message(), depth); err != nil {
					return err
				}
				end()
			}
		case fd.IsList():
			l := v.List()
			item()
			w.b.WriteString(name)
			w.b.WriteString(": ")
			bracket := l.Len() != 1 || fd.Kind() != protoreflect.StringKind
			if bracket {
				w.b.WriteByte('[')
			}
			for i := 0; i < l.Len(); i++ {
				if i > 0 {
					w.b.WriteString(", ")
				}
				if err := w.scalar(fd, l.Get(i)); err != nil {
					return err
				}
			}
			if bracket {
				w.b.WriteByte(']')
			}
			end()
		case fd.Message() != nil:
			item()
			if err := w.message(name, v.Message(), depth); err != nil {
				return err
			}
			end()
		default:
			item()
			w.b.WriteString(name)
			w.b.WriteString(": ")
			if err := w.scalar(fd, v); err != nil {
				return err
			}
			end()
		}
	}
	return nil
}

// message prints `name { ... }`, as a block or inline.
func (w *textWriter) message(name string, m protoreflect.Message, depth int) error {
	w.b.WriteString(name)
	if !hasFields(m) {
		w.b.WriteString(" {}")
		return nil
	}
	if blockMessages[m.Descriptor().FullName()] {
		w.b.WriteString(" {\n")
		if err := w.fields(m, depth+1, true); err != nil {
			return err
		}
		w.b.WriteString(strings.Repeat("  ", depth))
		w.b.WriteByte('}')
		return nil
	}
	w.b.WriteString(" { ")
	if err := w.fields(m, depth+1, false); err != nil {
		return err
	}
	w.b.WriteString(" }")
	return nil
}

func hasFields(m protoreflect.Message) bool {
	has := false
	m.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool {
		has = true
		return false
	})
	return has
}

func (w *textWriter) scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		w.b.WriteString(strconv.FormatBool(v.Bool()))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		w.b.WriteString(strconv.FormatInt(v.Int(), 10))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		w.b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case protoreflect.FloatKind:
		w.b.WriteString(formatFloat(v.Float(), 32))
	case protoreflect.DoubleKind:
		w.b.WriteString(formatFloat(v.Float(), 64))
	case protoreflect.StringKind:
		s := v.String()
		if !utf8.ValidString(s) {
			// The parser would reject it, so printing it would break the
			// round trip; protobuf's binary marshal refuses it too.
			return fmt.Errorf("pipeline: FormatText: field %s holds invalid UTF-8 %q", fd.FullName(), s)
		}
		// strconv.Quote's escapes (\n, \t, \", \\, \xHH, \uXXXX,
		// \UXXXXXXXX) are all text format escapes too, and it leaves
		// printable Unicode as is.
		w.b.WriteString(strconv.Quote(s))
	case protoreflect.BytesKind:
		w.b.WriteString(strconv.Quote(string(v.Bytes())))
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			w.b.WriteString(string(ev.Name()))
		} else {
			w.b.WriteString(strconv.FormatInt(int64(v.Enum()), 10))
		}
	default:
		return fmt.Errorf("pipeline: FormatText: field %s of kind %v is not supported", fd.FullName(), fd.Kind())
	}
	return nil
}

// formatFloat spells a float so that the text format parser reads back the
// same value: shortest round-trip digits, and nan/inf/-inf, which is how
// the text format names what strconv calls NaN/+Inf/-Inf.
func formatFloat(x float64, bits int) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', -1, bits)
}
