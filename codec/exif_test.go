package codec

import (
	"encoding/binary"
	"testing"
)

func TestEXIFOrientation(t *testing.T) {
	for o := 1; o <= 8; o++ {
		for _, big := range []bool{false, true} {
			if got := EXIFOrientation(exifPayload(o, big)); got != o {
				t.Errorf("orientation %d (big-endian %v): got %d", o, big, got)
			}
		}
	}
	long := exifPayload(6, true)
	binary.BigEndian.PutUint16(long[6+12:], 4) // type LONG
	binary.BigEndian.PutUint32(long[6+18:], 6)
	second := exifPayload(3, false) // orientation as the second of two entries
	second[6+8] = 2
	second = append(second[:6+10], append([]byte{0x0F, 0x01, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0}, second[6+10:]...)...)
	cases := map[string]struct {
		payload []byte
		want    int
	}{
		"LONG value":      {long, 6},
		"second entry":    {second, 3},
		"no Exif prefix":  {exifPayload(6, false)[6:], 1},
		"empty":           {nil, 1},
		"bad byte order":  {append([]byte("Exif\x00\x00XX*\x00"), exifPayload(6, false)[10:]...), 1},
		"value 0":         {exifPayload(0, false), 1},
		"value 9":         {exifPayload(9, true), 1},
		"IFD past end":    {patch(exifPayload(6, false), 6+4, 0xFF, 0xFF, 0xFF, 0x7F), 1},
		"IFD at end":      {patch(exifPayload(6, false), 6+4, 26, 0, 0, 0), 1},
		"huge count":      {patch(exifPayload(6, false), 6+8, 0xFF, 0xFF), 1},
		"entry cut short": {exifPayload(6, false)[:6+8+2+10], 1},
		"header only":     {[]byte("Exif\x00\x00II*\x00"), 1},
		"wrong type":      {patch(exifPayload(6, false), 6+12, 7, 0), 1},
		"zero count":      {patch(exifPayload(6, false), 6+14, 0, 0, 0, 0), 1},
	}
	for name, c := range cases {
		if got := EXIFOrientation(c.payload); got != c.want {
			t.Errorf("%s: got %d, want %d", name, got, c.want)
		}
	}
}

// patch returns a copy of b with bytes at off replaced.
func patch(b []byte, off int, v ...byte) []byte {
	out := append([]byte{}, b...)
	copy(out[off:], v)
	return out
}
