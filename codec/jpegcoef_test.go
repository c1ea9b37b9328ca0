package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/sluice-dev/sluice/internal/testimg"
)

// The coefficient decoder against libjpeg-turbo: its coefficients, put
// through the accurate integer IDCT below, must give DecodeYUVPlanes'
// planes (libjpeg's IDCT of libjpeg's coefficients) exactly, for every
// subsampling, greyscale, sizes that leave partial blocks and MCUs, and
// restart intervals, progressive and sequential. tests/test_jpegentropy.py
// compares the coefficients themselves with jpeg_read_coefficients'.

// progressiveJPEG encodes noise over a gradient with libjpeg's standard
// progressive script (Pillow's), luma sampled lx×ly against chroma's 1×1.
// restart sets a restart interval (in MCUs; 0 for none).
func progressiveJPEG(t testing.TB, w, h, lx, ly, restart int) []byte {
	return colourJPEG(t, w, h, lx, ly, restart, testimg.SimpleProgression)
}

// colourJPEG is progressiveJPEG with the scan script given: nil for one
// sequential scan.
func colourJPEG(t testing.TB, w, h, lx, ly, restart int, scans []testimg.Scan) []byte {
	t.Helper()
	src, err := testimg.LibJPEG(noisyRGB(w, h), w, h, testimg.LibJPEGOptions{Quality: 85, Luma: [2]int{lx, ly}, Restart: restart, Scans: scans})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// coefOf decodes src's coefficients into fresh buffers, with a guard after
// each that must come back untouched.
func coefOf(t testing.TB, d *CoefDecoder, src []byte) ([]int16, error) {
	t.Helper()
	blocks, err := d.Frame(src)
	if err != nil {
		return nil, err
	}
	const guard = 64
	coef := make([]int16, (blocks+guard)*64)
	nz := make([]uint64, blocks+guard)
	for i := blocks * 64; i < len(coef); i++ {
		coef[i] = 0x5A5A
	}
	for i := blocks; i < len(nz); i++ {
		nz[i] = 0x5A5A5A5A
	}
	cb := unsafe.Slice((*byte)(unsafe.Pointer(&coef[0])), blocks*CoefBlock)
	err = d.Decode(cb, nz[:blocks], src)
	for i := blocks * 64; i < len(coef); i++ {
		if coef[i] != 0x5A5A {
			t.Fatalf("coefficient %d past the %d blocks written", i, blocks)
		}
	}
	for i := blocks; i < len(nz); i++ {
		if nz[i] != 0x5A5A5A5A {
			t.Fatalf("mask %d past the %d blocks written", i, blocks)
		}
	}
	return coef[:blocks*64], err
}

// islowPlane is libjpeg's accurate integer IDCT (jidctint.c's algorithm:
// 13-bit constants, two extra bits between the passes) of component c,
// cropped to its plane, with the saturation its SIMD versions apply.
func islowPlane(coef []int16, c CoefComponent) []byte {
	const (
		constBits = 13
		pass1Bits = 2
	)
	// FIX(x) = x * 2^13 rounded, for the rotations of the LLM IDCT.
	const (
		f0298 = 2446
		f0390 = 3196
		f0541 = 4433
		f0765 = 6270
		f0899 = 7373
		f1175 = 9633
		f1501 = 12299
		f1847 = 15137
		f1961 = 16069
		f2053 = 16819
		f2562 = 20995
		f3072 = 25172
	)
	descale := func(x int64, n uint) int64 { return (x + 1<<(n-1)) >> n }
	// butterfly is one 1-D pass over in[0..7] (already dequantised and
	// scaled), returning the 8 outputs before descaling.
	butterfly := func(in [8]int64) (out [8]int64) {
		z2, z3 := in[2], in[6]
		z1 := (z2 + z3) * f0541
		tmp2 := z1 - z3*f1847
		tmp3 := z1 + z2*f0765
		tmp0 := (in[0] + in[4]) << constBits
		tmp1 := (in[0] - in[4]) << constBits
		t10, t13, t11, t12 := tmp0+tmp3, tmp0-tmp3, tmp1+tmp2, tmp1-tmp2
		o0, o1, o2, o3 := in[7], in[5], in[3], in[1]
		q1, q2, q3, q4 := o0+o3, o1+o2, o0+o2, o1+o3
		z5 := (q3 + q4) * f1175
		o0 *= f0298
		o1 *= f2053
		o2 *= f3072
		o3 *= f1501
		q1 *= -f0899
		q2 *= -f2562
		q3 = q3*-f1961 + z5
		q4 = q4*-f0390 + z5
		o0 += q1 + q3
		o1 += q2 + q4
		o2 += q2 + q3
		o3 += q1 + q4
		return [8]int64{t10 + o3, t11 + o2, t12 + o1, t13 + o0, t13 - o0, t12 - o1, t11 - o2, t10 - o3}
	}
	plane := make([]byte, c.W*c.Height)
	for by := range c.BlocksH {
		for bx := range c.BlocksW {
			blk := coef[(c.First+by*c.Pitch+bx)*64:][:64]
			var ws [64]int64
			for col := range 8 {
				var in [8]int64
				for k := range 8 {
					in[k] = int64(blk[k*8+col]) * int64(c.Quant[k*8+col])
				}
				out := butterfly(in)
				for k := range 8 {
					ws[k*8+col] = descale(out[k], constBits-pass1Bits)
				}
			}
			for row := range 8 {
				var in [8]int64
				copy(in[:], ws[row*8:row*8+8])
				out := butterfly(in)
				y := by*8 + row
				for k := range 8 {
					x := bx*8 + k
					if x < c.W && y < c.Height {
						plane[y*c.W+x] = byte(min(max(descale(out[k], constBits+pass1Bits+3)+128, 0), 255))
					}
				}
			}
		}
	}
	return plane
}

func TestCoefficientsMatchLibJPEG(t *testing.T) {
	// Both builds: the BMI2 one where the CPU has it, and the plain one.
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			d, err := NewCoefDecoder()
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if plain {
				d.plain = 1
			}
			coefficientsMatch(t, d)
		})
	}
}

