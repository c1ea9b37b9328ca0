package main

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"strconv"
	"sync"
	"unsafe"

	"go.uber.org/zap"

	"github.com/sluice-dev/sluice/backend"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/faultsafe"
)

// instanceState is what a TRITONBACKEND_ModelInstance's state handle
// refers to: backend's instance and what the adapters reuse from one
// Execute to the next. Triton never runs two Executes of one instance at
// once; within one, backend may use the adapters from several goroutines,
// which the arena and names guard against.
type instanceState struct {
	inst  *backend.Instance
	name  string
	arena arena  // contiguous copies of inputs that come in several buffers
	names cNames // tensor names as C strings
	// The model's metrics (nil: off); the model outlives its instances.
	metrics *modelMetrics
	gpu     string // the gpu label of its GPU metrics: the device ordinal; "" on the CPU
	// maxInput bounds an input copied into the arena: the most a request
	// of the model can hold.
	maxInput int64

	// The process's shared and file-backed mappings, read once per
	// Execute (after every request of it was made, so after any shared
	// memory its inputs lie in was mapped): inputs there are copied.
	mapsMu     sync.Mutex
	maps       faultsafe.Mappings
	mapsLoaded bool
	// Outputs the executor writes to the arena for memory that can vanish,
	// copied over as each response is sent (exchange.deliverStaged).
	staged []stagedOutput

	// Reused per Execute; only the entry point's goroutine touches them.
	exchanges []exchange
	reqs      []backend.Request
	resps     []backend.Response
	ok        []bool // per request: succeeded (reused by finish)
}

// TRITONBACKEND_ModelInstanceInitialize creates backend's instance for
// one entry of the model's instance groups.
//
//export TRITONBACKEND_ModelInstanceInitialize
func TRITONBACKEND_ModelInstanceInitialize(ti *C.TRITONBACKEND_ModelInstance) (result *C.TRITONSERVER_Error) {
	defer recoverError("TRITONBACKEND_ModelInstanceInitialize", &result)
	var cname *C.char
	if err := goError("TRITONBACKEND_ModelInstanceName", C.TRITONBACKEND_ModelInstanceName(ti, &cname)); err != nil {
		return newTritonError(err)
	}
	name := C.GoString(cname)
	var kind C.TRITONSERVER_InstanceGroupKind
	if err := goError("TRITONBACKEND_ModelInstanceKind", C.TRITONBACKEND_ModelInstanceKind(ti, &kind)); err != nil {
		return newTritonError(err)
	}
	var device C.int32_t
	if err := goError("TRITONBACKEND_ModelInstanceDeviceId", C.TRITONBACKEND_ModelInstanceDeviceId(ti, &device)); err != nil {
		return newTritonError(err)
	}
	ms, err := instanceModel(ti)
	if err != nil {
		return newTritonError(err)
	}
	logger().Info("TRITONBACKEND_ModelInstanceInitialize", zap.String("model", ms.name), zap.String("instance", name),
		zap.String("kind", instanceKindName(kind)), zap.Int("device", int(device)))
	inst, err := ms.model.NewInstance(name, instanceKindName(kind), int(device))
	if err != nil {
		return newTritonError(err)
	}
	st := &instanceState{inst: inst, name: name, names: cNames{m: map[string]*C.char{}}, metrics: ms.metrics,
		maxInput: ms.model.MaxInputBytes()}
	if inst.Executor == executor.KindGPU {
		st.gpu = strconv.Itoa(int(device))
	}
	h := cgo.NewHandle(st)
	if err := goError("TRITONBACKEND_ModelInstanceSetState", C.sluice_instance_set_state(ti, C.uintptr_t(h))); err != nil {
		h.Delete()
		inst.Close()
		return newTritonError(err)
	}
	return nil
}

// TRITONBACKEND_ModelInstanceFinalize closes backend's instance and frees
// what the adapters held.
//
//export TRITONBACKEND_ModelInstanceFinalize
func TRITONBACKEND_ModelInstanceFinalize(ti *C.TRITONBACKEND_ModelInstance) (result *C.TRITONSERVER_Error) {
	defer recoverError("TRITONBACKEND_ModelInstanceFinalize", &result)
	var h C.uintptr_t
	if err := goError("TRITONBACKEND_ModelInstanceState", C.sluice_instance_state(ti, &h)); err != nil {
		return newTritonError(err)
	}
	if h == 0 {
		return nil // initialization failed before the state was set
	}
	handle := cgo.Handle(h)
	st := handle.Value().(*instanceState)
	// Free the C strings, delete the handle and clear the state even if
	// Close panics.
	defer func() {
		st.names.free()
		handle.Delete()
		logIfError("TRITONBACKEND_ModelInstanceSetState", C.sluice_instance_set_state(ti, 0))
	}()
	logger().Info("TRITONBACKEND_ModelInstanceFinalize", zap.String("instance", st.name))
	st.inst.Close()
	st.arena.release()
	return nil
}

// instanceModel returns the state of the model an instance belongs to.
func instanceModel(ti *C.TRITONBACKEND_ModelInstance) (*modelState, error) {
	var m *C.TRITONBACKEND_Model
	if err := goError("TRITONBACKEND_ModelInstanceModel", C.TRITONBACKEND_ModelInstanceModel(ti, &m)); err != nil {
		return nil, err
	}
	var h C.uintptr_t
	if err := goError("TRITONBACKEND_ModelState", C.sluice_model_state(m, &h)); err != nil {
		return nil, err
	}
	if h == 0 {
		return nil, &backend.Error{Code: backend.CodeInternal, Msg: "sluice: model has no state"}
	}
	return cgo.Handle(h).Value().(*modelState), nil
}

// instanceStateOf returns the state TRITONBACKEND_ModelInstanceInitialize
// stored for an instance.
func instanceStateOf(ti *C.TRITONBACKEND_ModelInstance) (*instanceState, error) {
	var h C.uintptr_t
	if err := goError("TRITONBACKEND_ModelInstanceState", C.sluice_instance_state(ti, &h)); err != nil {
		return nil, err
	}
	if h == 0 {
		return nil, &backend.Error{Code: backend.CodeInternal, Msg: "sluice: model instance has no state"}
	}
	st, ok := cgo.Handle(h).Value().(*instanceState)
	if !ok {
		return nil, &backend.Error{Code: backend.CodeInternal, Msg: fmt.Sprintf("sluice: model instance state is a %T", cgo.Handle(h).Value())}
	}
	return st, nil
}

// cNames keeps one C copy of each tensor name for the instance's life, so
// that looking up an input or making an output allocates nothing.
type cNames struct {
	mu sync.Mutex
	m  map[string]*C.char
}

func (n *cNames) get(name string) *C.char {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.m[name]
	if !ok {
		p = C.CString(name)
		n.m[name] = p
	}
	return p
}

func (n *cNames) free() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, p := range n.m {
		C.free(unsafe.Pointer(p))
		delete(n.m, name)
	}
}

// volatile reports whether b lies in memory a client can take away
// (faultsafe.Mappings), reading the mappings on the Execute's first call.
func (st *instanceState) volatile(b []byte) (bool, error) {
	st.mapsMu.Lock()
	defer st.mapsMu.Unlock()
	if !st.mapsLoaded {
		if err := st.maps.Load(); err != nil {
			return false, fmt.Errorf("reading the process's memory mappings: %w", err)
		}
		st.mapsLoaded = true
	}
	return st.maps.Volatile(uintptr(unsafe.Pointer(unsafe.SliceData(b))), len(b)), nil
}
