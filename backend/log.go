package backend

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Logging policy. Model loads and unloads are logged at Info: they are
// rare and an operator wants to see what was loaded. Anything a request
// can cause — a corrupt image, a malformed buffer — is logged at Debug
// only (Triton's verbose log when cgo's core maps it): the client gets the
// error in its response, and a hostile client must not be able to flood
// the server's log.

// orNop returns l, or a logger that discards everything. Tests and tools
// that pass no logger get silence rather than a default zap configuration
// writing to stderr.
func orNop(l *zap.Logger) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return l
}

// logModel logs the loaded model's summary.
func logModel(l *zap.Logger, m *Model, file string) {
	l.Info("sluice model loaded",
		zap.String("model", m.Name),
		zap.Int64("version", m.Version),
		zap.String("pipeline", m.Pipeline.Def.GetName()),
		zap.String("file", file),
		zap.Stringers("inputs", m.Inputs),
		zap.Stringers("outputs", m.Outputs),
		zap.Int64("max_batch_size", m.MaxBatchSize),
		workersField(m.Params.Workers),
		zap.Int("max_image_pixels", m.Params.Limits.MaxPixels),
		zap.Int64("max_image_work", m.Params.Limits.MaxWork),
		zap.Int64("max_image_memory", m.Params.Limits.MaxMemory),
		zap.Int("max_image_bytes", m.Params.Limits.MaxBytes),
		zap.Bool("auto_completed", m.NewConfig != nil),
	)
}

// workersField is the workers parameter, left out when the executor
// decides.
func workersField(n int) zap.Field {
	if n == 0 {
		return zap.Skip()
	}
	return zap.Int("workers", n)
}

// logRequestError logs one failed request at Debug. Check first, so that
// a disabled level costs no field allocations on the Execute path.
func logRequestError(l *zap.Logger, req int, err error) {
	if ce := l.Check(zapcore.DebugLevel, "sluice request failed"); ce != nil {
		ce.Write(zap.Int("request", req), zap.Error(err))
	}
}