func coefficientsMatch(t *testing.T, d *CoefDecoder) {
	for _, tc := range []struct {
		w, h, lx, ly, restart int
		sequential            bool
	}{
		{333, 250, 2, 2, 0, false}, {17, 9, 2, 2, 0, false}, {64, 48, 1, 1, 0, false}, {250, 333, 2, 1, 0, false},
		{101, 77, 1, 2, 0, false}, {8, 8, 2, 2, 0, false}, {1, 1, 1, 1, 0, false}, {200, 150, 2, 2, 5, false},
		{333, 250, 2, 2, 0, true}, {17, 9, 2, 1, 0, true}, {64, 48, 1, 1, 0, true}, {101, 77, 1, 2, 7, true},
	} {
		name := fmt.Sprintf("%dx%d_%dx%d_restart%d", tc.w, tc.h, tc.lx, tc.ly, tc.restart)
		scans := testimg.SimpleProgression
		if tc.sequential {
			name, scans = "sequential_"+name, nil
		}
		t.Run(name, func(t *testing.T) {
			src := colourJPEG(t, tc.w, tc.h, tc.lx, tc.ly, tc.restart, scans)
			coef, err := coefOf(t, d, src)
			if err != nil {
				t.Fatal(err)
			}
			want, w, h, cw, ch, _, _, err := DecodeYUVPlanes(src)
			if err != nil {
				t.Fatal(err)
			}
			if d.Components() != 3 {
				t.Fatalf("%d components", d.Components())
			}
			sizes := [3][2]int{{w, h}, {cw, ch}, {cw, ch}}
			for i := range 3 {
				c := d.Component(i)
				if c.W != sizes[i][0] || c.Height != sizes[i][1] {
					t.Fatalf("component %d: plane %dx%d, libjpeg's %dx%d", i, c.W, c.Height, sizes[i][0], sizes[i][1])
				}
				if c.Quant[0] == 0 {
					t.Fatalf("component %d: no quantisation table", i)
				}
				if got := islowPlane(coef, c); !bytes.Equal(got, want[i]) {
					t.Fatalf("component %d: the IDCT of the coefficients differs from libjpeg's plane at %d of %d samples",
						i, countDiff(got, want[i]), len(got))
				}
			}
		})
	}
	for _, script := range [][]testimg.Scan{greyScript, nil} {
		t.Run(fmt.Sprintf("greyscale_%d_scans", max(len(script), 1)), func(t *testing.T) { testGrey(t, d, script) })
	}
}

func testGrey(t *testing.T, d *CoefDecoder, script []testimg.Scan) {
	img, err := testimg.LibJPEG(noisyRGB(123, 45), 123, 45, testimg.LibJPEGOptions{Quality: 75, Grey: true, Restart: 3, Scans: script})
	if err != nil {
		t.Fatal(err)
	}
	coef, err := coefOf(t, d, img)
	if err != nil {
		t.Fatal(err)
	}
	grey, err := Decode(img, Options{Color: Gray})
	if err != nil {
		t.Fatal(err)
	}
	want := grey.Pix
	if got := islowPlane(coef, d.Component(0)); d.Components() != 1 || !bytes.Equal(got, want) {
		t.Fatalf("%d components; the IDCT differs from libjpeg's grey at %d samples", d.Components(), countDiff(got, want))
	}
}

