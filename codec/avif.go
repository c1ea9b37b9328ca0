package codec

import (
	"fmt"
	"unsafe"

	"github.com/sluice-dev/sluice/internal/reuse"
)

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
	// noise codes in under 8 bytes a pixel.
	avifBytesPerPixel = 16
	avifBytesSlack    = 64 << 10
	// avifMaxPixels and avifMaxSide are libavif's default limits, which
	// Pillow decodes under: they hold without a caller's limit and keep
	// every size product far from overflow.
	avifMaxPixels = 16384 * 16384
	avifMaxSide   = 32768
	// Decode work (Limits.MaxWork units, a third of a ns of one core) as
	// measured with dav1d on one thread (avifenc files of photos and of
	// noise, 8-bit 4:2:0 to 12-bit 4:4:4 lossless, 64×43 to 4096×2731):
	// about 60 a sample of every frame decoded (the frames' area times
	// 1.5 samples a pixel for 4:2:0, 3 for 4:4:4), 240 a byte of AV1 data
	// (entropy decoding: lossless noise at 7 bytes a pixel costs ten
	// times a photo's pixels), and 8 an output pixel (YUV to RGB).
	avifWorkPerSample = 60
	avifWorkPerByte   = 240
	avifConvertWork   = 8
	// avifDav1dStatePerPixel is what dav1d allocates for a frame beside
	// its picture (block and edge state, loop filter lines), per pixel,
	// rounded up from the same runs (peak RSS less the known buffers).
	// Its fixed few MB (tables, a context) are no cost of the input and
	// are not counted.
	avifDav1dStatePerPixel = 1
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
	join    []byte // one item's extents joined, when it has several
	canvas  avifCanvas
	tables  [6]*avifTables
	// plan is what Header made of the src it was last given, so that
	// Decode of that src does not parse and price the container again. It
	// holds no reference to src (which may be a request's buffer, and
	// Decode may never come): Decode finds its items by their offsets.
	plan *avifPlan
}

// avifSpan identifies a byte slice by its first byte's address and its
// length, without keeping it alive (a uintptr is no reference to the GC).
type avifSpan struct {
	p uintptr
	n int
}

func spanOf(b []byte) avifSpan {
	if len(b) == 0 {
		return avifSpan{}
	}
	return avifSpan{uintptr(unsafe.Pointer(&b[0])), len(b)}
}

// avifFingerprint hashes src's first and last bytes: with its span, it
// tells Decode that src is what Header saw (a freed buffer's address may
// come back with other bytes in it).
func avifFingerprint(src []byte) uint64 {
	h := uint64(14695981039346656037) // FNV-1a
	for _, b := range [2][]byte{src[:min(len(src), 512)], src[max(len(src)-64, 0):]} {
		for _, c := range b {
			h = (h ^ uint64(c)) * 1099511628211
		}
	}
	return h
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
	d.rgba, d.scratch, d.join, d.canvas = nil, nil, nil, avifCanvas{}
	d.plan = nil
}

func (d *avifDecoder) Header(src []byte, lim Limits) (Header, error) {
	d.plan = nil
	p, err := planAVIF(src, lim)
	if err != nil {
		return Header{}, err
	}
	d.plan = p
	h := Header{Width: p.l.w, Height: p.l.h, Orientation: p.l.orient, Work: p.work, Memory: p.memory}
	if p.l.hasAlpha {
		h.Mode = ModeAlpha // Pillow opens it "RGBA", else "RGB"
	}
	return h, nil
}

// planAVIF parses src's container and prices its decode against lim,
// reading no more of the AV1 data than its OBU headers.
func planAVIF(src []byte, lim Limits) (*avifPlan, *Error) {
	l, err := parseAVIF(src)
	if err != nil {
		return nil, err
	}
	maxPixels := lim.MaxPixels
	if maxPixels <= 0 || maxPixels > avifMaxPixels {
		maxPixels = avifMaxPixels
	}
	if err := tooLarge("AVIF", l.w, l.h, maxPixels); err != nil {
		return nil, err
	}
	return l.price(src, lim)
}

// avifCoded is one AV1 item's data, as the offsets in src of its extents
// (in the file or idat; joined only when decoded), and where its picture
// goes.
type avifCoded struct {
	ext    [][2]int // offset, length
	x0, y0 int
	alpha  bool
}

// avifPlan is an AVIF's layout with its AV1 items priced, for the src of
// span and fingerprint sum.
type avifPlan struct {
	l            *avifLayout
	items        []avifCoded
	work, memory int64
	join         int // the largest item of several extents (Decode joins it)
	span         avifSpan
	sum          uint64
}

