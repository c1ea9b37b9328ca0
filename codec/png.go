package codec

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"

	"github.com/sluice-dev/sluice/internal/reuse"
)

const pngMagic = "\x89PNG\r\n\x1a\n"

func init() {
	Register(Format{
		Name:  "PNG",
		Match: func(b []byte) bool { return bytes.HasPrefix(b, []byte(pngMagic)) },
		New:   func() (FormatDecoder, error) { return &pngDecoder{}, nil },
	})
}

// pngDecoder decodes PNG with Go's image/png, which allocates its image
// per call; only the conversion row is reused.
type pngDecoder struct {
	r   bytes.Reader
	row []byte // one row as 8-bit non-premultiplied RGBA
}

func (d *pngDecoder) Close() {}

// maxDeflateRatio bounds how much deflate can expand: a 258-byte match
// costs at least 2 bits, so 1032:1, with room for zlib framing.
const maxDeflateRatio = 1032

func (d *pngDecoder) Header(src []byte, lim Limits) (Header, error) {
	maxPixels := lim.MaxPixels
	d.r.Reset(src)
	cfg, cerr := png.DecodeConfig(&d.r)
	if cerr != nil {
		return Header{}, pngError(cerr)
	}
	if err := TooLargeErr("PNG", cfg.Width, cfg.Height, maxPixels); err != nil {
		return Header{}, err
	}
	idat, ended, err := walkPNG(src)
	if err != nil {
		return Header{}, err
	}
	if ended {
		// image/png reads up to IEND and fails without it; say so now,
		// before allocating the image.
		return Header{}, formatErr(Truncated, "PNG", "PNG data ends early, before the IEND chunk")
	}
	// A forged header can claim a huge image in a few bytes, and image/png
	// allocates the whole image before reading pixel data: reject image
	// data too short to inflate to the claimed size.
	bpp := pngBitsPerPixel(src)
	need := uint64(cfg.Height) * ((uint64(cfg.Width)*bpp + 7) / 8)
	if uint64(idat)*maxDeflateRatio+64 < need {
		return Header{}, formatErr(Corrupt, "PNG", "PNG image data (%d bytes) is too short for %dx%d pixels",
			idat, cfg.Width, cfg.Height)
	}
	return Header{Width: cfg.Width, Height: cfg.Height, Orientation: 1, Mode: pngMode(src)}, nil
}

// pngMode is the mode Pillow opens a PNG in (PngImagePlugin's _MODES), as
// far as Mode tells them apart, from IHDR's bit depth and colour type:
// "1" for 1-bit grey, "P" for a palette, "LA" or "RGBA" with an alpha
// channel (16-bit grey and alpha opens as "RGBA"). A tRNS chunk changes
// no mode: a palette image stays "P", a grey or RGB one "L" or "RGB".
func pngMode(b []byte) Mode {
	if len(b) < 26 {
		return ModeDirect
	}
	switch depth, typ := b[24], b[25]; {
	case typ == 3, typ == 0 && depth == 1:
		return ModeNearest
	case typ == 4, typ == 6:
		return ModeAlpha
	}
	return ModeDirect
}

// walkPNG sums the lengths of the IDAT chunks up to IEND, without checking
// CRCs (image/png does). ended reports data ending before IEND.
func walkPNG(b []byte) (idat int64, ended bool, err error) {
	pos := len(pngMagic)
	for {
		if pos+8 > len(b) {
			return idat, true, nil
		}
		n := int64(binary.BigEndian.Uint32(b[pos:]))
		typ := string(b[pos+4 : pos+8])
		if n > 1<<31-1 {
			return 0, false, formatErr(Corrupt, "PNG", "PNG chunk %q has a bogus length %d", typ, n)
		}
		if int64(pos)+12+n > int64(len(b)) {
			return idat, true, nil
		}
		switch typ {
		case "IDAT":
			idat += n
		case "IEND":
			return idat, false, nil
		}
		pos += 12 + int(n)
	}
}

// pngBitsPerPixel reads IHDR's bit depth and colour type; DecodeConfig has
// validated both. 64 for anything unexpected errs on the safe side.
func pngBitsPerPixel(b []byte) uint64 {
	if len(b) < 26 {
		return 64
	}
	depth := uint64(b[24])
	switch b[25] {
	case 0, 3: // grey, palette
		return depth
	case 2: // RGB
		return 3 * depth
	case 4: // grey + alpha
		return 2 * depth
	case 6: // RGBA
		return 4 * depth
	}
	return 64
}

func (d *pngDecoder) Decode(dst, src []byte, h Header, o Options) (err error) {
	defer func() {
		// image/png has no known panics, but it parses hostile bytes: a
		// panic must become a per-sample error, not a dead server.
		if r := recover(); r != nil {
			err = formatErr(Corrupt, "PNG", "PNG decoder failed: %v", r)
		}
	}()
	d.r.Reset(src)
	img, derr := png.Decode(&d.r)
	if derr != nil {
		return pngError(derr)
	}
	b := img.Bounds()
	if b.Dx() != h.Width || b.Dy() != h.Height {
		return formatErr(Corrupt, "PNG", "PNG decoded to %dx%d, header said %dx%d", b.Dx(), b.Dy(), h.Width, h.Height)
	}
	d.row = reuse.Room(d.row, 4*h.Width)
	convertImage(dst, img, o.color(), d.row)
	return nil
}

// pngError classifies image/png's errors.
func pngError(err error) error {
	var fe png.FormatError
	var ue png.UnsupportedError
	var ce flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return formatErr(Truncated, "PNG", "PNG data ends early (%v)", err)
	case errors.As(err, &fe) && string(fe) == "invalid checksum":
		return formatErr(Corrupt, "PNG", "PNG chunk CRC mismatch (%v)", err)
	case errors.As(err, &ue):
		return formatErr(Unsupported, "PNG", "PNG variant is not supported (%v)", err)
	case errors.Is(err, zlib.ErrChecksum), errors.Is(err, zlib.ErrHeader), errors.As(err, &ce):
		return formatErr(Corrupt, "PNG", "PNG image data is corrupt (%v)", err)
	case errors.Is(err, image.ErrFormat):
		return formatErr(NotImage, "PNG", "not a PNG (%v)", err)
	}
	return formatErr(Corrupt, "PNG", "PNG is corrupt (%v)", fmt.Sprint(err))
}
