package codec

func init() {
	Register(Format{Name: "AVIF", Match: isAVIF, New: newAVIFDecoder})
}

const (
	// avifWorkPerPixel bounds the AV1 frame pixels a decode may cost, per
	// pixel of the image. Each frame dav1d decodes is at most its item's
	// size (frame_size_limit), and avif_obu.go counts the frames of every
	// item before dav1d sees it: a still costs 1, 2 with alpha; a grid's
	// tiles cover under 4 times the image (avif_layout.go), 8 with alpha.
	avifWorkPerPixel = 8
	// avifBytesPerPixel and avifBytesSlack cap an item's AV1 bytes by its
	// size: entropy decoding costs per byte too, and lossless 12-bit 4:4:4
	// noise codes in under 6 bytes a pixel.
	avifBytesPerPixel = 16
	avifBytesSlack    = 64 << 10
	// avifMaxPixels and avifMaxSide are libavif's default limits, which
	// Pillow decodes under: they hold without a caller's limit and keep
	// every size product far from overflow.
	avifMaxPixels = 16384 * 16384
	avifMaxSide   = 32768
)

// avifDecoder decodes AVIF stills: the container is read here (avif_box.go,
// avif_meta.go, avif_layout.go), the AV1 data by dav1d (avif_dav1d.go,
// priced first by avif_obu.go), grid tiles assembled (avif_grid.go), and
// YUV converted to RGB as libavif 1.x does (avif_yuvfixed.go, avif_yuv.go). Still images, grids
// of tiles, alpha planes, irot/imir as the orientation, and the primary
// image of image sequences; 8, 10 and 12 bits come out as 8-bit RGB, as
// Pillow's do. ICC profiles and clap (clean aperture) are ignored, as
// Pillow ignores them.
type avifDecoder struct {
	av1     *av1Decoder
	rgba    []byte // the whole image as RGBA
	scratch []byte // packed pixels before orientation
	canvas  avifCanvas
	tables  [6]*avifTables
}

func newAVIFDecoder() (FormatDecoder, error) {
	d, err := newAV1Decoder()
	if err != nil {
		return nil, err
	}
	return &avifDecoder{av1: d}, nil
}

func (d *avifDecoder) Close() {
	d.av1.Close()
	d.rgba, d.scratch, d.canvas = nil, nil, avifCanvas{}
}

func (d *avifDecoder) Header(src []byte, lim Limits) (Header, error) {
	maxPixels := lim.MaxPixels
	l, err := parseAVIF(src)
	if err != nil {
		return Header{}, err
	}
	if maxPixels <= 0 || maxPixels > avifMaxPixels {
		maxPixels = avifMaxPixels
	}
	if err := TooLargeErr("AVIF", l.w, l.h, maxPixels); err != nil {
		return Header{}, err
	}
	return Header{Width: l.w, Height: l.h, Orientation: l.orient}, nil
}

// avifCoded is one AV1 item's data and where its picture goes.
type avifCoded struct {
	data   []byte
	x0, y0 int
	alpha  bool
}

func (d *avifDecoder) Decode(dst, src []byte, h Header, o Options) error {
	l, perr := parseAVIF(src)
	if perr != nil {
		return perr
	}
	if l.w != h.Width || l.h != h.Height {
		return formatErr(Corrupt, "AVIF", "AVIF image changed size since its header was read")
	}
	items, err := l.price(src)
	if err != nil {
		return err
	}
	d.rgba = grow(d.rgba, l.w*l.h*4)
	if l.alpha == nil {
		for i := 3; i < len(d.rgba); i += 4 {
			d.rgba[i] = 0xFF
		}
	}
	d.canvas.set = false
	for _, it := range items {
		if err := d.decodeItem(l, it); err != nil {
			d.av1.release()
			return err
		}
	}
	d.av1.release()
	if d.canvas.set {
		if err := d.convert(l, &d.canvas.f, l.w, l.h); err != nil {
			return err
		}
	}
	c := o.color()
	oc := c.Channels()
	out, orient := storedTarget(dst, &d.scratch, l.w*l.h*oc, h, o)
	for y := 0; y < l.h; y++ {
		packRGBA(out[y*l.w*oc:(y+1)*l.w*oc], d.rgba[y*l.w*4:(y+1)*l.w*4], c)
	}
	if orient != 1 {
		Orient(dst, out, l.h, l.w, oc, orient)
	}
	return nil
}