// greyScript is a progressive script for one component.
var greyScript = []testimg.Scan{
	{Comps: []int{0}, Ss: 0, Se: 0, Ah: 0, Al: 1},
	{Comps: []int{0}, Ss: 1, Se: 5, Ah: 0, Al: 2},
	{Comps: []int{0}, Ss: 6, Se: 63, Ah: 0, Al: 2},
	{Comps: []int{0}, Ss: 1, Se: 63, Ah: 2, Al: 1},
	{Comps: []int{0}, Ss: 0, Se: 0, Ah: 1, Al: 0},
	{Comps: []int{0}, Ss: 1, Se: 63, Ah: 1, Al: 0},
}

func countDiff(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func TestCoefficientErrors(t *testing.T) {
	d, err := NewCoefDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	prog := progressiveJPEG(t, 64, 48, 2, 2, 0)
	arith, err := testimg.LibJPEG(noisyRGB(64, 48), 64, 48, testimg.LibJPEGOptions{Quality: 85, Arithmetic: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		src   []byte
		cause Cause
	}{
		{"arithmetic-coded", arith, Unsupported},
		{"not a JPEG", []byte("GIF89a, not a JPEG at all"), Unsupported},
		{"cut in its scans", prog[:len(prog)*2/3], Truncated},
		{"501 scans", testimg.ManyScans(64, 64, 501), TooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := coefOf(t, d, tc.src)
			var ce *Error
			if !errors.As(err, &ce) || ce.Cause != tc.cause || ce.Format != "JPEG" {
				t.Fatalf("got %v, want a JPEG error of cause %q", err, tc.cause)
			}
		})
	}
	t.Run("small buffer", func(t *testing.T) {
		blocks, err := d.Frame(prog)
		if err != nil {
			t.Fatal(err)
		}
		coef := make([]byte, (blocks-1)*CoefBlock)
		if err := d.Decode(coef, make([]uint64, blocks), prog); err == nil {
			t.Fatal("decoded into a buffer one block short")
		}
	})
}

// Damaged JPEGs: every mutation decodes or fails with an
// error, and writes nothing past the frame's blocks (the guards).
func TestCoefficientsHostile(t *testing.T) {
	d, err := NewCoefDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	seeds := [][]byte{progressiveJPEG(t, 40, 33, 2, 2, 2), progressiveJPEG(t, 31, 17, 1, 1, 0), colourJPEG(t, 35, 19, 2, 2, 3, nil)}
	grey, err := testimg.LibJPEG(noisyRGB(29, 21), 29, 21, testimg.LibJPEGOptions{Quality: 75, Grey: true, Restart: 3, Scans: greyScript})
	if err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, grey)
	r := rand.New(rand.NewPCG(1, 2))
	decoded := 0
	for i := range 3000 {
		src := bytes.Clone(seeds[i%len(seeds)])
		for range 1 + r.IntN(4) {
			switch at := r.IntN(len(src)); r.IntN(3) {
			case 0:
				src[at] = byte(r.IntN(256))
			case 1:
				src[at] ^= 1 << r.IntN(8)
			default:
				src = src[:max(at, 2)]
			}
		}
		if _, err := coefOf(t, d, src); err == nil {
			decoded++
		}
	}
	t.Logf("%d of 3000 mutated files decoded", decoded)
}

// FuzzCoefficients: whatever the bytes, Frame and Decode return a result
// or an error and write nothing past the frame's blocks (coefOf's guards),
// with one decoder for all inputs, as a worker's.
func FuzzCoefficients(f *testing.F) {
	f.Add(progressiveJPEG(f, 40, 33, 2, 2, 2))
	f.Add(colourJPEG(f, 35, 19, 2, 1, 3, nil))
	f.Add(testimg.ManyScans(64, 64, 40))
	d, err := NewCoefDecoder()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(d.Close)
	f.Fuzz(func(t *testing.T, src []byte) {
		if blocks, err := d.Frame(src); err == nil && blocks > 1<<20 {
			t.Skip("a frame of more blocks than a fuzz input should make the test allocate")
		}
		_, _ = coefOf(t, d, src)
	})
}
