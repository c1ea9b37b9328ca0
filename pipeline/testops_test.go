package pipeline

import (
	"fmt"

	"github.com/sluice-dev/sluice/ops"
)

// Test-only operators, so that these tests depend on the ops registry
// alone and not on the real operators being written alongside.
//
//	test_src    bytes → UINT8[-1,-1,C] image (a decoder: dynamic shape)
//	test_size   image → UINT8[h,w,C] (a resize to a fixed size: static)
//	test_split  image → image, scale FP32[2] (two outputs, like letterbox)
//	test_join   a, b → a (two inputs; a and b must match)
//	test_norm   image → FP32 HWC or CHW (like normalize)
//	test_gen    nothing → FP32[4] (no inputs)
//	test_sink   image → nothing (no outputs)
//	test_bad    misbehaves on demand: panics, wrong spec count, New errors
func init() {
	image := []ops.Port{{Name: "in"}}
	out := []ops.Port{{Name: "out"}}
	ops.Register(&ops.Schema{
		Name: "test_src", Inputs: image, Outputs: out,
		Args: []ops.ArgSpec{{Name: "color", Type: ops.StringArg, Enum: []string{"RGB", "BGR", "GRAY"}, Default: ops.StrVal("RGB")}},
		New: func(a ops.Args) (ops.Op, error) {
			c, err := ops.ParseColor(a.Str("color"))
			return inferFunc(func(in []ops.Spec) ([]ops.Spec, error) {
				if in[0].DType != ops.Uint8 || len(in[0].Dims) != 1 {
					return nil, fmt.Errorf("test_src needs encoded bytes, got %v", in[0])
				}
				return []ops.Spec{{DType: ops.Uint8, Dims: []int{ops.Dynamic, ops.Dynamic, c.Channels()}, Color: c}}, nil
			}), err
		},
	})
	ops.Register(&ops.Schema{
		Name: "test_size", Inputs: image, Outputs: out,
		Args: []ops.ArgSpec{
			{Name: "size", Type: ops.IntsArg, Required: true, Min: 1, Max: 65535, Lens: []int{2}},
			{Name: "interp", Type: ops.StringArg, Enum: []string{"nearest", "linear", "cubic", "area"}, Default: ops.StrVal("linear")},
		},
		New: func(a ops.Args) (ops.Op, error) {
			size := a.Ints("size")
			return inferFunc(func(in []ops.Spec) ([]ops.Spec, error) {
				if !in[0].IsImage() {
					return nil, fmt.Errorf("test_size needs an HWC UINT8 image input, got %v", in[0])
				}
				return []ops.Spec{{DType: ops.Uint8, Dims: []int{size[0], size[1], in[0].Dims[2]}, Color: in[0].Color}}, nil
			}), nil
		},
	})
	ops.Register(&ops.Schema{
		Name: "test_split", Inputs: image, Outputs: []ops.Port{{Name: "image"}, {Name: "scale"}},
		New: func(ops.Args) (ops.Op, error) {
			return inferFunc(func(in []ops.Spec) ([]ops.Spec, error) {
				return []ops.Spec{in[0], {DType: ops.Float32, Dims: []int{2}}}, nil
			}), nil
		},
	})
	ops.Register(&ops.Schema{
		Name: "test_join", Inputs: []ops.Port{{Name: "a"}, {Name: "b"}}, Outputs: out,
		New: func(ops.Args) (ops.Op, error) {
			return inferFunc(func(in []ops.Spec) ([]ops.Spec, error) {
				if in[0].String() != in[1].String() {
					return nil, fmt.Errorf("test_join: a is %v but b is %v", in[0], in[1])
				}
				return in[:1], nil
			}), nil
		},
	})
	ops.Register(&ops.Schema{
		Name: "test_norm", Inputs: image, Outputs: out,
		Args: []ops.ArgSpec{
			{Name: "scale", Type: ops.FloatArg, Default: ops.FloatVal(1)},
			{Name: "mean", Type: ops.FloatsArg, Lens: []int{1, 3}, Default: ops.FloatsVal(0)},
			{Name: "layout", Type: ops.StringArg, Enum: []string{"HWC", "CHW"}, Default: ops.StrVal("HWC")},
			{Name: "dtype", Type: ops.StringArg, Enum: []string{"FP32", "FP16"}, Default: ops.StrVal("FP32")},
		},
		New: func(a ops.Args) (ops.Op, error) {
			dt, err := ops.ParseDType(a.Str("dtype"))
			chw := a.Str("layout") == "CHW"
			return inferFunc(func(in []ops.Spec) ([]ops.Spec, error) {
				if !in[0].IsImage() {
					return nil, fmt.Errorf("test_norm needs an HWC UINT8 image input, got %v", in[0])
				}
				h, w, c := in[0].Dims[0], in[0].Dims[1], in[0].Dims[2]
				if chw {
					return []ops.Spec{{DType: dt, Dims: []int{c, h, w}}}, nil
				}
				return []ops.Spec{{DType: dt, Dims: []int{h, w, c}}}, nil
			}), err
		},
	})
	ops.Register(&ops.Schema{
		Name: "test_gen", Outputs: out,
		New: func(ops.Args) (ops.Op, error) {
			return inferFunc(func([]ops.Spec) ([]ops.Spec, error) {
				return []ops.Spec{{DType: ops.Float32, Dims: []int{4}}}, nil
			}), nil
		},
	})
	ops.Register(&ops.Schema{
		Name: "test_sink", Inputs: image,
		New: func(ops.Args) (ops.Op, error) {
			return inferFunc(func([]ops.Spec) ([]ops.Spec, error) { return nil, nil }), nil
		},
	})
	ops.Register(&ops.Schema{
		Name: "test_bad", Inputs: image, Outputs: out,
		Args: []ops.ArgSpec{
			{Name: "mode", Type: ops.StringArg, Enum: []string{"none", "panic_new", "panic_infer", "count", "reject", "reject_arg", "nil"}, Default: ops.StrVal("none")},
		},
		New: func(a ops.Args) (ops.Op, error) {
			switch a.Str("mode") {
			case "panic_new":
				panic("boom in New")
			case "reject":
				return nil, fmt.Errorf("mode reject cannot be combined with anything")
			case "reject_arg":
				return nil, &ops.ArgError{Arg: "mode", Msg: "reject_arg is refused by New"}
			case "nil":
				return nil, nil
			}
			mode := a.Str("mode")
			return inferFunc(func(in []ops.Spec) ([]ops.Spec, error) {
				switch mode {
				case "panic_infer":
					var s []int
					_ = s[3]
				case "count":
					return []ops.Spec{in[0], in[0]}, nil
				}
				return in, nil
			}), nil
		},
	})
}

// inferFunc is an ops.Op that only infers.
type inferFunc func([]ops.Spec) ([]ops.Spec, error)

func (f inferFunc) Infer(in []ops.Spec) ([]ops.Spec, error)          { return f(in) }
func (f inferFunc) Run(*ops.Ctx, []*ops.Tensor, []*ops.Tensor) error { return nil }