// price gathers the AV1 items to decode and bounds their work (frames ×
// tile area against avifWorkPerPixel) and size before any is decoded.
func (l *avifLayout) price(src []byte) ([]avifCoded, error) {
	area := l.tileW * l.tileH
	budget := avifWorkPerPixel * l.w * l.h
	work := 0
	var items []avifCoded
	for pass, list := range [][]*avifItem{l.color, l.alpha} {
		for i, it := range list {
			data, err := l.meta.data(it, src)
			if err != nil {
				return nil, err
			}
			if len(data) > avifBytesPerPixel*area+avifBytesSlack {
				return nil, formatErr(TooLarge, "AVIF", "AVIF item %d holds %d bytes of AV1 data for %dx%d pixels, over %d a pixel",
					it.id, len(data), l.tileW, l.tileH, avifBytesPerPixel)
			}
			frames, ok := av1FrameCount(data)
			if !ok {
				return nil, formatErr(Corrupt, "AVIF", "AVIF item %d's AV1 data is corrupt (bad OBU structure)", it.id)
			}
			if frames == 0 {
				return nil, formatErr(Corrupt, "AVIF", "AVIF item %d's AV1 data holds no frame", it.id)
			}
			if work += frames * area; work > budget {
				return nil, formatErr(TooLarge, "AVIF",
					"AVIF image's AV1 data needs over %d pixels of frame decoding, %d per pixel of its %dx%d (many tiles or hidden frames)",
					budget, avifWorkPerPixel, l.w, l.h)
			}
			items = append(items, avifCoded{data: data, x0: i % l.cols * l.tileW, y0: i / l.cols * l.tileH, alpha: pass == 1})
		}
	}
	return items, nil
}

// decodeItem decodes one AV1 item into its place in d.rgba.
func (d *avifDecoder) decodeItem(l *avifLayout, it avifCoded) error {
	f, err := d.av1.decode(it.data, l.tileW*l.tileH)
	if err != nil {
		return err
	}
	if f.w != l.tileW || f.h != l.tileH {
		return formatErr(Corrupt, "AVIF", "AVIF item decoded to %dx%d, its ispe says %dx%d", f.w, f.h, l.tileW, l.tileH)
	}
	if f.bpc != 8 && f.bpc != 10 && f.bpc != 12 {
		return formatErr(Unsupported, "AVIF", "AVIF bit depth %d is not supported", f.bpc)
	}
	cw, ch := min(l.tileW, l.w-it.x0), min(l.tileH, l.h-it.y0)
	out := d.rgba[(it.y0*l.w+it.x0)*4:]
	if it.alpha {
		alphaToRGBA(out, l.w*4, &f, cw, ch)
		return nil
	}
	if len(l.color) == 1 {
		return d.convert(l, &f, cw, ch)
	}
	if !d.canvas.set {
		if err := d.canvas.start(&f, l.w, l.h, l.tileW, l.tileH); err != nil {
			return err
		}
	}
	return d.canvas.place(&f, it.x0, it.y0)
}

// convert writes frame f's top-left cw×ch pixels as the RGB of d.rgba
// from its top-left corner, in the image's colour matrix.
func (d *avifDecoder) convert(l *avifLayout, f *av1Frame, cw, ch int) error {
	out := d.rgba
	// The colr box's nclx wins over the AV1 sequence header's colour
	// description, range included, as in libavif (AV1 forces full range
	// on identity-coded RGB, which nclx may still call limited).
	mc, full := f.matrix, f.full
	if l.nclx != nil {
		mc, full = l.nclx.matrix, l.nclx.full
	}
	if k, ok := yuvFixedOf(mc, full); ok {
		yuvToRGBAFixed(out, l.w*4, f, k, cw, ch, libyuvPath(f, l.alpha != nil))
		return nil
	}
	m, ok := avifMatrixOf(mc)
	if !ok {
		return formatErr(Unsupported, "AVIF", "AVIF matrix coefficients %d are not supported", mc)
	}
	if m.identity && !f.mono && (f.subX|f.subY) != 0 {
		return formatErr(Corrupt, "AVIF", "AVIF identity matrix with subsampled chroma")
	}
	yuvToRGBA(out, l.w*4, f, m, d.table(f.bpc, full), cw, ch)
	return nil
}

// table is the normalisation table for a depth and range, made once.
func (d *avifDecoder) table(depth int, full bool) *avifTables {
	i := (depth - 8) // 0, 2, 4
	if full {
		i++
	}
	if d.tables[i] == nil {
		t := newAVIFTables(depth, full)
		d.tables[i] = &t
	}
	return d.tables[i]
}
