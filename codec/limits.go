package codec

import "fmt"

// Limits bound what decoding one image may cost. A format's Header checks
// them from what the headers say, before anything large is allocated or
// decoded, and fails with TooLarge naming the limit. A zero field is no
// limit.
type Limits struct {
	// MaxPixels bounds the stored width × height, and any other raster a
	// format decodes on the way (a WebP animation's canvas, an AVIF grid).
	MaxPixels int
	// MaxWork bounds the decode work Header estimates (Header.Work), in
	// work units: about one per sample a decoder visits, a third of a
	// nanosecond of one core (see JPEGWorkPerPixel).
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
