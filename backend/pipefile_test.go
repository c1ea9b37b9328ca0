package backend

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/pipeline"
)

// compactOf returns the compact form of a text definition, renamed so that
// tests can tell which file was loaded.
func compactOf(t *testing.T, text []byte, name string) []byte {
	t.Helper()
	def, err := pipeline.ParseText(text, "test")
	if err != nil {
		t.Fatal(err)
	}
	def.Name = name
	data, err := pipeline.FormatCompact(def)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func withPipelineParam(t *testing.T, file string) string {
	return editConfig(t, goodConfig, func(m map[string]any) {
		m["parameters"].(map[string]any)["pipeline"] = map[string]any{"string_value": file}
	})
}

func TestPipelineFileDiscovery(t *testing.T) {
	text := readFileT(t, imagenetPipeline)
	compact := compactOf(t, text, "compact")
	other := compactOf(t, text, "other")

	t.Run("text", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{TextFile: text})
		m := mustLoad(t, dir, goodConfig)
		if got := m.Pipeline.Def.GetName(); got != "preprocess_imagenet" {
			t.Errorf("loaded %q", got)
		}
		if m.PipelineFile != filepath.Join(dir, "1", TextFile) {
			t.Errorf("PipelineFile %s", m.PipelineFile)
		}
	})
	t.Run("both, same pipeline", func(t *testing.T) {
		// The text as `sluice compile` sees it, with a comment and other
		// layout: only the definition counts.
		edited := append([]byte("# a comment\n\n"), text...)
		dir := modelDir(t, map[string][]byte{TextFile: edited, CompactFile: compactOf(t, text, "preprocess_imagenet")})
		m := mustLoad(t, dir, goodConfig)
		if m.PipelineFile != filepath.Join(dir, "1", CompactFile) {
			t.Errorf("PipelineFile %s, want the compact file", m.PipelineFile)
		}
	})
	t.Run("both, different pipelines", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{TextFile: text, CompactFile: compact})
		_, err := load(t, dir, goodConfig, false)
		wantError(t, err, CodeInvalidArg, filepath.Join(dir, "1", CompactFile), filepath.Join(dir, "1", TextFile),
			"define different pipelines", "sluice compile")
	})
	t.Run("both, text does not parse", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{TextFile: []byte("version: 1\nstages {"), CompactFile: compact})
		_, err := load(t, dir, goodConfig, false)
		wantError(t, err, CodeInvalidArg, filepath.Join(dir, "1", TextFile))
	})
	t.Run("parameter", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{TextFile: text, CompactFile: compact, "alt/other.sluice": other})
		m := mustLoad(t, dir, withPipelineParam(t, "alt/other.sluice"))
		if got := m.Pipeline.Def.GetName(); got != "other" {
			t.Errorf("loaded %q, want the file the parameter names", got)
		}
	})
	t.Run("parameter names a missing file", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{TextFile: text})
		_, err := load(t, dir, withPipelineParam(t, "nope.pbtxt"), false)
		wantError(t, err, CodeNotFound, filepath.Join(dir, "1", "nope.pbtxt"))
	})
	for _, escape := range []string{"../pipeline.pbtxt", "/etc/passwd", "a/../../x.pbtxt"} {
		t.Run("escape "+escape, func(t *testing.T) {
			dir := modelDir(t, map[string][]byte{TextFile: text})
			if err := os.WriteFile(filepath.Join(dir, "pipeline.pbtxt"), text, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := load(t, dir, withPipelineParam(t, escape), false)
			wantError(t, err, CodeInvalidArg, `parameter "pipeline"`, escape, "inside the version folder")
		})
	}
	t.Run("symlink escape", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{"README": nil})
		outside := filepath.Join(t.TempDir(), "outside.pbtxt")
		if err := os.WriteFile(outside, text, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, "1", TextFile)); err != nil {
			t.Fatal(err)
		}
		_, err := load(t, dir, goodConfig, false)
		wantError(t, err, CodeInvalidArg, filepath.Join(dir, "1", TextFile), "escapes")
	})
	t.Run("none", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{"README": []byte("hi")})
		_, err := load(t, dir, goodConfig, false)
		wantError(t, err, CodeNotFound, "no pipeline in "+filepath.Join(dir, "1"), CompactFile, TextFile, `key: "pipeline"`)
	})
	t.Run("no version folder", func(t *testing.T) {
		_, err := load(t, t.TempDir(), goodConfig, false)
		wantError(t, err, CodeNotFound, "version folder")
	})
	t.Run("broken pipeline", func(t *testing.T) {
		bad := []byte(`version: 1
input { name: "IMAGE" }
node { op: "decode" arg { name: "colour" str: "RGB" } }
output { name: "PIXELS" }
`)
		dir := modelDir(t, map[string][]byte{TextFile: bad})
		_, err := load(t, dir, goodConfig, false)
		// pipeline's own message, naming the file, the node and the field.
		wantError(t, err, CodeInvalidArg, filepath.Join(dir, "1", TextFile), `node "decode"`, "colour")
	})
	t.Run("syntax error", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{TextFile: []byte("version: 1\ninput {\n")})
		_, err := load(t, dir, goodConfig, false)
		wantError(t, err, CodeInvalidArg, filepath.Join(dir, "1", TextFile)+":")
	})
}
