package main

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"unsafe"

	"go.uber.org/zap"

	"github.com/sluice-dev/sluice/backend"
)

// modelState is what a TRITONBACKEND_Model's state handle refers to.
type modelState struct {
	model   *backend.Model
	name    string
	metrics *modelMetrics // nil: metrics off
}

// TRITONBACKEND_ModelInitialize loads a model: it gathers what Triton
// knows of it, lets backend build it, reports an auto-completed config
// back, and keeps the model behind a handle in the model's state.
//
//export TRITONBACKEND_ModelInitialize
func TRITONBACKEND_ModelInitialize(m *C.TRITONBACKEND_Model) (result *C.TRITONSERVER_Error) {
	defer recoverError("TRITONBACKEND_ModelInitialize", &result)
	args, err := modelArgs(m)
	if err != nil {
		return newTritonError(err)
	}
	logger().Info("TRITONBACKEND_ModelInitialize", zap.String("model", args.Name), zap.Int64("version", args.Version))
	model, err := backend.LoadModel(args)
	if err != nil {
		return newTritonError(err)
	}
	if model.NewConfig != nil {
		if err := setModelConfig(m, model.NewConfig); err != nil {
			model.Close()
			return newTritonError(err)
		}
	}
	// Metrics are optional: without them the model still serves.
	metrics, err := newModelMetrics(args.Name, args.Version)
	if err != nil {
		logger().Warn("Sluice metrics are off for this model", zap.String("model", args.Name), zap.Error(err))
	}
	h := cgo.NewHandle(&modelState{model: model, name: args.Name, metrics: metrics})
	if err := goError("TRITONBACKEND_ModelSetState", C.sluice_model_set_state(m, C.uintptr_t(h))); err != nil {
		h.Delete()
		metrics.delete()
		model.Close()
		return newTritonError(err)
	}
	return nil
}

// TRITONBACKEND_ModelFinalize closes the model. Its instances are
// finalized before it.
//
//export TRITONBACKEND_ModelFinalize
func TRITONBACKEND_ModelFinalize(m *C.TRITONBACKEND_Model) (result *C.TRITONSERVER_Error) {
	defer recoverError("TRITONBACKEND_ModelFinalize", &result)
	var h C.uintptr_t
	if err := goError("TRITONBACKEND_ModelState", C.sluice_model_state(m, &h)); err != nil {
		return newTritonError(err)
	}
	if h == 0 {
		return nil // initialization failed before the state was set
	}
	handle := cgo.Handle(h)
	st, _ := handle.Value().(*modelState)
	// Delete the metrics and the handle and clear the state even if Close
	// panics: the state must not outlive the model either way. (The
	// instances, which record into the metrics, are finalized already.)
	defer func() {
		if st != nil {
			st.metrics.delete()
		}
		handle.Delete()
		logIfError("TRITONBACKEND_ModelSetState", C.sluice_model_set_state(m, 0))
	}()
	if st == nil {
		return newTritonError(&backend.Error{Code: backend.CodeInternal,
			Msg: fmt.Sprintf("sluice: model state is a %T", handle.Value())})
	}
	logger().Info("TRITONBACKEND_ModelFinalize", zap.String("model", st.name))
	st.model.Close()
	return nil
}

// modelArgs collects what backend.LoadModel needs from Triton.
func modelArgs(m *C.TRITONBACKEND_Model) (backend.ModelArgs, error) {
	var a backend.ModelArgs
	var cname *C.char
	if err := goError("TRITONBACKEND_ModelName", C.TRITONBACKEND_ModelName(m, &cname)); err != nil {
		return a, err
	}
	a.Name = C.GoString(cname)
	var version C.uint64_t
	if err := goError("TRITONBACKEND_ModelVersion", C.TRITONBACKEND_ModelVersion(m, &version)); err != nil {
		return a, err
	}
	a.Version = int64(version)
	var artifact C.TRITONBACKEND_ArtifactType
	var location *C.char
	if err := goError("TRITONBACKEND_ModelRepository", C.TRITONBACKEND_ModelRepository(m, &artifact, &location)); err != nil {
		return a, err
	}
	if artifact != C.TRITONBACKEND_ARTIFACT_FILESYSTEM {
		return a, &backend.Error{Code: backend.CodeUnsupported,
			Msg: "sluice: model " + a.Name + ": only model repositories on a filesystem are supported"}
	}
	a.RepoPath = C.GoString(location)
	config, err := modelConfig(m)
	if err != nil {
		return a, err
	}
	a.Config = config
	var auto C.bool
	if err := goError("TRITONBACKEND_ModelAutoCompleteConfig", C.TRITONBACKEND_ModelAutoCompleteConfig(m, &auto)); err != nil {
		return a, err
	}
	a.AutoComplete = bool(auto)
	a.Logger = logger()
	a.Now = monotonicNow
	return a, nil
}

// modelConfig returns the model's configuration as JSON (config format
// version 1, the only one there is).
func modelConfig(m *C.TRITONBACKEND_Model) ([]byte, error) {
	var msg *C.TRITONSERVER_Message
	if err := goError("TRITONBACKEND_ModelConfig", C.TRITONBACKEND_ModelConfig(m, 1, &msg)); err != nil {
		return nil, err
	}
	defer func() { logIfError("TRITONSERVER_MessageDelete", C.TRITONSERVER_MessageDelete(msg)) }()
	var base *C.char
	var size C.size_t
	if err := goError("TRITONSERVER_MessageSerializeToJson", C.TRITONSERVER_MessageSerializeToJson(msg, &base, &size)); err != nil {
		return nil, err
	}
	// The bytes belong to the message: copy them before it is deleted.
	return C.GoBytes(unsafe.Pointer(base), C.int(size)), nil
}

// setModelConfig hands an auto-completed configuration (JSON) to Triton.
func setModelConfig(m *C.TRITONBACKEND_Model, config []byte) error {
	var msg *C.TRITONSERVER_Message
	base := (*C.char)(C.CBytes(config))
	defer C.free(unsafe.Pointer(base))
	if err := goError("TRITONSERVER_MessageNewFromSerializedJson",
		C.TRITONSERVER_MessageNewFromSerializedJson(&msg, base, C.size_t(len(config)))); err != nil {
		return err
	}
	// ModelSetConfig does not take the message.
	defer func() { logIfError("TRITONSERVER_MessageDelete", C.TRITONSERVER_MessageDelete(msg)) }()
	return goError("TRITONBACKEND_ModelSetConfig", C.TRITONBACKEND_ModelSetConfig(m, 1, msg))
}
