package codec

import (
	"bytes"
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

// jpegLayout is what the decoder needs from the marker walk.
type jpegLayout struct {
	sof        byte // SOFn marker code
	components int
}

// process names the coding process of a SOF marker for messages.
func (l *jpegLayout) process() string {
	switch l.sof {
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
	layout        jpegLayout
	width, height int
	orientation   int // EXIF orientation, 0 when absent
}

// scanJPEG walks the whole marker structure of b without decoding, the way
// libjpeg's marker reader does (skipping junk between markers, stuffed bytes
// and RST markers inside scans), and stops at the first EOI.
//
// It exists because libjpeg cannot tell us some things before we commit to
// a decode: the EXIF orientation (needed to size the output),
// whether the data ends before EOI (libjpeg would decode a grey-padded image
// with a warning, after we allocated for it), and whether a progressive
// image's scans ever complete. Go's video-001.progressive.truncated.jpeg is
// a progressive stream cut after four scans with an EOI appended: libjpeg
// decodes it without a single warning, as a blurry approximation. We call
// an image complete when every coefficient of every component has been
// coded down to its last bit (a scan with Al = 0); anything less is a
// truncated upload.
func scanJPEG(b []byte, maxPixels int) (jpegScan, *Error) {
	var s jpegScan
	var (
		ids    [maxFrameComps]byte
		done   [maxFrameComps]uint64 // coefficients coded to the last bit
		sawSOS bool
	)
	pos := 2 // after SOI; sniffing checked FF D8 FF
	for {
		// Find the next marker. Outside scans, libjpeg skips any junk up to
		// a 0xFF (warning "extraneous bytes"); inside, 0xFF 0x00 is a
		// stuffed data byte and RSTn markers belong to the scan. Both cases
		// come down to: skip to a 0xFF that starts a segment marker.
		i := bytes.IndexByte(b[pos:], 0xFF)
		if i < 0 {
			return s, endedEarly(sawSOS)
		}
		pos += i
		for pos < len(b) && b[pos] == 0xFF {
			pos++
		}
		if pos >= len(b) {
			return s, endedEarly(sawSOS)
		}
		m := b[pos]
		pos++
		switch {
		case m == 0x00, m >= 0xD0 && m <= 0xD7, m == mTEM:
			continue // stuffed byte, restart marker, TEM: no segment
		case m == mEOI:
			if !sawSOS {
				return s, formatErr(Corrupt, "JPEG", "JPEG has no image data (EOI before the first scan)")
			}
			return s, s.checkComplete(&ids, &done)
		case m == mSOI:
			return s, formatErr(Corrupt, "JPEG", "invalid JPEG structure: two SOI markers")
		}
		if pos+2 > len(b) {
			return s, endedEarly(sawSOS)
		}
		n := int(b[pos])<<8 | int(b[pos+1])
		if n < 2 {
			return s, formatErr(Corrupt, "JPEG", "bogus JPEG marker length %d for marker 0x%02x", n, m)
		}
		if pos+n > len(b) {
			return s, endedEarly(sawSOS)
		}
		seg := b[pos+2 : pos+n]
		pos += n
		switch {
		case m >= 0xC0 && m <= 0xCF && m != mDHT && m != mDAC && m != 0xC8:
			if s.layout.sof != 0 {
				return s, formatErr(Corrupt, "JPEG", "invalid JPEG structure: two SOF markers")
			}
			if err := s.readSOF(m, seg, &ids); err != nil {
				return s, err
			}
			// Check the size now: a forged header must not cost a walk
			// over the rest of the data, let alone a decode.
			if err := tooLarge("JPEG", s.width, s.height, maxPixels); err != nil {
				return s, err
			}
		case m == mSOS:
			if s.layout.sof == 0 {
				return s, formatErr(Corrupt, "JPEG", "invalid JPEG structure: SOS before SOF")
			}
			if err := s.readSOS(seg, &ids, &done); err != nil {
				return s, err
			}
			sawSOS = true
		case m == mAPP1:
			// The first EXIF segment of the headers counts, as in Pillow,
			// which stops reading markers at the first scan.
			if !sawSOS && s.orientation == 0 && len(seg) >= 6 && string(seg[:6]) == "Exif\x00\x00" {
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

func (s *jpegScan) readSOF(m byte, seg []byte, ids *[maxFrameComps]byte) *Error {
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
		s.layout.sof = m
		return formatErr(Unsupported, "JPEG", "%s JPEG (SOF%d) is not supported", s.layout.process(), m-0xC0)
	}
	s.layout.sof = m
	s.height = int(seg[1])<<8 | int(seg[2])
	s.width = int(seg[3])<<8 | int(seg[4])
	s.layout.components = nc
	for i := 0; i < nc && i < maxFrameComps; i++ {
		ids[i] = seg[6+3*i]
	}
	return nil
}

// readSOS records which coefficients a scan completes.
func (s *jpegScan) readSOS(seg []byte, ids *[maxFrameComps]byte, done *[maxFrameComps]uint64) *Error {
	if len(seg) < 1 || len(seg) < 1+2*int(seg[0])+3 {
		return formatErr(Corrupt, "JPEG", "bogus JPEG SOS length %d", len(seg))
	}
	ns := int(seg[0])
	ss, se, al := int(seg[1+2*ns]), int(seg[2+2*ns]), int(seg[3+2*ns]&0x0F)
	var mask uint64
	switch {
	case !progressive(s.layout.sof):
		mask = ^uint64(0) // a sequential scan codes its components fully
	case al == 0 && ss <= se && se < 64:
		mask = (^uint64(0) >> (63 - se)) &^ (uint64(1)<<ss - 1)
	}
	for k := 0; k < ns; k++ {
		id := seg[1+2*k]
		c := 0
		for c < s.layout.components && c < maxFrameComps && ids[c] != id {
			c++
		}
		if c == s.layout.components || c == maxFrameComps {
			return formatErr(Corrupt, "JPEG", "JPEG scan names component %d, which the frame lacks", id)
		}
		done[c] |= mask
	}
	return nil
}

func (s *jpegScan) checkComplete(ids *[maxFrameComps]byte, done *[maxFrameComps]uint64) *Error {
	for c := 0; c < s.layout.components && c < maxFrameComps; c++ {
		if done[c] != ^uint64(0) {
			return formatErr(Truncated, "JPEG",
				"%s JPEG ends before its last scan (component %d has %d of 64 coefficients complete)",
				s.layout.process(), ids[c], bits.OnesCount64(done[c]))
		}
	}
	return nil
}
