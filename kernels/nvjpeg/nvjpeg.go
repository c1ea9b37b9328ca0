package nvjpeg

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/sluice-dev/sluice/kernels/cuda"
)

// libNames are tried in order: the newest first, since a newer nvJPEG decodes more and
// faster, and each major version keeps the API this package uses.
var libNames = []string{"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11"}

// Status is an nvjpegStatus_t.
type Status int

// Statuses, values from nvjpeg.h.
const (
	StatusSuccess                    Status = 0
	StatusNotInitialized             Status = 1
	StatusInvalidParameter           Status = 2
	StatusBadJPEG                    Status = 3
	StatusJPEGNotSupported           Status = 4
	StatusAllocatorFailure           Status = 5
	StatusExecutionFailed            Status = 6
	StatusArchMismatch               Status = 7
	StatusInternalError              Status = 8
	StatusImplementationNotSupported Status = 9
	StatusIncompleteBitstream        Status = 10
)

const (
	propertyMajor, propertyMinor, propertyPatch = 0, 1, 2 // libraryPropertyType
	saveMetadata, saveStream                    = 0, 0    // Parse keeps neither (see Parse)
)

var statusNames = [...]string{
	"NVJPEG_STATUS_SUCCESS",
	"NVJPEG_STATUS_NOT_INITIALIZED",
	"NVJPEG_STATUS_INVALID_PARAMETER",
	"NVJPEG_STATUS_BAD_JPEG",
	"NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
	"NVJPEG_STATUS_ALLOCATOR_FAILURE",
	"NVJPEG_STATUS_EXECUTION_FAILED",
	"NVJPEG_STATUS_ARCH_MISMATCH",
	"NVJPEG_STATUS_INTERNAL_ERROR",
	"NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
	"NVJPEG_STATUS_INCOMPLETE_BITSTREAM",
}

// String is the status's name in nvjpeg.h.
func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("nvjpegStatus_t(%d)", int(s))
}

// Error is a failed nvJPEG call.
type Error struct {
	Call   string
	Status Status
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Status, int(e.Status))
}

// IsStatus reports whether err is, or wraps, an nvJPEG error with status s.
func IsStatus(err error, s Status) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == s
}

func check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	return &Error{Call: call, Status: Status(r)}
}

// Backend is an nvjpegBackend_t.
type Backend int

// Backends, values from nvjpeg.h.
const (
	Default         Backend = 0
	Hybrid          Backend = 1 // Huffman decoding on the CPU
	GPUHybrid       Backend = 2 // Huffman decoding on the GPU, for batches
	Hardware        Backend = 3 // the A100/H100-class JPEG engine; baseline JPEG only
	GPUHybridDevice Backend = 4
	HardwareDevice  Backend = 5
	LosslessJPEG    Backend = 6
)

// OutputFormat is an nvjpegOutputFormat_t.
type OutputFormat int

// Output formats, values from nvjpeg.h. The I suffix means interleaved, in Image.Channel[0].
const (
	OutputUnchanged     OutputFormat = 0
	OutputYUV           OutputFormat = 1
	OutputY             OutputFormat = 2
	OutputRGB           OutputFormat = 3
	OutputBGR           OutputFormat = 4
	OutputRGBI          OutputFormat = 5
	OutputBGRI          OutputFormat = 6
	OutputUnchangedIU16 OutputFormat = 7
	OutputNV12          OutputFormat = 8
	OutputYUY2          OutputFormat = 9
)

// Subsampling is an nvjpegChromaSubsampling_t.
type Subsampling int

// Chroma subsamplings, values from nvjpeg.h.
const (
	CSS444     Subsampling = 0
	CSS422     Subsampling = 1
	CSS420     Subsampling = 2
	CSS440     Subsampling = 3
	CSS411     Subsampling = 4
	CSS410     Subsampling = 5
	CSSGray    Subsampling = 6
	CSS410V    Subsampling = 7
	CSSUnknown Subsampling = -1
)

// Image is nvjpegImage_t: per plane, a device pointer and the bytes between its rows. An
// interleaved format uses plane 0 only.
type Image struct {
	Channel [4]uintptr
	Pitch   [4]uint64
}

