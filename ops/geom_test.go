package ops

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/allocstest"
)

// Test helpers shared by the geometric operators' tests.

// build makes an operator from raw arguments the way the pipeline does:
// Check, then New.
func build(name string, raw Args) (Op, error) {
	s := Lookup(name)
	if s == nil {
		return nil, fmt.Errorf("operator %q not registered", name)
	}
	a, err := s.Check(raw)
	if err != nil {
		return nil, err
	}
	return s.New(a)
}

func mustBuild(t testing.TB, name string, raw Args) Op {
	t.Helper()
	op, err := build(name, raw)
	if err != nil {
		t.Fatalf("%s %v: %v", name, raw, err)
	}
	return op
}

// wantArgErr checks that building fails with an ArgError naming arg.
func wantArgErr(t *testing.T, name string, raw Args, arg string) {
	t.Helper()
	_, err := build(name, raw)
	var ae *ArgError
	if !errors.As(err, &ae) {
		t.Errorf("%s %v: got %v, want an ArgError on %q", name, raw, err, arg)
		return
	}
	if ae.Arg != arg {
		t.Errorf("%s %v: error %q names %q, want %q", name, raw, err, ae.Arg, arg)
	}
}

var colorOf = [...]Color{1: Gray, 3: RGB, 4: RGBA}

// newImage makes an h×w×c image with pixel values from f.
func newImage(h, w, c int, f func(y, x, ch int) byte) *Tensor {
	t := &Tensor{DType: Uint8, Dims: []int{h, w, c}, Color: colorOf[c], Data: make([]byte, h*w*c)}
	for y := range h {
		for x := range w {
			for ch := range c {
				t.Data[(y*w+x)*c+ch] = f(y, x, ch)
			}
		}
	}
	return t
}

func randImage(rng *rand.Rand, h, w, c int) *Tensor {
	return newImage(h, w, c, func(int, int, int) byte { return byte(rng.IntN(256)) })
}

// gradient is smooth in both directions, different per channel.
func gradient(h, w, c int) *Tensor {
	return newImage(h, w, c, func(y, x, ch int) byte { return byte((y*255/max(h-1, 1) + x*255/max(w-1, 1) + 60*ch) / 2) })
}

// runner runs an operator with its own state and reused output tensors,
// as an executor worker does.
type runner struct {
	op  Op
	ctx Ctx
	in  []*Tensor
	out []*Tensor
}

func newRunner(t testing.TB, op Op, nout int) *runner {
	t.Helper()
	r := &runner{op: op, ctx: Ctx{Limits: DefaultLimits}, in: make([]*Tensor, 1)}
	if sf, ok := op.(Stateful); ok {
		st, err := sf.NewState()
		if err != nil {
			t.Fatal(err)
		}
		r.ctx.State = st
		t.Cleanup(st.Close)
	}
	for range nout {
		r.out = append(r.out, &Tensor{})
	}
	return r
}

func (r *runner) run(in *Tensor) error {
	r.in[0] = in
	return r.op.Run(&r.ctx, r.in, r.out)
}

func (r *runner) mustRun(t testing.TB, in *Tensor) *Tensor {
	t.Helper()
	if err := r.run(in); err != nil {
		t.Fatal(err)
	}
	return r.out[0]
}

// wantImage compares an output with expected dims and data.
func wantImage(t *testing.T, got *Tensor, dims []int, data []byte) {
	t.Helper()
	if fmt.Sprint(got.Dims) != fmt.Sprint(dims) {
		t.Fatalf("dims %v, want %v", got.Dims, dims)
	}
	if data != nil && !bytes.Equal(got.Data, data) {
		t.Fatalf("data\n got %v\nwant %v", got.Data, data)
	}
}

// noAllocs checks that a warmed-up run allocates nothing.
func noAllocs(t *testing.T, r *runner, in *Tensor) {
	t.Helper()
	r.mustRun(t, in)
	if n := allocstest.PerRun(t, 20, func() { _ = r.run(in) }); n != 0 {
		t.Errorf("%.1f allocations per run in steady state, want 0", n)
	}
}

// specs used by Infer tests.
var (
	rgbDyn  = Spec{DType: Uint8, Dims: []int{Dynamic, Dynamic, 3}, Color: RGB}
	grayDyn = Spec{DType: Uint8, Dims: []int{Dynamic, Dynamic, 1}, Color: Gray}
	notImgs = []Spec{
		{DType: Uint8, Dims: []int{Dynamic}},                            // encoded bytes
		{DType: Float32, Dims: []int{Dynamic, Dynamic, 3}, Color: RGB},  // float image
		{DType: Uint8, Dims: []int{Dynamic, Dynamic, 3}},                // no colour
		{DType: Uint8, Dims: []int{Dynamic, Dynamic, 4}, Color: RGB},    // channels vs colour
		{DType: Uint8, Dims: []int{3, Dynamic, Dynamic, 3}, Color: RGB}, // batch dim
	}
)

func inferRejectsNonImages(t *testing.T, op Op) {
	t.Helper()
	for _, s := range notImgs {
		if _, err := op.Infer([]Spec{s}); err == nil {
			t.Errorf("Infer accepted %v", s)
		}
	}
	if _, err := op.Infer([]Spec{rgbDyn, rgbDyn}); err == nil {
		t.Errorf("Infer accepted two inputs")
	}
}

func TestPlace(t *testing.T) {
	src := newImage(2, 3, 1, func(y, x, _ int) byte { return byte(10*y + x + 1) })
	pat := []byte{9}
	cases := []struct {
		y, x int
		want []byte
	}{
		{0, 0, []byte{1, 2, 3, 9, 11, 12, 13, 9, 9, 9, 9, 9}},
		{1, 1, []byte{9, 9, 9, 9, 9, 1, 2, 3, 9, 11, 12, 13}},
		{-1, -2, []byte{13, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}},
		{3, 0, []byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}},
		{0, 4, []byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}},
	}
	for _, c := range cases {
		dst := make([]byte, 3*4)
		place(dst, 3, 4, src.Data, 2, 3, 1, c.y, c.x, pat)
		if !bytes.Equal(dst, c.want) {
			t.Errorf("place at (%d,%d): %v, want %v", c.y, c.x, dst, c.want)
		}
	}
}

func TestFillPixels(t *testing.T) {
	for _, n := range []int{0, 1, 2, 5, 33} {
		dst := make([]byte, 3*n)
		fillPixels(dst, []byte{1, 2, 3})
		for i, v := range dst {
			if v != byte(i%3+1) {
				t.Fatalf("n=%d: %v", n, dst)
			}
		}
	}
}
