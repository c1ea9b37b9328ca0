package pipeline

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluice-dev/sluice/internal/excerpt"
	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// Magic starts every compact definition: "SLUICE", a NUL that no text
// definition can contain (so sniffing is unambiguous and tools see a binary
// file), and the revision of the compact encoding (1: deterministic protobuf
// binary of pipelinepb.Pipeline). The schema version lives in the message.
const Magic = "SLUICE\x00\x01"

// magicFamily is the part of Magic shared by every revision, so that a
// newer revision is reported as such rather than as a text syntax error.
const magicFamily = "SLUICE\x00"

// ParseCompact reads the compact form: Magic then protobuf binary. Fields
// this build does not know are errors rather than silently kept: they
// would be lost in the text form, and they mean the file was written for a
// newer Sluice whose meaning this build cannot honour.
func ParseCompact(data []byte, source string) (*pipelinepb.Pipeline, error) {
	if len(data) > MaxSize {
		return nil, tooLarge(source, int64(len(data)))
	}
	if !bytes.HasPrefix(data, []byte(Magic)) {
		if bytes.HasPrefix(data, []byte(magicFamily)) && len(data) > len(magicFamily) {
			return nil, &Error{Source: source, Err: fmt.Errorf("compact form revision %d is not supported: this build reads revision %d", data[len(magicFamily)], Magic[len(Magic)-1])}
		}
		return nil, &Error{Source: source, Err: fmt.Errorf("not a compact pipeline definition: it does not start with %q", Magic)}
	}
	p := new(pipelinepb.Pipeline)
	if err := proto.Unmarshal(data[len(Magic):], p); err != nil {
		return nil, &Error{Source: source, Err: &protoError{"compact form: " + excerpt.Cut(cleanProtoMsg(err.Error()), maxParseMsg), err}}
	}
	if path, num := findUnknown(p.ProtoReflect(), ""); num != 0 {
		where := "compact form"
		if path != "" {
			where += ", " + path
		}
		return nil, &Error{Source: source, Err: fmt.Errorf("%s: unknown field number %d (written for a newer Sluice? this build reads schema version %d)", where, num, Version)}
	}
	return p, nil
}

// FormatCompact writes the compact form. Marshalling is deterministic, so
// the same definition always gives the same bytes (stable model repository
// diffs and checksums).
func FormatCompact(p *pipelinepb.Pipeline) ([]byte, error) {
	if p == nil {
		return nil, errors.New("pipeline: FormatCompact of a nil definition")
	}
	out := []byte(Magic)
	out, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(out, p)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %s", cleanProtoMsg(err.Error()))
	}
	return out, nil
}

// findUnknown returns the path and number of the first unknown field in m
// or its sub-messages; num is 0 when there is none.
func findUnknown(m protoreflect.Message, path string) (where string, num protowire.Number) {
	if raw := m.GetUnknown(); len(raw) > 0 {
		n, _, _ := protowire.ConsumeTag(raw)
		if n == 0 {
			n = -1 // unparsable tag: still report something non-zero
		}
		return path, n
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		sub := func(i int, mm protoreflect.Message) bool {
			p := string(fd.Name())
			if i >= 0 {
				p = fmt.Sprintf("%s #%d", p, i+1)
			}
			if path != "" {
				p = path + ", " + p
			}
			where, num = findUnknown(mm, p)
			return num == 0
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if !sub(i, l.Get(i).Message()) {
					return false
				}
			}
			return true
		}
		return sub(-1, v.Message())
	})
	return where, num
}