// The entry points. nvjpegStatus_t is a C enum, read as int32 (see package cuda).
var (
	nvjpegGetProperty                    func(typ int32, v *int32) int32
	nvjpegCreateEx                       func(b int32, dev, pinned unsafe.Pointer, flags uint32, h *uintptr) int32
	nvjpegDestroy                        func(h uintptr) int32
	nvjpegSetDeviceMemoryPadding         func(padding uint64, h uintptr) int32
	nvjpegSetPinnedMemoryPadding         func(padding uint64, h uintptr) int32
	nvjpegJpegStateCreate                func(h uintptr, s *uintptr) int32
	nvjpegJpegStateDestroy               func(s uintptr) int32
	nvjpegGetImageInfo                   func(h uintptr, data *byte, n uint64, comps *int32, css *int32, widths, heights *int32) int32
	nvjpegDecodeBatchedInitialize        func(h, s uintptr, batch, threads, format int32) int32
	nvjpegDecodeBatched                  func(h, s uintptr, data **byte, lengths *uint64, dst *Image, stream uintptr) int32
	nvjpegJpegStreamCreate               func(h uintptr, j *uintptr) int32
	nvjpegJpegStreamDestroy              func(j uintptr) int32
	nvjpegJpegStreamParse                func(h uintptr, data *byte, n uint64, saveMeta, saveStream int32, j uintptr) int32
	nvjpegJpegStreamParseHeader          func(h uintptr, data *byte, n uint64, j uintptr) int32
	nvjpegJpegStreamGetChromaSubsampling func(j uintptr, css *int32) int32
	nvjpegDecodeBatchedSupported         func(h, j uintptr, unsupported *int32) int32
	nvjpegGetHardwareDecoderInfo         func(h uintptr, engines, cores *uint32) int32
	nvjpegDecodeBatchedPreAllocate       func(h, s uintptr, batch, width, height, css, format int32) int32

	// The decoupled decode (decoupled.go).
	nvjpegDecoderCreate               func(h uintptr, b int32, d *uintptr) int32
	nvjpegDecoderDestroy              func(d uintptr) int32
	nvjpegDecoderJpegSupported        func(d, j, p uintptr, supported *int32) int32
	nvjpegDecoderStateCreate          func(h, d uintptr, s *uintptr) int32
	nvjpegBufferPinnedCreate          func(h uintptr, alloc unsafe.Pointer, b *uintptr) int32
	nvjpegBufferPinnedDestroy         func(b uintptr) int32
	nvjpegBufferDeviceCreate          func(h uintptr, alloc unsafe.Pointer, b *uintptr) int32
	nvjpegBufferDeviceDestroy         func(b uintptr) int32
	nvjpegStateAttachPinnedBuffer     func(s, b uintptr) int32
	nvjpegStateAttachDeviceBuffer     func(s, b uintptr) int32
	nvjpegDecodeParamsCreate          func(h uintptr, p *uintptr) int32
	nvjpegDecodeParamsDestroy         func(p uintptr) int32
	nvjpegDecodeParamsSetOutputFormat func(p uintptr, f int32) int32
	nvjpegDecodeJpegHost              func(h, d, s, p, j uintptr) int32
	nvjpegDecodeJpegTransferToDevice  func(h, d, s, j, stream uintptr) int32
	nvjpegDecodeJpegDevice            func(h, d, s uintptr, dst *Image, stream uintptr) int32
)

type symbol struct {
	fn       any
	name     string
	optional bool
}

