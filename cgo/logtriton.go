package main

/*
#include <stdlib.h>
#include "triton.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// tritonSink writes log lines into Triton's log with TRITONSERVER_LogMessage.
type tritonSink struct{}

// tritonLevel maps zap's levels onto Triton's: Debug (and anything finer)
// is verbose, Error and everything above it is an error.
func tritonLevel(l zapcore.Level) C.TRITONSERVER_LogLevel {
	switch {
	case l < zapcore.InfoLevel:
		return C.TRITONSERVER_LOG_VERBOSE
	case l == zapcore.InfoLevel:
		return C.TRITONSERVER_LOG_INFO
	case l == zapcore.WarnLevel:
		return C.TRITONSERVER_LOG_WARN
	default:
		return C.TRITONSERVER_LOG_ERROR
	}
}

// Enabled asks Triton, so that disabled levels cost one call and no
// formatting.
func (tritonSink) Enabled(l zapcore.Level) bool {
	return bool(C.TRITONSERVER_LogIsEnabled(tritonLevel(l)))
}

func (tritonSink) Write(l zapcore.Level, file string, line int, msg string) {
	cfile := C.CString(file)
	defer C.free(unsafe.Pointer(cfile))
	cmsg := C.CString(msg)
	defer C.free(unsafe.Pointer(cmsg))
	// A logging failure has nowhere to be reported; drop it.
	if e := C.TRITONSERVER_LogMessage(tritonLevel(l), cfile, C.int(line), cmsg); e != nil {
		C.TRITONSERVER_ErrorDelete(e)
	}
}

// theLogger is the backend-wide logger, set by TRITONBACKEND_Initialize.
// Before that (and in tests) it discards everything.
var theLogger atomic.Pointer[zap.Logger]

func logger() *zap.Logger {
	if l := theLogger.Load(); l != nil {
		return l
	}
	return zap.NewNop()
}
