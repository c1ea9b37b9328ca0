package codec

import "strings"

// How libjpeg's complaints become causes.
//
// Decoding (sl_decompress in jpeg.go) stops at the first warning that
// means damage and reports its text; it goes on past harmless ones
// (sl_harmless, by message code, lists the same warnings as the harmless
// texts below). Header reading (tjDecompressHeader3) reports the first
// warning's text, or the fatal error's, which overwrites it. The rule is
// by text:
//
//   - a known warning text: harmless to the pixels (junk between markers,
//     odd JFIF/Adobe version fields, ignored ICC or SOS fields) is
//     accepted; "Premature end of JPEG file" is Truncated, and every
//     warning about entropy-coded data (bad Huffman or arithmetic code, a
//     segment ending early, lost restart sync, an inconsistent
//     progression) Corrupt, since those leave garbage pixels;
//   - any other text is a fatal error: Unsupported for what libjpeg-turbo
//     cannot do, TooLarge for its dimension limits, Corrupt otherwise.
type jpegVerdict uint8

const (
	jpegOK jpegVerdict = iota
	jpegHarmless
	jpegBad
)

var jpegWarnings = []struct {
	prefix, contains string
	cause            Cause // "" for harmless
	why              string
}{
	{"Premature end of JPEG file", "", Truncated, "JPEG data ends early"},
	{"Corrupt JPEG data: bad Huffman code", "", Corrupt, "JPEG scan data is corrupt"},
	{"Corrupt JPEG data: bad arithmetic code", "", Corrupt, "JPEG scan data is corrupt"},
	{"Corrupt JPEG data: premature end of data segment", "", Corrupt, "JPEG scan data is corrupt"},
	{"Corrupt JPEG data: found marker", "", Corrupt, "JPEG scan data is corrupt"},
	{"Inconsistent progression sequence", "", Corrupt, "JPEG progression is corrupt"},
	{"Application transferred too many scanlines", "", Corrupt, "JPEG decode failed"},
	{"Corrupt JPEG data: bad ICC marker", "", "", ""},
	{"Corrupt JPEG data: ", "extraneous bytes before marker", "", ""},
	{"Warning: unknown JFIF revision number", "", "", ""},
	{"Unknown Adobe color transform code", "", "", ""},
	{"Invalid SOS parameters for sequential JPEG", "", "", ""},
}

var jpegFatal = []struct {
	prefix string
	cause  Cause
	why    string
}{
	{"Unsupported JPEG process", Unsupported, "JPEG coding process is not supported"},
	{"Unsupported JPEG data precision", Unsupported, "JPEG sample precision is not supported"},
	{"Unsupported color conversion request", Unsupported, "JPEG colour space is not supported"},
	{"Too many color components", Unsupported, "JPEG component count is not supported"},
	{"Empty JPEG image (DNL not supported)", Unsupported, "JPEG with a DNL marker is not supported"},
	{"Requested feature was omitted at compile time", Unsupported, "JPEG feature is not supported"},
	{"tjDecompressHeader3(): Could not determine colorspace", Unsupported, "JPEG colour space is not supported"},
	{"Progressive JPEG image has more than", Unsupported, "JPEG has too many progressive scans"},
	{"Maximum supported image dimension", TooLarge, "JPEG is too large"},
	{"Image too wide for this implementation", TooLarge, "JPEG is too large"},
}

// classifyJPEG turns the message of a failed TurboJPEG call into a
// verdict; for jpegBad it also gives the error to return. fatal is set when
// tjGetErrorCode said TJERR_FATAL, which is then certain.
func classifyJPEG(msg string, fatal bool) (jpegVerdict, *Error) {
	for _, w := range jpegWarnings {
		if !fatal && strings.HasPrefix(msg, w.prefix) && strings.Contains(msg, w.contains) {
			if w.cause == "" {
				return jpegHarmless, nil
			}
			return jpegBad, formatErr(w.cause, "JPEG", "%s (%s)", w.why, msg)
		}
	}
	for _, f := range jpegFatal {
		if strings.HasPrefix(msg, f.prefix) {
			return jpegBad, formatErr(f.cause, "JPEG", "%s (%s)", f.why, msg)
		}
	}
	return jpegBad, formatErr(Corrupt, "JPEG", "JPEG decode failed (%s)", msg)
}
