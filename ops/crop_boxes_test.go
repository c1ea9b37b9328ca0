package ops

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/allocstest"
)

// boxesTensor packs rows x1, y1, x2, y2 as a boxes input's FP32 [n, 4].
func boxesTensor(rows ...[4]float32) *Tensor {
	t := &Tensor{DType: Float32, Dims: []int{len(rows), 4}, Data: make([]byte, 16*len(rows))}
	for k, r := range rows {
		for i, v := range r {
			binary.LittleEndian.PutUint32(t.Data[16*k+4*i:], math.Float32bits(v))
		}
	}
	return t
}

// cropBoxesRun is a crop_boxes for max rows in coords and runs it.
type cropBoxesRun struct {
	op  *cropBoxesOp
	ctx Ctx
	out []*Tensor
}

func startCropBoxes(t *testing.T, raw Args, in Spec, max int, co Coords) *cropBoxesRun {
	t.Helper()
	op := mustBuild(t, "crop_boxes", raw).(*cropBoxesOp)
	if _, err := op.Infer([]Spec{in, {DType: Float32, Dims: []int{max, 4}, Coords: co}}); err != nil {
		t.Fatal(err)
	}
	st, _ := op.NewState()
	return &cropBoxesRun{op: op, ctx: Ctx{State: st, Limits: DefaultLimits}, out: []*Tensor{{}, {}, {}}}
}

func (r *cropBoxesRun) run(img, boxes *Tensor) error {
	return r.op.Run(&r.ctx, []*Tensor{img, boxes}, r.out)
}

func (r *cropBoxesRun) count() int { return int(int32(binary.LittleEndian.Uint32(r.out[1].Data))) }

func (r *cropBoxesRun) row(k int) []byte {
	n := r.op.h * r.op.w * r.out[0].Dims[3]
	return r.out[0].Data[k*n : (k+1)*n]
}

// TestCropBoxesPillow: each crop is the plain Pillow reference's
// Image.resize((w, h), filter, box=...) of the box, for every filter, with
// and without antialias, on boxes that shrink, grow, are thin, fractional
// or the whole image.
func TestCropBoxesPillow(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	for _, c := range []int{1, 3, 4} {
		img := randImage(rng, 57, 83, c)
		for _, f := range []string{"linear", "cubic", "nearest", "area"} {
			for _, aa := range []bool{true, false} {
				for _, size := range [][2]int{{7, 9}, {32, 32}, {120, 60}} {
					var rows [][4]float32
					for range 6 {
						x1, y1 := rng.Float32()*70, rng.Float32()*45
						rows = append(rows, [4]float32{x1, y1, x1 + 0.3 + rng.Float32()*(83-x1-0.3), y1 + 0.3 + rng.Float32()*(57-y1-0.3)})
					}
					rows = append(rows, [4]float32{0, 0, 83, 57}, [4]float32{10, 20, 11, 21}, [4]float32{3, 4, 3 + float32(size[1]), 4 + float32(size[0])})
					r := startCropBoxes(t, Args{"size": IntsVal(int64(size[0]), int64(size[1])), "interp": StrVal(f), "antialias": BoolVal(aa)}, specOf(img), len(rows), PixelCoords)
					if err := r.run(img, boxesTensor(rows...)); err != nil {
						t.Fatal(err)
					}
					if r.count() != len(rows) {
						t.Fatalf("count %d, want %d", r.count(), len(rows))
					}
					for k, b := range rows {
						b[2], b[3] = min(b[2], 83), min(b[3], 57)
						want := pillowResampleBox(img.Data, 57, 83, c, size[0], size[1], b, f, aa)
						if got := r.row(k); !bytes.Equal(got, want) {
							t.Errorf("c=%d %s aa=%v %v box %v: %d of %d bytes differ", c, f, aa, size, b, diffCount(got, want), len(want))
						}
						// The boxes output: the box sampled.
						for i, v := range b {
							if got := math.Float32frombits(binary.LittleEndian.Uint32(r.out[2].Data[16*k+4*i:])); got != v {
								t.Fatalf("boxes output row %d: coordinate %d is %g, want %g", k, i, got, v)
							}
						}
					}
				}
			}
		}
	}
}

func diffCount(a, b []byte) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func specOf(t *Tensor) Spec { return Spec{DType: t.DType, Dims: t.Dims, Color: t.Color} }

