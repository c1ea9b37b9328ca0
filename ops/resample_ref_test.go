package ops

import "github.com/sluice-dev/sluice/internal/reuse"

// The resampler's inner loops in Go: the reference that the C loops
// (resample.c) must match byte for byte, and what the resampler ran before
// them. They are written for Go's compiler:
//
//   - Fixed-length subslices (p[:12], k[:4]) let it drop bounds checks.
//   - Sums that live across a loop get spilled to the stack, so the common
//     tap counts (2 and 4; tables are padded to even counts) are unrolled
//     into straight-line code per output pixel, and longer filters step
//     four taps at a time.
//   - One function per channel count keeps a pixel's channel sums in
//     registers.
//
// All arithmetic is Pillow's: int32 sums of pixel × 22-bit weight, started
// at one half, then clip8.

// clip8 turns a fixed-point sum into a byte, saturating.
func clip8(v int32) byte {
	v >>= rsBits
	if uint32(v) > 255 {
		if v < 0 {
			return 0
		}
		return 255
	}
	return byte(v)
}

// hrow resamples one row horizontally: output pixel i sums t.taps input
// pixels from t.start[i] on.
func hrow(dst, src []byte, t *axisTable, c int) {
	switch c {
	case 1:
		hrow1(dst, src, t.start, t.k, t.taps)
	case 3:
		hrow3(dst, src, t.start, t.k, t.taps)
	case 4:
		hrow4(dst, src, t.start, t.k, t.taps)
	default:
		for i, s := range t.start {
			k := t.k[i*t.taps : (i+1)*t.taps]
			for ch := range c {
				s0 := int32(rsHalf)
				for j, w := range k {
					s0 += int32(src[(int(s)+j)*c+ch]) * w
				}
				dst[i*c+ch] = clip8(s0)
			}
		}
	}
}

func hrow1(dst, src []byte, start, kk []int32, n int) {
	dst = dst[:len(start)]
	kk = kk[:n*len(start)]
	switch n {
	case 2:
		for i, s := range start {
			k, p := kk[2*i:][:2], src[s:][:2]
			dst[i] = clip8(rsHalf + int32(p[0])*k[0] + int32(p[1])*k[1])
		}
	case 4:
		for i, s := range start {
			k, p := kk[4*i:][:4], src[s:][:4]
			dst[i] = clip8(rsHalf + int32(p[0])*k[0] + int32(p[1])*k[1] + int32(p[2])*k[2] + int32(p[3])*k[3])
		}
	default:
		for i, s := range start {
			k, p := kk[i*n:][:n], src[s:][:n]
			s0 := int32(rsHalf)
			for j, w := range k {
				s0 += int32(p[j]) * w
			}
			dst[i] = clip8(s0)
		}
	}
}

func hrow3(dst, src []byte, start, kk []int32, n int) {
	dst = dst[:3*len(start)]
	kk = kk[:n*len(start)]
	switch n {
	case 2:
		for i, s := range start {
			k, p, d := kk[2*i:][:2], src[3*int(s):][:6], dst[3*i:][:3]
			w0, w1 := k[0], k[1]
			d[0] = clip8(rsHalf + int32(p[0])*w0 + int32(p[3])*w1)
			d[1] = clip8(rsHalf + int32(p[1])*w0 + int32(p[4])*w1)
			d[2] = clip8(rsHalf + int32(p[2])*w0 + int32(p[5])*w1)
		}
	case 4:
		for i, s := range start {
			k, p, d := kk[4*i:][:4], src[3*int(s):][:12], dst[3*i:][:3]
			w0, w1, w2, w3 := k[0], k[1], k[2], k[3]
			d[0] = clip8(rsHalf + int32(p[0])*w0 + int32(p[3])*w1 + int32(p[6])*w2 + int32(p[9])*w3)
			d[1] = clip8(rsHalf + int32(p[1])*w0 + int32(p[4])*w1 + int32(p[7])*w2 + int32(p[10])*w3)
			d[2] = clip8(rsHalf + int32(p[2])*w0 + int32(p[5])*w1 + int32(p[8])*w2 + int32(p[11])*w3)
		}
	default:
		for i, s := range start {
			k, p := kk[i*n:][:n], src[3*int(s):][:3*n]
			s0, s1, s2 := int32(rsHalf), int32(rsHalf), int32(rsHalf)
			for len(k) >= 4 {
				w, q := k[:4], p[:12]
				s0 += int32(q[0])*w[0] + int32(q[3])*w[1] + int32(q[6])*w[2] + int32(q[9])*w[3]
				s1 += int32(q[1])*w[0] + int32(q[4])*w[1] + int32(q[7])*w[2] + int32(q[10])*w[3]
				s2 += int32(q[2])*w[0] + int32(q[5])*w[1] + int32(q[8])*w[2] + int32(q[11])*w[3]
				k, p = k[4:], p[12:]
			}
			for len(k) >= 2 {
				w0, w1, q := k[0], k[1], p[:6]
				s0 += int32(q[0])*w0 + int32(q[3])*w1
				s1 += int32(q[1])*w0 + int32(q[4])*w1
				s2 += int32(q[2])*w0 + int32(q[5])*w1
				k, p = k[2:], p[6:]
			}
			if len(k) == 1 {
				w, q := k[0], p[:3]
				s0 += int32(q[0]) * w
				s1 += int32(q[1]) * w
				s2 += int32(q[2]) * w
			}
			d := dst[3*i:][:3]
			d[0], d[1], d[2] = clip8(s0), clip8(s1), clip8(s2)
		}
	}
}

