package codec

// tiffCauses classifies libtiff's first error text by what it contains;
// the first match wins, and anything else is Corrupt.
var tiffCauses = []msgCause{
	{"Not a TIFF", NotImage},
	{"Cannot read TIFF header", Truncated},
	{"Read error", Truncated},
	{"Can not read", Truncated},
	{"IO error", Truncated},
	{"Unexpected end", Truncated},
	{"Not enough data", Truncated},
	{"past end", Truncated},
	{"Premature end", Truncated},
	{"not configured", Unsupported},
	{"not implemented", Unsupported},
	{"Sorry", Unsupported},
	{"exceeds the limit", TooLarge},
	{"Memory allocation of", TooLarge},
	{"Maximum", TooLarge},
}

// tiffError turns a failed call's message into an error.
func tiffError(msg string) *Error { return messageError("TIFF", tiffCauses, msg) }
