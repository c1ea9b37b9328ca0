package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// libName is the driver's SONAME; the unversioned libcuda.so exists only where the toolkit's
// development files are installed.
const libName = "libcuda.so.1"

// The driver entry points. CUresult is a C enum, so results come back as int32: reading a
// wider integer would pick up whatever the callee left in the upper half of the register.
var (
	cuInit                    func(flags uint32) int32
	cuGetErrorName            func(r int32, s **byte) int32
	cuGetErrorString          func(r int32, s **byte) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetCount          func(n *int32) int32
	cuDeviceGetName           func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuStreamCreate            func(s *uintptr, flags uint32) int32
	cuStreamSynchronize       func(s uintptr) int32
	cuStreamDestroy           func(s uintptr) int32
	cuStreamWaitEvent         func(s, e uintptr, flags uint32) int32
	cuEventCreate             func(e *uintptr, flags uint32) int32
	cuEventRecord             func(e, s uintptr) int32
	cuEventSynchronize        func(e uintptr) int32
	cuEventDestroy            func(e uintptr) int32
	cuEventElapsedTime        func(ms *float32, start, end uintptr) int32
	cuMemAlloc                func(p *DevicePtr, n uint64) int32
	cuMemFree                 func(p DevicePtr) int32
	cuMemGetInfo              func(free, total *uint64) int32
	cuMemHostAlloc            func(p *unsafe.Pointer, n uint64, flags uint32) int32
	cuMemFreeHost             func(p unsafe.Pointer) int32
	cuMemcpyHtoDAsync         func(dst DevicePtr, src unsafe.Pointer, n uint64, s uintptr) int32
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src DevicePtr, n uint64, s uintptr) int32
	cuMemcpyDtoDAsync         func(dst, src DevicePtr, n uint64, s uintptr) int32
	cuMemsetD8Async           func(dst DevicePtr, v uint8, n uint64, s uintptr) int32
	cuMemcpyAsync             func(dst, src uintptr, n uint64, s uintptr) int32
	cuDeviceCanAccessPeer     func(can *int32, dev, peer int32) int32
	cuCtxEnablePeerAccess     func(peer uintptr, flags uint32) int32
	cuModuleLoadDataEx        func(m *uintptr, image unsafe.Pointer, nopt uint32, opts *int32, vals *uintptr) int32
	cuModuleGetFunction       func(f *uintptr, m uintptr, name string) int32
	cuModuleUnload            func(m uintptr) int32
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params, extra unsafe.Pointer) int32
)

// symbol binds one Go function variable to the exported names that may provide it, newest
// first. cuda.h maps many API names to versioned symbols (cuMemAlloc is cuMemAlloc_v2); the
// unversioned symbols that remain exported keep an older ABI or behaviour (32-bit sizes, for
// one) and must not be used.
type symbol struct {
	fn    any
	names []string
}

func symbols() []symbol {
	return []symbol{
		{&cuInit, []string{"cuInit"}},
		{&cuGetErrorName, []string{"cuGetErrorName"}},
		{&cuGetErrorString, []string{"cuGetErrorString"}},
		{&cuDeviceGet, []string{"cuDeviceGet"}},
		{&cuDeviceGetCount, []string{"cuDeviceGetCount"}},
		{&cuDeviceGetName, []string{"cuDeviceGetName"}},
		{&cuDeviceGetAttribute, []string{"cuDeviceGetAttribute"}},
		{&cuDevicePrimaryCtxRetain, []string{"cuDevicePrimaryCtxRetain"}},
		{&cuDevicePrimaryCtxRelease, []string{"cuDevicePrimaryCtxRelease_v2"}},
		{&cuCtxSetCurrent, []string{"cuCtxSetCurrent"}},
		{&cuStreamCreate, []string{"cuStreamCreate"}},
		{&cuStreamSynchronize, []string{"cuStreamSynchronize"}},
		{&cuStreamDestroy, []string{"cuStreamDestroy_v2"}},
		{&cuStreamWaitEvent, []string{"cuStreamWaitEvent"}},
		{&cuEventCreate, []string{"cuEventCreate"}},
		{&cuEventRecord, []string{"cuEventRecord"}},
		{&cuEventSynchronize, []string{"cuEventSynchronize"}},
		{&cuEventDestroy, []string{"cuEventDestroy_v2"}},
		// The _v2 arrived in CUDA 12.8 with the same signature; older drivers have only the
		// original, which is still correct for events on the calling context.
		{&cuEventElapsedTime, []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
		{&cuMemAlloc, []string{"cuMemAlloc_v2"}},
		{&cuMemFree, []string{"cuMemFree_v2"}},
		{&cuMemGetInfo, []string{"cuMemGetInfo_v2"}},
		{&cuMemHostAlloc, []string{"cuMemHostAlloc"}},
		{&cuMemFreeHost, []string{"cuMemFreeHost"}},
		{&cuMemcpyHtoDAsync, []string{"cuMemcpyHtoDAsync_v2"}},
		{&cuMemcpyDtoHAsync, []string{"cuMemcpyDtoHAsync_v2"}},
		{&cuMemcpyDtoDAsync, []string{"cuMemcpyDtoDAsync_v2"}},
		{&cuMemsetD8Async, []string{"cuMemsetD8Async"}},
		{&cuMemcpyAsync, []string{"cuMemcpyAsync"}},
		{&cuDeviceCanAccessPeer, []string{"cuDeviceCanAccessPeer"}},
		{&cuCtxEnablePeerAccess, []string{"cuCtxEnablePeerAccess"}},
		{&cuModuleLoadDataEx, []string{"cuModuleLoadDataEx"}},
		{&cuModuleGetFunction, []string{"cuModuleGetFunction"}},
		{&cuModuleUnload, []string{"cuModuleUnload"}},
		{&cuLaunchKernel, []string{"cuLaunchKernel"}},
	}
}

var (
	initOnce sync.Once
	initErr  error
)

// Init opens the driver, resolves every entry point and calls cuInit(0). It runs once; later
// calls return the first result. Every other function calls it, so calling it explicitly is
// only needed to learn early whether the GPU path is available.
func Init() error {
	initOnce.Do(func() {
		initErr = load(libName)
		if initErr != nil {
			return
		}
		if err := check("cuInit", cuInit(0)); err != nil {
			initErr = fmt.Errorf("CUDA driver unavailable: %w", err)
		}
	})
	return initErr
}

// load opens lib and binds every symbol. It never panics: purego panics on a zero address or
// an unsupported signature, so addresses are resolved first and RegisterFunc is guarded.
func load(lib string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("CUDA driver unavailable: binding %s: %v", lib, r)
		}
	}()
	h, err := Dlopen(lib)
	if err != nil {
		return fmt.Errorf("CUDA driver unavailable: dlopen %s: %w", lib, err)
	}
	for _, s := range symbols() {
		if err := bind(h, lib, s); err != nil {
			return fmt.Errorf("CUDA driver unavailable: %w", err)
		}
	}
	return nil
}

func bind(h uintptr, lib string, s symbol) error {
	var last error
	for _, name := range s.names {
		addr, err := Dlsym(h, name)
		if err == nil {
			purego.RegisterFunc(s.fn, addr)
			return nil
		}
		last = err
	}
	return fmt.Errorf("%s lacks %s: %v", lib, s.names[0], last)
}

// ready is the guard at the top of every call.
func ready() error { return Init() }

// goString copies a NUL-terminated C string that the driver owns.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
