// Small C helpers for the Go side: things cgo cannot express cleanly.
#ifndef SLUICE_SHIM_H
#define SLUICE_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "triton.h"

// Hidden: these are for Go in this library, not part of its interface.
#define SLUICE_INTERNAL __attribute__((visibility("hidden")))

// CLOCK_MONOTONIC in nanoseconds: the clock of Triton's statistics
// (std::chrono::steady_clock on Linux).
SLUICE_INTERNAL uint64_t sluice_now_ns(void);

// Model and instance state is a runtime/cgo.Handle, an integer, stored in
// Triton's void* slot. Converting here keeps integer<->pointer casts out
// of Go, where they would look like a misuse of unsafe.Pointer.
SLUICE_INTERNAL TRITONSERVER_Error* sluice_model_state(
    TRITONBACKEND_Model* model, uintptr_t* handle);
SLUICE_INTERNAL TRITONSERVER_Error* sluice_model_set_state(
    TRITONBACKEND_Model* model, uintptr_t handle);
SLUICE_INTERNAL TRITONSERVER_Error* sluice_instance_state(
    TRITONBACKEND_ModelInstance* instance, uintptr_t* handle);
SLUICE_INTERNAL TRITONSERVER_Error* sluice_instance_set_state(
    TRITONBACKEND_ModelInstance* instance, uintptr_t handle);

// A metric of family with n labels keys[i]=values[i] (C strings), the
// labels made and deleted here. At most SLUICE_MAX_LABELS labels.
#define SLUICE_MAX_LABELS 4
SLUICE_INTERNAL TRITONSERVER_Error* sluice_metric_new(
    TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
    const char* const* keys, const char* const* values, size_t n);

// The Triton functions of triton.h, by name: how many, the i-th name, and
// the name of the first one the dynamic linker left unbound (NULL if all
// are bound).
SLUICE_INTERNAL size_t sluice_symbol_count(void);
SLUICE_INTERNAL const char* sluice_symbol_name(size_t i);
SLUICE_INTERNAL const char* sluice_missing_symbol(void);

#endif  // SLUICE_SHIM_H
