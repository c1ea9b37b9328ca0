package codec

// rleDecode expands a BMP's RLE8 or RLE4 pixel array, starting at src[off],
// into idx: w×h palette indices in stored row order. It follows Pillow 13's
// BmpRleDecoder code for code, so that both read every file alike:
//
//   - a run longer than what is left of its row is cut at the row's end;
//   - an absolute (literal) run is not: it goes on into the next row;
//   - end-of-line fills the rest of the row with index 0 (nothing when the
//     row is already complete), a delta fills what it skips with 0;
//   - after a literal run the reader skips to an even offset in the file;
//   - data that ends, or an end-of-bitmap code, before every pixel is set
//     fails (Pillow: "not enough image data").
//
// Work is linear in len(idx) plus the input: every code either sets pixels
// or is consumed.
func rleDecode(idx, src []byte, off, w int, rle4 bool) error {
	n := len(idx)
	p, x, i := 0, 0, off // pixels set, column counter, read position
	fill := func(k int, v byte) {
		for ; k > 0 && p < n; k-- {
			idx[p] = v
			p++
		}
	}
loop:
	for p < n {
		if i+2 > len(src) {
			break
		}
		count, b := int(src[i]), src[i+1]
		i += 2
		if count > 0 {
			if x+count > w {
				count = max(0, w-x)
			}
			if rle4 {
				hi, lo := b>>4, b&0x0F
				for k := 0; k < count && p < n; k++ {
					if k%2 == 0 {
						idx[p] = hi
					} else {
						idx[p] = lo
					}
					p++
				}
			} else {
				fill(count, b)
			}
			x += count
			continue
		}
		switch b {
		case 0: // end of line
			if p%w != 0 {
				fill(w-p%w, 0)
			}
			x = 0
		case 1: // end of bitmap
			return bmpErr(Corrupt, "BMP RLE data ends (end-of-bitmap code) after %d of %d pixels", p, n)
		case 2: // delta: skip right, up
			if i+2 > len(src) {
				break loop
			}
			right, up := int(src[i]), int(src[i+1])
			i += 2
			fill(min(n-p, right+up*w), 0)
			x = p % w
		default: // literal run of b pixels
			k := min(n-p, int(b))
			nb := k
			if rle4 {
				nb = (k + 1) / 2
			}
			got := min(nb, len(src)-i)
			for j := 0; j < got; j++ {
				v := src[i+j]
				if rle4 {
					idx[p] = v >> 4
					p++
					if 2*j+1 < k {
						idx[p] = v & 0x0F
						p++
					}
				} else {
					idx[p] = v
					p++
				}
			}
			i += got
			if got < nb || p == n {
				break loop
			}
			x += int(b)
			if i%2 != 0 {
				i++
			}
		}
	}
	if p < n {
		return bmpErr(Truncated, "BMP RLE data ends after %d of %d pixels", p, n)
	}
	return nil
}
