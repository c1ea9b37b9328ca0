// Package cuda is the small part of the CUDA driver API that Sluice's GPU path needs: devices,
// primary contexts, streams, events, device and pinned host memory, copies, PTX modules and
// kernel launches.
//
// The driver is opened at run time (dlopen of libcuda.so.1 through purego) rather than linked,
// so one backend library serves GPU and CPU-only hosts alike: on a host without the driver,
// Init returns an error and the caller stays on the CPU path. Linking CUDA bindings such as
// gorgonia.org/cu would not do: that package calls cuInit from its init function and calls
// os.Exit when it fails, which would take tritonserver down with it.
//
// Every call's CUresult is checked; a failure becomes an *Error naming the call and the code.
// Every function runs Init first and returns its error, so nothing here panics for lack of a
// driver.
//
// Contexts are per OS thread in the driver: callers pin their goroutine with
// runtime.LockOSThread and call (*Context).SetCurrent before anything else.
//
// A Stream is the driver's CUstream, which is the same handle as the runtime's cudaStream_t:
// it is what nvJPEG's stream parameters take.
package cuda