func (d *avifDecoder) Decode(dst, src []byte, h Header, o Options) error {
	p := d.plan
	d.plan = nil
	if p == nil || p.span != spanOf(src) || p.sum != avifFingerprint(src) {
		var err *Error
		if p, err = planAVIF(src, Limits{}); err != nil {
			return err
		}
	}
	l := p.l
	if l.w != h.Width || l.h != h.Height {
		return formatErr(Corrupt, "AVIF", "AVIF image changed size since its header was read")
	}
	d.canvas.set = false
	defer func() {
		if cap(d.join) > 1<<20 {
			d.join = nil // rare (encoders write one extent) and up to the file's size: not kept
		}
	}()
	for i, it := range p.items {
		data := src[it.ext[0][0]:][:it.ext[0][1]]
		if len(it.ext) > 1 {
			// At most the file's size (price), into one buffer reused.
			d.join = d.join[:0]
			for _, e := range it.ext {
				d.join = append(d.join, src[e[0]:][:e[1]]...)
			}
			data = d.join
		}
		f, err := d.decodeItem(l, data)
		if err != nil {
			d.av1.release()
			return err
		}
		if i == 0 {
			// Only once a frame of the promised size came out.
			d.rgba = reuse.Room(d.rgba, l.w*l.h*4)
			if !l.hasAlpha {
				for i := 3; i < len(d.rgba); i += 4 {
					d.rgba[i] = 0xFF
				}
			}
		}
		if err := d.placeItem(l, it, &f); err != nil {
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

// price gathers the AV1 items to decode and bounds, before any is decoded
// or joined: each item's bytes (per pixel of its size) and frames (frames
// × tile area against avifWorkPerPixel), the bytes of all of them (at most
// the file's: shared or overlapping extents would make a few bytes decode
// as many items, and be copied for each), and each one's sequence header
// against its ispe size; then Header's work and memory estimates against
// lim.
func (l *avifLayout) price(src []byte, lim Limits) (*avifPlan, *Error) {
	area := l.tileW * l.tileH
	budget := avifWorkPerPixel * l.w * l.h
	p := &avifPlan{l: l, span: spanOf(src), sum: avifFingerprint(src)}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	frameArea, bytes, distinct := 0, 0, 0
	var seen map[avifSpan]av1Info // single-extent items already scanned
	for pass, list := range [][]*avifItem{l.color, l.alpha} {
		for i, it := range list {
			parts, size, err := l.meta.parts(it, src)
			if err != nil {
				return nil, err
			}
			if size > avifBytesPerPixel*area+avifBytesSlack {
				return nil, formatErr(TooLarge, "AVIF", "AVIF item %d holds %d bytes of AV1 data for %dx%d pixels, over %d a pixel",
					it.id, size, l.tileW, l.tileH, avifBytesPerPixel)
			}
			bytes += size
			// Identical extents (tiles of one content, deduplicated) are
			// scanned once and cost once; any other sharing is refused.
			info, dup := seen[spanOf(parts[0])]
			dup = dup && len(parts) == 1
			if !dup {
				if distinct += size; distinct > len(src) {
					return nil, formatErr(TooLarge, "AVIF", "AVIF items' extents add up to over %d bytes of AV1 data, more than the file's %d (extents shared or overlapping)",
						distinct, len(src))
				}
				var ok bool
				if info, ok = av1Scan(parts, size); !ok {
					return nil, formatErr(Corrupt, "AVIF", "AVIF item %d's AV1 data is corrupt (bad OBU structure)", it.id)
				}
				if len(parts) == 1 {
					if seen == nil {
						seen = map[avifSpan]av1Info{}
					}
					seen[spanOf(parts[0])] = info
				} else {
					p.join = max(p.join, size)
				}
			}
			if info.frames == 0 {
				return nil, formatErr(Corrupt, "AVIF", "AVIF item %d's AV1 data holds no frame", it.id)
			}
			if !info.seq {
				return nil, formatErr(Corrupt, "AVIF", "AVIF item %d's AV1 data has no sequence header", it.id)
			}
			if info.seqW < l.tileW || info.seqH < l.tileH {
				return nil, formatErr(Corrupt, "AVIF", "AVIF item %d's ispe says %dx%d, but its AV1 sequence header allows frames of at most %dx%d",
					it.id, l.tileW, l.tileH, info.seqW, info.seqH)
			}
			if frameArea += info.frames * area; frameArea > budget {
				return nil, formatErr(TooLarge, "AVIF",
					"AVIF image's AV1 data needs over %d pixels of frame decoding, %d per pixel of its %dx%d (many tiles or hidden frames)",
					budget, avifWorkPerPixel, l.w, l.h)
			}
			c := avifCoded{x0: i % l.cols * l.tileW, y0: i / l.cols * l.tileH, alpha: pass == 1}
			for _, b := range parts { // slices of src, or of idat inside it
				c.ext = append(c.ext, [2]int{int(uintptr(unsafe.Pointer(&b[0])) - base), len(b)})
			}
			p.items = append(p.items, c)
		}
	}
	pixels := int64(l.w) * int64(l.h)
	bps, planesQ := l.samples()
	p.work = int64(frameArea)*avifWorkPerSample*planesQ/4 + int64(bytes)*avifWorkPerByte + pixels*avifConvertWork
	if e := lim.overWork("AVIF", p.work, func() string {
		return fmt.Sprintf("%dx%d, %d pixels of AV1 frames in %d items, %d bytes", l.w, l.h, frameArea, len(p.items), bytes)
	}); e != nil {
		return nil, e
	}
	p.memory = l.memory(area, bps, planesQ) + int64(p.join)
	if e := lim.overMemory("AVIF", p.memory, func() string { return fmt.Sprintf("%dx%d in %dx%d tiles", l.w, l.h, l.cols, l.rows) }); e != nil {
		return nil, e
	}
	l.meta, l.color, l.alpha = nil, nil, nil // what refers to src; Decode needs the plan's items
	return p, nil
}

// samples is the bytes a sample and the planes' size in quarters of the
// luma's, from the first colour item's av1C; else the worst, 16-bit 4:4:4.
func (l *avifLayout) samples() (bps, planesQ int64) {
	bps, planesQ = 2, 12
	if c := l.meta.prop(l.color[0], "av1C"); len(c) >= 3 {
		if c[2]&0x40 == 0 { // high_bitdepth
			bps = 1
		}
		switch {
		case c[2]&0x10 != 0: // monochrome
			planesQ = 4
		case c[2]&0x0C == 0x0C: // 4:2:0
			planesQ = 6
		case c[2]&0x08 != 0: // 4:2:2
			planesQ = 8
		}
	}
	return bps, planesQ
}

// memory estimates what decoding allocates beside the output: the RGBA
// image, the orientation's scratch, a grid's YUV canvas and dav1d's
// buffers for one tile (its picture and per-frame state).
func (l *avifLayout) memory(area int, bps, planesQ int64) int64 {
	pixels := int64(l.w) * int64(l.h)
	m := pixels * 4
	if l.orient != 1 {
		m += pixels * 4
	}
	if l.tiles > 1 {
		m += pixels * bps * planesQ / 4
	}
	return m + int64(area)*(bps*planesQ/4+avifDav1dStatePerPixel)
}

// decodeItem decodes one AV1 item and checks its picture.
func (d *avifDecoder) decodeItem(l *avifLayout, data []byte) (av1Frame, error) {
	f, err := d.av1.decode(data, l.tileW*l.tileH)
	if err != nil {
		return f, err
	}
	if f.w != l.tileW || f.h != l.tileH {
		return f, formatErr(Corrupt, "AVIF", "AVIF item decoded to %dx%d, its ispe says %dx%d", f.w, f.h, l.tileW, l.tileH)
	}
	if f.bpc != 8 && f.bpc != 10 && f.bpc != 12 {
		return f, formatErr(Unsupported, "AVIF", "AVIF bit depth %d is not supported", f.bpc)
	}
	return f, nil
}

// placeItem writes a decoded item into its place in d.rgba.
func (d *avifDecoder) placeItem(l *avifLayout, it avifCoded, f *av1Frame) error {
	cw, ch := min(l.tileW, l.w-it.x0), min(l.tileH, l.h-it.y0)
	out := d.rgba[(it.y0*l.w+it.x0)*4:]
	if it.alpha {
		alphaToRGBA(out, l.w*4, f, cw, ch)
		return nil
	}
	if l.tiles == 1 {
		return d.convert(l, f, cw, ch)
	}
	if !d.canvas.set {
		if err := d.canvas.start(f, l.w, l.h, l.tileW, l.tileH); err != nil {
			return err
		}
	}
	return d.canvas.place(f, it.x0, it.y0)
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
		yuvToRGBAFixed(out, l.w*4, f, k, cw, ch, libyuvPath(f, l.hasAlpha))
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
