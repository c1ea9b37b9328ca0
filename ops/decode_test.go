package ops_test

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/allocstest"
	"github.com/sluice-dev/sluice/ops"
)

// Names here carry a decode prefix: other operators' tests share the
// ops_test package.

func decodeTestImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 100, 255})
		}
	}
	return img
}

func decodeTestJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, decodeTestImage(w, h), &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// decodeTestEXIF inserts an APP1 EXIF segment with an orientation tag.
func decodeTestEXIF(jpg []byte, orientation int) []byte {
	tiff := []byte("MM\x00*\x00\x00\x00\x08\x00\x01\x01\x12\x00\x03\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00")
	tiff[19] = byte(orientation)
	payload := append([]byte("Exif\x00\x00"), tiff...)
	out := append([]byte{}, jpg[:2]...)
	out = append(out, 0xFF, 0xE1)
	out = binary.BigEndian.AppendUint16(out, uint16(len(payload)+2))
	out = append(out, payload...)
	return append(out, jpg[2:]...)
}

func decodeTestOp(t testing.TB, args ops.Args) ops.Op {
	t.Helper()
	s := ops.Lookup("decode")
	if s == nil {
		t.Fatal("decode is not registered")
	}
	a, err := s.Check(args)
	if err != nil {
		t.Fatal(err)
	}
	op, err := s.New(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Infer([]ops.Spec{{DType: ops.Uint8, Dims: []int{ops.Dynamic}}}); err != nil {
		t.Fatal(err)
	}
	return op
}

// decodeTestRun runs op on src with a fresh worker state.
func decodeTestRun(t testing.TB, op ops.Op, src []byte, lim ops.Limits) (*ops.Tensor, error) {
	t.Helper()
	st, err := op.(ops.Stateful).NewState()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in := &ops.Tensor{DType: ops.Uint8, Dims: []int{len(src)}, Data: src}
	out := &ops.Tensor{}
	err = op.Run(&ops.Ctx{State: st, Limits: lim}, []*ops.Tensor{in}, []*ops.Tensor{out})
	return out, err
}

func TestDecodeSchema(t *testing.T) {
	s := ops.Lookup("decode")
	if s == nil {
		t.Fatal("decode is not registered")
	}
	a, err := s.Check(ops.Args{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Str("color") != "RGB" || !a.Bool("orient") || a.Bool("dct_scale") {
		t.Errorf("defaults: %v", a)
	}
	if a, err := s.Check(ops.Args{"color": ops.StrVal("bgra")}); err != nil || a.Str("color") != "BGRA" {
		t.Errorf("color bgra: %v %v", a, err)
	}
	if _, err := s.Check(ops.Args{"color": ops.StrVal("CMYK")}); err == nil {
		t.Error("color CMYK accepted")
	}
	if len(s.Inputs) != 1 || s.Inputs[0].Name != "encoded" || len(s.Outputs) != 1 || s.Outputs[0].Name != "image" {
		t.Errorf("ports: %v %v", s.Inputs, s.Outputs)
	}
}

func TestDecodeInfer(t *testing.T) {
	for col, ch := range map[string]int{"RGB": 3, "BGR": 3, "GRAY": 1, "RGBA": 4, "BGRA": 4} {
		op := decodeTestOp(t, ops.Args{"color": ops.StrVal(col)})
		got, err := op.Infer([]ops.Spec{{DType: ops.Uint8, Dims: []int{ops.Dynamic}}})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ops.ParseColor(col)
		if len(got) != 1 || got[0].DType != ops.Uint8 || len(got[0].Dims) != 3 ||
			got[0].Dims[0] != ops.Dynamic || got[0].Dims[1] != ops.Dynamic || got[0].Dims[2] != ch || got[0].Color != want {
			t.Errorf("%s: got %v", col, got)
		}
	}
	op := decodeTestOp(t, nil)
	for _, bad := range [][]ops.Spec{
		{},
		{{DType: ops.Float32, Dims: []int{-1}}},
		{{DType: ops.Uint8, Dims: []int{-1, -1, 3}, Color: ops.RGB}},
	} {
		if _, err := op.Infer(bad); err == nil {
			t.Errorf("Infer(%v) accepted", bad)
		}
	}
}

func TestDecodeRun(t *testing.T) {
	var p bytes.Buffer
	if err := png.Encode(&p, decodeTestImage(21, 13)); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string][]byte{"JPEG": decodeTestJPEG(t, 21, 13), "PNG": p.Bytes()} {
		for col, ch := range map[string]int{"RGB": 3, "GRAY": 1, "BGRA": 4} {
			out, err := decodeTestRun(t, decodeTestOp(t, ops.Args{"color": ops.StrVal(col)}), src, ops.DefaultLimits)
			if err != nil {
				t.Fatalf("%s %s: %v", name, col, err)
			}
			want, _ := ops.ParseColor(col)
			if h, w, c := out.HWC(); h != 13 || w != 21 || c != ch || len(out.Data) != 13*21*ch || out.Color != want || out.DType != ops.Uint8 {
				t.Errorf("%s %s: got %v %v %v, %d bytes", name, col, out.DType, out.Dims, out.Color, len(out.Data))
			}
			if out.Full != [2]int{} {
				t.Errorf("%s %s: Full %v for a full-size decode", name, col, out.Full)
			}
		}
	}
}

// TestDecodeFancyUpsampling: jpeg_fancy_upsampling false decodes as
// codec's FastUpsample (replicated chroma), which differs from the default
// at the colour edges of a 4:2:0 JPEG.
func TestDecodeFancyUpsampling(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 23, 17))
	for y := range 17 {
		for x := range 23 {
			img.SetRGBA(x, y, color.RGBA{uint8(255 * ((x / 3) % 2)), 40, uint8(255 * ((y / 2) % 2)), 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 95}); err != nil { // 4:2:0
		t.Fatal(err)
	}
	src := b.Bytes()
	fancy, err := decodeTestRun(t, decodeTestOp(t, ops.Args{}), src, ops.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := decodeTestRun(t, decodeTestOp(t, ops.Args{"jpeg_fancy_upsampling": ops.BoolVal(false)}), src, ops.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	want, err := codec.Decode(src, codec.Options{Color: codec.RGB, Orient: true, FastUpsample: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fast.Data, want.Pix) {
		t.Error("jpeg_fancy_upsampling false is not codec's FastUpsample decode")
	}
	if bytes.Equal(fast.Data, fancy.Data) {
		t.Error("jpeg_fancy_upsampling false decodes as the default does")
	}
}

// TestDecodeChannelOrder: a PNG (lossless) comes out with its own pixel
// values in each channel order.
func TestDecodeChannelOrder(t *testing.T) {
	img := decodeTestImage(21, 13)
	var p bytes.Buffer
	if err := png.Encode(&p, img); err != nil {
		t.Fatal(err)
	}
	for col, order := range map[string][]int{"RGB": {0, 1, 2}, "BGR": {2, 1, 0}, "RGBA": {0, 1, 2, 3}, "BGRA": {2, 1, 0, 3}} {
		out, err := decodeTestRun(t, decodeTestOp(t, ops.Args{"color": ops.StrVal(col)}), p.Bytes(), ops.DefaultLimits)
		if err != nil {
			t.Fatalf("%s: %v", col, err)
		}
		for i := range 13 * 21 {
			for k, src := range order {
				if got, want := out.Data[i*len(order)+k], img.Pix[i*4+src]; got != want {
					t.Fatalf("%s: pixel %d channel %d = %d, want %d", col, i, k, got, want)
				}
			}
		}
	}
}

func TestDecodeOrient(t *testing.T) {
	src := decodeTestEXIF(decodeTestJPEG(t, 40, 24), 6)
	out, err := decodeTestRun(t, decodeTestOp(t, nil), src, ops.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if h, w, _ := out.HWC(); h != 40 || w != 24 {
		t.Errorf("orientation 6: got %dx%d, want 24x40", w, h)
	}
	out, err = decodeTestRun(t, decodeTestOp(t, ops.Args{"orient": ops.BoolVal(false)}), src, ops.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if h, w, _ := out.HWC(); h != 24 || w != 40 {
		t.Errorf("orient=false: got %dx%d, want 40x24", w, h)
	}
}

// decodeTestSizer is a consumer that asks for a fixed output size.
type decodeTestSizer struct{ h, w int }

func (s decodeTestSizer) Infer(in []ops.Spec) ([]ops.Spec, error)          { return in, nil }
func (s decodeTestSizer) Run(*ops.Ctx, []*ops.Tensor, []*ops.Tensor) error { return nil }
func (s decodeTestSizer) OutSize(h, w int) (int, int)                      { return s.h, s.w }

type decodeTestPlain struct{}

func (decodeTestPlain) Infer(in []ops.Spec) ([]ops.Spec, error)          { return in, nil }
func (decodeTestPlain) Run(*ops.Ctx, []*ops.Tensor, []*ops.Tensor) error { return nil }

func TestDecodeDCTScale(t *testing.T) {
	plain := decodeTestJPEG(t, 400, 300)
	rotated := decodeTestEXIF(plain, 6) // upright 300 wide, 400 high
	var p bytes.Buffer
	if err := png.Encode(&p, decodeTestImage(400, 300)); err != nil {
		t.Fatal(err)
	}
	// The policy, when dct_scale is on: the smallest of 1/8, 1/4 and 1/2
	// whose upright size is at least 1.5 times the consumer's output in
	// both dimensions.
	on := ops.Args{"dct_scale": ops.BoolVal(true)}
	cases := []struct {
		name      string
		src       []byte
		args      ops.Args
		consumers []ops.Op
		h, w      int // output size
		full      [2]int
	}{
		{"half", plain, on, []ops.Op{decodeTestSizer{100, 133}}, 150, 200, [2]int{300, 400}},
		{"just over the margin for half", plain, on, []ops.Op{decodeTestSizer{101, 133}}, 300, 400, [2]int{}},
		{"quarter", plain, on, []ops.Op{decodeTestSizer{50, 66}}, 75, 100, [2]int{300, 400}},
		{"eighth", plain, on, []ops.Op{decodeTestSizer{10, 10}}, 38, 50, [2]int{300, 400}},
		{"upscale", plain, on, []ops.Op{decodeTestSizer{600, 800}}, 300, 400, [2]int{}},
		{"oriented", rotated, on, []ops.Op{decodeTestSizer{133, 100}}, 200, 150, [2]int{400, 300}},
		{"oriented, off", rotated, ops.Args{"orient": ops.BoolVal(false), "dct_scale": ops.BoolVal(true)}, []ops.Op{decodeTestSizer{133, 100}}, 300, 400, [2]int{}},
		{"dct_scale off by default", plain, nil, []ops.Op{decodeTestSizer{10, 10}}, 300, 400, [2]int{}},
		{"dct_scale off", plain, ops.Args{"dct_scale": ops.BoolVal(false)}, []ops.Op{decodeTestSizer{10, 10}}, 300, 400, [2]int{}},
		{"two consumers", plain, on, []ops.Op{decodeTestSizer{10, 10}, decodeTestSizer{10, 10}}, 300, 400, [2]int{}},
		{"pipeline output", plain, on, []ops.Op{nil}, 300, 400, [2]int{}},
		{"not a sizer", plain, on, []ops.Op{decodeTestPlain{}}, 300, 400, [2]int{}},
		{"PNG", p.Bytes(), on, []ops.Op{decodeTestSizer{10, 10}}, 300, 400, [2]int{}},
	}
	for _, c := range cases {
		op := decodeTestOp(t, c.args)
		op.(ops.Linker).Link(c.consumers)
		out, err := decodeTestRun(t, op, c.src, ops.DefaultLimits)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if h, w, _ := out.HWC(); h != c.h || w != c.w || out.Full != c.full {
			t.Errorf("%s: got %dx%d full %v, want %dx%d full %v", c.name, w, h, out.Full, c.w, c.h, c.full)
		}
	}
}

func TestDecodeLimits(t *testing.T) {
	src := decodeTestJPEG(t, 64, 48)
	op := decodeTestOp(t, nil)
	out, err := decodeTestRun(t, op, src, ops.Limits{MaxBytes: 100})
	if ops.CauseOf(err) != ops.TooLarge || !strings.Contains(err.Error(), "100") || !strings.Contains(err.Error(), strconv.Itoa(len(src))) {
		t.Errorf("MaxBytes: %v", err)
	}
	if out.Data != nil {
		t.Error("MaxBytes: output allocated")
	}
	out, err = decodeTestRun(t, op, src, ops.Limits{MaxPixels: 1000})
	if ops.CauseOf(err) != ops.TooLarge || !strings.Contains(err.Error(), "3072") || !strings.Contains(err.Error(), "1000") {
		t.Errorf("MaxPixels: %v", err)
	}
	if out.Data != nil {
		t.Error("MaxPixels: output allocated")
	}
	// A forged 60000×60000 frame header fails on the limit, fast.
	forged := []byte{0xFF, 0xD8, 0xFF, 0xC0, 0, 11, 8, 0xEA, 0x60, 0xEA, 0x60, 1, 1, 0x11, 0}
	if _, err := decodeTestRun(t, op, forged, ops.DefaultLimits); ops.CauseOf(err) != ops.TooLarge {
		t.Errorf("forged header: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	var g bytes.Buffer
	if err := gif.Encode(&g, image.NewGray(image.Rect(0, 0, 2, 2)), nil); err != nil {
		t.Fatal(err)
	}
	jpg := decodeTestJPEG(t, 64, 48)
	cases := []struct {
		name  string
		src   []byte
		cause ops.Cause
		msg   string
	}{
		{"truncated", jpg[:len(jpg)/2], ops.Truncated, "truncated: JPEG data ends early"},
		{"garbage", []byte("definitely not an image"), ops.NotImage, "not an image: "},
		{"empty", nil, ops.NotImage, "not an image: empty input"},
		{"GIF", g.Bytes(), ops.Unsupported, "unsupported: GIF"},
	}
	for _, c := range cases {
		_, err := decodeTestRun(t, decodeTestOp(t, nil), c.src, ops.DefaultLimits)
		if ops.CauseOf(err) != c.cause || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%s: got %v (cause %q), want cause %q, message %q...", c.name, err, ops.CauseOf(err), c.cause, c.msg)
		}
	}
}

// TestDecodeNoAllocs: a worker's steady state allocates nothing for JPEG,
// scaled and oriented included.
func TestDecodeNoAllocs(t *testing.T) {
	op := decodeTestOp(t, ops.Args{"dct_scale": ops.BoolVal(true)})
	op.(ops.Linker).Link([]ops.Op{decodeTestSizer{100, 75}}) // upright 240 wide, 320 high: half scale
	st, err := op.(ops.Stateful).NewState()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	src := decodeTestEXIF(decodeTestJPEG(t, 320, 240), 8)
	ctx := &ops.Ctx{State: st, Limits: ops.DefaultLimits}
	in := []*ops.Tensor{{DType: ops.Uint8, Dims: []int{len(src)}, Data: src}}
	out := []*ops.Tensor{{}}
	run := func() {
		if err := op.Run(ctx, in, out); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := allocstest.PerRun(t, 20, run); n != 0 {
		t.Errorf("%v allocations per sample, want 0", n)
	}
	if h, w, _ := out[0].HWC(); h != 160 || w != 120 || out[0].Full != [2]int{320, 240} {
		t.Errorf("got %dx%d full %v, want 120x160 full [320 240]", w, h, out[0].Full)
	}
}

// TestDecodeTrim: after an image whose scratch may exceed the bound, Trim
// replaces the worker's decoder (releasing the scratch an EXIF rotation
// used) and reports it; the next image decodes the same.
func TestDecodeTrim(t *testing.T) {
	op := decodeTestOp(t, nil)
	st, err := op.(ops.Stateful).NewState()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr := st.(ops.Trimmer)
	src := decodeTestEXIF(decodeTestJPEG(t, 400, 300), 6)
	ctx := &ops.Ctx{State: st, Limits: ops.DefaultLimits}
	in := []*ops.Tensor{{DType: ops.Uint8, Dims: []int{len(src)}, Data: src}}
	decode := func() []byte {
		out := []*ops.Tensor{{}}
		if err := op.Run(ctx, in, out); err != nil {
			t.Fatal(err)
		}
		return out[0].Data
	}
	first := decode()
	if n := tr.Trim(1 << 20); n != 0 {
		t.Errorf("Trim over a 480 kB bound released %d bytes", n)
	}
	decode()
	if n := tr.Trim(1000); n < 400*300*3 {
		t.Errorf("Trim(1000) after a 400x300 image released %d bytes", n)
	}
	if n := tr.Trim(1000); n != 0 {
		t.Errorf("a second Trim released %d bytes", n)
	}
	if !bytes.Equal(decode(), first) {
		t.Error("the decoder made after Trim decodes differently")
	}
}
