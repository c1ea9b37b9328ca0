package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/sluice-dev/sluice/internal/excerpt"
	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// MaxSize bounds a definition file. Real ones are a few KiB; the bound keeps
// a misplaced model weight file from being parsed as a pipeline.
const MaxSize = 4 << 20

// utf8BOM is stripped from text definitions: some editors write it, and the
// text format parser would report it as a syntax error.
const utf8BOM = "\xef\xbb\xbf"

func tooLarge(source string, n int64) error {
	return &Error{Source: source, Err: fmt.Errorf("%d bytes is too large for a pipeline definition (at most %d)", n, MaxSize)}
}

// Load reads a definition file in either form.
func Load(path string) (*pipelinepb.Pipeline, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxSize {
		return nil, tooLarge(path, fi.Size())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse reads a definition in either form: compact when data starts with
// the magic, text otherwise. source names the file in errors.
func Parse(data []byte, source string) (*pipelinepb.Pipeline, error) {
	if bytes.HasPrefix(data, []byte(magicFamily)) {
		return ParseCompact(data, source)
	}
	return ParseText(data, source)
}

// ParseText reads the text form: protobuf text format of
// pipelinepb.Pipeline, with # comments. Unknown fields are errors, so that
// a typo never silently drops a setting.
func ParseText(data []byte, source string) (*pipelinepb.Pipeline, error) {
	if len(data) > MaxSize {
		return nil, tooLarge(source, int64(len(data)))
	}
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	p := new(pipelinepb.Pipeline)
	if err := prototext.Unmarshal(data, p); err != nil {
		return nil, textError(err, data, source)
	}
	return p, nil
}

// protoError carries a protobuf error with a cleaned-up message while
// keeping it reachable (errors.Is(err, proto.Error) still works).
type protoError struct {
	msg string
	err error
}

func (e *protoError) Error() string { return e.msg }
func (e *protoError) Unwrap() error { return e.err }

// protoPrefix matches the "proto: " prefix protobuf-go puts on errors; it
// randomly uses a non-breaking space to discourage string matching, which
// is exactly what making the message readable requires.
var protoPrefix = regexp.MustCompile("proto:[ \u00a0]")

// linePos matches prototext's position, "(line 3:14): ".
var linePos = regexp.MustCompile(`^(syntax error )?\(line (\d+):(\d+)\): `)

func cleanProtoMsg(s string) string {
	return protoPrefix.ReplaceAllString(s, "")
}

// textError turns a prototext error into an *Error that names the file and
// line:column the way compilers do ("p.pbtxt:3:14: unknown field: foo").
func textError(err error, data []byte, source string) error {
	msg := cleanProtoMsg(err.Error())
	e := &Error{Source: source}
	if m := linePos.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[2])
		e.Col, _ = strconv.Atoi(m[3])
		msg = msg[len(m[0]):]
		if m[1] != "" {
			msg = "syntax error: " + msg
		}
	} else if strings.Contains(msg, "unexpected EOF") {
		// prototext gives no position for a truncated file: the end is it.
		e.Line, e.Col = endPos(data)
		msg = "unexpected end of file (missing a closing } or ]?)"
	}
	// prototext quotes the offending token whole, which may be most of
	// the file: keep its start (the position says where the rest is).
	e.Err = &protoError{excerpt.Cut(msg, maxParseMsg), err}
	return e
}

// maxParseMsg bounds a parser's message: its own words and the start of
// the token it quotes.
const maxParseMsg = 160

// endPos is the line:column just past the last byte, counted as prototext
// counts (columns in runes).
func endPos(data []byte) (line, col int) {
	line = bytes.Count(data, []byte("\n")) + 1
	last := data[bytes.LastIndexByte(data, '\n')+1:]
	return line, len([]rune(string(last))) + 1
}
