package codec

// counted is a decoder whose C library's allocations capalloc.c counts:
// peak is the most its last call held.
type counted interface {
	FormatDecoder
	peak() int64
}

func (d *jp2Decoder) peak() int64  { return int64(d.st.peak) }
func (d *tiffDecoder) peak() int64 { return int64(d.st.peak) }

// decodePeaks reads src's header at the default limits and decodes it to
// RGBA with d, and gives the peak of each call.
func decodePeaks(d counted, src []byte) (h Header, headerPeak, peak int64, err error) {
	if h, err = d.Header(src, LimitsFor(64<<20)); err != nil {
		return h, 0, 0, err
	}
	headerPeak = d.peak()
	err = d.Decode(make([]byte, h.Width*h.Height*4), src, h, Options{Color: RGBA})
	return h, headerPeak, d.peak(), err
}
