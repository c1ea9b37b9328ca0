// Package kernels holds Sluice's CUDA kernels: sluice_idct, which turns a
// JPEG's DCT coefficients into its planes exactly as libjpeg-turbo does;
// sluice_ycc, which turns planar YCbCr into RGB as it does; sluice_huffman,
// which entropy-decodes baseline JPEGs on the SMs into the coefficients
// codec's decoder gives (huffman.go); and one
// fused launch per batch that turns decoded images into the pipeline's
// output tensor (orientation, crop window, Pillow's resampling, letterbox
// placement, channel selection, normalisation, output type and layout).
// The kernels are kernels/fused.cu and the *.cuh it includes,
// compiled by `make ptx` to PTX, which the driver JIT-compiles for the GPU at
// hand, and to an sm_90 cubin (H100, H200), which loads there without the
// JIT; both are embedded, so the binary needs nothing from CUDA at build time.
package kernels

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/sluice-dev/sluice/kernels/cuda"
)

// PTX is kernels/sluice.ptx, built from kernels/*.cu by make ptx. Its first
// line records a hash of those sources (a test checks it is current).
//
//go:embed sluice.ptx
var PTX []byte

// Cubin is kernels/sluice_sm90.cubin, the same sources compiled for sm_90 by
// make ptx; kernels/sluice_sm90.cubin.sha256 records the sources' hash and
// its own (a test checks both).
//
//go:embed sluice_sm90.cubin
var Cubin []byte

// Sample is one image of a batch, the kernel's struct sluice_sample: the
// layouts must match byte for byte (a test compares them with the
// static_asserts of fused.cu). The source is an HWC uint8 image in device
// memory; see fused.cu for the fields' meaning.
type Sample struct {
	Src, Dst               uint64 // device pointers: the decoded image, this sample's output
	SrcH, SrcW             int32  // as stored
	SrcPitch               int32  // bytes between stored rows
	SrcC                   int32  // stored channels: 1, 3 or 4
	Orient                 int32  // EXIF orientation 1..8
	WinY, WinX, WinH, WinW int32  // window of the upright image that is resized; may reach outside it
	RsH, RsW               int32  // the size the window is resized to
	OffY, OffX             int32  // output (y, x) shows resized (y-OffY, x-OffX); elsewhere fill
	OutH, OutW             int32  // this sample's output size
	Zero                   int32  // 1: write zeros whatever the rest says (an unused box crop)
	// The region of the window that is resized, in window pixels, as
	// Pillow's float resize box (a box crop's box); all zero: the whole
	// window.
	BoxY0, BoxX0, BoxY1, BoxX1 float32
}

// wholeBox reports whether the sample resizes its whole window.
func (s *Sample) wholeBox() bool {
	return s.BoxY0 == 0 && s.BoxX0 == 0 && s.BoxY1 == 0 && s.BoxX1 == 0
}

// Params is the kernel's struct sluice_params, the same for the whole batch
// and passed by value: its layout must equal the C struct's (84 bytes).
type Params struct {
	Interp    int32      // InterpNearest...InterpArea (Pillow's filters), InterpOpenCVLinear, InterpTorchLinear, InterpTorchCubic
	Antialias int32      // 1: widen linear and cubic when shrinking (area always does)
	OutC      int32      // output channels 1..4
	Layout    int32      // LayoutCHW or LayoutHWC
	DType     int32      // DTypeUint8, DTypeFloat16, DTypeFloat32
	SrcChan   [4]int32   // per output channel: source channel, ChanLuma; >= SrcC reads 255
	Fill      [4]float32 // per output channel, 0..255 scale, before Mul/Add
	Mul, Add  [4]float32 // out = clamp(v, 0, 255)*Mul + Add
}

