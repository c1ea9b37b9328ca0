package fixed

import "testing"

// Every pair of 8-bit values: the shift form equals the rounded quotient
// (halves cannot occur: 255 is odd).
func TestMulDiv255(t *testing.T) {
	for a := uint32(0); a < 256; a++ {
		for b := uint32(0); b < 256; b++ {
			if got, want := MulDiv255(a, b), (2*a*b+255)/510; got != want {
				t.Fatalf("MulDiv255(%d, %d) = %d, want %d", a, b, got, want)
			}
		}
	}
}
