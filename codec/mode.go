package codec

// Mode is how Pillow's Image.open holds an image, as far as it changes
// what Image.resize does to it. A pipeline that resizes the image as its
// training code did before converting it to RGB (open_clip's preprocess:
// Resize, CenterCrop, then convert("RGB")) needs it; Header.Mode gives it
// for every format.
type Mode uint8

const (
	// ModeDirect: "L", "RGB" and any mode not below. Image.resize
	// filters the decoded channels one by one, as they are.
	ModeDirect Mode = iota
	// ModeNearest: "P" (a palette image: a PNG of colour type 3, a BMP
	// whose palette is not Pillow's grey ramp, a palette TIFF) and "1"
	// (1-bit: a 1-bit grey PNG, a PBM, a two-colour BMP). Image.resize
	// samples with NEAREST whatever filter it is asked for.
	ModeNearest
	// ModeAlpha: "RGBA" and "LA" (a PNG of colour type 4 or 6; a WebP,
	// AVIF, TIFF or BMP with alpha; a JPEG 2000 of 2 or 4 components). Image.resize converts to "RGBa"/"La" (colour
	// premultiplied by alpha, rounded), filters and converts back
	// (divided by alpha, truncated), unless the filter is NEAREST. A grey
	// image's L, L, L, A resamples as its "La" does.
	ModeAlpha
	// ModeCMYK: "CMYK", a four-component JPEG. Image.resize filters the
	// four inks as Pillow holds them (Options.Inks); convert("RGB")
	// follows (InksTo).
	ModeCMYK
)

var modeNames = [...]string{"direct", "P/1", "RGBA/LA", "CMYK"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "Mode(?)"
}

// InksTo converts CMYK pixels as Pillow holds them (Options.Inks) into
// dst in colour c exactly as Image.convert does: Pillow's cmyk2rgb, R =
// 255 - K - MULDIV255(C, 255 - K) and likewise for G and B, then luma for
// GRAY and an opaque alpha for RGBA and BGRA.
func InksTo(dst, inks []byte, c Color) { cmykTo(dst, inks, c, cmykHeld) }