// YCC is one colour JPEG decoded by nvJPEG to planar YCbCr, the kernel's
// struct sluice_ycc (72 bytes; a test compares the layouts). LaunchYCC
// turns it into interleaved RGB exactly as libjpeg-turbo 2.1 does (fancy
// upsampling, or replicated chroma with Simple; its fixed-point colour
// conversion): only the IDCT's rounding can differ from the CPU decode.
type YCC struct {
	Y, Cb, Cr uint64 // device pointers: the planes
	Dst       uint64 // device pointer: interleaved RGB, DstPitch bytes per row
	W, H      int32  // image (Y plane) size
	YPitch    int32  // bytes between rows of Y
	CPitch    int32  // bytes between rows of Cb and of Cr
	CW, CH    int32  // chroma plane size: at least W/SubX and H/SubY rounded up
	SubX      int32  // 1 or 2: horizontal chroma subsampling
	SubY      int32  // 1 or 2: vertical chroma subsampling
	DstPitch  int32  // bytes between rows of Dst, at least 3*W
	Simple    int32  // 1: replicate chroma samples (codec.Options.FastUpsample)
}

// IDCT is one component of a JPEG as quantised DCT coefficients, the
// kernel's struct sluice_idct (176 bytes; a test compares the layouts).
// LaunchIDCT dequantises them and runs libjpeg's accurate integer IDCT into
// the component's plane, exactly as libjpeg-turbo does (codec.CoefDecoder
// gives the coefficients).
type IDCT struct {
	Coef, Dst        uint64 // device pointers: blocks of 64 int16s in natural order; the plane
	Pitch            int32  // blocks a stored row, at least BlocksW
	BlocksW, BlocksH int32  // blocks holding image data
	W, H             int32  // plane size, at most 8 × the blocks
	DstPitch         int32  // bytes between rows of Dst, at least W
	First            int32  // index of its first block among the launch's: the blocks of the components before it
	Quant            [64]uint16
}

// Values of Params fields.
const (
	InterpNearest = 0
	InterpLinear  = 1
	InterpCubic   = 2
	InterpArea    = 3
	// InterpOpenCVLinear is OpenCV's fixed-point INTER_LINEAR (ops'
	// interp "opencv_linear"), bit for bit.
	InterpOpenCVLinear = 4
	// InterpTorchLinear and InterpTorchCubic are torch's uint8 bilinear
	// and bicubic (ops' interp "torch_linear" and "torch_cubic"), bit for
	// bit.
	InterpTorchLinear = 5
	InterpTorchCubic  = 6

	LayoutCHW = 0
	LayoutHWC = 1

	DTypeUint8   = 0
	DTypeFloat16 = 1
	DTypeFloat32 = 2

	// ChanLuma in SrcChan selects the ITU-R 601 luma of an RGB source.
	ChanLuma = -2
)

// Block is the kernel's thread block: one thread per output pixel, a warp
// along a row so that loads and stores coalesce.
var Block = [3]uint32{32, 8, 1}

// maxGrid bounds grid y and z (CUDA's limit for both).
const maxGrid = 65535

// MaxSamples is the most samples one Launch takes (the grid's z).
const MaxSamples = maxGrid

// Desc is a descriptor type a launch reads from device memory.
type Desc interface{ Sample | YCC | IDCT }

// Bytes views descs as the bytes to upload for their launch: Launch's
// samples, LaunchYCC's imgs, LaunchIDCT's comps.
func Bytes[T Desc](descs []T) []byte {
	if len(descs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&descs[0])), len(descs)*int(unsafe.Sizeof(descs[0])))
}

// IDCTSize is the bytes of one IDCT struct.
const IDCTSize = int(unsafe.Sizeof(IDCT{}))

// Check reports a component the kernel cannot read or write safely.
func (m *IDCT) Check() error {
	switch {
	case m.Coef == 0 || m.Dst == 0:
		return errors.New("kernels: IDCT without coefficients or plane")
	case m.BlocksW < 1 || m.BlocksH < 1 || m.Pitch < m.BlocksW || m.First < 0:
		return fmt.Errorf("kernels: IDCT of %dx%d blocks, %d a row, from block %d", m.BlocksW, m.BlocksH, m.Pitch, m.First)
	case m.W < 1 || m.H < 1 || m.W > 8*m.BlocksW || m.H > 8*m.BlocksH || m.DstPitch < m.W:
		return fmt.Errorf("kernels: IDCT plane %dx%d, pitch %d, for %dx%d blocks", m.W, m.H, m.DstPitch, m.BlocksW, m.BlocksH)
	}
	return nil
}

