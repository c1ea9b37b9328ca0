package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// DevicePtr is a CUdeviceptr: an address in device memory, not dereferenceable on the host.
type DevicePtr uintptr

// Stream is a CUstream; 0 is the legacy default stream.
type Stream uintptr

// Event is a CUevent.
type Event uintptr

// Function is a CUfunction: a kernel of a loaded module.
type Function uintptr

// Attr is a CUdevice_attribute.
type Attr int

// The attributes Sluice reads; values from cuda.h.
const (
	AttrMultiprocessorCount    Attr = 16
	AttrComputeCapabilityMajor Attr = 75
	AttrComputeCapabilityMinor Attr = 76
)

// Flags and options from cuda.h.
const (
	flagStreamNonBlocking      = 0x1
	flagEventDisableTiming     = 0x2
	flagMemHostAllocPortable   = 0x1
	jitErrorLogBuffer          = 5
	jitErrorLogBufferSizeBytes = 6
)

const (
	jitErrorLogSize = 16 << 10 // plenty for the first errors of a PTX file
	deviceNameSize  = 256
)

// DeviceCount is the number of CUDA devices the driver sees.
func DeviceCount() (int, error) {
	if err := ready(); err != nil {
		return 0, err
	}
	var n int32
	if err := check("cuDeviceGetCount", cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

func device(ord int) (int32, error) {
	if err := ready(); err != nil {
		return 0, err
	}
	var d int32
	if err := check("cuDeviceGet", cuDeviceGet(&d, int32(ord))); err != nil {
		return 0, err
	}
	return d, nil
}

// DeviceName is the marketing name of device ord, e.g. "NVIDIA H200".
func DeviceName(ord int) (string, error) {
	d, err := device(ord)
	if err != nil {
		return "", err
	}
	buf := make([]byte, deviceNameSize)
	if err := check("cuDeviceGetName", cuDeviceGetName(&buf[0], int32(len(buf)), d)); err != nil {
		return "", err
	}
	return goString(&buf[0]), nil
}

// DeviceAttribute reads one attribute of device ord.
func DeviceAttribute(ord int, a Attr) (int, error) {
	d, err := device(ord)
	if err != nil {
		return 0, err
	}
	var v int32
	if err := check("cuDeviceGetAttribute", cuDeviceGetAttribute(&v, int32(a), d)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// Context is a retained primary context: the one the CUDA runtime (and so nvJPEG) uses for
// the device, shared by everything in the process.
type Context struct {
	dev int32
	ctx uintptr
}

// RetainPrimary retains device ord's primary context; Release undoes it.
func RetainPrimary(ord int) (*Context, error) {
	d, err := device(ord)
	if err != nil {
		return nil, err
	}
	var ctx uintptr
	if err := check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, d)); err != nil {
		return nil, err
	}
	return &Context{dev: d, ctx: ctx}, nil
}

// Release drops the reference RetainPrimary took. A second call does nothing, since an extra
// release would drop a reference someone else holds.
func (c *Context) Release() error {
	if c == nil || c.ctx == 0 {
		return nil
	}
	if err := ready(); err != nil {
		return err
	}
	if err := check("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(c.dev)); err != nil {
		return err
	}
	c.ctx = 0
	return nil
}

// SetCurrent binds the context to the calling OS thread; callers hold runtime.LockOSThread,
// or the next call may run on a thread without it.
func (c *Context) SetCurrent() error {
	if c == nil || c.ctx == 0 {
		return errors.New("cuda: SetCurrent on a released context")
	}
	if err := ready(); err != nil {
		return err
	}
	return check("cuCtxSetCurrent", cuCtxSetCurrent(c.ctx))
}

// Device is the device (CUdevice) the context belongs to.
func (c *Context) Device() int { return int(c.dev) }

// NewStream creates a stream that does not synchronize with the legacy default stream, so
// work of other libraries on stream 0 does not serialize with ours.
func NewStream() (Stream, error) {
	if err := ready(); err != nil {
		return 0, err
	}
	var s uintptr
	if err := check("cuStreamCreate", cuStreamCreate(&s, flagStreamNonBlocking)); err != nil {
		return 0, err
	}
	return Stream(s), nil
}

// Synchronize waits until all work queued on s is done.
func (s Stream) Synchronize() error {
	if err := ready(); err != nil {
		return err
	}
	return check("cuStreamSynchronize", cuStreamSynchronize(uintptr(s)))
}

// Destroy releases s once its queued work is done; the call does not wait for it.
func (s Stream) Destroy() error {
	if err := ready(); err != nil {
		return err
	}
	return check("cuStreamDestroy", cuStreamDestroy(uintptr(s)))
}

// WaitEvent makes later work on s wait for e's most recent Record.
func (s Stream) WaitEvent(e Event) error {
	if err := ready(); err != nil {
		return err
	}
	return check("cuStreamWaitEvent", cuStreamWaitEvent(uintptr(s), uintptr(e), 0))
}

// NewEvent creates an event; timing events cost more to record, so they are opt-in.
func NewEvent(timing bool) (Event, error) {
	if err := ready(); err != nil {
		return 0, err
	}
	var flags uint32 = flagEventDisableTiming
	if timing {
		flags = 0
	}
	var e uintptr
	if err := check("cuEventCreate", cuEventCreate(&e, flags)); err != nil {
		return 0, err
	}
	return Event(e), nil
}

// Record captures the work queued on s so far.
func (e Event) Record(s Stream) error {
	if err := ready(); err != nil {
		return err
	}
	return check("cuEventRecord", cuEventRecord(uintptr(e), uintptr(s)))
}

// Synchronize waits until the work e captured is done.
func (e Event) Synchronize() error {
	if err := ready(); err != nil {
		return err
	}
	return check("cuEventSynchronize", cuEventSynchronize(uintptr(e)))
}

// Destroy releases e.
func (e Event) Destroy() error {
	if err := ready(); err != nil {
		return err
	}
	return check("cuEventDestroy", cuEventDestroy(uintptr(e)))
}

// Elapsed is the GPU time between two completed timing events (about 0.5 µs resolution).
func Elapsed(start, end Event) (time.Duration, error) {
	if err := ready(); err != nil {
		return 0, err
	}
	var ms float32
	if err := check("cuEventElapsedTime", cuEventElapsedTime(&ms, uintptr(start), uintptr(end))); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

func size(call string, n int) (uint64, error) {
	if n < 0 {
		return 0, fmt.Errorf("%s: bad size %d", call, n)
	}
	return uint64(n), nil
}

// MemAlloc allocates n bytes of device memory in the current context. n == 0 gives the null
// pointer (the driver rejects zero-byte allocations), which MemFree accepts.
func MemAlloc(n int) (DevicePtr, error) {
	sz, err := size("cuMemAlloc", n)
	if err != nil || sz == 0 {
		return 0, err
	}
	if err := ready(); err != nil {
		return 0, err
	}
	var p DevicePtr
	if err := check("cuMemAlloc", cuMemAlloc(&p, sz)); err != nil {
		return 0, err
	}
	return p, nil
}

// MemFree frees memory from MemAlloc; the null pointer is a no-op.
func MemFree(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	if err := ready(); err != nil {
		return err
	}
	return check("cuMemFree", cuMemFree(p))
}

// MemGetInfo is the free and total device memory of the current context's device.
func MemGetInfo() (free, total uint64, err error) {
	if err := ready(); err != nil {
		return 0, 0, err
	}
	if err := check("cuMemGetInfo", cuMemGetInfo(&free, &total)); err != nil {
		return 0, 0, err
	}
	return free, total, nil
}

// MemHostAlloc allocates n bytes of page-locked host memory, usable from every context
// (portable), so copies from and to it are truly asynchronous. The slice aliases the C
// allocation: it stays valid until MemFreeHost, whatever the Go GC does. n == 0 gives nil.
func MemHostAlloc(n int) ([]byte, error) {
	sz, err := size("cuMemHostAlloc", n)
	if err != nil || sz == 0 {
		return nil, err
	}
	if err := ready(); err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if err := check("cuMemHostAlloc", cuMemHostAlloc(&p, sz, flagMemHostAllocPortable)); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// MemFreeHost frees memory from MemHostAlloc; b must start where the allocation starts (any
// length). An empty, capacity-less slice is a no-op.
func MemFreeHost(b []byte) error {
	if cap(b) == 0 {
		return nil
	}
	if err := ready(); err != nil {
		return err
	}
	return check("cuMemFreeHost", cuMemFreeHost(unsafe.Pointer(&b[:1][0])))
}

// MemcpyHtoDAsync queues a copy of src to dst on s. From MemHostAlloc memory the call returns
// at once; from ordinary Go memory the driver stages src before returning, so src may be
// reused afterwards either way — but only pinned memory overlaps with other work.
func MemcpyHtoDAsync(dst DevicePtr, src []byte, s Stream) error {
	if len(src) == 0 {
		return nil
	}
	if err := ready(); err != nil {
		return err
	}
	r := cuMemcpyHtoDAsync(dst, unsafe.Pointer(&src[0]), uint64(len(src)), uintptr(s))
	runtime.KeepAlive(src)
	return check("cuMemcpyHtoDAsync", r)
}

// MemcpyDtoHAsync queues a copy of src to dst on s. dst must stay untouched until s is
// synchronized; with ordinary Go memory as dst the driver completes the copy before
// returning, but dst should be MemHostAlloc memory on any path that cares about speed.
func MemcpyDtoHAsync(dst []byte, src DevicePtr, s Stream) error {
	if len(dst) == 0 {
		return nil
	}
	if err := ready(); err != nil {
		return err
	}
	r := cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), src, uint64(len(dst)), uintptr(s))
	runtime.KeepAlive(dst)
	return check("cuMemcpyDtoHAsync", r)
}

// MemcpyDtoDAsync queues a copy of n bytes from src to dst on s.
func MemcpyDtoDAsync(dst, src DevicePtr, n int, s Stream) error {
	sz, err := size("cuMemcpyDtoDAsync", n)
	if err != nil || sz == 0 {
		return err
	}
	if err := ready(); err != nil {
		return err
	}
	return check("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync(dst, src, sz, uintptr(s)))
}

// MemsetD8Async queues setting n bytes at dst to v on s.
func MemsetD8Async(dst DevicePtr, v byte, n int, s Stream) error {
	sz, err := size("cuMemsetD8Async", n)
	if err != nil || sz == 0 {
		return err
	}
	if err := ready(); err != nil {
		return err
	}
	return check("cuMemsetD8Async", cuMemsetD8Async(dst, v, sz, uintptr(s)))
}

// MemcpyPeerAsync queues a copy of n bytes from src to dst on s where either may be memory of
// another GPU than the current context's: the driver finds each pointer's device (unified
// addressing) and copies over the GPUs' link, directly where EnablePeerAccess was called.
func MemcpyPeerAsync(dst, src DevicePtr, n int, s Stream) error {
	sz, err := size("cuMemcpyAsync", n)
	if err != nil || sz == 0 {
		return err
	}
	if err := ready(); err != nil {
		return err
	}
	return check("cuMemcpyAsync", cuMemcpyAsync(uintptr(dst), uintptr(src), sz, uintptr(s)))
}

// MemcpyHtoPeerAsync queues a copy of src to dst on s where dst may be memory of another GPU
// than the current context's. As for MemcpyHtoDAsync, src may be reused once it returns.
func MemcpyHtoPeerAsync(dst DevicePtr, src []byte, s Stream) error {
	if len(src) == 0 {
		return nil
	}
	if err := ready(); err != nil {
		return err
	}
	r := cuMemcpyAsync(uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uint64(len(src)), uintptr(s))
	runtime.KeepAlive(src)
	return check("cuMemcpyAsync", r)
}

// CanAccessPeer reports whether device dev can reach device peer's memory directly (NVLink
// or PCIe peer-to-peer).
func CanAccessPeer(dev, peer int) (bool, error) {
	d, err := device(dev)
	if err != nil {
		return false, err
	}
	p, err := device(peer)
	if err != nil {
		return false, err
	}
	var can int32
	if err := check("cuDeviceCanAccessPeer", cuDeviceCanAccessPeer(&can, d, p)); err != nil {
		return false, err
	}
	return can != 0, nil
}

// EnablePeerAccess lets the current context's copies and kernels reach peer's memory
// directly instead of through host memory. Enabling it twice is not an error: access is the
// context's, shared with every other user of the primary context.
func EnablePeerAccess(peer *Context) error {
	if peer == nil || peer.ctx == 0 {
		return errors.New("cuda: EnablePeerAccess to a released context")
	}
	if err := ready(); err != nil {
		return err
	}
	err := check("cuCtxEnablePeerAccess", cuCtxEnablePeerAccess(peer.ctx, 0))
	if IsResult(err, ErrorPeerAccessAlreadyEnabled) {
		return nil
	}
	return err
}

// Module is a loaded CUmodule.
type Module struct {
	h uintptr
}

// LoadModule loads a module image into the current context: PTX, which it JIT-compiles
// for the context's device, or a cubin or fatbin. A compile failure's error carries the
// JIT's log, which says what is wrong and where; the bare CUresult does not.
func LoadModule(ptx []byte) (*Module, error) {
	if len(ptx) == 0 {
		return nil, errors.New("cuModuleLoadDataEx: empty module image")
	}
	if err := ready(); err != nil {
		return nil, err
	}
	// The driver reads PTX as a C string (a cubin's ELF header gives its size).
	img := ptx
	if img[len(img)-1] != 0 {
		img = make([]byte, len(ptx)+1)
		copy(img, ptx)
	}
	logBuf := make([]byte, jitErrorLogSize)
	var pin runtime.Pinner
	defer pin.Unpin()
	// The option values are a void* array holding a pointer and a size; as uintptrs the
	// array holds no Go pointers, and the pinned log buffer cannot move or be freed.
	pin.Pin(&logBuf[0])
	opts := []int32{jitErrorLogBuffer, jitErrorLogBufferSizeBytes}
	vals := []uintptr{uintptr(unsafe.Pointer(&logBuf[0])), uintptr(len(logBuf))}
	var h uintptr
	r := cuModuleLoadDataEx(&h, unsafe.Pointer(&img[0]), uint32(len(opts)), &opts[0], &vals[0])
	runtime.KeepAlive(img)
	if err := check("cuModuleLoadDataEx", r); err != nil {
		// On return the size slot holds how much of the buffer the JIT filled.
		n := min(int(vals[1]), len(logBuf))
		if i := indexNUL(logBuf[:n]); i >= 0 {
			n = i
		}
		if n > 0 {
			return nil, fmt.Errorf("%w: JIT log: %s", err, logBuf[:n])
		}
		return nil, err
	}
	return &Module{h: h}, nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// Function looks up a kernel by its (unmangled, extern "C") name.
func (m *Module) Function(name string) (Function, error) {
	if m == nil || m.h == 0 {
		return 0, errors.New("cuModuleGetFunction: module unloaded")
	}
	if err := ready(); err != nil {
		return 0, err
	}
	var f uintptr
	if err := check("cuModuleGetFunction", cuModuleGetFunction(&f, m.h, name)); err != nil {
		return 0, fmt.Errorf("%w (kernel %q)", err, name)
	}
	return Function(f), nil
}

// Unload releases the module; its Functions become invalid. A second call does nothing.
func (m *Module) Unload() error {
	if m == nil || m.h == 0 {
		return nil
	}
	if err := ready(); err != nil {
		return err
	}
	if err := check("cuModuleUnload", cuModuleUnload(m.h)); err != nil {
		return err
	}
	m.h = 0
	return nil
}

// Launch queues kernel f on s. params[i] points at the value of the kernel's i-th argument
// (cuLaunchKernel's kernelParams): the driver copies the values during the call, so they may
// change as soon as Launch returns.
func Launch(f Function, grid, block [3]uint32, sharedMem uint32, s Stream, params ...unsafe.Pointer) error {
	if err := ready(); err != nil {
		return err
	}
	var kp unsafe.Pointer
	if len(params) > 0 {
		// C receives a Go array of Go pointers: the array and everything it points at must
		// be pinned for the call.
		var pin runtime.Pinner
		defer pin.Unpin()
		arr := make([]unsafe.Pointer, len(params))
		for i, p := range params {
			if p == nil {
				return fmt.Errorf("cuLaunchKernel: parameter %d is nil", i)
			}
			pin.Pin(p)
			arr[i] = p
		}
		pin.Pin(&arr[0])
		kp = unsafe.Pointer(&arr[0])
	}
	r := cuLaunchKernel(uintptr(f), grid[0], grid[1], grid[2], block[0], block[1], block[2],
		sharedMem, uintptr(s), kp, nil)
	return check("cuLaunchKernel", r)
}