func symbols() []symbol {
	return []symbol{
		{&nvjpegGetProperty, "nvjpegGetProperty", false},
		{&nvjpegCreateEx, "nvjpegCreateEx", false},
		{&nvjpegDestroy, "nvjpegDestroy", false},
		{&nvjpegSetDeviceMemoryPadding, "nvjpegSetDeviceMemoryPadding", false},
		{&nvjpegSetPinnedMemoryPadding, "nvjpegSetPinnedMemoryPadding", false},
		{&nvjpegJpegStateCreate, "nvjpegJpegStateCreate", false},
		{&nvjpegJpegStateDestroy, "nvjpegJpegStateDestroy", false},
		{&nvjpegGetImageInfo, "nvjpegGetImageInfo", false},
		{&nvjpegDecodeBatchedInitialize, "nvjpegDecodeBatchedInitialize", false},
		{&nvjpegDecodeBatched, "nvjpegDecodeBatched", false},
		{&nvjpegJpegStreamCreate, "nvjpegJpegStreamCreate", false},
		{&nvjpegJpegStreamDestroy, "nvjpegJpegStreamDestroy", false},
		{&nvjpegJpegStreamParse, "nvjpegJpegStreamParse", false},
		// Only a speed-up over a full Parse; an old library without it still works.
		{&nvjpegJpegStreamParseHeader, "nvjpegJpegStreamParseHeader", true},
		{&nvjpegJpegStreamGetChromaSubsampling, "nvjpegJpegStreamGetChromaSubsampling", false},
		{&nvjpegDecodeBatchedSupported, "nvjpegDecodeBatchedSupported", false},
		// Both from nvJPEG 11.9 on; without them the engines are counted
		// as one and the hardware state grows its buffers on first use.
		{&nvjpegGetHardwareDecoderInfo, "nvjpegGetHardwareDecoderInfo", true},
		{&nvjpegDecodeBatchedPreAllocate, "nvjpegDecodeBatchedPreAllocate", true},
		// The decoupled decode: without it, Decoupled reports unavailable.
		{&nvjpegDecoderCreate, "nvjpegDecoderCreate", true},
		{&nvjpegDecoderDestroy, "nvjpegDecoderDestroy", true},
		{&nvjpegDecoderJpegSupported, "nvjpegDecoderJpegSupported", true},
		{&nvjpegDecoderStateCreate, "nvjpegDecoderStateCreate", true},
		{&nvjpegBufferPinnedCreate, "nvjpegBufferPinnedCreate", true},
		{&nvjpegBufferPinnedDestroy, "nvjpegBufferPinnedDestroy", true},
		{&nvjpegBufferDeviceCreate, "nvjpegBufferDeviceCreate", true},
		{&nvjpegBufferDeviceDestroy, "nvjpegBufferDeviceDestroy", true},
		{&nvjpegStateAttachPinnedBuffer, "nvjpegStateAttachPinnedBuffer", true},
		{&nvjpegStateAttachDeviceBuffer, "nvjpegStateAttachDeviceBuffer", true},
		{&nvjpegDecodeParamsCreate, "nvjpegDecodeParamsCreate", true},
		{&nvjpegDecodeParamsDestroy, "nvjpegDecodeParamsDestroy", true},
		{&nvjpegDecodeParamsSetOutputFormat, "nvjpegDecodeParamsSetOutputFormat", true},
		{&nvjpegDecodeJpegHost, "nvjpegDecodeJpegHost", true},
		{&nvjpegDecodeJpegTransferToDevice, "nvjpegDecodeJpegTransferToDevice", true},
		{&nvjpegDecodeJpegDevice, "nvjpegDecodeJpegDevice", true},
	}
}

var (
	initOnce sync.Once
	initErr  error
	version  [3]int
)

// Init opens nvJPEG and resolves its entry points, once; later calls return the first
// result. Every other function calls it.
func Init() error {
	initOnce.Do(func() {
		initErr = load(libNames)
		if initErr != nil {
			return
		}
		for i := range version {
			var v int32
			if nvjpegGetProperty(int32(i), &v) == 0 {
				version[i] = int(v)
			}
		}
	})
	return initErr
}

func load(names []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("nvJPEG unavailable: binding: %v", r)
		}
	}()
	var h uintptr
	var lib string
	var last error
	for _, name := range names {
		if h, last = cuda.Dlopen(name); last == nil {
			lib = name
			break
		}
	}
	if lib == "" {
		return fmt.Errorf("nvJPEG unavailable: tried %s: %w", strings.Join(names, ", "), last)
	}
	for _, s := range symbols() {
		addr, err := cuda.Dlsym(h, s.name)
		if err != nil {
			if s.optional {
				continue
			}
			return fmt.Errorf("nvJPEG unavailable: %s lacks %s: %w", lib, s.name, err)
		}
		purego.RegisterFunc(s.fn, addr)
	}
	return nil
}

