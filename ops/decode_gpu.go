package ops

import "github.com/sluice-dev/sluice/codec"

// DecodeHeader reads one encoded image's header with the checks and
// messages of decode's Run (byte limit, format, pixel limit), for the GPU
// executor, which decodes elsewhere.
func DecodeHeader(dec *codec.Decoder, src []byte, lim Limits) (codec.Header, error) {
	if lim.MaxBytes > 0 && len(src) > lim.MaxBytes {
		return codec.Header{}, Errorf(TooLarge, "encoded image is %d bytes, over the limit of %d", len(src), lim.MaxBytes)
	}
	h, err := dec.Header(src, lim.MaxPixels)
	if err != nil {
		return h, decodeError(err)
	}
	return h, nil
}

// DecodeError gives a codec failure decode's per-sample error form.
func DecodeError(err error) error { return decodeError(err) }
