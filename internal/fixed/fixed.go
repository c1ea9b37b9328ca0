// Package fixed is the 8-bit fixed-point arithmetic of Pillow's colour
// conversions, shared by the codecs and the operators that must match
// Pillow level for level.
package fixed

// MulDiv255 is a*b/255 rounded to nearest for a and b in 0..255: Pillow's
// MULDIV255, t = a*b + 128, (t + t>>8) >> 8, without a division.
func MulDiv255(a, b uint32) uint32 {
	t := a*b + 128
	return (t + t>>8) >> 8
}