// Version is the loaded library's version; zeros when it is not loaded.
func Version() (major, minor, patch int) {
	if Init() != nil {
		return 0, 0, 0
	}
	return version[propertyMajor], version[propertyMinor], version[propertyPatch]
}

// Handle is an nvjpegHandle_t. Handles are thread-safe; states are not.
type Handle struct {
	h uintptr
}

// NewHandle creates a handle for backend b with nvJPEG's own allocators (cudaMalloc and
// cudaHostAlloc) and no flags.
func NewHandle(b Backend) (*Handle, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	var h uintptr
	if err := check("nvjpegCreateEx", nvjpegCreateEx(int32(b), nil, nil, 0, &h)); err != nil {
		return nil, err
	}
	return &Handle{h: h}, nil
}

func (h *Handle) usable(call string) error {
	if err := Init(); err != nil {
		return err
	}
	if h == nil || h.h == 0 {
		return fmt.Errorf("%s: closed handle", call)
	}
	return nil
}

// Close destroys the handle; a second call does nothing.
func (h *Handle) Close() error {
	if h == nil || h.h == 0 {
		return nil
	}
	if err := Init(); err != nil {
		return err
	}
	if err := check("nvjpegDestroy", nvjpegDestroy(h.h)); err != nil {
		return err
	}
	h.h = 0
	return nil
}

// SetDeviceMemoryPadding rounds nvJPEG's device allocations up to multiples of n bytes, so
// buffers grown for one batch fit the next slightly larger one without reallocating.
func (h *Handle) SetDeviceMemoryPadding(n int) error {
	if err := h.usable("nvjpegSetDeviceMemoryPadding"); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("nvjpegSetDeviceMemoryPadding: bad padding %d", n)
	}
	return check("nvjpegSetDeviceMemoryPadding", nvjpegSetDeviceMemoryPadding(uint64(n), h.h))
}

// SetPinnedMemoryPadding is SetDeviceMemoryPadding for nvJPEG's pinned host buffers.
func (h *Handle) SetPinnedMemoryPadding(n int) error {
	if err := h.usable("nvjpegSetPinnedMemoryPadding"); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("nvjpegSetPinnedMemoryPadding: bad padding %d", n)
	}
	return check("nvjpegSetPinnedMemoryPadding", nvjpegSetPinnedMemoryPadding(uint64(n), h.h))
}

// Info is what nvjpegGetImageInfo reports; planes not encoded have zero sizes.
type Info struct {
	Components  int
	Subsampling Subsampling
	Widths      [4]int
	Heights     [4]int
}

// ImageInfo reads data's header.
func (h *Handle) ImageInfo(data []byte) (Info, error) {
	if err := h.usable("nvjpegGetImageInfo"); err != nil {
		return Info{}, err
	}
	if len(data) == 0 {
		return Info{}, &Error{Call: "nvjpegGetImageInfo", Status: StatusBadJPEG}
	}
	var comps, css int32
	var w, ht [4]int32
	r := nvjpegGetImageInfo(h.h, &data[0], uint64(len(data)), &comps, &css, &w[0], &ht[0])
	runtime.KeepAlive(data)
	if err := check("nvjpegGetImageInfo", r); err != nil {
		return Info{}, err
	}
	info := Info{Components: int(comps), Subsampling: Subsampling(css)}
	for i := range w {
		info.Widths[i], info.Heights[i] = int(w[i]), int(ht[i])
	}
	return info, nil
}

// State is an nvjpegJpegState_t: the buffers of one decode in flight. One goroutine at a
// time.
type State struct {
	s uintptr
}

// NewState creates a decode state for h.
func (h *Handle) NewState() (*State, error) {
	if err := h.usable("nvjpegJpegStateCreate"); err != nil {
		return nil, err
	}
	var s uintptr
	if err := check("nvjpegJpegStateCreate", nvjpegJpegStateCreate(h.h, &s)); err != nil {
		return nil, err
	}
	return &State{s: s}, nil
}

