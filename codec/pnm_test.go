package codec

import (
	"fmt"
	"image/color"
	"math"
	"strings"
	"testing"
)

// pillowScale is Pillow 13's sample scaling written out: round(v/maxval*m)
// with Python's round (half to even), clamped to m.
func pillowScale(v, maxval, m int) int {
	return int(min(float64(m), math.RoundToEven(float64(v)/float64(maxval)*float64(m))))
}

func grayNRGBA(v uint8) color.NRGBA { return color.NRGBA{v, v, v, 255} }

func plainSamples(vals []int) string {
	var b strings.Builder
	for i, v := range vals {
		sep := " "
		if i%7 == 6 {
			sep = "\n"
		}
		fmt.Fprintf(&b, "%d%s", v, sep)
	}
	return b.String()
}

func TestPNMBitmaps(t *testing.T) {
	const w, h = 11, 3
	bit := func(x, y int) int { return (x*x + y) % 3 & 1 }
	want := func(x, y int) color.NRGBA { return grayNRGBA(uint8(255 * (1 - bit(x, y)))) } // 1 is black
	raw := []byte("P4\n# comment\n11 3\n")
	var plain strings.Builder
	plain.WriteString("P1 11 3\n")
	for y := 0; y < h; y++ {
		row := make([]byte, 2)
		for x := 0; x < w; x++ {
			row[x/8] |= byte(bit(x, y) << (7 - x%8))
			fmt.Fprintf(&plain, "%d", bit(x, y)) // whitespace optional
			if x == 4 {
				plain.WriteString(" #c\n")
			}
		}
		raw = append(raw, row...)
		plain.WriteString("\n")
	}
	checkAllColors(t, raw, w, h, want)
	checkAllColors(t, []byte(plain.String()), w, h, want)
}

func TestPNMGreyAndColour(t *testing.T) {
	const w, h = 7, 4
	for _, maxval := range []int{1, 2, 15, 100, 255, 256, 1000, 4095, 65535} {
		sample := func(x, y, c int) int { return (x*131 + y*977 + c*4001) % (maxval + 1) }
		// Greymaps over 255 are 16-bit to Pillow: scaled to 65535, high byte.
		gm := 255
		if maxval > 255 {
			gm = 65535
		}
		gray := func(x, y int) color.NRGBA {
			v := pillowScale(sample(x, y, 0), maxval, gm)
			if gm == 65535 {
				v >>= 8
			}
			return grayNRGBA(uint8(v))
		}
		rgb := func(x, y int) color.NRGBA {
			return color.NRGBA{uint8(pillowScale(sample(x, y, 0), maxval, 255)), uint8(pillowScale(sample(x, y, 1), maxval, 255)),
				uint8(pillowScale(sample(x, y, 2), maxval, 255)), 255}
		}
		for _, kind := range []string{"P2", "P3", "P5", "P6"} {
			t.Run(fmt.Sprintf("%s/%d", kind, maxval), func(t *testing.T) {
				ch := 1
				if kind == "P3" || kind == "P6" {
					ch = 3
				}
				var vals []int
				for y := 0; y < h; y++ {
					for x := 0; x < w; x++ {
						for c := 0; c < ch; c++ {
							vals = append(vals, sample(x, y, c))
						}
					}
				}
				src := []byte(fmt.Sprintf("%s\n%d #width\n%d\n%d\n", kind, w, h, maxval))
				if kind == "P2" || kind == "P3" {
					src = append(src, plainSamples(vals)...)
				} else {
					for _, v := range vals {
						if maxval > 255 {
							src = append(src, byte(v>>8))
						}
						src = append(src, byte(v))
					}
				}
				want := gray
				if ch == 3 {
					want = rgb
				}
				checkAllColors(t, src, w, h, want)
			})
		}
	}
}

func TestPNMPillowDetails(t *testing.T) {
	// A comment inside a token is cut out and does not end it (Pillow):
	// "1#x\n2" is 12.
	img := mustDecode(t, []byte("P5 1#x\n2 1 255\n"+strings.Repeat("\x07", 12)), Options{Color: Gray})
	if img.Width != 12 || img.Pix[11] != 7 {
		t.Fatalf("got %dx%d %v", img.Width, img.Height, img.Pix)
	}
	// Raw samples over maxval clamp.
	img = mustDecode(t, []byte("P5\n3 1\n100\n\x00\x64\xff"), Options{Color: Gray})
	if string(img.Pix) != "\x00\xff\xff" {
		t.Fatalf("got %v", img.Pix)
	}
	// Half-way samples round to even: 1/2*255 = 127.5 → 128; 3/2... maxval 2.
	img = mustDecode(t, []byte("P5\n3 1\n2\n\x00\x01\x02"), Options{Color: Gray})
	if string(img.Pix) != "\x00\x80\xff" {
		t.Fatalf("got %v", img.Pix)
	}
}

