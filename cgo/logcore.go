package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logSink is where log lines end up: Triton's log inside tritonserver
// (logtriton.go), a recorder in tests.
type logSink interface {
	Enabled(zapcore.Level) bool
	Write(level zapcore.Level, file string, line int, msg string)
}

// sinkCore is a zapcore.Core that renders each entry as one line,
// "message key=value ...", and hands it to a logSink with the caller's
// file and line. Triton's log adds its own timestamp, level and location,
// so nothing of those goes into the line.
type sinkCore struct {
	sink   logSink
	fields string // rendered With fields, each with a leading space
}

// newLogger is the *zap.Logger backend gets. Caller information is on so
// that Triton's log shows where a line came from. zap's Fatal would exit
// the process, which inside tritonserver means the server: it panics
// instead, and the panic is recovered into an error by the entry point.
func newLogger(sink logSink) *zap.Logger {
	return zap.New(&sinkCore{sink: sink}, zap.AddCaller(), zap.WithFatalHook(zapcore.WriteThenPanic))
}

func (c *sinkCore) Enabled(l zapcore.Level) bool { return c.sink.Enabled(l) }

func (c *sinkCore) With(fields []zapcore.Field) zapcore.Core {
	return &sinkCore{sink: c.sink, fields: c.fields + renderFields(fields)}
}

func (c *sinkCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *sinkCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	msg := e.Message
	if e.LoggerName != "" {
		msg = e.LoggerName + ": " + msg
	}
	msg += c.fields + renderFields(fields)
	file, line := "sluice", 0
	if e.Caller.Defined {
		file, line = shortPath(e.Caller.File), e.Caller.Line
	}
	c.sink.Write(e.Level, file, line, msg)
	return nil
}

// shortPath keeps the last directory and the file name of a source path
// ("backend/model.go"), as short as Triton's own "model_lifecycle.cc".
func shortPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return p
	}
	return p[strings.LastIndexByte(p[:i], '/')+1:]
}

// Sync has nothing to flush: every Write is handed over at once.
func (c *sinkCore) Sync() error { return nil }

// renderFields renders fields as " key=value" each, in order. A field that
// encodes to several keys (an inlined object) renders them sorted.
func renderFields(fields []zapcore.Field) string {
	var b strings.Builder
	for _, f := range fields {
		enc := zapcore.NewMapObjectEncoder()
		f.AddTo(enc)
		keys := make([]string, 0, len(enc.Fields))
		for k := range enc.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteByte(' ')
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(renderValue(enc.Fields[k]))
		}
	}
	return b.String()
}

// renderValue prints a value bare when it reads unambiguously as one
// token, quoted otherwise (empty strings, spaces, quotes, '=', control
// characters).
func renderValue(v any) string {
	s, isString := v.(string)
	if !isString {
		s = fmt.Sprint(v)
	}
	if (isString && s == "") || strings.ContainsAny(s, " \t\r\n\"=") || !strconv.CanBackquote(s) {
		return strconv.Quote(s)
	}
	return s
}
