package ops

import (
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/codec"
)

// The GPU executor runs everything after decode as one fused kernel per
// batch. Operators take part by describing, per sample, what they do to
// the image geometrically (GPUStage) or to its values (GPUValues); the
// executor turns the result into the kernel's per-sample descriptor. The
// description is exact: the same size rules and limits as Run.

// Geom is one sample's image at a point of the chain, as the fused kernel
// will produce it: the window Win (y, x, h, w) of the upright decoded
// image, resized to Rs (h, w) and placed with its top-left corner at Off
// (y, x) on an H×W canvas whose other pixels are Fill.
type Geom struct {
	H, W  int
	Color Color

	Win     [4]int
	Rs      [2]int
	Off     [2]int
	Resized bool
	Filter  Filter

	Fill    [4]byte // per channel of Color, when HasFill
	HasFill bool

	Limits Limits
}

// Filter is the resampling of the one resize a GPU chain may have.
type Filter struct {
	Interp    int // 0 nearest, 1 linear, 2 cubic, 3 area: Pillow's filters; InterpOpenCVLinear
	Antialias bool
}

// InterpOpenCVLinear is Filter.Interp for interp "opencv_linear", OpenCV's
// fixed-point bilinear (kernels.InterpOpenCVLinear).
const InterpOpenCVLinear = int(interpOpenCVLinear)

// NewGeom starts a chain on an upright decoded image of h×w.
func NewGeom(h, w int, col Color, lim Limits) Geom {
	return Geom{H: h, W: w, Color: col, Win: [4]int{0, 0, h, w}, Rs: [2]int{h, w}, Limits: lim}
}

// plain reports whether the canvas is exactly the resized window: nothing
// placed or padded yet.
func (g *Geom) plain() bool {
	return g.Off == [2]int{} && g.Rs == [2]int{g.H, g.W}
}

// setFill records the fill of newly exposed canvas. The kernel has one
// fill per batch: two operators that fill with different values cannot
// share it.
func (g *Geom) setFill(op string, f fill) error {
	v := f.pixel(g.Color.Channels())
	if g.HasFill && v != g.Fill {
		return fmt.Errorf("%w: %s fills with %v after another operator filled with %v", ErrNotOnGPU, op, v[:g.Color.Channels()], g.Fill[:g.Color.Channels()])
	}
	g.Fill, g.HasFill = v, true
	return nil
}

// ErrNotOnGPU marks a pipeline the GPU executor cannot run; it is found
// when the executor is built, never per sample.
var ErrNotOnGPU = errors.New("not supported on the GPU")

// GPUDecoder is implemented by the operator a GPU chain starts with
// (decode). The executor decodes the image itself, as the spec says.
type GPUDecoder interface {
	GPUDecode() DecodeSpec
}

// DecodeSpec is what decode produces, and how.
type DecodeSpec struct {
	Color  Color
	Orient bool // apply the EXIF orientation
	// Background is the colour alpha is flattened onto (nil: none; Color
	// then has no alpha).
	Background *[3]byte
	CMYK       codec.CMYKRule // a CMYK JPEG's conversion to colours
	// FastUpsample replicates a JPEG's chroma (jpeg_fancy_upsampling
	// false) instead of libjpeg's fancy upsampling.
	FastUpsample bool
}

// GPUStage is implemented by operators that change an image's geometry on
// the GPU path. GPU updates g for one sample, or returns a per-sample error
// (limits, an image too large to pad) exactly as Run would. side holds the
// operator's outputs after the image (letterbox's scale and offset), to be
// filled on the host.
type GPUStage interface {
	GPU(c *Ctx, g *Geom, side []*Tensor) error
}

// GPUResampler is implemented by the GPUStage that resamples (resize,
// letterbox): the kernel has one filter per batch, needed before any
// sample.
type GPUResampler interface {
	GPUFilter() Filter
}

// GPUCropper is implemented by the operator that crops boxes
// (crop_boxes): each sample's image becomes MaxCrops crops of one canvas
// size, each of them a Crop the kernel makes on its own.
type GPUCropper interface {
	GPUResampler
	MaxCrops() int
	// GPUCrops fills crops (MaxCrops of them) from the sample's boxes, of
	// which the first used rows count, as Run would crop them; g, the
	// upright decoded image, becomes the crops' canvas. side is as for
	// GPUStage. Errors are per sample, or wrap ErrNotOnGPU.
	GPUCrops(c *Ctx, g *Geom, boxes []byte, used int, crops []Crop, side []*Tensor) error
}

// Crop is one box crop: Box (x1, y1, x2, y2 in upright pixels, clipped to
// the image, Pillow's float resize box) resized to Rs and placed at Off on
// the canvas. An unused crop (a NaN row, past the count, or empty with
// empty "zero") is all zeros, whatever the operators after it do.
type Crop struct {
	Box     [4]float32
	Rs, Off [2]int
	Used    bool
}

// GPUValues is implemented by the operator that maps pixel values to the
// output (normalize): per output channel, which input channel it reads and
// the affine map v*Mul+Add applied to the 0..255 value.
type GPUValues interface {
	GPUValues() Values
}

// Values is the value mapping of the fused kernel's output.
type Values struct {
	Perm     []int // output channel k reads channel Perm[k] of the image
	Mul, Add []float32
	DType    DType
	CHW      bool
}

// IdentityValues writes an image as it is: HWC uint8.
func IdentityValues(c int) Values {
	v := Values{DType: Uint8}
	for k := range c {
		v.Perm = append(v.Perm, k)
		v.Mul = append(v.Mul, 1)
		v.Add = append(v.Add, 0)
	}
	return v
}
