package ops_test

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/sluice-dev/sluice/ops"
)

// decodeTestBuild checks and builds decode as the pipeline compiler does.
func decodeTestBuild(args ops.Args) (ops.Op, error) {
	s := ops.Lookup("decode")
	a, err := s.Check(args)
	if err != nil {
		return nil, err
	}
	return s.New(a)
}

func TestDecodeBackgroundArgs(t *testing.T) {
	white := ops.IntsVal(255, 255, 255)
	for name, args := range map[string]ops.Args{
		"RGBA":      {"color": ops.StrVal("RGBA"), "background": white},
		"BGRA":      {"color": ops.StrVal("BGRA"), "background": white},
		"over 255":  {"background": ops.IntsVal(256, 0, 0)},
		"negative":  {"background": ops.IntsVal(0, -1, 0)},
		"two":       {"background": ops.IntsVal(255, 255)},
		"one value": {"background": ops.IntsVal(255)},
	} {
		_, err := decodeTestBuild(args)
		var ae *ops.ArgError
		if !errors.As(err, &ae) || ae.Arg != "background" {
			t.Errorf("%s: got %v, want an error naming background", name, err)
		}
	}
	for _, col := range []string{"RGB", "BGR", "GRAY"} {
		if _, err := decodeTestBuild(ops.Args{"color": ops.StrVal(col), "background": white}); err != nil {
			t.Errorf("%s with a background: %v", col, err)
		}
	}
}

// decodeTestAlphaPNG is a 4×1 PNG: transparent, two half-transparent and
// one opaque pixel.
func decodeTestAlphaPNG(t *testing.T) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 1))
	for x, a := range []uint8{0, 128, 200, 255} {
		img.SetNRGBA(x, 0, color.NRGBA{200, 100, 0, a})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// decode passes the background to the codec (whose flattening is checked
// against Pillow in package codec), on the CPU path and to the GPU
// executor.
func TestDecodeBackgroundRun(t *testing.T) {
	src := decodeTestAlphaPNG(t)
	op := decodeTestOp(t, ops.Args{"background": ops.IntsVal(0, 50, 255)})
	out, err := decodeTestRun(t, op, src, ops.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Data) != 12 || out.Dims[2] != 3 {
		t.Fatalf("dims %v", out.Dims)
	}
	// The transparent pixel is the background, the opaque one the image,
	// the others lie between.
	if !bytes.Equal(out.Data[:3], []byte{0, 50, 255}) || !bytes.Equal(out.Data[9:], []byte{200, 100, 0}) {
		t.Errorf("flattened %v", out.Data)
	}
	for _, px := range [][]byte{out.Data[3:6], out.Data[6:9]} {
		if px[0] == 0 || px[0] == 200 || px[2] == 0 || px[2] == 255 {
			t.Errorf("half-transparent pixel %v is not a mix", px)
		}
	}
	plain, err := decodeTestRun(t, decodeTestOp(t, nil), src, ops.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(plain.Data, out.Data) {
		t.Error("the background changed nothing")
	}
	spec := op.(ops.GPUDecoder).GPUDecode()
	if spec.Color != ops.RGB || spec.Background == nil || *spec.Background != [3]byte{0, 50, 255} {
		t.Errorf("GPUDecode: %+v", spec)
	}
	if bg := decodeTestOp(t, nil).(ops.GPUDecoder).GPUDecode().Background; bg != nil {
		t.Errorf("GPUDecode without a background: %v", *bg)
	}
}
