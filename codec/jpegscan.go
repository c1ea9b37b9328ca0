package codec

import (
	"bytes"
	"fmt"
	"math/bits"
)

// JPEG markers this file cares about.
const (
	mSOI  = 0xD8
	mEOI  = 0xD9
	mSOS  = 0xDA
	mDHT  = 0xC4
	mDAC  = 0xCC
	mAPP1 = 0xE1
	mTEM  = 0x01
)

// maxFrameComps bounds the components we track; libjpeg-turbo accepts at
// most 10 (MAX_COMPONENTS) and rejects more itself.
const maxFrameComps = 10

// MaxJPEGScans is the most scans a JPEG may have: libjpeg-turbo's own
// limit (TJFLAG_LIMITSCANS; sl_decompress applies the same), enforced
// only on reaching scan 501, after decoding the 500 before it; the marker
// walk refuses such files before decoding. Photos have 1 (sequential) to about 10 scans
// (progressive); the corpus's most is 14.
const MaxJPEGScans = 500

// JPEGWorkPerPixel sets the default decode-work limit (WorkPerPixel): a
// JPEG's scans may cost at most this many units of work per pixel of the
// pixel limit.
// Work is counted from the frame and scan headers before anything is
// decoded, and stands for what a scan can cost beyond the data it holds
// (which max_image_bytes bounds). libjpeg visits every 8×8 block of each
// component a scan codes, however little data the scan holds: 64 units
// per block (one per sample). A refinement scan (Ah > 0) costs more: in
// an end-of-band run libjpeg still reads every coefficient of the band of
// every block, to find the nonzero ones it must correct, so the scan
// walks the whole coefficient buffer (128 MB at 64 MP) where a first scan
// skips the blocks of a run. Refinement scans cost 64 units per block
// plus 3 per coefficient of their band. Measured per block and scan, at
// 8192×8192 with data-less scans, against ManyScans' files (the 0.33 ns
// calibration below, mostly refinements of one coefficient): first scans
// cost 0.2 (AC, end-of-band runs) to 1.3 (DC, a bit per block) of its 64
// units, DC refinements 0.4 to 1.1, AC refinements of 1 coefficient 1.0,
// of 1..32 1.2, of 1..63 1.9 to 2.2; a whole file of a DC scan and 94
// refinements of 1..63 took 5.7 s of CPU here (2.8 times its 64 units
// a scan), and 7.75 s on the server (3.9 times: the 253 units counted).
// Huffman decoding stops at the end of a scan's data, but arithmetic
// decoding goes on deciding every coefficient of the scan's band from
// zeros: an arithmetic scan costs 16 more units per block and coefficient
// of its band (measured: refining 63 dense coefficients without data
// costs 17.6 visits; this counts 16.75).
//
// An 8192×8192 frame with 499 near-empty scans (ManyScans) is a 190 KB
// file that took 11 s of CPU for 33 G units counted as 64 a block (about
// 0.33 ns per unit; 35 G with refinements priced). A sequential colour
// JPEG costs 1.5 (4:2:0) to 3 (4:4:4) units per pixel (17 times more if
// arithmetic-coded), libjpeg's standard progressive script 15.5 to 26;
// the corpus's most is 27 (a GIMP progressive 4:4:4), and its most for
// one photo 246 M units. Under the default 64 MP limit the budget is
// 6.4 G units: 26 times that photo, 3.5 times what the costliest corpus
// photo would need at the pixel limit, and about 2 s of CPU for the worst
// file, against 1 to 1.6 s to decode a 64 MP progressive photo
// (extrapolated from the corpus's).
const JPEGWorkPerPixel = 96

// JPEGInfo is what a JPEG's headers say of how it is coded: the facts a
// caller choosing among decoders weighs (the GPU executor's route), and
// what the decoder here keeps of the walk. It states facts, not which
// decoder takes them.
type JPEGInfo struct {
	SOF        byte // SOFn marker code: 0xC0 baseline, 0xC1 extended sequential, 0xC2 progressive, ...
	Precision  int  // bits a sample
	Components int
	// Sampling is the first four components' sampling factors, as the
	// frame header states them (0 = absent, 1 to 4).
	Sampling [4]Sampling
	// Space is how the components code colour, as libjpeg reads it from
	// the headers (what the CPU decode follows): a JFIF marker means
	// YCbCr; else an Adobe marker's transform 0 means RGB (3 components)
	// or CMYK (4), another one YCbCr or YCCK; else components named 'R',
	// 'G', 'B' mean RGB, 4 components CMYK, and 3 YCbCr.
	Space ColorSpace
	// Pending: a progressive script that ends with coefficients not
	// refined to their last bit, which libjpeg decodes with block
	// smoothing.
	Pending bool
	// GreyFactorsAt: where a one-component JPEG's sampling-factor byte
	// lies in the file when it says other than 1x1; 0 otherwise. Its
	// blocks are coded the same whatever the factors (a one-component
	// scan's unit is one block, and libjpeg ignores them), so a copy
	// saying 1x1 decodes the same.
	GreyFactorsAt int
}

