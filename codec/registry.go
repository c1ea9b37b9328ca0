package codec

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// Format is one registered image format: how to recognise it and how to make
// a decoder for it. Formats register themselves from init, as in Go's image
// package; servers never see file names, so recognition is by content only.
type Format struct {
	// Name names the format in headers and messages ("JPEG", "PNG").
	Name string
	// Match reports whether the leading bytes of an input are this format's
	// signature. It gets at most sniffLen bytes and must not retain them.
	Match func(magic []byte) bool
	// New makes a per-worker decoder. Nil marks a format that is recognised
	// but not supported: inputs of it fail with Unsupported, naming it.
	New func() (FormatDecoder, error)
}

// FormatDecoder decodes one format. Each worker owns its own; it is not safe
// for concurrent use.
type FormatDecoder interface {
	// Header reads the stored size and layout of src without decoding
	// pixels, and estimates what decoding it costs (Header.Work, .Memory).
	// It rejects, before anything large is allocated, images over lim
	// (see TooLargeErr, Limits) and inputs certain to fail, such as
	// truncated ones.
	Header(src []byte, lim Limits) (Header, error)
	// Decode decodes src, whose header h came from Header, into dst, which
	// holds exactly h.OutSize(o) bytes.
	Decode(dst, src []byte, h Header, o Options) error
	// Close releases what the decoder holds (native handles).
	Close()
}

// sniffLen is how many leading bytes Match functions see.
const sniffLen = 32

// The registry is copied on write: every decode sniffs, on every worker,
// and an atomic load keeps them from contending on a lock.
var (
	registerMu sync.Mutex
	formats    atomic.Pointer[[]Format]
)

func registered() []Format {
	if p := formats.Load(); p != nil {
		return *p
	}
	return nil
}

// Register adds a format. Formats are tried in registration order.
func Register(f Format) {
	registerMu.Lock()
	defer registerMu.Unlock()
	old := registered()
	for _, g := range old {
		if g.Name == f.Name {
			panic("codec: format registered twice: " + f.Name)
		}
	}
	fs := append(old[:len(old):len(old)], f)
	formats.Store(&fs)
}

// Formats lists the names of the registered formats, supported or not.
func Formats() []string {
	fs := registered()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

// sniff finds the format of src by its leading bytes; it returns the index
// of the format in the registry, or -1.
func sniff(src []byte) (int, Format) {
	magic := src
	if len(magic) > sniffLen {
		magic = magic[:sniffLen]
	}
	for i, f := range registered() {
		if f.Match(magic) {
			return i, f
		}
	}
	return -1, Format{}
}

// Sniff names the format of src, or returns "" when no registered format
// recognises it.
func Sniff(src []byte) string {
	_, f := sniff(src)
	return f.Name
}

func prefix(p string) func([]byte) bool {
	return func(b []byte) bool { return bytes.HasPrefix(b, []byte(p)) }
}

// Formats we recognise only to name them in an Unsupported error, instead of
// calling a GIF "not an image".
func init() {
	Register(Format{Name: "GIF", Match: func(b []byte) bool {
		return bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))
	}})
	Register(Format{Name: "JPEG XL", Match: func(b []byte) bool {
		return bytes.HasPrefix(b, []byte("\xff\x0a")) ||
			bytes.HasPrefix(b, []byte("\x00\x00\x00\x0cJXL \r\n\x87\n"))
	}})
	Register(Format{Name: "HEIF", Match: func(b []byte) bool { return isISOBMFFImage(b) && !isAVIF(b) }})
	Register(Format{Name: "QOI", Match: prefix("qoif")})
}

// isBMP checks "BM" and, since two letters alone would also match text, a
// known DIB header size at offset 14.
func isBMP(b []byte) bool {
	if len(b) < 18 || b[0] != 'B' || b[1] != 'M' {
		return false
	}
	switch uint32(b[14]) | uint32(b[15])<<8 | uint32(b[16])<<16 | uint32(b[17])<<24 {
	case 12, 16, 40, 52, 56, 64, 108, 124:
		return true
	}
	return false
}

// isISOBMFFImage recognises the "ftyp" box of HEIF files, AVIF among them.
func isISOBMFFImage(b []byte) bool {
	if len(b) < 12 || string(b[4:8]) != "ftyp" {
		return false
	}
	switch string(b[8:12]) {
	case "heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1", "avif", "avis":
		return true
	}
	return false
}

// isAVIF recognises AVIF's major brands, and generic HEIF brands (mif1,
// msf1) that list avif among the compatible brands Match gets to see.
func isAVIF(b []byte) bool {
	if !isISOBMFFImage(b) {
		return false
	}
	switch string(b[8:12]) {
	case "avif", "avis":
		return true
	case "mif1", "msf1":
		// Compatible brands follow the minor version, up to the box's end.
		end := min(len(b), int(binary.BigEndian.Uint32(b[:4])))
		for i := 16; i+4 <= end; i += 4 {
			if s := string(b[i : i+4]); s == "avif" || s == "avis" {
				return true
			}
		}
	}
	return false
}