// Check reports planes the kernel cannot read safely: its reads stay within
// the sizes and pitches given, so wrong ones would read other memory.
func (m *YCC) Check() error {
	switch {
	case m.Y == 0 || m.Cb == 0 || m.Cr == 0 || m.Dst == 0:
		return errors.New("kernels: YCbCr image without planes or destination")
	case m.SubX != 1 && m.SubX != 2 || m.SubY != 1 && m.SubY != 2:
		return fmt.Errorf("kernels: chroma subsampling %dx%d (want 1 or 2 each way)", m.SubX, m.SubY)
	case m.W < 1 || m.H < 1 || m.YPitch < m.W || int64(m.DstPitch) < 3*int64(m.W):
		return fmt.Errorf("kernels: YCbCr image %dx%d with pitches %d (Y) and %d (RGB)", m.W, m.H, m.YPitch, m.DstPitch)
	case m.CW < (m.W+m.SubX-1)/m.SubX || m.CH < (m.H+m.SubY-1)/m.SubY || m.CPitch < m.CW:
		return fmt.Errorf("kernels: chroma planes %dx%d, pitch %d, for a %dx%d image subsampled %dx%d",
			m.CW, m.CH, m.CPitch, m.W, m.H, m.SubX, m.SubY)
	}
	return nil
}

// Check reports a sample that the kernel cannot read safely or that makes
// no sense; the kernel itself never reads outside the source, but a wrong
// size or pitch would make it read someone else's memory.
func (s *Sample) Check() error {
	switch {
	case s.Src == 0 || s.Dst == 0:
		return errors.New("kernels: sample without source or destination")
	case s.SrcC != 1 && s.SrcC != 3 && s.SrcC != 4:
		return fmt.Errorf("kernels: source with %d channels (want 1, 3 or 4)", s.SrcC)
	case s.SrcH < 1 || s.SrcW < 1 || int64(s.SrcPitch) < int64(s.SrcW)*int64(s.SrcC):
		return fmt.Errorf("kernels: source %dx%d with pitch %d", s.SrcW, s.SrcH, s.SrcPitch)
	case s.Orient < 1 || s.Orient > 8:
		return fmt.Errorf("kernels: orientation %d", s.Orient)
	case s.WinH < 1 || s.WinW < 1 || s.RsH < 1 || s.RsW < 1:
		return fmt.Errorf("kernels: window %dx%d resized to %dx%d", s.WinW, s.WinH, s.RsW, s.RsH)
	case s.OutH < 1 || s.OutW < 1:
		return fmt.Errorf("kernels: output %dx%d", s.OutW, s.OutH)
	case !s.wholeBox() && !(0 <= s.BoxY0 && s.BoxY0 < s.BoxY1 && s.BoxY1 <= float32(s.WinH) && 0 <= s.BoxX0 && s.BoxX0 < s.BoxX1 && s.BoxX1 <= float32(s.WinW)):
		return fmt.Errorf("kernels: box (%g, %g)-(%g, %g) outside the %dx%d window", s.BoxX0, s.BoxY0, s.BoxX1, s.BoxY1, s.WinW, s.WinH)
	}
	return nil
}