func TestPNMErrors(t *testing.T) {
	cases := []struct {
		src  string
		want Cause
		msg  string
	}{
		{"P6\n4 4\n255\n" + strings.Repeat("x", 47), Truncated, "ends early"},
		{"P5\n4 4\n65535\n" + strings.Repeat("x", 31), Truncated, "ends early"},
		{"P4\n9 2\n\x00\x00\x00", Truncated, "ends early"},
		{"P2\n2 2\n255\n1 2 3", Truncated, "ends early"},
		{"P2\n2 2\n255\n1 2 3         ", Truncated, "ends early"},
		{"P1\n3 1\n01", Truncated, "ends early"},
		{"P6\n4", Truncated, "height"},
		{"P6\n4 4", Truncated, "maxval"},
		{"P3\n1 1\n255\n1 2 300\n", Corrupt, "over maxval"},
		{"P1\n2 1\n02\n", Corrupt, "0 or 1"},
		{"P5\n1 1\n70000\n\x00\x00", Corrupt, "maxval"},
		{"P5\n1 1\n0\n\x00", Corrupt, "maxval"},
		{"P5\n0 1\n255\n", Corrupt, "0x1"},
		{"P5\n-1 1\n255\n\x00", Corrupt, "'-'"},
		{"P5\n12345678901 1\n255\n\x00", Corrupt, "longer than"},
		{"P5\n9999999999 9999999999\n255\n\x00", TooLarge, "too large"},
		{"P7\nWIDTH 1\n", Unsupported, "PAM"},
		// PFM, which Pillow reads as floats: named, not "not an image".
		{"PF\n2 2\n-1.0\n" + strings.Repeat("\x00", 48), Unsupported, "PFM"},
		{"Pf\n2 2\n-1.0\n" + strings.Repeat("\x00", 16), Unsupported, "PFM"},
	}
	for _, tc := range cases {
		_, err := Decode([]byte(tc.src), Options{})
		wantCause(t, err, tc.want)
		if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "P") {
			t.Errorf("%q: %v does not say %q", tc.src, err, tc.msg)
		}
	}
	if Sniff([]byte("P6x")) != "" || Sniff([]byte("P8\n")) != "" || Sniff([]byte("P6\n")) != "PNM" {
		t.Error("PNM sniffing")
	}
}

// The pixel limit applies from the header: nothing of a forged size's
// raster needs to be there.
func TestPNMPixelLimitFirst(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	for _, src := range []string{"P6\n40000 40000\n255\n", "P3\n40000 40000\n255\n", "P4\n40000 40000\n"} {
		_, err := d.Header([]byte(src), LimitsFor(1<<20))
		wantCause(t, err, TooLarge)
		_, err = d.Header([]byte(src), Limits{})
		wantCause(t, err, Truncated)
	}
}

// BenchmarkDecodePNM decodes a 1024×768 pixmap into RGB, raw 8 and 16-bit
// and plain, with one reused decoder (SetBytes counts pixels).
func BenchmarkDecodePNM(b *testing.B) {
	const w, h = 1024, 768
	raw := []byte(fmt.Sprintf("P6\n%d %d\n255\n", w, h))
	raw16 := []byte(fmt.Sprintf("P6\n%d %d\n65535\n", w, h))
	var plain strings.Builder
	fmt.Fprintf(&plain, "P3\n%d %d\n255\n", w, h)
	for i := 0; i < w*h*3; i++ {
		v := byte(i*7 + i/3000)
		raw = append(raw, v)
		raw16 = append(raw16, v, byte(i))
		fmt.Fprintf(&plain, "%d ", v)
	}
	for _, tc := range []struct {
		name string
		src  []byte
	}{{"P6", raw}, {"P6_16bit", raw16}, {"P3_plain", []byte(plain.String())}} {
		b.Run(tc.name, func(b *testing.B) { benchDecode(b, tc.src, w, h) })
	}
}