// Close destroys the state; a second call does nothing.
func (s *State) Close() error {
	if s == nil || s.s == 0 {
		return nil
	}
	if err := Init(); err != nil {
		return err
	}
	if err := check("nvjpegJpegStateDestroy", nvjpegJpegStateDestroy(s.s)); err != nil {
		return err
	}
	s.s = 0
	return nil
}

// BatchedInitialize prepares s for batches of exactly batch images decoded to f. It is
// also how a state recovers after a failed batch.
func (h *Handle) BatchedInitialize(s *State, batch, maxCPUThreads int, f OutputFormat) error {
	if err := h.usable("nvjpegDecodeBatchedInitialize"); err != nil {
		return err
	}
	if s == nil || s.s == 0 {
		return errors.New("nvjpegDecodeBatchedInitialize: closed state")
	}
	return check("nvjpegDecodeBatchedInitialize",
		nvjpegDecodeBatchedInitialize(h.h, s.s, int32(batch), int32(maxCPUThreads), int32(f)))
}

// Bitstreams lists the encoded images of one batched call. They must be in
// memory the Go collector does not own (pinned host memory from
// cuda.MemHostAlloc): the list keeps bare addresses. Reused from call to
// call, it costs no allocation once grown.
type Bitstreams struct {
	ptrs []uintptr
	lens []uint64
}

// Reset empties the list, keeping its arrays.
func (b *Bitstreams) Reset() { b.ptrs, b.lens = b.ptrs[:0], b.lens[:0] }

// Add appends one image; p must be non-empty C memory (see Bitstreams).
func (b *Bitstreams) Add(p []byte) {
	b.ptrs = append(b.ptrs, uintptr(unsafe.Pointer(unsafe.SliceData(p))))
	b.lens = append(b.lens, uint64(len(p)))
}

// Len is the number of images listed.
func (b *Bitstreams) Len() int { return len(b.ptrs) }

// DecodeBatched decodes the listed images into dst[i] on st; their count must be the batch
// size given to BatchedInitialize. The encoded bytes are read before the call returns; the
// output is ready once st is synchronized.
func (h *Handle) DecodeBatched(s *State, in *Bitstreams, dst []Image, st cuda.Stream) error {
	const call = "nvjpegDecodeBatched"
	if err := h.usable(call); err != nil {
		return err
	}
	if s == nil || s.s == 0 {
		return errors.New(call + ": closed state")
	}
	if in.Len() == 0 || len(dst) != in.Len() {
		return fmt.Errorf("%s: %d inputs, %d outputs", call, in.Len(), len(dst))
	}
	for i, n := range in.lens {
		if n == 0 || in.ptrs[i] == 0 {
			return fmt.Errorf("%s: input %d is empty", call, i)
		}
	}
	// The arrays are Go memory handed to C for the call: keep them in place.
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&in.ptrs[0])
	pin.Pin(&in.lens[0])
	pin.Pin(&dst[0])
	return check(call, nvjpegDecodeBatched(h.h, s.s, (**byte)(unsafe.Pointer(&in.ptrs[0])), &in.lens[0], &dst[0], uintptr(st)))
}

// HardwareInfo reports the hardware decoder's JPEG engines and the cores of
// each, for a handle of the Hardware backend: a batch fills the engines
// when it holds a multiple of engines x cores images. An nvJPEG without
// the query reports one engine of one core.
func (h *Handle) HardwareInfo() (engines, cores int, err error) {
	const call = "nvjpegGetHardwareDecoderInfo"
	if err := h.usable(call); err != nil {
		return 0, 0, err
	}
	if nvjpegGetHardwareDecoderInfo == nil {
		return 1, 1, nil
	}
	var e, c uint32
	if err := check(call, nvjpegGetHardwareDecoderInfo(h.h, &e, &c)); err != nil {
		return 0, 0, err
	}
	return int(e), int(c), nil
}

