// Package codec decodes encoded images (JPEG through libjpeg-turbo, PNG
// through Go's image/png, WebP through libwebp, AVIF through its own
// container reader and dav1d) into interleaved HWC uint8 buffers.
//
// Formats register themselves and are recognised by content, never by file
// name. A Decoder is per-worker state: it owns native handles and scratch
// buffers, so that decoding JPEGs in steady state allocates nothing.
// Every failure is an *Error whose Cause tells a truncated upload from a
// corrupt, unsupported, oversized or non-image one.
package codec

import (
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/internal/reuse"
)

// Color is the pixel layout of decoded output, and what the channels of an
// image tensor hold (package ops aliases it). NoColor marks what is not an
// image; as Options.Color it means RGB.
type Color uint8

const (
	NoColor Color = iota
	RGB
	BGR
	Gray
	RGBA
	BGRA
)

var colorNames = [...]string{NoColor: "NONE", RGB: "RGB", BGR: "BGR", Gray: "GRAY", RGBA: "RGBA", BGRA: "BGRA"}

func (c Color) String() string {
	if int(c) < len(colorNames) {
		return colorNames[c]
	}
	return fmt.Sprintf("Color(%d)", uint8(c))
}

// Channels is the number of bytes per pixel, 0 for NoColor or an invalid
// colour.
func (c Color) Channels() int {
	switch c {
	case Gray:
		return 1
	case RGB, BGR:
		return 3
	case RGBA, BGRA:
		return 4
	}
	return 0
}

// ParseColor reads a colour name, case-insensitively.
func ParseColor(s string) (Color, error) {
	for c, n := range colorNames {
		if c != int(NoColor) && strings.EqualFold(s, n) {
			return Color(c), nil
		}
	}
	return NoColor, fmt.Errorf("unknown colour %q (want RGB, BGR, GRAY, RGBA or BGRA)", s)
}

// Options says how to decode.
type Options struct {
	// Color of the output; zero means RGB. Alpha is kept only for RGBA and
	// BGRA (opaque 255 where the image has none).
	Color Color
	// Scale decodes at Scale/8 of the stored size in the DCT domain, for
	// formats whose Header says Scalable; 0 or anything outside 1..8 means
	// full size. Other formats ignore it.
	Scale int
	// Orient applies the orientation (a JPEG's EXIF tag, an AVIF's
	// irot/imir), so that the output is upright.
	Orient bool
	// Background, when set, flattens alpha: the image is decoded as RGBA
	// and composited onto this opaque colour (R, G, B) exactly as Pillow's
	// Image.alpha_composite(Image.new("RGBA", size, bg), im.convert("RGBA"))
	// does, then converted to Color, which must have no alpha (RGB, BGR or
	// GRAY). Images without alpha come out as without it.
	Background *[3]byte
	// CMYK is how a four-component (CMYK or YCCK) JPEG's inks become
	// colours; the zero value is Pillow's rule.
	CMYK CMYKRule
	// FastUpsample makes a JPEG's subsampled chroma replicated to full size
	// (libjpeg with do_fancy_upsampling off, TurboJPEG's
	// TJFLAG_FASTUPSAMPLE, DALI's default on the GPU) rather than
	// interpolated by libjpeg's default triangular ("fancy") filter, which
	// Pillow uses. Other formats ignore it.
	FastUpsample bool
	// Inks, with a four-channel Color (RGBA, BGRA), leaves a CMYK JPEG's
	// inks unconverted, as Pillow's Image.open holds them (mode "CMYK"):
	// C, M, Y, K in that order, each 255 minus the stored Adobe sample.
	// InksTo converts them. Other images, and other colours, ignore it.
	Inks bool
	// Limits reject images that would cost too much, before any pixel
	// buffer is allocated; the zero value means no limit. Only
	// DecodeImage and Decode read it; Decoder.Header takes the limits.
	Limits Limits
}

// CMYKRule is a library's arithmetic from a CMYK JPEG's stored (Adobe,
// inverted) inks to RGB. The libraries a model was trained with disagree by
// up to 3 levels on such files.
type CMYKRule uint8

const (
	// CMYKPillow is Image.open(f).convert("RGB"): R = K - MULDIV255(255 -
	// C, K), rounded; grey is convert("L") of that RGB.
	CMYKPillow CMYKRule = iota
	// CMYKOpenCV is cv2.imread / cv2.imdecode: R = K - ((255 - C) * K >> 8),
	// truncated; grey is IMREAD_GRAYSCALE's (4899 R + 9617 G + 1868 B +
	// 8192) >> 14 of that RGB.
	CMYKOpenCV
	// cmykHeld converts inks as Pillow holds them (Options.Inks), the
	// inverse of the stored samples, by CMYKPillow's arithmetic: InksTo.
	cmykHeld
)