// Check reports parameters outside the kernel's ranges.
func (p *Params) Check() error {
	switch {
	case p.Interp < InterpNearest || p.Interp > InterpTorchCubic:
		return fmt.Errorf("kernels: interp %d", p.Interp)
	case p.OutC < 1 || p.OutC > 4:
		return fmt.Errorf("kernels: %d output channels", p.OutC)
	case p.Layout != LayoutCHW && p.Layout != LayoutHWC:
		return fmt.Errorf("kernels: layout %d", p.Layout)
	case p.DType < DTypeUint8 || p.DType > DTypeFloat32:
		return fmt.Errorf("kernels: dtype %d", p.DType)
	}
	for k, c := range p.SrcChan[:p.OutC] {
		if c < ChanLuma || c == -1 || c > 3 {
			return fmt.Errorf("kernels: output channel %d reads source channel %d", k, c)
		}
	}
	return nil
}

// Fused is the loaded kernel, in the context that was current at
// LoadFused.
type Fused struct {
	mod   *cuda.Module
	fn    cuda.Function
	torch cuda.Function // sluice_fused_torch: fn for InterpTorchLinear and InterpTorchCubic
	ycc   cuda.Function // sluice_ycc
	idct  cuda.Function // sluice_idct
	cubin bool
}

// LoadFused loads the kernels into the current context (the caller's OS
// thread must have it current): the sm_90 cubin where the device runs it,
// else the PTX, JIT-compiled. The cubin spares the JIT's time at load and
// gives the code that was tested; a device of another architecture refuses
// it (no binary for this GPU), and SLUICE_KERNELS=ptx skips it.
func LoadFused() (*Fused, error) {
	if os.Getenv("SLUICE_KERNELS") != "ptx" {
		if f, err := load(Cubin, "the sm_90 cubin"); err == nil {
			f.cubin = true
			return f, nil
		}
	}
	return LoadFusedPTX()
}

// LoadFusedPTX loads the PTX alone, JIT-compiled for the current device.
func LoadFusedPTX() (*Fused, error) { return load(PTX, "the PTX") }

// FromCubin reports whether f runs the sm_90 cubin rather than the PTX.
func (f *Fused) FromCubin() bool { return f.cubin }

func load(image []byte, what string) (*Fused, error) {
	m, err := cuda.LoadModule(image)
	if err != nil {
		return nil, fmt.Errorf("kernels: loading %s: %w", what, err)
	}
	fn, err := m.Function("sluice_fused")
	if err != nil {
		// Unloading is best effort: the lookup's error says what went wrong.
		_ = m.Unload()
		return nil, fmt.Errorf("kernels: %w", err)
	}
	torch, err := m.Function("sluice_fused_torch")
	if err != nil {
		_ = m.Unload()
		return nil, fmt.Errorf("kernels: %w", err)
	}
	ycc, err := m.Function("sluice_ycc")
	if err != nil {
		_ = m.Unload()
		return nil, fmt.Errorf("kernels: %w", err)
	}
	idct, err := m.Function("sluice_idct")
	if err != nil {
		_ = m.Unload()
		return nil, fmt.Errorf("kernels: %w", err)
	}
	return &Fused{mod: m, fn: fn, torch: torch, ycc: ycc, idct: idct}, nil
}

// Launch queues the kernel on s for n samples, whose Sample structs lie in
// device memory at samples (uploaded from Bytes). maxOutH and maxOutW
// are the largest output size in the batch: they size the grid, and each
// thread past its own sample's size returns at once.
func (f *Fused) Launch(s cuda.Stream, p *Params, samples cuda.DevicePtr, n, maxOutH, maxOutW int) error {
	if f == nil || f.mod == nil {
		return errors.New("kernels: launch of an unloaded kernel")
	}
	if p == nil || samples == 0 {
		return errors.New("kernels: launch without parameters or samples")
	}
	if err := p.Check(); err != nil {
		return err
	}
	if n < 1 || maxOutH < 1 || maxOutW < 1 {
		return fmt.Errorf("kernels: launch of %d samples of at most %dx%d", n, maxOutW, maxOutH)
	}
	gx := (maxOutW + int(Block[0]) - 1) / int(Block[0])
	gy := (maxOutH + int(Block[1]) - 1) / int(Block[1])
	if n > maxGrid || gy > maxGrid || gx > 1<<31-1 {
		return fmt.Errorf("kernels: %d samples of %dx%d exceed the grid's limits", n, maxOutW, maxOutH)
	}
	// The arguments by value, as cuLaunchKernel wants them: the samples
	// pointer, then the Params struct itself (its layout is the C one).
	ptr := samples
	grid := [3]uint32{uint32(gx), uint32(gy), uint32(n)}
	fn := f.fn
	if p.Interp == InterpTorchLinear || p.Interp == InterpTorchCubic {
		fn = f.torch
	}
	if err := cuda.Launch(fn, grid, Block, 0, s, unsafe.Pointer(&ptr), unsafe.Pointer(p)); err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	return nil
}

