#include "shim.h"

#include <time.h>

uint64_t
sluice_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

TRITONSERVER_Error*
sluice_model_state(TRITONBACKEND_Model* model, uintptr_t* handle)
{
  void* state = NULL;
  TRITONSERVER_Error* err = TRITONBACKEND_ModelState(model, &state);
  *handle = (uintptr_t)state;
  return err;
}

TRITONSERVER_Error*
sluice_model_set_state(TRITONBACKEND_Model* model, uintptr_t handle)
{
  return TRITONBACKEND_ModelSetState(model, (void*)handle);
}

TRITONSERVER_Error*
sluice_instance_state(TRITONBACKEND_ModelInstance* instance, uintptr_t* handle)
{
  void* state = NULL;
  TRITONSERVER_Error* err = TRITONBACKEND_ModelInstanceState(instance, &state);
  *handle = (uintptr_t)state;
  return err;
}

TRITONSERVER_Error*
sluice_instance_set_state(TRITONBACKEND_ModelInstance* instance, uintptr_t handle)
{
  return TRITONBACKEND_ModelInstanceSetState(instance, (void*)handle);
}

TRITONSERVER_Error*
sluice_metric_new(
    TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
    const char* const* keys, const char* const* values, size_t n)
{
  const TRITONSERVER_Parameter* labels[SLUICE_MAX_LABELS] = {NULL};
  TRITONSERVER_Error* err = NULL;
  *metric = NULL;
  if (n > SLUICE_MAX_LABELS) {
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_INTERNAL, "sluice: too many metric labels");
  }
  for (size_t i = 0; i < n && err == NULL; i++) {
    labels[i] =
        TRITONSERVER_ParameterNew(keys[i], TRITONSERVER_PARAMETER_STRING, values[i]);
    if (labels[i] == NULL) {
      err = TRITONSERVER_ErrorNew(
          TRITONSERVER_ERROR_INTERNAL, "sluice: TRITONSERVER_ParameterNew failed");
    }
  }
  if (err == NULL) {
    err = TRITONSERVER_MetricNew(metric, family, labels, n);
  }
  for (size_t i = 0; i < n; i++) {
    if (labels[i] != NULL) {
      TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter*)labels[i]);
    }
  }
  return err;
}

// Every function declared in triton.h. A weak reference the dynamic linker
// could not bind reads as NULL here; symbols_test.go checks that this list
// and the library's undefined TRITON* symbols are the same set.
#define SLUICE_SYMBOL(f) { #f, (const void*)&f }
static const struct {
  const char* name;
  const void* addr;
} sluice_symbols[] = {
    SLUICE_SYMBOL(TRITONSERVER_ErrorNew),
    SLUICE_SYMBOL(TRITONSERVER_ErrorDelete),
    SLUICE_SYMBOL(TRITONSERVER_ErrorCode),
    SLUICE_SYMBOL(TRITONSERVER_ErrorMessage),
    SLUICE_SYMBOL(TRITONSERVER_LogIsEnabled),
    SLUICE_SYMBOL(TRITONSERVER_LogMessage),
    SLUICE_SYMBOL(TRITONSERVER_MessageNewFromSerializedJson),
    SLUICE_SYMBOL(TRITONSERVER_MessageDelete),
    SLUICE_SYMBOL(TRITONSERVER_MessageSerializeToJson),
    SLUICE_SYMBOL(TRITONSERVER_ParameterNew),
    SLUICE_SYMBOL(TRITONSERVER_ParameterDelete),
    SLUICE_SYMBOL(TRITONSERVER_MetricFamilyNew),
    SLUICE_SYMBOL(TRITONSERVER_MetricFamilyDelete),
    SLUICE_SYMBOL(TRITONSERVER_MetricNew),
    SLUICE_SYMBOL(TRITONSERVER_MetricDelete),
    SLUICE_SYMBOL(TRITONSERVER_MetricIncrement),
    SLUICE_SYMBOL(TRITONBACKEND_ApiVersion),
    SLUICE_SYMBOL(TRITONBACKEND_BackendName),
    SLUICE_SYMBOL(TRITONBACKEND_ModelName),
    SLUICE_SYMBOL(TRITONBACKEND_ModelVersion),
    SLUICE_SYMBOL(TRITONBACKEND_ModelRepository),
    SLUICE_SYMBOL(TRITONBACKEND_ModelConfig),
    SLUICE_SYMBOL(TRITONBACKEND_ModelAutoCompleteConfig),
    SLUICE_SYMBOL(TRITONBACKEND_ModelSetConfig),
    SLUICE_SYMBOL(TRITONBACKEND_ModelState),
    SLUICE_SYMBOL(TRITONBACKEND_ModelSetState),
    SLUICE_SYMBOL(TRITONBACKEND_ModelInstanceName),
    SLUICE_SYMBOL(TRITONBACKEND_ModelInstanceKind),
    SLUICE_SYMBOL(TRITONBACKEND_ModelInstanceDeviceId),
    SLUICE_SYMBOL(TRITONBACKEND_ModelInstanceModel),
    SLUICE_SYMBOL(TRITONBACKEND_ModelInstanceState),
    SLUICE_SYMBOL(TRITONBACKEND_ModelInstanceSetState),
    SLUICE_SYMBOL(TRITONBACKEND_ModelInstanceReportStatistics),
    SLUICE_SYMBOL(TRITONBACKEND_ModelInstanceReportBatchStatistics),
    SLUICE_SYMBOL(TRITONBACKEND_RequestInput),
    SLUICE_SYMBOL(TRITONBACKEND_InputProperties),
    SLUICE_SYMBOL(TRITONBACKEND_InputBuffer),
    SLUICE_SYMBOL(TRITONBACKEND_RequestOutputCount),
    SLUICE_SYMBOL(TRITONBACKEND_RequestOutputName),
    SLUICE_SYMBOL(TRITONBACKEND_RequestIsCancelled),
    SLUICE_SYMBOL(TRITONBACKEND_RequestRelease),
    SLUICE_SYMBOL(TRITONBACKEND_ResponseNew),
    SLUICE_SYMBOL(TRITONBACKEND_ResponseDelete),
    SLUICE_SYMBOL(TRITONBACKEND_ResponseOutput),
    SLUICE_SYMBOL(TRITONBACKEND_OutputBuffer),
    SLUICE_SYMBOL(TRITONBACKEND_ResponseSend),
};

size_t
sluice_symbol_count(void)
{
  return sizeof(sluice_symbols) / sizeof(sluice_symbols[0]);
}

const char*
sluice_symbol_name(size_t i)
{
  return i < sluice_symbol_count() ? sluice_symbols[i].name : NULL;
}

const char*
sluice_missing_symbol(void)
{
  for (size_t i = 0; i < sluice_symbol_count(); i++) {
    if (sluice_symbols[i].addr == NULL) {
      return sluice_symbols[i].name;
    }
  }
  return NULL;
}