func (o Options) color() Color {
	if o.Color == 0 {
		return RGB
	}
	return o.Color
}

func (o Options) scale() int {
	if o.Scale < 1 || o.Scale > 8 {
		return 8
	}
	return o.Scale
}

// Header describes an encoded image without decoding it.
type Header struct {
	Format        string // registered format name: "JPEG", "PNG"
	Width, Height int    // stored size, before orientation and scaling
	// Orientation is the EXIF orientation, 1 (upright) to 8 (an AVIF's
	// irot/imir as its EXIF equivalent); 1 when the image has none or the
	// format carries none.
	Orientation int
	// Scalable reports that Options.Scale is honoured (DCT-domain scaling).
	Scalable bool
	// Mode is how Pillow's Image.open holds the image, where that changes
	// how Image.resize treats it (see Mode).
	Mode Mode

	// Work and Memory estimate what decoding costs, from the headers:
	// work units (Limits.MaxWork) and bytes a decoder allocates beside
	// the output (Limits.MaxMemory).
	Work, Memory int64

	format   int      // registry index + 1; 0 for a Header not made by Decoder
	jpeg     JPEGInfo // JPEG only
	animated bool     // WebP only: an animation, of which the first frame
}

// Pixels is Width × Height, computed without overflow on 64-bit ints.
func (h Header) Pixels() int { return h.Width * h.Height }

// JPEG is what a JPEG's headers say of how it is coded; the zero
// JPEGInfo for other formats.
func (h Header) JPEG() JPEGInfo { return h.jpeg }

// ScaledSize is the stored size decoded at scale m/8, rounded up as
// libjpeg-turbo's TJSCALED does. Unscalable formats ignore m.
func (h Header) ScaledSize(m int) (height, width int) {
	if !h.Scalable || m < 1 || m >= 8 {
		return h.Height, h.Width
	}
	return (h.Height*m + 7) / 8, (h.Width*m + 7) / 8
}

// OrientedSize is the stored size with orientations 5-8, which transpose,
// swapping height and width; it ignores scaling.
func (h Header) OrientedSize(orient bool) (height, width int) {
	if orient && h.Orientation >= 5 {
		return h.Width, h.Height
	}
	return h.Height, h.Width
}

// OutSize is the shape of what Decode produces with o.
func (h Header) OutSize(o Options) (height, width, channels int) {
	height, width = h.ScaledSize(o.scale())
	if o.Orient && h.Orientation >= 5 {
		height, width = width, height
	}
	return height, width, o.color().Channels()
}

// Scratch bounds the bytes a Decoder keeps for its own intermediate images
// after decoding h with o (an RGBA or CMYK plane, an unrotated copy; with
// Background, the RGBA image it flattens as well), for callers that decide
// when to let a reused decoder's buffers go.
func (h Header) Scratch(o Options) int {
	height, width, _ := h.OutSize(o)
	n := 4 * height * width
	if o.Background != nil {
		n *= 2
	}
	return n
}

// ColorSpace is how a JPEG's components code colour.
type ColorSpace uint8

const (
	// SpaceUnknown: not a JPEG.
	SpaceUnknown ColorSpace = iota
	SpaceGray
	SpaceYCbCr
	SpaceRGB // the components are R, G and B: no colour transform to undo
	SpaceCMYK
	SpaceYCCK
)

var spaceNames = [...]string{"unknown", "GRAY", "YCbCr", "RGB", "CMYK", "YCCK"}

func (c ColorSpace) String() string {
	if int(c) < len(spaceNames) {
		return spaceNames[c]
	}
	return fmt.Sprintf("ColorSpace(%d)", uint8(c))
}

// Image is a decoded image: Height rows of Width pixels of Color, packed.
type Image struct {
	Width, Height int
	Color         Color
	Pix           []byte
}

// Decoder decodes any registered format. It is per-worker state, not safe
// for concurrent use; Close releases it.
type Decoder struct {
	decs []FormatDecoder // by registry index, made on first use
	flat []byte          // the RGBA image that Options.Background flattens
}

// NewDecoder makes a decoder. Format decoders (and their native handles)
// are made on first use of each format.
func NewDecoder() *Decoder { return &Decoder{} }

// Close releases every format decoder.
func (d *Decoder) Close() {
	for i, fd := range d.decs {
		if fd != nil {
			fd.Close()
			d.decs[i] = nil
		}
	}
	d.flat = nil
}

