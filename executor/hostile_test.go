package executor_test

import (
	"testing"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/hostile/hostiletest"
	"github.com/sluice-dev/sluice/pipeline"
)

// TestHostileCases: every hostile file of internal/hostile through the CPU
// executor, as one request each: refused naming its limit, or decoded.
func TestHostileCases(t *testing.T) {
	prog, err := pipeline.CompileText([]byte(`version: 1 input { name: "IMAGE" } node { op: "decode" }
node { op: "resize" arg { name: "size" ints { v: [32, 32] } } } output { name: "PIXELS" }`), "hostile.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	e, err := executor.New(prog, executor.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	hostiletest.Run(t, e, len(prog.Outputs))
}
