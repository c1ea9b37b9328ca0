package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

type logLine struct {
	level zapcore.Level
	file  string
	line  int
	msg   string
}

// recordSink keeps what it is given; levels below min are disabled.
type recordSink struct {
	min   zapcore.Level
	lines []logLine
}

func (s *recordSink) Enabled(l zapcore.Level) bool { return l >= s.min }

func (s *recordSink) Write(l zapcore.Level, file string, line int, msg string) {
	s.lines = append(s.lines, logLine{l, file, line, msg})
}

func TestLoggerRendersFieldsAndCaller(t *testing.T) {
	sink := &recordSink{min: zapcore.DebugLevel}
	log := newLogger(sink).With(zap.String("model", "preprocess"), zap.Int64("version", 1))
	log.Info("loaded", zap.String("file", "/models/a b/1/pipeline.pbtxt"), zap.Bool("auto", true),
		zap.Duration("took", 1500*time.Millisecond), zap.Error(errors.New(`bad "x"`)), zap.String("empty", ""))
	if len(sink.lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(sink.lines))
	}
	got := sink.lines[0]
	want := `loaded model=preprocess version=1 file="/models/a b/1/pipeline.pbtxt" auto=true took=1.5s error="bad \"x\"" empty=""`
	if got.msg != want {
		t.Errorf("message\n got %s\nwant %s", got.msg, want)
	}
	if got.file != "cgo/logcore_test.go" || got.line == 0 {
		t.Errorf("caller %s:%d, want cgo/logcore_test.go and a line", got.file, got.line)
	}
}

func TestLoggerLevelsAndNames(t *testing.T) {
	sink := &recordSink{min: zapcore.InfoLevel}
	log := newLogger(sink).Named("sluice")
	log.Debug("hidden")
	log.Info("i")
	log.Warn("w")
	log.Error("e")
	if len(sink.lines) != 3 {
		t.Fatalf("got %d lines, want 3 (Debug disabled): %v", len(sink.lines), sink.lines)
	}
	for i, want := range []zapcore.Level{zapcore.InfoLevel, zapcore.WarnLevel, zapcore.ErrorLevel} {
		if sink.lines[i].level != want || !strings.HasPrefix(sink.lines[i].msg, "sluice: ") {
			t.Errorf("line %d: %v %q", i, sink.lines[i].level, sink.lines[i].msg)
		}
	}
}

// Fatal must not exit tritonserver: it panics, which entry points recover.
func TestLoggerFatalPanics(t *testing.T) {
	sink := &recordSink{}
	defer func() {
		if recover() == nil {
			t.Error("Fatal did not panic")
		}
		if len(sink.lines) != 1 || sink.lines[0].msg != "boom" {
			t.Errorf("Fatal's line was not written first: %v", sink.lines)
		}
	}()
	newLogger(sink).Fatal("boom")
}

func TestRenderValue(t *testing.T) {
	for v, want := range map[any]string{
		"plain":     "plain",
		"":          `""`,
		"a=b":       `"a=b"`,
		"tab\there": `"tab\there"`,
		"ctl\x01":   `"ctl\x01"`,
		42:          "42",
		3.5:         "3.5",
		true:        "true",
	} {
		if got := renderValue(v); got != want {
			t.Errorf("renderValue(%#v) = %s, want %s", v, got, want)
		}
	}
	if got := renderValue([]any{1, "x"}); got != `"[1 x]"` {
		t.Errorf("renderValue(slice) = %s", got)
	}
}

func TestShortPath(t *testing.T) {
	for p, want := range map[string]string{
		"/work/main/backend/model.go": "backend/model.go",
		"model.go":                    "model.go",
		"/model.go":                   "/model.go",
		"a/b.go":                      "a/b.go",
	} {
		if got := shortPath(p); got != want {
			t.Errorf("shortPath(%q) = %q, want %q", p, got, want)
		}
	}
}