// LaunchYCC queues sluice_ycc on s for n images, whose YCC structs lie in
// device memory at imgs (uploaded from Bytes): each image's planes become
// interleaved RGB at its Dst. maxW and maxH are the largest image size in
// the batch; they size the grid. The structs are not checked here (they are
// in device memory): callers run YCC.Check before uploading.
func (f *Fused) LaunchYCC(s cuda.Stream, imgs cuda.DevicePtr, n, maxW, maxH int) error {
	if f == nil || f.mod == nil {
		return errors.New("kernels: launch of an unloaded kernel")
	}
	if imgs == 0 {
		return errors.New("kernels: YCbCr launch without images")
	}
	if n < 1 || maxH < 1 || maxW < 1 {
		return fmt.Errorf("kernels: YCbCr launch of %d images of at most %dx%d", n, maxW, maxH)
	}
	gx := (maxW + int(Block[0]) - 1) / int(Block[0])
	gy := (maxH + int(Block[1]) - 1) / int(Block[1])
	if n > maxGrid || gy > maxGrid || gx > 1<<31-1 {
		return fmt.Errorf("kernels: %d YCbCr images of %dx%d exceed the grid's limits", n, maxW, maxH)
	}
	ptr := imgs
	grid := [3]uint32{uint32(gx), uint32(gy), uint32(n)}
	if err := cuda.Launch(f.ycc, grid, Block, 0, s, unsafe.Pointer(&ptr)); err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	return nil
}

// idctBlocks is the 8×8 blocks a thread block of sluice_idct takes
// (IDCT_BLOCKS in fused.cu), 8 threads each.
const idctBlocks = 16

// LaunchIDCT queues sluice_idct on s for n components, whose IDCT structs
// lie in device memory at comps (uploaded from Bytes, First counting
// the blocks of those before each, in order); blocks is their total. Like
// LaunchYCC it cannot check structs in device memory: callers run
// IDCT.Check before uploading.
func (f *Fused) LaunchIDCT(s cuda.Stream, comps cuda.DevicePtr, n, blocks int) error {
	if f == nil || f.mod == nil {
		return errors.New("kernels: launch of an unloaded kernel")
	}
	if comps == 0 || n < 1 || blocks < 1 {
		return fmt.Errorf("kernels: IDCT launch of %d components, %d blocks", n, blocks)
	}
	g := (blocks + idctBlocks - 1) / idctBlocks
	if blocks > 1<<31-1-idctBlocks {
		return fmt.Errorf("kernels: IDCT launch of %d blocks exceeds the grid's limits", blocks)
	}
	ptr, cn, total := comps, int32(n), int32(blocks)
	grid := [3]uint32{uint32(g), 1, 1}
	block := [3]uint32{8 * idctBlocks, 1, 1}
	if err := cuda.Launch(f.idct, grid, block, 0, s, unsafe.Pointer(&ptr), unsafe.Pointer(&cn), unsafe.Pointer(&total)); err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	return nil
}

// Close unloads the kernel's module; f is unusable afterwards. A second
// call does nothing.
func (f *Fused) Close() error {
	if f == nil || f.mod == nil {
		return nil
	}
	m := f.mod
	f.mod, f.fn, f.torch, f.ycc, f.idct = nil, 0, 0, 0, 0
	return m.Unload()
}
