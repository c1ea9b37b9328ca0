package main

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/sluice-dev/sluice/backend"
)

// TRITONBACKEND_Initialize runs once, when Triton loads the library and
// before any model: it checks that this Triton can host the library, sets
// up logging into Triton's log and registers Sluice's metric families
// (metrics.go), going on without them when Triton refuses.
//
//export TRITONBACKEND_Initialize
func TRITONBACKEND_Initialize(b *C.TRITONBACKEND_Backend) (result *C.TRITONSERVER_Error) {
	defer recoverError("TRITONBACKEND_Initialize", &result)
	// Every Triton function is a weak reference: one the dynamic linker
	// could not bind would be a call through NULL later. Refuse to load
	// instead. (The report itself needs TRITONSERVER_ErrorNew; a host
	// without it is not Triton and is not catered for.)
	if name := missingTritonSymbol(); name != "" {
		return newTritonError(&backend.Error{Code: backend.CodeUnsupported,
			Msg: fmt.Sprintf("sluice: this Triton does not provide %s, which the sluice backend needs", name)})
	}
	var major, minor C.uint32_t
	if err := goError("TRITONBACKEND_ApiVersion", C.TRITONBACKEND_ApiVersion(&major, &minor)); err != nil {
		return newTritonError(err)
	}
	if major != C.SLUICE_TRITONBACKEND_API_MAJOR || minor < C.SLUICE_TRITONBACKEND_API_MINOR {
		return newTritonError(&backend.Error{Code: backend.CodeUnsupported, Msg: fmt.Sprintf(
			"sluice: Triton's backend API is %d.%d; the sluice backend needs %d.%d or a later %d.x",
			major, minor, C.SLUICE_TRITONBACKEND_API_MAJOR, C.SLUICE_TRITONBACKEND_API_MINOR, C.SLUICE_TRITONBACKEND_API_MAJOR)})
	}
	var cname *C.char
	if err := goError("TRITONBACKEND_BackendName", C.TRITONBACKEND_BackendName(b, &cname)); err != nil {
		return newTritonError(err)
	}
	theLogger.Store(newLogger(tritonSink{}))
	logger().Info("TRITONBACKEND_Initialize", zap.String("backend", C.GoString(cname)),
		zap.String("triton_api", fmt.Sprintf("%d.%d", major, minor)),
		zap.String("built_for_api", fmt.Sprintf("%d.%d", C.SLUICE_TRITONBACKEND_API_MAJOR, C.SLUICE_TRITONBACKEND_API_MINOR)))
	if fs, err := newMetricFamilies(); err != nil {
		logger().Warn("Sluice metrics are off: Triton did not register their families (metrics disabled?)", zap.Error(err))
	} else {
		theFamilies.Store(fs)
	}
	return nil
}

// TRITONBACKEND_Finalize runs once, after every model is finalized (and
// so after every metric is deleted). The library stays mapped (Go
// c-shared libraries cannot be unloaded); the metric families are the
// only backend-wide state to free.
//
//export TRITONBACKEND_Finalize
func TRITONBACKEND_Finalize(b *C.TRITONBACKEND_Backend) (result *C.TRITONSERVER_Error) {
	defer recoverError("TRITONBACKEND_Finalize", &result)
	logger().Info("TRITONBACKEND_Finalize")
	if fs := theFamilies.Swap(nil); fs != nil {
		fs.delete()
	}
	return nil
}
