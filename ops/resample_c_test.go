package ops

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

var simdNames = []string{"portable", "avx2"}

// forEachSIMD runs f as a subtest at every SIMD level of this CPU.
func forEachSIMD(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	prev := setSIMD(len(simdNames))
	defer setSIMD(prev)
	for l := range simdLevel() + 1 {
		setSIMD(l)
		t.Run(simdNames[l], f)
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// passCase draws a table and windows for the pass tests: any filter, long
// filters (big shrinks), tiny inputs (1 tap, odd tap counts), upscales.
type passCase struct {
	in, out int
	f       interp
	aa      bool
	c       int
}

func randPassCase(rng *rand.Rand, i int) passCase {
	p := passCase{in: 1 + rng.IntN(120), out: 1 + rng.IntN(120), f: interp(1 + rng.IntN(3)), aa: rng.IntN(4) != 0, c: 1 + i%4}
	switch i % 5 {
	case 0:
		p.in, p.out = 1+rng.IntN(400), 1+rng.IntN(6)
	case 1:
		p.in = 1 + rng.IntN(4)
	case 2:
		p.out = p.in + rng.IntN(3*p.in) // upscale: 2 or 4 taps
	}
	return p
}

// window draws outputs [x0, x0+n) of out, the whole axis one time in three.
func window(rng *rand.Rand, out int) (x0, n int) {
	if rng.IntN(3) == 0 {
		return 0, out
	}
	x0 = rng.IntN(out)
	return x0, 1 + rng.IntN(out-x0)
}

// TestPassesMatchGo: the C passes write exactly the bytes of the Go
// reference loops, at every SIMD level, on random tables, windows, channel
// counts and strides, and nothing outside their rows: the destinations are
// random bytes, gaps between rows included, compared whole. Sources end
// where the last row ends.
func TestPassesMatchGo(t *testing.T) {
	forEachSIMD(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(31, 32))
		r := new(resampler)
		taps := map[int]bool{}
		for i := range 2000 {
			p := randPassCase(rng, i)
			c := p.c
			tab := r.table(p.in, p.out, p.f, p.aa)
			taps[tab.taps] = true

			x0, n := window(rng, p.out)
			rows := 1 + rng.IntN(4)
			sstride := p.in*c + rng.IntN(7)
			src := randBytes(rng, (rows-1)*sstride+p.in*c)
			dstride := n*c + rng.IntN(7)
			got := randBytes(rng, (rows-1)*dstride+n*c+rng.IntN(3))
			want := slices.Clone(got)
			hpass(got, dstride, src, sstride, rows, c, tab, x0, n)
			goHpass(want, dstride, src, sstride, rows, c, tab, x0, n)
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d hpass %v c=%d outputs %d+%d, %d rows: differs from Go", i, tab, c, x0, n, rows)
			}

			y0, m := window(rng, p.out)
			nb := 1 + rng.IntN(200)
			first := int(tab.start[y0]) - rng.IntN(int(tab.start[y0])+1)
			hi := int(tab.start[y0+m-1]) + tab.taps - first
			sstride = nb + rng.IntN(5)
			src = randBytes(rng, (hi-1)*sstride+nb)
			dstride = nb + rng.IntN(40)
			got = randBytes(rng, (m-1)*dstride+nb+rng.IntN(3))
			want = slices.Clone(got)
			vpass(got, dstride, src, sstride, nb, tab, y0, m, first)
			goVpass(want, dstride, src, sstride, nb, tab, y0, m, first)
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d vpass %v rows %d+%d of %d bytes from %d: differs from Go", i, tab, y0, m, nb, first)
			}
		}
		for _, n := range []int{1, 2, 3, 4, 6, 8, 10, 12} {
			if !taps[n] {
				t.Errorf("no table with %d taps among the cases", n)
			}
		}
	})
}

func TestNearestMatchesGo(t *testing.T) {
	forEachSIMD(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(33, 34))
		r := new(resampler)
		for i := range 500 {
			sh, sw, c := 1+rng.IntN(60), 1+rng.IntN(60), 1+i%4
			dh, dw := 1+rng.IntN(90), 1+rng.IntN(90)
			ty := r.table(sh, dh, interpNearest, false)
			tx := r.table(sw, dw, interpNearest, false)
			y0, rows := window(rng, dh)
			x0, cols := window(rng, dw)
			sstride := sw*c + rng.IntN(5)
			src := randBytes(rng, (sh-1)*sstride+sw*c)
			dstride := cols*c + rng.IntN(5)
			got := randBytes(rng, (rows-1)*dstride+cols*c+rng.IntN(3))
			want := slices.Clone(got)
			nearestPass(got, dstride, src, sstride, c, ty, y0, rows, tx, x0, cols)
			goNearest(want, dstride, src, sstride, c, ty, y0, rows, tx, x0, cols)
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d: %dx%d→%dx%d c=%d window %d+%d, %d+%d differs from Go", i, sh, sw, dh, dw, c, y0, rows, x0, cols)
			}
		}
	})
}

// TestPassBounds: the wrappers refuse what would read or write out of
// bounds instead of handing it to C.
func TestPassBounds(t *testing.T) {
	r := new(resampler)
	tab := r.table(10, 4, interpLinear, true)
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("hpass short src", func() { hpass(make([]byte, 12), 12, make([]byte, 29), 30, 1, 3, tab, 0, 4) })
	mustPanic("hpass short dst", func() { hpass(make([]byte, 11), 12, make([]byte, 30), 30, 1, 3, tab, 0, 4) })
	mustPanic("hpass window", func() { hpass(make([]byte, 12), 12, make([]byte, 30), 30, 1, 3, tab, 1, 4) })
	mustPanic("vpass short src", func() { vpass(make([]byte, 40), 10, make([]byte, 99), 10, 10, tab, 0, 4, 0) })
	mustPanic("vpass first", func() { vpass(make([]byte, 40), 10, make([]byte, 100), 10, 10, tab, 0, 4, 1) })
	mustPanic("vpass short dst", func() { vpass(make([]byte, 39), 10, make([]byte, 100), 10, 10, tab, 0, 4, 0) })
}
