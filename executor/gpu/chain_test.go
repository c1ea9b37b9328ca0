package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

func compile(t testing.TB, text string) *pipeline.Compiled {
	t.Helper()
	c, err := pipeline.CompileText([]byte(text), "test.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Pipelines the fused kernel cannot express are refused when the executor
// is built, naming why; they run on KIND_CPU instances.
func TestChainRefuses(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`version: 1 input { name: "I" }
		  node { op: "decode" } node { op: "resize" arg { name: "size" ints { v: [10, 10] } } }
		  node { name: "again" op: "resize" arg { name: "size" ints { v: [5, 5] } } }
		  output { name: "O" }`, "resize after another resize"},
		{`version: 1 input { name: "I" }
		  node { op: "decode" } node { op: "resize" arg { name: "size" ints { v: [10, 10] } } }
		  node { op: "normalize" }
		  output { name: "O" } output { name: "SMALL" source: "resize" }`, "output SMALL is an intermediate image"},
		{`version: 1 input { name: "I" }
		  node { op: "decode" } node { op: "pad" arg { name: "size" ints { v: [64, 64] } } arg { name: "fill" floats { v: [1] } } }
		  node { op: "crop" arg { name: "size" ints { v: [80, 80] } } arg { name: "fill" floats { v: [2] } } }
		  output { name: "O" }`, "crop fills with [2 2 2] after another operator filled with [1 1 1]"},
		{`version: 1 input { name: "I" } input { name: "BOXES" boxes { max: 4 coords: "pixel" } }
		  node { op: "decode" input: "I" } node { op: "resize" arg { name: "size" ints { v: [50, 50] } } }
		  node { op: "crop_boxes" input: ["resize", "BOXES"] arg { name: "size" ints { v: [10, 10] } } }
		  output { name: "O" }`, `node crop_boxes crops boxes from resize's image; on the GPU it must read the decoded image itself`},
	} {
		e, err := New(compile(t, c.text), executor.Options{})
		if err == nil {
			e.Close()
			t.Errorf("%s: built", c.want)
			continue
		}
		if !errors.Is(err, ops.ErrNotOnGPU) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want ErrNotOnGPU and %q", err, c.want)
		}
	}
}

// The kernel's batch parameters follow the pipeline: channel order, luma
// for grey, the normalisation as an affine map, layout and dtype.
func TestChainParams(t *testing.T) {
	ch, err := newChain(compile(t, `version: 1 input { name: "I" }
		node { op: "decode" arg { name: "color" str: "BGR" } }
		node { op: "resize" arg { name: "size" ints { v: [20, 30] } } arg { name: "interp" str: "cubic" } }
		node { op: "normalize" arg { name: "scale" float: 2 } arg { name: "mean" floats { v: [1, 2, 3] } }
		       arg { name: "std" floats { v: [4] } } arg { name: "order" str: "RGB" } arg { name: "dtype" str: "FP16" } }
		output { name: "O" }`))
	if err != nil {
		t.Fatal(err)
	}
	p := ch.params
	// order RGB from a BGR image reads its channels 2,1,0, which are the
	// intermediate RGB's 0,1,2.
	if p.SrcChan != [4]int32{0, 1, 2, 0} || p.OutC != 3 || p.Layout != 0 || p.DType != 1 || p.Interp != 2 || p.Antialias != 1 {
		t.Errorf("params %+v", p)
	}
	if p.Mul[0] != 0.5 || p.Add[0] != -0.25 || p.Add[2] != -0.75 {
		t.Errorf("mul %v add %v, want 2/4 and -mean/4 per output channel", p.Mul, p.Add)
	}
	if ch.outHW != [2]int{20, 30} {
		t.Errorf("output size %v", ch.outHW)
	}

	gray, err := newChain(compile(t, `version: 1 input { name: "I" }
		node { op: "decode" arg { name: "color" str: "GRAY" } }
		node { op: "crop" arg { name: "size" ints { v: [8, 8] } } }
		output { name: "O" }`))
	if err != nil {
		t.Fatal(err)
	}
	if gray.params.SrcChan[0] != -2 || gray.params.OutC != 1 || gray.params.Layout != 1 || gray.params.DType != 0 {
		t.Errorf("grey params %+v", gray.params)
	}

	lb, err := newChain(compile(t, `version: 1 input { name: "I" }
		node { op: "decode" } node { op: "letterbox" arg { name: "size" ints { v: [64, 64] } } }
		node { op: "normalize" input: "letterbox:image" }
		output { name: "P" source: "normalize" } output { name: "S" source: "letterbox:scale" } output { name: "OFF" source: "letterbox:offset" }`))
	if err != nil {
		t.Fatal(err)
	}
	if lb.image != 0 || len(lb.side) != 2 || lb.sideN != 12 || lb.side[1].at != 4 {
		t.Errorf("letterbox side outputs %+v (%d bytes)", lb.side, lb.sideN)
	}

	// OpenCV's INTER_LINEAR, as a resize and as letterbox's: the kernel's
	// own integer arithmetic, never antialiased.
	for _, node := range []string{
		`node { op: "resize" arg { name: "size" ints { v: [10, 10] } } arg { name: "interp" str: "opencv_linear" } }`,
		`node { op: "letterbox" arg { name: "size" ints { v: [64] } } arg { name: "interp" str: "opencv_linear" } }`,
	} {
		cv, err := newChain(compile(t, `version: 1 input { name: "I" } node { op: "decode" } `+node+` output { name: "O" }`))
		if err != nil {
			t.Fatal(err)
		}
		if cv.params.Interp != kernels.InterpOpenCVLinear || cv.params.Antialias != 0 {
			t.Errorf("%s: interp %d, antialias %d", node, cv.params.Interp, cv.params.Antialias)
		}
	}
}

// decode's background reaches the CPU workers' decode, with a 3-channel
// intermediate (the alpha is flattened there); a crop's rounding reaches
// the geometry through the operator itself.
func TestChainBackground(t *testing.T) {
	ch, err := newChain(compile(t, `version: 1 input { name: "I" }
		node { op: "decode" arg { name: "background" ints { v: [255, 255, 255] } } arg { name: "cmyk" str: "opencv" } }
		node { op: "crop" arg { name: "size" ints { v: [8, 8] } } arg { name: "rounding" str: "floor" } }
		output { name: "O" }`))
	if err != nil {
		t.Fatal(err)
	}
	if bg := ch.dec.Background; bg == nil || *bg != [3]byte{255, 255, 255} || ch.dec.CMYK != codec.CMYKOpenCV || ch.srcC != 3 || ch.outC != 3 {
		t.Errorf("decode %+v, intermediate channels %d, output channels %d", ch.dec, ch.srcC, ch.outC)
	}
	g := ops.NewGeom(11, 8, ch.dec.Color, ops.Limits{})
	if err := ch.stages[0].op.GPU(nil, &g, nil); err != nil || g.Win != [4]int{1, 0, 8, 8} {
		t.Errorf("floor crop of 11 rows to 8: window %v (%v), want top 1", g.Win, err)
	}
	plain, err := newChain(compile(t, `version: 1 input { name: "I" }
		node { op: "decode" arg { name: "color" str: "RGBA" } }
		node { op: "crop" arg { name: "size" ints { v: [8, 8] } } }
		output { name: "O" }`))
	if err != nil {
		t.Fatal(err)
	}
	if plain.dec.Background != nil || plain.srcC != 4 {
		t.Errorf("RGBA without a background: %v, %d channels", plain.dec.Background, plain.srcC)
	}
}
