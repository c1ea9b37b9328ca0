package ops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/bufpool"
)

// DType is the element type of a tensor. The names follow Triton's model
// config (TYPE_UINT8 → "UINT8") so that the backend can map them one to one.
type DType uint8

const (
	Invalid DType = iota
	Uint8
	Float16
	Float32
	// Int32 is the type of counts: a boxes input's count, crop_boxes'.
	Int32
)

var dtypeNames = [...]string{Invalid: "INVALID", Uint8: "UINT8", Float16: "FP16", Float32: "FP32", Int32: "INT32"}

func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Size is the byte size of one element.
func (d DType) Size() int {
	switch d {
	case Uint8:
		return 1
	case Float16:
		return 2
	case Float32, Int32:
		return 4
	}
	return 0
}

// ParseDType accepts Triton's names (FP32, TYPE_FP32) and the NumPy-style
// ones (float32).
func ParseDType(s string) (DType, error) {
	switch strings.ToUpper(strings.TrimPrefix(strings.ToUpper(s), "TYPE_")) {
	case "UINT8":
		return Uint8, nil
	case "FP16", "FLOAT16":
		return Float16, nil
	case "FP32", "FLOAT32":
		return Float32, nil
	case "INT32":
		return Int32, nil
	}
	return Invalid, fmt.Errorf("unknown dtype %q (want UINT8, FP16, FP32 or INT32)", s)
}

// Color says what the channels of an image tensor hold: codec's, so that a
// decode passes it on as it is. Tensors that are not images (letterbox's
// scale and offsets) have NoColor.
type Color = codec.Color

const (
	NoColor = codec.NoColor
	RGB     = codec.RGB
	BGR     = codec.BGR
	Gray    = codec.Gray
	RGBA    = codec.RGBA
	BGRA    = codec.BGRA
)

// ParseColor reads a colour name, case-insensitively.
func ParseColor(s string) (Color, error) { return codec.ParseColor(s) }

// Dynamic marks a dimension whose size is known only per sample.
const Dynamic = -1

// Spec describes one tensor of one sample at compile time: the batch
// dimension is never part of it.
type Spec struct {
	DType DType
	Dims  []int // Dynamic where the size depends on the sample
	Color Color // for HWC uint8 images; NoColor otherwise
	// Coords is set on a boxes input's spec, FP32 [max, 4]: how its
	// coordinates are given.
	Coords Coords
}

// Coords says how a boxes tensor's coordinates are given.
type Coords uint8

const (
	NoCoords Coords = iota
	// PixelCoords: pixels of the decoded, oriented image.
	PixelCoords
	// RelativeCoords: fractions 0..1 of its width and height.
	RelativeCoords
)

var coordsNames = [...]string{NoCoords: "", PixelCoords: "pixel", RelativeCoords: "relative"}

func (c Coords) String() string {
	if int(c) < len(coordsNames) {
		return coordsNames[c]
	}
	return fmt.Sprintf("Coords(%d)", uint8(c))
}

// IsBoxes reports whether the spec is a boxes input's, FP32 [max, 4].
func (s Spec) IsBoxes() bool {
	return s.Coords != NoCoords && s.DType == Float32 && len(s.Dims) == 2 && s.Dims[1] == 4
}

// IsImages reports whether the spec is a stack of HWC uint8 images of one
// size, [N, H, W, C] (crop_boxes' crops), which normalize takes crop by crop.
func (s Spec) IsImages() bool {
	return s.DType == Uint8 && len(s.Dims) == 4 && s.Color != NoColor
}

// Static reports whether every dimension is known.
func (s Spec) Static() bool {
	for _, d := range s.Dims {
		if d < 0 {
			return false
		}
	}
	return true
}

// Elems is the element count of a static spec.
func (s Spec) Elems() int {
	n := 1
	for _, d := range s.Dims {
		n *= d
	}
	return n
}

