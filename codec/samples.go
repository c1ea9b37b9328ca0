package codec

// packSamples writes one row of 8-bit pixels of n samples each (1 grey, 2
// grey and alpha, 3 RGB, 4 RGBA) to dst in colour c, converting as
// convertImage does; row is scratch of 4 bytes a pixel.
func packSamples(dst, s, row []byte, n int, c Color) {
	w := len(row) / 4
	switch n {
	case 1:
		packGray(dst, s[:w], c)
		return
	case 2:
		for x := 0; x < w; x++ {
			g := s[2*x]
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = g, g, g, s[2*x+1]
		}
	case 3:
		if c == RGB {
			copy(dst, s[:3*w])
			return
		}
		for x := 0; x < w; x++ {
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = s[3*x], s[3*x+1], s[3*x+2], 0xFF
		}
	default:
		copy(row, s[:4*w])
	}
	packRGBA(dst, row, c)
}