// BatchedPreAllocate sizes s's buffers for batches of batch images of up to
// width x height: the hardware decoder then draws on a pool instead of
// allocating during decode. A no-op where nvJPEG lacks the call.
func (h *Handle) BatchedPreAllocate(s *State, batch, width, height int, css Subsampling, f OutputFormat) error {
	const call = "nvjpegDecodeBatchedPreAllocate"
	if err := h.usable(call); err != nil {
		return err
	}
	if s == nil || s.s == 0 {
		return errors.New(call + ": closed state")
	}
	if nvjpegDecodeBatchedPreAllocate == nil {
		return nil
	}
	return check(call, nvjpegDecodeBatchedPreAllocate(h.h, s.s, int32(batch), int32(width), int32(height), int32(css), int32(f)))
}

// JpegStream is an nvjpegJpegStream_t: a parsed JPEG header (and, after a full Parse, the
// stream's layout), used to ask which decoder supports an image.
type JpegStream struct {
	j    uintptr
	data []byte // the last parsed buffer, which the stream may still point into
}

// NewJpegStream creates an empty stream object for h.
func (h *Handle) NewJpegStream() (*JpegStream, error) {
	if err := h.usable("nvjpegJpegStreamCreate"); err != nil {
		return nil, err
	}
	var j uintptr
	if err := check("nvjpegJpegStreamCreate", nvjpegJpegStreamCreate(h.h, &j)); err != nil {
		return nil, err
	}
	return &JpegStream{j: j}, nil
}

// Close destroys the stream object; a second call does nothing.
func (j *JpegStream) Close() error {
	if j == nil || j.j == 0 {
		return nil
	}
	if err := Init(); err != nil {
		return err
	}
	if err := check("nvjpegJpegStreamDestroy", nvjpegJpegStreamDestroy(j.j)); err != nil {
		return err
	}
	j.j, j.data = 0, nil
	return nil
}

// Parse parses data into j: only the headers when headerOnly (enough for BatchedSupported),
// else the whole stream. Neither metadata nor a copy of the stream is saved; j keeps data
// reachable instead, as the parsed stream may refer to it.
func (j *JpegStream) Parse(h *Handle, data []byte, headerOnly bool) error {
	call := "nvjpegJpegStreamParse"
	if headerOnly && nvjpegJpegStreamParseHeader != nil {
		call = "nvjpegJpegStreamParseHeader"
	}
	if err := h.usable(call); err != nil {
		return err
	}
	if j == nil || j.j == 0 {
		return errors.New(call + ": closed stream")
	}
	if len(data) == 0 {
		return &Error{Call: call, Status: StatusBadJPEG}
	}
	var r int32
	if call == "nvjpegJpegStreamParseHeader" {
		r = nvjpegJpegStreamParseHeader(h.h, &data[0], uint64(len(data)), j.j)
	} else {
		r = nvjpegJpegStreamParse(h.h, &data[0], uint64(len(data)), saveMetadata, saveStream, j.j)
	}
	j.data = data
	return check(call, r)
}

// Subsampling is the chroma subsampling of the image parsed into j, as
// ImageInfo reports it.
func (j *JpegStream) Subsampling() (Subsampling, error) {
	if err := Init(); err != nil {
		return CSSUnknown, err
	}
	if j == nil || j.j == 0 {
		return CSSUnknown, errors.New("nvjpegJpegStreamGetChromaSubsampling: closed stream")
	}
	var css int32
	if err := check("nvjpegJpegStreamGetChromaSubsampling", nvjpegJpegStreamGetChromaSubsampling(j.j, &css)); err != nil {
		return CSSUnknown, err
	}
	return Subsampling(css), nil
}

// BatchedSupported reports whether h's batched decoder can decode the image parsed into j.
func (h *Handle) BatchedSupported(j *JpegStream) (bool, error) {
	if err := h.usable("nvjpegDecodeBatchedSupported"); err != nil {
		return false, err
	}
	if j == nil || j.j == 0 {
		return false, errors.New("nvjpegDecodeBatchedSupported: closed stream")
	}
	// The C API writes 0 for supported, anything else for not.
	var unsupported int32
	if err := check("nvjpegDecodeBatchedSupported", nvjpegDecodeBatchedSupported(h.h, j.j, &unsupported)); err != nil {
		return false, err
	}
	return unsupported == 0, nil
}
