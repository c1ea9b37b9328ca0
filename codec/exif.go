package codec

import "encoding/binary"

const tagOrientation = 0x0112

// EXIFOrientation reads the orientation tag (0x0112) from IFD0 of an EXIF
// APP1 payload: "Exif\0\0" followed by a TIFF structure in either byte
// order. It returns 1 to 8, or 1 when the payload, the tag or its value is
// missing or invalid: an image with a broken EXIF block is shown as stored,
// as Pillow's exif_transpose does.
//
// The payload comes from the uploader, so every offset is bounds-checked
// and no offset is followed more than once: hostile offsets can at worst
// make us return 1.
func EXIFOrientation(app1 []byte) int {
	if len(app1) < 6 || string(app1[:6]) != "Exif\x00\x00" {
		return 1
	}
	t := app1[6:] // offsets in the TIFF structure count from here
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return 1
	}
	ifd := uint64(bo.Uint32(t[4:8]))
	if ifd+2 > uint64(len(t)) {
		return 1
	}
	n := uint64(bo.Uint16(t[ifd:]))
	if ifd+2+12*n > uint64(len(t)) {
		// The entries run past the data. Pillow then drops the whole
		// IFD, so we do too, even if the tag comes early.
		return 1
	}
	for i := uint64(0); i < n; i++ {
		e := ifd + 2 + 12*i
		if bo.Uint16(t[e:]) != tagOrientation {
			continue
		}
		typ, count := bo.Uint16(t[e+2:]), bo.Uint32(t[e+4:])
		if count < 1 {
			return 1
		}
		var v uint32
		switch typ {
		case 3: // SHORT, as the standard says; left-justified in the value field
			v = uint32(bo.Uint16(t[e+8:]))
		case 4: // LONG, written by a few tools
			v = bo.Uint32(t[e+8:])
		default:
			return 1
		}
		if v < 1 || v > 8 {
			return 1
		}
		return int(v)
	}
	return 1
}
