//go:build linux

package ops

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"
)

// guarded returns n bytes that end right before an unmapped page, so that
// reading or writing one byte past them faults: the C loops' wide loads and
// stores must stay inside the buffers they are given.
func guarded(t *testing.T, n int) []byte {
	t.Helper()
	page := os.Getpagesize()
	size := (n+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return mem[size-page-n : size-page : size-page]
}

func TestPassesGuardPages(t *testing.T) {
	forEachSIMD(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		r := new(resampler)
		for i := range 300 {
			p := randPassCase(rng, i)
			c := p.c
			tab := r.table(p.in, p.out, p.f, p.aa)
			x0, n := window(rng, p.out)
			rows := 1 + rng.IntN(3)
			src := guarded(t, (rows-1)*p.in*c+p.in*c)
			copy(src, randBytes(rng, len(src)))
			dst := guarded(t, (rows-1)*n*c+n*c)
			want := make([]byte, len(dst))
			hpass(dst, n*c, src, p.in*c, rows, c, tab, x0, n)
			goHpass(want, n*c, src, p.in*c, rows, c, tab, x0, n)
			if !bytes.Equal(dst, want) {
				t.Fatalf("case %d hpass %v c=%d: differs from Go", i, tab, c)
			}

			y0, m := window(rng, p.out)
			nb := 1 + rng.IntN(100)
			first := int(tab.start[y0])
			hi := int(tab.start[y0+m-1]) + tab.taps - first
			src = guarded(t, hi*nb)
			copy(src, randBytes(rng, len(src)))
			dst = guarded(t, m*nb)
			want = make([]byte, len(dst))
			vpass(dst, nb, src, nb, nb, tab, y0, m, first)
			goVpass(want, nb, src, nb, nb, tab, y0, m, first)
			if !bytes.Equal(dst, want) {
				t.Fatalf("case %d vpass %v: differs from Go", i, tab)
			}
		}
		for i := range 300 {
			sh, sw, dh, dw, c := 1+rng.IntN(40), 1+rng.IntN(40), 1+rng.IntN(60), 1+rng.IntN(60), 1+i%4
			ty := r.table(sh, dh, interpNearest, false)
			tx := r.table(sw, dw, interpNearest, false)
			y0, rows := window(rng, dh)
			x0, cols := window(rng, dw)
			src := guarded(t, sh*sw*c)
			copy(src, randBytes(rng, len(src)))
			dst := guarded(t, rows*cols*c)
			want := make([]byte, len(dst))
			nearestPass(dst, cols*c, src, sw*c, c, ty, y0, rows, tx, x0, cols)
			goNearest(want, cols*c, src, sw*c, c, ty, y0, rows, tx, x0, cols)
			if !bytes.Equal(dst, want) {
				t.Fatalf("case %d nearest %dx%d→%dx%d c=%d: differs from Go", i, sh, sw, dh, dw, c)
			}
		}
		// Whole operators on guarded images, fused windows included.
		for i := range 200 {
			h, w, c := 1+rng.IntN(60), 1+rng.IntN(60), 1+i%4
			img := &Tensor{DType: Uint8, Dims: []int{h, w, c}, Color: colorOf[c], Data: guarded(t, h*w*c)}
			copy(img.Data, randBytes(rng, h*w*c))
			heap := &Tensor{DType: Uint8, Dims: []int{h, w, c}, Color: colorOf[c], Data: slices.Clone(img.Data)}
			rsArgs, crArgs := randResizeCrop(rng, c)
			rs, cr := mustBuild(t, "resize", rsArgs), mustBuild(t, "crop", crArgs)
			for _, op := range []Op{rs, fuse(t, rs, cr)} {
				got := newRunner(t, op, 1).mustRun(t, img)
				want := newRunner(t, op, 1).mustRun(t, heap)
				if !bytes.Equal(got.Data, want.Data) {
					t.Fatalf("%v %v on %dx%dx%d: differs on a guarded image", rsArgs, crArgs, h, w, c)
				}
			}
		}
	})
}