func hrow4(dst, src []byte, start, kk []int32, n int) {
	dst = dst[:4*len(start)]
	kk = kk[:n*len(start)]
	switch n {
	case 2:
		for i, s := range start {
			k, p, d := kk[2*i:][:2], src[4*int(s):][:8], dst[4*i:][:4]
			w0, w1 := k[0], k[1]
			d[0] = clip8(rsHalf + int32(p[0])*w0 + int32(p[4])*w1)
			d[1] = clip8(rsHalf + int32(p[1])*w0 + int32(p[5])*w1)
			d[2] = clip8(rsHalf + int32(p[2])*w0 + int32(p[6])*w1)
			d[3] = clip8(rsHalf + int32(p[3])*w0 + int32(p[7])*w1)
		}
	case 4:
		for i, s := range start {
			k, p, d := kk[4*i:][:4], src[4*int(s):][:16], dst[4*i:][:4]
			w0, w1, w2, w3 := k[0], k[1], k[2], k[3]
			d[0] = clip8(rsHalf + int32(p[0])*w0 + int32(p[4])*w1 + int32(p[8])*w2 + int32(p[12])*w3)
			d[1] = clip8(rsHalf + int32(p[1])*w0 + int32(p[5])*w1 + int32(p[9])*w2 + int32(p[13])*w3)
			d[2] = clip8(rsHalf + int32(p[2])*w0 + int32(p[6])*w1 + int32(p[10])*w2 + int32(p[14])*w3)
			d[3] = clip8(rsHalf + int32(p[3])*w0 + int32(p[7])*w1 + int32(p[11])*w2 + int32(p[15])*w3)
		}
	default:
		for i, s := range start {
			k, p := kk[i*n:][:n], src[4*int(s):][:4*n]
			s0, s1, s2, s3 := int32(rsHalf), int32(rsHalf), int32(rsHalf), int32(rsHalf)
			for len(k) >= 4 {
				w, q := k[:4], p[:16]
				s0 += int32(q[0])*w[0] + int32(q[4])*w[1] + int32(q[8])*w[2] + int32(q[12])*w[3]
				s1 += int32(q[1])*w[0] + int32(q[5])*w[1] + int32(q[9])*w[2] + int32(q[13])*w[3]
				s2 += int32(q[2])*w[0] + int32(q[6])*w[1] + int32(q[10])*w[2] + int32(q[14])*w[3]
				s3 += int32(q[3])*w[0] + int32(q[7])*w[1] + int32(q[11])*w[2] + int32(q[15])*w[3]
				k, p = k[4:], p[16:]
			}
			for len(k) >= 2 {
				w0, w1, q := k[0], k[1], p[:8]
				s0 += int32(q[0])*w0 + int32(q[4])*w1
				s1 += int32(q[1])*w0 + int32(q[5])*w1
				s2 += int32(q[2])*w0 + int32(q[6])*w1
				s3 += int32(q[3])*w0 + int32(q[7])*w1
				k, p = k[2:], p[8:]
			}
			if len(k) == 1 {
				w, q := k[0], p[:4]
				s0 += int32(q[0]) * w
				s1 += int32(q[1]) * w
				s2 += int32(q[2]) * w
				s3 += int32(q[3]) * w
			}
			d := dst[4*i:][:4]
			d[0], d[1], d[2], d[3] = clip8(s0), clip8(s1), clip8(s2), clip8(s3)
		}
	}
}

