package codec

// jp2Causes classifies OpenJPEG's first error text by what it contains;
// the first match wins, and anything else is Corrupt.
var jp2Causes = []msgCause{
	{"Stream too short", Truncated},
	{"Stream error", Truncated},
	{"truncated", Truncated},
	{"inconsistent with stream length", Truncated},
	{"end of stream", Truncated},
	{"not supported", Unsupported},
	{"Unsupported", Unsupported},
	{"unsupported", Unsupported},
}

// jp2Error turns a failed call's message into an error.
func jp2Error(msg string) *Error { return messageError("JPEG 2000", jp2Causes, msg) }
