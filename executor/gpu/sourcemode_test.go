package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/ops"
)

// A resize with source_mode (Pillow's resampling per image mode) has no
// kernel form: the pipeline is refused at load, for KIND_CPU instances.
func TestChainRefusesSourceMode(t *testing.T) {
	e, err := New(compile(t, `version: 1 input { name: "I" }
		node { op: "decode" arg { name: "orient" bool: false } }
		node { op: "resize" arg { name: "shorter" int: 224 } arg { name: "interp" str: "cubic" } arg { name: "source_mode" bool: true } }
		node { op: "crop" arg { name: "size" ints { v: [224, 224] } } }
		node { op: "normalize" }
		output { name: "O" }`), executor.Options{})
	if err == nil {
		e.Close()
		t.Fatal("built")
	}
	if !errors.Is(err, ops.ErrNotOnGPU) || !strings.Contains(err.Error(), "node resize: not supported on the GPU: resize with source_mode") {
		t.Errorf("%v, want ErrNotOnGPU naming node resize and source_mode", err)
	}
}