// Sampling is a JPEG component's sampling factors, across and down.
type Sampling struct{ H, V uint8 }

// Huffman reports Huffman coding in one of the processes libjpeg-turbo
// decodes: baseline, extended sequential or progressive.
func (j JPEGInfo) Huffman() bool { return j.SOF == 0xC0 || j.SOF == 0xC1 || j.SOF == 0xC2 }

// process names the coding process of a SOF marker for messages.
func (l *JPEGInfo) process() string {
	switch l.SOF {
	case 0xC0:
		return "baseline"
	case 0xC1:
		return "extended sequential"
	case 0xC2:
		return "progressive"
	case 0xC3:
		return "lossless"
	case 0xC5, 0xC6, 0xC7, 0xCD, 0xCE, 0xCF:
		return "hierarchical"
	case 0xC9:
		return "arithmetic sequential"
	case 0xCA:
		return "arithmetic progressive"
	case 0xCB:
		return "arithmetic lossless"
	}
	return "unknown"
}

func progressive(sof byte) bool { return sof == 0xC2 || sof == 0xC6 || sof == 0xCA || sof == 0xCE }

// jpegScan is the result of walking a JPEG's marker structure.
type jpegScan struct {
	layout        JPEGInfo
	width, height int
	orientation   int // EXIF orientation, 0 when absent
	scans         int
	work          int   // units of decode work of all scans, saturating
	coefBytes     int64 // libjpeg's whole-image coefficient buffer, when it has one
}

// frameComp is what the walk keeps of one frame component.
type frameComp struct {
	id      byte
	h, v    int    // sampling factors
	blocks  int    // 8×8 blocks a scan of it visits, MCU padding included
	started uint64 // coefficients some first scan (Ah = 0) has coded
	fine    uint64 // coefficients some scan coded down to their last bit (Al = 0)
}

// scanJPEG walks the whole marker structure of b without decoding, the way
// libjpeg's marker reader does (skipping junk between markers, stuffed bytes
// and RST markers inside scans), and stops at the first EOI.
//
// It exists because libjpeg cannot tell us some things before we commit to
// a decode: the EXIF orientation (needed to size the output), what the
// scans will cost (libjpeg counts scans only as it decodes them), whether
// the data ends before EOI (libjpeg would decode a grey-padded image
// with a warning, after we allocated for it), and whether every component
// is coded at all. The standard lets a progressive scan script leave
// coefficients uncoded, or stop before refining them to full precision,
// and libjpeg's encoder writes such scripts when asked (it checks only
// that every component gets a DC scan); libjpeg and Pillow decode them
// without a warning. So a progressive image is complete when every
// component has a DC scan, whatever refinement is left: a stream cut
// between two scans with an EOI appended (Go's
// video-001.progressive.truncated.jpeg) cannot be told from such a script,
// and decodes as libjpeg and Pillow decode it. A stream whose data really
// ends early is still Truncated: no EOI (refused here), or cut inside a
// scan (libjpeg's warning, which stops the decode). A component without
// any DC scan, or a sequential one never coded, is refused as Truncated
// (libjpeg's encoder refuses to write either; its decoder leaves the
// component flat).
//
// lim bounds the frame's pixels, the work of its scans and the memory of
// libjpeg's coefficient buffer (progressive or multi-scan); MaxJPEGScans
// bounds the scans whatever lim is. The limits are checked over the whole
// walk, so that their errors give the whole counts.
func scanJPEG(b []byte, lim Limits) (jpegScan, *Error) {
	var s jpegScan
	var comps [maxFrameComps]frameComp
	err := s.walk(b, lim.MaxPixels, &comps)
	if s.scans > MaxJPEGScans {
		return s, formatErr(TooLarge, "JPEG", "%s JPEG has %d scans, over the limit of %d",
			s.layout.process(), s.scans, MaxJPEGScans)
	}
	if lim.MaxWork > 0 && int64(s.work) > lim.MaxWork {
		return s, formatErr(TooLarge, "JPEG",
			"%s JPEG's %d scans need %d units of decode work (%.1f per pixel of its %dx%d), over the work limit of %d",
			s.layout.process(), s.scans, s.work, float64(s.work)/float64(s.width*s.height), s.width, s.height, lim.MaxWork)
	}
	// A progressive or multi-scan JPEG is decoded into a buffer of every
	// block's coefficients (2 bytes each) before any output: 6 bytes a
	// pixel for 4:4:4 colour, 20 for 10 full-size components.
	if err == nil && (progressive(s.layout.SOF) || s.scans > 1) {
		for i := 0; i < s.layout.Components && i < maxFrameComps; i++ {
			s.coefBytes += int64(comps[i].blocks) * 128
		}
		if e := lim.overMemory("JPEG", s.coefBytes, func() string {
			return fmt.Sprintf("coefficients of %d components of %dx%d, %d scans", s.layout.Components, s.width, s.height, s.scans)
		}); e != nil {
			return s, e
		}
	}
	if err == nil {
		err = s.checkComplete(&comps)
	}
	return s, err
}