// Header recognises src by content and reads its header. Images over lim
// fail with TooLarge before anything is allocated for them.
func (d *Decoder) Header(src []byte, lim Limits) (Header, error) {
	if len(src) == 0 {
		return Header{}, errorf(NotImage, "empty input")
	}
	i, f := sniff(src)
	if i < 0 {
		return Header{}, errorf(NotImage, "unknown signature % x", src[:min(len(src), 8)])
	}
	if f.New == nil {
		return Header{}, formatErr(Unsupported, f.Name, "%s images are not supported", f.Name)
	}
	fd, err := d.formatDecoder(i, f)
	if err != nil {
		return Header{}, err
	}
	h, err := fd.Header(src, lim)
	if err != nil {
		return Header{}, err
	}
	h.Format, h.format = f.Name, i+1
	if h.Orientation < 1 || h.Orientation > 8 {
		h.Orientation = 1
	}
	if h.Width <= 0 || h.Height <= 0 {
		return Header{}, formatErr(Corrupt, f.Name, "%s header gives an empty %dx%d image", f.Name, h.Width, h.Height)
	}
	if err := lim.checkEstimates(&h); err != nil {
		return Header{}, err
	}
	return h, nil
}

func (d *Decoder) formatDecoder(i int, f Format) (FormatDecoder, error) {
	for len(d.decs) <= i {
		d.decs = append(d.decs, nil)
	}
	if d.decs[i] == nil {
		fd, err := f.New()
		if err != nil {
			return nil, err
		}
		d.decs[i] = fd
	}
	return d.decs[i], nil
}

// Decode decodes src, whose header h came from d.Header, into dst, which
// must hold exactly the bytes of h.OutSize(o).
func (d *Decoder) Decode(dst, src []byte, h Header, o Options) error {
	if h.format < 1 || h.format > len(d.decs) || d.decs[h.format-1] == nil {
		return fmt.Errorf("codec: Decode needs a Header made by the same Decoder")
	}
	if o.color().Channels() == 0 {
		return fmt.Errorf("codec: invalid output colour %v", o.Color)
	}
	oh, ow, oc := h.OutSize(o)
	if len(dst) != oh*ow*oc {
		return fmt.Errorf("codec: destination holds %d bytes; %dx%dx%d needs %d", len(dst), oh, ow, oc, oh*ow*oc)
	}
	fd := d.decs[h.format-1]
	if o.Background == nil {
		return fd.Decode(dst, src, h, o)
	}
	if oc == 4 {
		return fmt.Errorf("codec: Background flattens alpha, but the output colour %v keeps it", o.Color)
	}
	if h.Format == "JPEG" {
		// No JPEG carries alpha: compositing opaque pixels is the identity.
		return fd.Decode(dst, src, h, o)
	}
	// Every format decoder already writes RGBA as Pillow's convert("RGBA")
	// (a PNG's tRNS included); flattening that one buffer covers them all.
	ro := o
	ro.Color, ro.Background = RGBA, nil
	d.flat = reuse.Room(d.flat, oh*ow*4)
	if err := fd.Decode(d.flat, src, h, ro); err != nil {
		return err
	}
	flatten(dst, d.flat, *o.Background, o.color())
	return nil
}

// TooLargeErr is the error for a w×h image over a pixel limit, or nil when
// it fits (limit ≤ 0 is no limit). Format decoders call it from Header as
// soon as they know the size.
func TooLargeErr(format string, w, h, limit int) error {
	if e := tooLarge(format, w, h, limit); e != nil {
		return e
	}
	return nil
}

func tooLarge(format string, w, h, limit int) *Error {
	if limit > 0 && w*h > limit {
		return formatErr(TooLarge, format, "%s image is %dx%d = %d pixels, over the limit of %d",
			format, w, h, w*h, limit)
	}
	return nil
}

// DecodeImage decodes src into a new buffer.
func (d *Decoder) DecodeImage(src []byte, o Options) (*Image, error) {
	h, err := d.Header(src, o.Limits)
	if err != nil {
		return nil, err
	}
	oh, ow, oc := h.OutSize(o)
	img := &Image{Width: ow, Height: oh, Color: o.color(), Pix: make([]byte, oh*ow*oc)}
	if err := d.Decode(img.Pix, src, h, o); err != nil {
		return nil, err
	}
	return img, nil
}

// Decode decodes one image with a throwaway Decoder: for tools and tests.
// Servers keep a Decoder per worker instead.
func Decode(src []byte, o Options) (*Image, error) {
	d := NewDecoder()
	defer d.Close()
	return d.DecodeImage(src, o)
}