// Vertical kernels: output byte i sums byte i of the taps' rows, whatever
// the channel count.

func vrow1(out, a []byte, k0 int32) {
	a = a[:len(out)]
	for i := range out {
		out[i] = clip8(rsHalf + int32(a[i])*k0)
	}
}

func vrow2(out, a, b []byte, k0, k1 int32) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = clip8(rsHalf + int32(a[i])*k0 + int32(b[i])*k1)
	}
}

func vrow3(out, a, b, c []byte, k0, k1, k2 int32) {
	a, b, c = a[:len(out)], b[:len(out)], c[:len(out)]
	for i := range out {
		out[i] = clip8(rsHalf + int32(a[i])*k0 + int32(b[i])*k1 + int32(c[i])*k2)
	}
}

func vrow4(out, a, b, c, d []byte, k0, k1, k2, k3 int32) {
	a, b, c, d = a[:len(out)], b[:len(out)], c[:len(out)], d[:len(out)]
	for i := range out {
		out[i] = clip8(rsHalf + int32(a[i])*k0 + int32(b[i])*k1 + int32(c[i])*k2 + int32(d[i])*k3)
	}
}

// vacc4 and vacc1 add rows into the sums of a long vertical filter.
func vacc4(acc []int32, a, b, c, d []byte, k0, k1, k2, k3 int32) {
	a, b, c, d = a[:len(acc)], b[:len(acc)], c[:len(acc)], d[:len(acc)]
	for i := range acc {
		acc[i] += int32(a[i])*k0 + int32(b[i])*k1 + int32(c[i])*k2 + int32(d[i])*k3
	}
}

func vacc1(acc []int32, a []byte, k0 int32) {
	a = a[:len(acc)]
	for i := range acc {
		acc[i] += int32(a[i]) * k0
	}
}

// goHpass is hpass (resample_c.go) with the Go loops.
func goHpass(dst []byte, dstride int, src []byte, sstride int, rows, c int, t *axisTable, x0, n int) {
	v := *t
	v.start, v.k = t.start[x0:x0+n], t.k[x0*t.taps:(x0+n)*t.taps]
	for y := range rows {
		hrow(dst[y*dstride:y*dstride+n*c], src[y*sstride:y*sstride+t.in*c], &v, c)
	}
}

// goVpass is vpass (resample_c.go) with the Go loops.
func goVpass(dst []byte, dstride int, src []byte, sstride, n int, t *axisTable, y0, rows, first int) {
	var acc []int32
	for y := range rows {
		s := int(t.start[y0+y])
		k := t.k[(y0+y)*t.taps : (y0+y+1)*t.taps]
		base := (s - first) * sstride
		row := func(j int) []byte { return src[base+j*sstride : base+j*sstride+n] }
		out := dst[y*dstride : y*dstride+n]
		switch len(k) {
		case 1:
			vrow1(out, row(0), k[0])
		case 2:
			vrow2(out, row(0), row(1), k[0], k[1])
		case 3:
			vrow3(out, row(0), row(1), row(2), k[0], k[1], k[2])
		case 4:
			vrow4(out, row(0), row(1), row(2), row(3), k[0], k[1], k[2], k[3])
		default:
			acc = reuse.Len(acc, n)
			for i := range acc {
				acc[i] = rsHalf
			}
			j := 0
			for ; j+4 <= len(k); j += 4 {
				vacc4(acc, row(j), row(j+1), row(j+2), row(j+3), k[j], k[j+1], k[j+2], k[j+3])
			}
			for ; j < len(k); j++ {
				vacc1(acc, row(j), k[j])
			}
			for i, v := range acc {
				out[i] = clip8(v)
			}
		}
	}
}

// goNearest is nearestPass (resample_c.go) in Go.
func goNearest(dst []byte, dstride int, src []byte, sstride, c int, ty *axisTable, y0, rows int, tx *axisTable, x0, cols int) {
	for y := range rows {
		in := src[int(ty.start[y0+y])*sstride:]
		out := dst[y*dstride:]
		for x := range cols {
			sx := int(tx.start[x0+x])
			copy(out[x*c:x*c+c], in[sx*c:sx*c+c])
		}
	}
}