// walk reads the markers up to EOI; it fails on a structural problem
// or early end, and counts scans and their work as it goes.
func (s *jpegScan) walk(b []byte, maxPixels int, comps *[maxFrameComps]frameComp) *Error {
	pos := 2 // after SOI; sniffing checked FF D8 FF
	for {
		// Find the next marker. Outside scans, libjpeg skips any junk up to
		// a 0xFF (warning "extraneous bytes"); inside, 0xFF 0x00 is a
		// stuffed data byte and RSTn markers belong to the scan. Both cases
		// come down to: skip to a 0xFF that starts a segment marker.
		i := bytes.IndexByte(b[pos:], 0xFF)
		if i < 0 {
			return endedEarly(s.scans > 0)
		}
		pos += i
		for pos < len(b) && b[pos] == 0xFF {
			pos++
		}
		if pos >= len(b) {
			return endedEarly(s.scans > 0)
		}
		m := b[pos]
		pos++
		switch {
		case m == 0x00, m >= 0xD0 && m <= 0xD7, m == mTEM:
			continue // stuffed byte, restart marker, TEM: no segment
		case m == mEOI:
			if s.scans == 0 {
				return formatErr(Corrupt, "JPEG", "JPEG has no image data (EOI before the first scan)")
			}
			return nil
		case m == mSOI:
			return formatErr(Corrupt, "JPEG", "invalid JPEG structure: two SOI markers")
		}
		if pos+2 > len(b) {
			return endedEarly(s.scans > 0)
		}
		n := int(b[pos])<<8 | int(b[pos+1])
		if n < 2 {
			return formatErr(Corrupt, "JPEG", "bogus JPEG marker length %d for marker 0x%02x", n, m)
		}
		if pos+n > len(b) {
			return endedEarly(s.scans > 0)
		}
		seg := b[pos+2 : pos+n]
		pos += n
		switch {
		case m >= 0xC0 && m <= 0xCF && m != mDHT && m != mDAC && m != 0xC8:
			if s.layout.SOF != 0 {
				return formatErr(Corrupt, "JPEG", "invalid JPEG structure: two SOF markers")
			}
			if err := s.readSOF(m, seg, pos-n+2, comps); err != nil {
				return err
			}
			// Check the size now: a forged header must not cost a walk
			// over the rest of the data, let alone a decode.
			if err := tooLarge("JPEG", s.width, s.height, maxPixels); err != nil {
				return err
			}
		case m == mSOS:
			if s.layout.SOF == 0 {
				return formatErr(Corrupt, "JPEG", "invalid JPEG structure: SOS before SOF")
			}
			s.scans++
			if err := s.readSOS(seg, comps); err != nil {
				return err
			}
		case m == mAPP1:
			// The first EXIF segment of the headers counts, as in Pillow,
			// which stops reading markers at the first scan.
			if s.scans == 0 && s.orientation == 0 && len(seg) >= 6 && string(seg[:6]) == "Exif\x00\x00" {
				s.orientation = EXIFOrientation(seg)
			}
		}
	}
}

func endedEarly(sawSOS bool) *Error {
	if sawSOS {
		return formatErr(Truncated, "JPEG", "JPEG data ends early, before the EOI marker")
	}
	return formatErr(Truncated, "JPEG", "JPEG data ends early, inside the headers")
}

