package main

/*
#include "triton.h"
*/
import "C"

// dataTypeNames are Triton's data type names without the TYPE_ prefix, as
// backend.Input and backend.Response use them.
var dataTypeNames = [...]string{
	C.TRITONSERVER_TYPE_INVALID: "INVALID",
	C.TRITONSERVER_TYPE_BOOL:    "BOOL",
	C.TRITONSERVER_TYPE_UINT8:   "UINT8",
	C.TRITONSERVER_TYPE_UINT16:  "UINT16",
	C.TRITONSERVER_TYPE_UINT32:  "UINT32",
	C.TRITONSERVER_TYPE_UINT64:  "UINT64",
	C.TRITONSERVER_TYPE_INT8:    "INT8",
	C.TRITONSERVER_TYPE_INT16:   "INT16",
	C.TRITONSERVER_TYPE_INT32:   "INT32",
	C.TRITONSERVER_TYPE_INT64:   "INT64",
	C.TRITONSERVER_TYPE_FP16:    "FP16",
	C.TRITONSERVER_TYPE_FP32:    "FP32",
	C.TRITONSERVER_TYPE_FP64:    "FP64",
	C.TRITONSERVER_TYPE_BYTES:   "BYTES",
	C.TRITONSERVER_TYPE_BF16:    "BF16",
}

// dataTypeSizes are element sizes in bytes; 0 where there is none (BYTES
// elements vary in length).
var dataTypeSizes = [...]int64{
	C.TRITONSERVER_TYPE_BOOL:   1,
	C.TRITONSERVER_TYPE_UINT8:  1,
	C.TRITONSERVER_TYPE_UINT16: 2,
	C.TRITONSERVER_TYPE_UINT32: 4,
	C.TRITONSERVER_TYPE_UINT64: 8,
	C.TRITONSERVER_TYPE_INT8:   1,
	C.TRITONSERVER_TYPE_INT16:  2,
	C.TRITONSERVER_TYPE_INT32:  4,
	C.TRITONSERVER_TYPE_INT64:  8,
	C.TRITONSERVER_TYPE_FP16:   2,
	C.TRITONSERVER_TYPE_FP32:   4,
	C.TRITONSERVER_TYPE_FP64:   8,
	C.TRITONSERVER_TYPE_BYTES:  0,
	C.TRITONSERVER_TYPE_BF16:   2,
}

// dataTypeName names a Triton data type; unknown values (a newer Triton)
// read as "INVALID", which backend rejects with its own message.
func dataTypeName(dt C.TRITONSERVER_DataType) string {
	if int(dt) < len(dataTypeNames) {
		return dataTypeNames[dt]
	}
	return "INVALID"
}

// dataTypeByName is the inverse of dataTypeName, with the element size.
// ok is false for unknown names and for INVALID.
func dataTypeByName(name string) (dt C.TRITONSERVER_DataType, size int64, ok bool) {
	for i, n := range dataTypeNames {
		if n == name && i != C.TRITONSERVER_TYPE_INVALID {
			return C.TRITONSERVER_DataType(i), dataTypeSizes[i], true
		}
	}
	return C.TRITONSERVER_TYPE_INVALID, 0, false
}

// instanceKindNames are the model config's names of instance group kinds.
var instanceKindNames = [...]string{
	C.TRITONSERVER_INSTANCEGROUPKIND_AUTO:  "KIND_AUTO",
	C.TRITONSERVER_INSTANCEGROUPKIND_CPU:   "KIND_CPU",
	C.TRITONSERVER_INSTANCEGROUPKIND_GPU:   "KIND_GPU",
	C.TRITONSERVER_INSTANCEGROUPKIND_MODEL: "KIND_MODEL",
}

func instanceKindName(k C.TRITONSERVER_InstanceGroupKind) string {
	if int(k) < len(instanceKindNames) {
		return instanceKindNames[k]
	}
	return "KIND_UNKNOWN"
}
