package codec

import "fmt"

// Limits bound what decoding one image may cost. A format's Header checks
// them from what the headers say, before anything large is allocated or
// decoded, and fails with TooLarge naming the limit. A zero field is no
// limit. They are the operators' limits too (ops.Limits is this type), so
// that decode hands the codec the limits it was given, unconverted.
type Limits struct {
	// MaxBytes bounds an image's encoded bytes. Header does not check it:
	// the caller refuses an input over it before a decoder reads a byte
	// (ops.DecodeHeader).
	MaxBytes int
	// MaxPixels bounds the stored width × height, and any other raster a
	// format decodes on the way (a WebP animation's canvas, an AVIF grid).
	MaxPixels int
	// MaxWork bounds the decode work Header estimates (Header.Work), in
	// work units: about one per sample a decoder visits, a third of a
	// nanosecond of one core (see JPEGWorkPerPixel); the operators charge
	// their own work against it as well (ops.Ctx.Charge).
	MaxWork int64
	// MaxMemory bounds the memory Header estimates the decoder allocates
	// beside the output (Header.Memory): a C library's working buffers,
	// tag data, tables.
	MaxMemory int64
}

// The defaults of the work and memory limits, per pixel of the pixel limit
// (ops.DefaultLimits: 64 MP, so 6.4 G work units, about 2 s of one core,
// and 1 GiB).
const (
	WorkPerPixel   = JPEGWorkPerPixel
	MemoryPerPixel = 16
)

// LimitsFor is the pixel limit with the work and memory limits it implies.
func LimitsFor(maxPixels int) Limits {
	return Limits{MaxPixels: maxPixels, MaxWork: int64(maxPixels) * WorkPerPixel, MaxMemory: int64(maxPixels) * MemoryPerPixel}
}

// baseWorkPerPixel is the least work Header reports for a decoded pixel:
// writing it out and a pass of whatever the format does per pixel.
const baseWorkPerPixel = 4

// overWork is the TooLarge error for an image whose estimated decode
// work exceeds l.MaxWork; nil when it fits. detail says what was counted;
// it is called only for a refusal, so that every header that fits (the
// hot path) makes no message.
func (l Limits) overWork(format string, need int64, detail func() string) *Error {
	if l.MaxWork <= 0 || need <= l.MaxWork {
		return nil
	}
	return formatErr(TooLarge, format, "%s image needs about %d units of decode work (%s), over the work limit of %d",
		format, need, detail(), l.MaxWork)
}

// overMemory is the TooLarge error for an image whose decoder would
// allocate about need bytes; nil when it fits. detail as for overWork.
func (l Limits) overMemory(format string, need int64, detail func() string) *Error {
	if l.MaxMemory <= 0 || need <= l.MaxMemory {
		return nil
	}
	return formatErr(TooLarge, format, "%s image needs about %d bytes of decoder memory (%s), over the memory limit of %d",
		format, need, detail(), l.MaxMemory)
}

// checkEstimates completes h's estimates (at least baseWorkPerPixel a
// pixel) and checks them against l, for formats that did not refuse the
// image themselves.
func (l Limits) checkEstimates(h *Header) error {
	h.Work = max(h.Work, int64(h.Pixels())*baseWorkPerPixel)
	size := func() string { return fmt.Sprintf("%dx%d", h.Width, h.Height) }
	if e := l.overWork(h.Format, h.Work, size); e != nil {
		return e
	}
	if e := l.overMemory(h.Format, h.Memory, size); e != nil {
		return e
	}
	return nil
}

// allocCap is the most a C library whose allocations are counted
// (capalloc.c: OpenJPEG, libtiff) may hold at once while it reads or
// decodes an image whose memory was estimated at estimate bytes: the
// estimate with a margin for its error (measured peaks stay within the
// estimate: TestJP2PeakWithinEstimate, TestTIFFPeakWithinEstimate). An
// estimate wrong by more fails the image as too large instead of taking
// the server's memory; 0 (no estimate) is no cap.
func allocCap(estimate int64) int64 {
	if estimate <= 0 {
		return 0
	}
	return estimate + estimate/2 + allocCapSlack
}

// allocCapSlack: a library's fixed allocations (codec state, stream
// buffers), which the estimates do not count. A variable for tests.
var allocCapSlack int64 = 4 << 20

// capError is the TooLarge error of a decode that ran into its cap.
func capError(format string, limit int64) *Error {
	return formatErr(TooLarge, format, "%s decoder needed more than its cap of %d bytes (out of memory)", format, limit)
}