// readSOF reads a frame header, seg, which starts at offset at of the file.
func (s *jpegScan) readSOF(m byte, seg []byte, at int, comps *[maxFrameComps]frameComp) *Error {
	if len(seg) < 6 {
		return formatErr(Corrupt, "JPEG", "bogus JPEG SOF length %d", len(seg))
	}
	nc := int(seg[5])
	if len(seg) < 6+3*nc {
		return formatErr(Corrupt, "JPEG", "bogus JPEG SOF length %d for %d components", len(seg), nc)
	}
	switch m {
	case 0xC3, 0xC5, 0xC6, 0xC7, 0xCB, 0xCD, 0xCE, 0xCF:
		// libjpeg-turbo 2.1 decodes neither lossless nor hierarchical JPEG
		// ("Unsupported JPEG process"). Saying so here, rather than
		// letting libjpeg, also covers hierarchical files, whose several
		// SOF markers would otherwise read as a corrupt structure.
		s.layout.SOF = m
		return formatErr(Unsupported, "JPEG", "%s JPEG (SOF%d) is not supported", s.layout.process(), m-0xC0)
	}
	s.layout.SOF = m
	s.layout.Precision = int(seg[0])
	s.height = int(seg[1])<<8 | int(seg[2])
	s.width = int(seg[3])<<8 | int(seg[4])
	s.layout.Components = nc
	hmax, vmax := 1, 1
	for i := 0; i < nc && i < maxFrameComps; i++ {
		c := &comps[i]
		c.id, c.h, c.v = seg[6+3*i], max(int(seg[7+3*i]>>4), 1), max(int(seg[7+3*i]&0x0F), 1)
		hmax, vmax = max(hmax, c.h), max(vmax, c.v)
		if i < len(s.layout.Sampling) {
			s.layout.Sampling[i] = Sampling{seg[7+3*i] >> 4, seg[7+3*i] & 0x0F}
		}
	}
	if nc == 1 && seg[7] != 0x11 {
		s.layout.GreyFactorsAt = at + 7
	}
	// A component has h×v blocks in each MCU of 8hmax × 8vmax pixels.
	mcus := ((s.width + 8*hmax - 1) / (8 * hmax)) * ((s.height + 8*vmax - 1) / (8 * vmax))
	for i := 0; i < nc && i < maxFrameComps; i++ {
		comps[i].blocks = mcus * comps[i].h * comps[i].v
	}
	return nil
}

// readSOS records which coefficients a first scan codes, and adds the
// scan's work.
func (s *jpegScan) readSOS(seg []byte, comps *[maxFrameComps]frameComp) *Error {
	if len(seg) < 1 || len(seg) < 1+2*int(seg[0])+3 {
		return formatErr(Corrupt, "JPEG", "bogus JPEG SOS length %d", len(seg))
	}
	ns := int(seg[0])
	ss, se, ah, al := int(seg[1+2*ns]), int(seg[2+2*ns]), int(seg[3+2*ns]>>4), int(seg[3+2*ns]&15)
	var band, started, fine uint64
	if ss <= se && se < 64 {
		band = (^uint64(0) >> (63 - se)) &^ (uint64(1)<<ss - 1)
	}
	unit := 64 // work per block (see JPEGWorkPerPixel)
	switch {
	case !progressive(s.layout.SOF):
		started, fine = ^uint64(0), ^uint64(0) // a sequential scan codes its components fully
	case ah == 0:
		started = band
	default: // refinement: reads the whole band of every block
		unit += 3 * bits.OnesCount64(band)
	}
	if al == 0 {
		fine |= band
	}
	if s.layout.SOF == 0xC9 || s.layout.SOF == 0xCA { // arithmetic coding
		unit += 16 * bits.OnesCount64(band)
	}
	for k := 0; k < ns; k++ {
		id := seg[1+2*k]
		c := 0
		for c < s.layout.Components && c < maxFrameComps && comps[c].id != id {
			c++
		}
		if c == s.layout.Components || c == maxFrameComps {
			return formatErr(Corrupt, "JPEG", "JPEG scan names component %d, which the frame lacks", id)
		}
		comps[c].started |= started
		comps[c].fine |= fine
		// Saturates far below overflow: a scan adds at most 10 components
		// of 65535²/64 blocks of 1280 units.
		s.work = min(s.work+unit*comps[c].blocks, 1<<62)
	}
	return nil
}

func (s *jpegScan) checkComplete(comps *[maxFrameComps]frameComp) *Error {
	for i := 0; i < s.layout.Components && i < maxFrameComps; i++ {
		c := &comps[i]
		if c.started&1 == 0 {
			return formatErr(Truncated, "JPEG", "%s JPEG ends before its last scan (component %d has no DC scan)",
				s.layout.process(), c.id)
		}
		s.layout.Pending = s.layout.Pending || c.started&^c.fine != 0
	}
	return nil
}