// TestCropBoxesRules: clipping, NaN rows, empty boxes both ways, relative
// coordinates, letterboxing and the count.
func TestCropBoxesRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 2))
	img := randImage(rng, 40, 60, 3)
	args := Args{"size": IntsVal(16, 24)}
	nan := float32(math.NaN())

	// Clipped: a box partly outside is the box inside.
	r := startCropBoxes(t, args, specOf(img), 3, PixelCoords)
	if err := r.run(img, boxesTensor([4]float32{-10, -5, 30, 20}, [4]float32{50, 30, 90, 70}, [4]float32{-1, -1, 61, 41})); err != nil {
		t.Fatal(err)
	}
	for k, b := range [][4]float32{{0, 0, 30, 20}, {50, 30, 60, 40}, {0, 0, 60, 40}} {
		if want := pillowResampleBox(img.Data, 40, 60, 3, 16, 24, b, "linear", true); !bytes.Equal(r.row(k), want) {
			t.Errorf("clipped box %d: not the crop of %v", k, b)
		}
	}

	// NaN rows are unused: zeros, not counted, the others in place.
	if err := r.run(img, boxesTensor([4]float32{nan, 0, 10, 10}, [4]float32{5, 5, 25, 25}, [4]float32{0, 0, 10, nan})); err != nil {
		t.Fatal(err)
	}
	if r.count() != 1 || !allZero(r.row(0)) || !allZero(r.row(2)) ||
		!bytes.Equal(r.row(1), pillowResampleBox(img.Data, 40, 60, 3, 16, 24, [4]float32{5, 5, 25, 25}, "linear", true)) {
		t.Errorf("NaN rows: count %d", r.count())
	}
	if got := r.out[0].Unused; len(got) != 3 || !got[0] || got[1] || !got[2] {
		t.Errorf("Unused %v", got)
	}

	// Empty after clipping: an error naming the box and its coordinates...
	err := r.run(img, boxesTensor([4]float32{1, 1, 5, 5}, [4]float32{70, 10, 80, 20}, [4]float32{1, 1, 2, 2}))
	if err == nil || !strings.Contains(err.Error(), "box 1 (x1, y1, x2, y2) = (70, 10, 80, 20)") || !strings.Contains(err.Error(), "60x40") {
		t.Errorf("empty box: %v", err)
	}
	if err := r.run(img, boxesTensor([4]float32{5, 5, 5, 9}, [4]float32{0, 0, 1, 1}, [4]float32{9, 9, 3, 12})); err == nil || !strings.Contains(err.Error(), "box 0") {
		t.Errorf("zero-width box: %v", err)
	}
	// ... or, with empty "zero", a zero row that is not counted.
	z := startCropBoxes(t, Args{"size": IntsVal(16, 24), "empty": StrVal("zero")}, specOf(img), 3, PixelCoords)
	if err := z.run(img, boxesTensor([4]float32{1, 1, 5, 5}, [4]float32{70, 10, 80, 20}, [4]float32{9, 9, 3, 12})); err != nil {
		t.Fatal(err)
	}
	if z.count() != 1 || allZero(z.row(0)) || !allZero(z.row(1)) || !allZero(z.row(2)) {
		t.Errorf(`empty "zero": count %d`, z.count())
	}

	// Relative coordinates are fractions of the width and height.
	rel := startCropBoxes(t, args, specOf(img), 1, RelativeCoords)
	if err := rel.run(img, boxesTensor([4]float32{0.25, 0.125, 0.75, 0.9})); err != nil {
		t.Fatal(err)
	}
	b := [4]float32{float32(0.25 * 60), float32(float64(float32(0.125)) * 40), float32(0.75 * 60), float32(float64(float32(0.9)) * 40)}
	if !bytes.Equal(rel.row(0), pillowResampleBox(img.Data, 40, 60, 3, 16, 24, b, "linear", true)) {
		t.Errorf("relative box: not the crop of %v", b)
	}

	// Letterbox: the box's aspect kept, centred, fill around it.
	lb := startCropBoxes(t, Args{"size": IntsVal(16, 16), "letterbox": BoolVal(true), "fill": FloatsVal(7)}, specOf(img), 1, PixelCoords)
	if err := lb.run(img, boxesTensor([4]float32{10, 10, 50, 30})); err != nil {
		t.Fatal(err)
	}
	// A 40×20 box in 16×16: 16×8, rows 4..12.
	inner := pillowResampleBox(img.Data, 40, 60, 3, 8, 16, [4]float32{10, 10, 50, 30}, "linear", true)
	got := lb.row(0)
	for y := range 16 {
		line := got[y*16*3 : (y+1)*16*3]
		if y >= 4 && y < 12 {
			if !bytes.Equal(line, inner[(y-4)*16*3:(y-3)*16*3]) {
				t.Errorf("letterbox row %d is not the resized box", y)
			}
		} else if !bytes.Equal(line, bytes.Repeat([]byte{7}, 16*3)) {
			t.Errorf("letterbox row %d is not fill", y)
		}
	}
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// TestCropBoxesInfer: the shapes, and the problems named.
func TestCropBoxesInfer(t *testing.T) {
	op := mustBuild(t, "crop_boxes", Args{"size": IntsVal(224)})
	boxes := Spec{DType: Float32, Dims: []int{8, 4}, Coords: PixelCoords}
	out, err := op.Infer([]Spec{rgbDyn, boxes})
	if err != nil || out[0].String() != "UINT8[8,224,224,3] RGB" || out[1].String() != "INT32[1]" {
		t.Errorf("Infer: %v %v", out, err)
	}
	if _, err := op.Infer([]Spec{rgbDyn, {DType: Float32, Dims: []int{8, 4}}}); err == nil || !strings.Contains(err.Error(), "boxes pipeline input") {
		t.Errorf("plain FP32 on the boxes port: %v", err)
	}
	big := mustBuild(t, "crop_boxes", Args{"size": IntsVal(4096)})
	if _, err := big.Infer([]Spec{rgbDyn, boxes}); err == nil || !strings.Contains(err.Error(), "MaxCropBytes") {
		t.Errorf("over MaxCropBytes: %v", err)
	}
	wantArgErr(t, "crop_boxes", Args{}, "size")
	for _, f := range []string{"opencv_linear", "torch_linear", "torch_cubic"} {
		wantArgErr(t, "crop_boxes", Args{"size": IntsVal(8), "interp": StrVal(f)}, "interp")
	}
	wantArgErr(t, "crop_boxes", Args{"size": IntsVal(8), "empty": StrVal("skip")}, "empty")
	for _, a := range cropBoxesSchema.Args {
		if a.Doc == "" {
			t.Errorf("argument %s has no Doc", a.Name)
		}
	}

	// normalize takes the crops crop by crop, the leading dim kept, and
	// keeps unused rows zeros.
	n := mustBuild(t, "normalize", Args{"mean": FloatsVal(1), "std": FloatsVal(2)})
	ns, err := n.Infer([]Spec{out[0]})
	if err != nil || ns[0].String() != "FP32[8,3,224,224]" {
		t.Fatalf("normalize of crops: %v %v", ns, err)
	}
	crops := &Tensor{DType: Uint8, Dims: []int{2, 1, 2, 3}, Color: RGB, Data: []byte{1, 3, 5, 7, 9, 11, 0, 0, 0, 0, 0, 0}, Unused: []bool{false, true}}
	o := &Tensor{}
	if err := n.Run(nil, []*Tensor{crops}, []*Tensor{o}); err != nil {
		t.Fatal(err)
	}
	if got := f32s(o.Data); len(got) != 12 || got[0] != 0 || got[1] != 3 || got[2] != 1 || got[5] != 5 || got[6] != 0 || got[11] != 0 {
		t.Errorf("normalized crops %v", got)
	}
}

// TestCropBoxesNoAllocs: in steady state a sample of 8 boxes, more than the
// weight-table cache holds, allocates nothing: tables are rebuilt in place.
func TestCropBoxesNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 3))
	img := randImage(rng, 120, 160, 3)
	var rows [][4]float32
	for k := range 8 {
		rows = append(rows, [4]float32{float32(k) * 3.5, float32(k) * 2.25, 60 + float32(k)*9.75, 50 + float32(k)*7.5})
	}
	rows[5][0] = float32(math.NaN())
	boxes := boxesTensor(rows...)
	r := startCropBoxes(t, Args{"size": IntsVal(32, 48)}, specOf(img), 8, PixelCoords)
	if err := r.run(img, boxes); err != nil {
		t.Fatal(err)
	}
	if n := allocstest.PerRun(t, 20, func() { _ = r.run(img, boxes) }); n != 0 {
		t.Errorf("%.1f allocations per run in steady state, want 0", n)
	}
}
