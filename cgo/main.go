// Command cgo is Sluice's Triton backend, built as a C shared library that
// tritonserver loads as backends/sluice/libtriton_sluice.so:
//
//	go build -buildmode=c-shared -ldflags='-extldflags=-Wl,--exclude-libs,ALL' \
//	  -o build/backends/sluice/libtriton_sluice.so ./cgo
//
// (make backend, whose BACKEND_LDFLAGS these are). It is the only code that speaks Triton's C ABI: the
// TRITONBACKEND_* entry points Triton calls, and adapters that present
// Triton's requests and responses to package backend, which does the work.
//
// Triton's own functions are declared in triton.h as weak references and
// bound by the dynamic linker when Triton dlopens the library; nothing links
// against libtritonserver.so. Weak references keep this package an ordinary
// buildable Go main package as well, so go build, go vet and go test ./...
// need no build tags; in such an executable the references are NULL and no
// code path reaches them. TRITONBACKEND_Initialize refuses to start if any
// of them is unbound.
//
// Rules every entry point keeps: a Go panic never crosses into C (it
// becomes a TRITONSERVER_ERROR_INTERNAL error); Triton holds only
// runtime/cgo.Handle integers, never Go pointers; and the process is never
// exited. A Go c-shared library cannot be unloaded, so model and instance
// finalization release everything they own.
package main

// KIND_GPU instances run the GPU executor, which registers itself with
// package executor.
import _ "github.com/sluice-dev/sluice/executor/gpu"

// main is required by -buildmode=c-shared and never runs inside Triton.
func main() {}
