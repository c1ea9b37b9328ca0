package codec

import "strings"

// jp2Causes classifies OpenJPEG's first error text by what it contains;
// the first match wins, and anything else is Corrupt.
var jp2Causes = []struct {
	contains string
	cause    Cause
}{
	{"Stream too short", Truncated},
	{"Stream error", Truncated},
	{"truncated", Truncated},
	{"inconsistent with stream length", Truncated},
	{"end of stream", Truncated},
	{"Not enough memory", TooLarge},
	{"not supported", Unsupported},
	{"Unsupported", Unsupported},
	{"unsupported", Unsupported},
}

// jp2Error turns a failed OpenJPEG call's message into an error.
func jp2Error(msg string) *Error {
	if msg == "" {
		msg = "no message"
	}
	for _, c := range jp2Causes {
		if strings.Contains(msg, c.contains) {
			return formatErr(c.cause, "JPEG 2000", "JPEG 2000 decode failed (%s)", msg)
		}
	}
	return formatErr(Corrupt, "JPEG 2000", "JPEG 2000 decode failed (%s)", msg)
}
