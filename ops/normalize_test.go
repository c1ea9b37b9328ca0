package ops

import (
	"math"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/allocstest"
)

func buildNormalize(t *testing.T, in Spec, raw Args) (Op, Spec) {
	t.Helper()
	s := Lookup("normalize")
	a, err := s.Check(raw)
	if err != nil {
		t.Fatal(err)
	}
	op, err := s.New(a)
	if err != nil {
		t.Fatal(err)
	}
	out, err := op.Infer([]Spec{in})
	if err != nil {
		t.Fatal(err)
	}
	return op, out[0]
}

func testImage(h, w int, c Color) *Tensor {
	t := &Tensor{Color: c}
	d, _ := t.Reshape(Uint8, h, w, c.Channels())
	for i := range d {
		d[i] = byte(i*37 + i/7)
	}
	return t
}

func TestNormalizeCHWFloat32(t *testing.T) {
	in := testImage(3, 5, RGB)
	op, spec := buildNormalize(t, Spec{DType: Uint8, Dims: []int{3, 5, 3}, Color: RGB}, Args{
		"scale": FloatVal(1.0 / 255), "mean": FloatsVal(0.485, 0.456, 0.406), "std": FloatsVal(0.229, 0.224, 0.225),
	})
	if spec.DType != Float32 || spec.String() != "FP32[3,3,5]" {
		t.Fatalf("spec %v", spec)
	}
	var out Tensor
	if err := op.Run(&Ctx{}, []*Tensor{in}, []*Tensor{&out}); err != nil {
		t.Fatal(err)
	}
	got := asFloat32(out.Data)
	mean, std := []float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225}
	for y := range 3 {
		for x := range 5 {
			for c := range 3 {
				v := float64(in.Data[(y*5+x)*3+c])
				want := float32((v/255 - mean[c]) / std[c])
				if g := got[c*15+y*5+x]; g != want {
					t.Fatalf("(%d,%d,%d) = %v, want %v", c, y, x, g, want)
				}
			}
		}
	}
}

func TestNormalizeHWCReorderUint8(t *testing.T) {
	in := testImage(2, 4, RGBA)
	op, spec := buildNormalize(t, Spec{DType: Uint8, Dims: []int{2, 4, 4}, Color: RGBA}, Args{
		"layout": StrVal("HWC"), "dtype": StrVal("UINT8"), "order": StrVal("BGR"), "mean": FloatsVal(100), "std": FloatsVal(0.4),
	})
	if spec.String() != "UINT8[2,4,3]" {
		t.Fatalf("spec %v", spec)
	}
	var out Tensor
	if err := op.Run(&Ctx{}, []*Tensor{in}, []*Tensor{&out}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		for k, src := range []int{2, 1, 0} {
			want := math.Max(0, math.Min(255, math.RoundToEven((float64(in.Data[i*4+src])-100)/0.4)))
			if g := out.Data[i*3+k]; float64(g) != want {
				t.Fatalf("pixel %d channel %d = %d, want %v", i, k, g, want)
			}
		}
	}
}

func TestNormalizeRejects(t *testing.T) {
	s := Lookup("normalize")
	for _, tc := range []struct {
		in   Spec
		args Args
		want string
	}{
		{Spec{DType: Uint8, Dims: []int{2, 2, 3}, Color: RGB}, Args{"mean": FloatsVal(1, 2)}, `"mean": has 2 values`},
		{Spec{DType: Uint8, Dims: []int{2, 2, 1}, Color: Gray}, Args{"order": StrVal("RGB")}, `"order": RGB needs a colour input`},
		{Spec{DType: Float32, Dims: []int{3, 2, 2}}, Args{}, "needs an HWC UINT8 image"},
	} {
		a, err := s.Check(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		op, _ := s.New(a)
		if _, err := op.Infer([]Spec{tc.in}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Infer(%v, %v) = %v, want %q", tc.in, tc.args, err, tc.want)
		}
	}
	if _, err := s.Check(Args{"std": FloatsVal(0)}); err == nil {
		t.Error("std 0 accepted")
	}
	if _, err := s.Check(Args{"dtype": StrVal("FP64")}); err == nil {
		t.Error("dtype FP64 accepted")
	}
}

func TestNormalizeNoAllocs(t *testing.T) {
	in := testImage(224, 224, RGB)
	op, _ := buildNormalize(t, Spec{DType: Uint8, Dims: []int{224, 224, 3}, Color: RGB}, Args{"dtype": StrVal("FP16")})
	var out Tensor
	ins, outs, ctx := []*Tensor{in}, []*Tensor{&out}, &Ctx{}
	run := func() {
		if err := op.Run(ctx, ins, outs); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := allocstest.PerRun(t, 20, run); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}

func TestFloat16Bits(t *testing.T) {
	for _, tc := range []struct {
		f    float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {1e9, 0x7c00},
		{0.333251953125, 0x3555}, {6.103515625e-05, 0x0400}, {5.960464477539063e-08, 0x0001},
		{2.98e-08, 0}, {float32(math.Inf(-1)), 0xfc00}, {1.0009765625, 0x3c01},
		{1.00048828125, 0x3c00}, // halfway, rounds to even
		{1.00146484375, 0x3c02}, // halfway, rounds to even (up)
	} {
		if got := Float16Bits(tc.f); got != tc.want {
			t.Errorf("Float16Bits(%v) = %#04x, want %#04x", tc.f, got, tc.want)
		}
	}
	if got := Float16Bits(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("NaN gave %#04x", got)
	}
}

// Float16Value inverts Float16Bits: every finite half comes back to the
// same bits, infinities to infinities, NaN to NaN.
func TestFloat16Value(t *testing.T) {
	for h := range 1 << 16 {
		v := Float16Value(uint16(h))
		switch {
		case h&0x7c00 == 0x7c00 && h&0x3ff != 0:
			if !math.IsNaN(v) {
				t.Fatalf("%#04x: %v, want NaN", h, v)
			}
		case Float16Bits(float32(v)) != uint16(h):
			t.Fatalf("%#04x → %v → %#04x", h, v, Float16Bits(float32(v)))
		}
	}
	if Float16Value(0x3c00) != 1 || Float16Value(0xc000) != -2 || Float16Value(0x0001) != 5.960464477539063e-08 {
		t.Error("wrong values for 1, -2 and the smallest subnormal")
	}
}

func BenchmarkNormalizeCHW224(b *testing.B) {
	in := testImage(224, 224, RGB)
	s := Lookup("normalize")
	a, _ := s.Check(Args{"scale": FloatVal(1.0 / 255), "mean": FloatsVal(0.485, 0.456, 0.406), "std": FloatsVal(0.229, 0.224, 0.225)})
	op, _ := s.New(a)
	op.Infer([]Spec{{DType: Uint8, Dims: []int{224, 224, 3}, Color: RGB}})
	var out Tensor
	ins, outs, ctx := []*Tensor{in}, []*Tensor{&out}, &Ctx{}
	b.ReportAllocs()
	for b.Loop() {
		op.Run(ctx, ins, outs)
	}
}

func asFloat32(b []byte) []float32 {
	u := asUint32(b)
	f := make([]float32, len(u))
	for i, x := range u {
		f[i] = math.Float32frombits(x)
	}
	return f
}
