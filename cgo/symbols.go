package main

/*
#include "shim.h"
*/
import "C"

// tritonSymbols lists the Triton functions this library references (the
// declarations of triton.h). It only reads names, so tests may call it.
func tritonSymbols() []string {
	n := int(C.sluice_symbol_count())
	names := make([]string, n)
	for i := range names {
		names[i] = C.GoString(C.sluice_symbol_name(C.size_t(i)))
	}
	return names
}

// missingTritonSymbol names the first Triton function the dynamic linker
// did not bind, or returns "" when all are bound.
func missingTritonSymbol() string {
	if p := C.sluice_missing_symbol(); p != nil {
		return C.GoString(p)
	}
	return ""
}