func (s Spec) String() string {
	var b strings.Builder
	b.WriteString(s.DType.String())
	b.WriteByte('[')
	for i, d := range s.Dims {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	if s.Color != NoColor {
		b.WriteByte(' ')
		b.WriteString(s.Color.String())
	}
	if s.Coords != NoCoords {
		b.WriteByte(' ')
		b.WriteString(s.Coords.String())
	}
	return b.String()
}

// IsImage reports whether the spec is an HWC uint8 image.
func (s Spec) IsImage() bool {
	return s.DType == Uint8 && len(s.Dims) == 3 && s.Color != NoColor
}

// Tensor is one sample's value flowing between operators. Its Data is
// reused from sample to sample: an operator sizes its outputs with Reshape,
// which only allocates when the buffer is too small.
type Tensor struct {
	DType DType
	Dims  []int
	Color Color
	Data  []byte

	// Full is the height and width the image would have had at full
	// resolution, when a decoder produced it at a reduced DCT scale; zero
	// otherwise. Size rules (resize, letterbox) compute from it so that the
	// output shape does not depend on the decode scale.
	Full [2]int

	// Unused marks, for a stack of images ([N, H, W, C], crop_boxes'
	// crops, and what normalize makes of them), the rows that hold no
	// crop: they are zeros, and stay zeros through normalize. Empty (not
	// nil: its array is reused) when every row is used or the tensor is
	// not a stack.
	Unused []bool

	// Mode is how Pillow's Image.open holds the image, set by a decode
	// whose only consumer is a resize with source_mode and nowhere else.
	// The channels are then the ones that mode resamples in (resize_source.go:
	// RGBA with codec.ModeAlpha, the inks with codec.ModeCMYK, RGB for a
	// GRAY output of a colour image), while Color stays the colour decode
	// promised, which the resize converts them to. ModeDirect (zero)
	// otherwise.
	Mode codec.Mode

	// fixed is set when Data is a caller-owned destination (one sample of
	// a pipeline output) that Reshape must fill exactly, never replace.
	fixed bool
}

// Reshape sets the tensor's type and shape and returns its data, sized to
// match. It allocates only when the current buffer is too small.
func (t *Tensor) Reshape(dt DType, dims ...int) ([]byte, error) {
	n := dt.Size()
	for _, d := range dims {
		if d < 0 {
			// Cloned so that dims does not escape: callers pass
			// stack arrays on the hot path.
			return nil, fmt.Errorf("negative dimension in %v", slices.Clone(dims))
		}
		n *= d
	}
	if t.fixed {
		if n != len(t.Data) {
			return nil, fmt.Errorf("output of %v %v (%d bytes) does not fit its %d-byte destination", dt, slices.Clone(dims), n, len(t.Data))
		}
	} else {
		t.Data = growBuf(t.Data, n)
	}
	t.DType = dt
	t.Dims = append(t.Dims[:0], dims...)
	t.Full = [2]int{}
	t.Mode = codec.ModeDirect
	t.Unused = t.Unused[:0]
	return t.Data, nil
}

// RetainBytes is the largest buffer a worker keeps from one sample to the
// next (16 MiB, a 5.6 MP RGB image). Larger ones go back to the process's
// pool (internal/bufpool) after the sample, for the next large image on
// any worker, under one cap: a worker must not hold the largest image it
// has seen for good, which across many workers added up to gigabytes.
const RetainBytes = bufpool.Min

// growBuf returns b with length n, reallocating only when it is too small;
// a large buffer comes from the pool.
func growBuf(b []byte, n int) []byte {
	switch {
	case cap(b) >= n:
		return b[:n]
	case n > RetainBytes:
		return bufpool.Get(n)
	}
	return make([]byte, n, n+n/4)
}

// Release gives the tensor's buffer back to the pool when its capacity is
// over keep bytes, and returns how many bytes it gave.
func (t *Tensor) Release(keep int) int {
	if t.fixed || cap(t.Data) <= keep {
		return 0
	}
	n := cap(t.Data)
	bufpool.Put(t.Data)
	t.Data = nil
	return n
}

// Bind makes the tensor write into dst, a caller-owned buffer of exactly
// the expected size (one sample of a pipeline output).
func (t *Tensor) Bind(dst []byte) {
	t.Data = dst
	t.fixed = true
}

// Unbind returns the tensor to owning its own buffer.
func (t *Tensor) Unbind() {
	if t.fixed {
		t.Data = nil
		t.fixed = false
	}
}

// HWC returns the height, width and channels of an image tensor.
func (t *Tensor) HWC() (h, w, c int) {
	return t.Dims[0], t.Dims[1], t.Dims[2]
}

// FullHW is the size the image stands for: Full when set, else its dims.
func (t *Tensor) FullHW() (h, w int) {
	if t.Full[0] > 0 {
		return t.Full[0], t.Full[1]
	}
	return t.Dims[0], t.Dims[1]
}
