package ops

import (
	"bytes"
	"math"
	"testing"
)

func TestCropRoundingArgs(t *testing.T) {
	wantArgErr(t, "crop", Args{"size": IntsVal(2, 2), "rounding": StrVal("ceil")}, "rounding")
	// Given with a window that is not centred, it would change nothing.
	wantArgErr(t, "crop", Args{"roi": IntsVal(0, 0, 1, 1), "rounding": StrVal("floor")}, "rounding")
	wantArgErr(t, "crop", Args{"roi_rel": FloatsVal(0, 0, 1, 1), "rounding": StrVal("half_even")}, "rounding")
	for _, r := range []string{"half_even", "floor", "FLOOR"} {
		mustBuild(t, "crop", Args{"size": IntsVal(2, 2), "rounding": StrVal(r)})
	}
}

// The two libraries' centre crops, one axis at a time, written from their
// source as they compute it: the source index each output position reads,
// -1 where it is fill.

// torchvisionAxis is torchvision's F.center_crop: an image smaller than the
// crop is first padded by (out-in)//2 before and the rest after, then
// cropped at int(round((in-out)/2.0)), Python's round (half to even).
func torchvisionAxis(in, out int) []int {
	idx := make([]int, 0, max(in, out))
	if out > in {
		before := (out - in) / 2
		for range before {
			idx = append(idx, -1)
		}
		for i := range in {
			idx = append(idx, i)
		}
		for len(idx) < out {
			idx = append(idx, -1)
		}
	} else {
		for i := range in {
			idx = append(idx, i)
		}
	}
	top := int(math.RoundToEven(float64(len(idx)-out) / 2.0))
	return idx[top : top+out]
}

// pyFloorDiv is Python's a // b for b > 0.
func pyFloorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// transformersAxis is transformers' image_transforms.center_crop: top =
// (in-out)//2; when the window leaves the image it pads to max(in, out)
// with ceil((new-in)/2) before, shifts the window by that and clips it.
func transformersAxis(in, out int) []int {
	top := pyFloorDiv(in-out, 2)
	if top >= 0 && top+out <= in {
		idx := make([]int, out)
		for i := range idx {
			idx[i] = top + i
		}
		return idx
	}
	n := max(in, out)
	pad := (n - in + 1) / 2 // ceil
	padded := make([]int, n)
	for i := range padded {
		padded[i] = -1
		if i >= pad && i < pad+in {
			padded[i] = i - pad
		}
	}
	top += pad
	return padded[max(0, top):min(n, top+out)]
}

// TestCenterCropRounding runs crop size with each rounding on images of
// every height and width up to 15 against crops of up to 15, odd and even
// margins, cropping and padding, and compares every pixel with what the
// library's own rule reads.
func TestCenterCropRounding(t *testing.T) {
	const n = 15
	rules := []struct {
		rounding string
		axis     func(in, out int) []int
	}{
		{"half_even", torchvisionAxis},
		{"floor", transformersAxis},
	}
	differ := 0 // windows where the two rules differ
	for _, r := range rules {
		for h := 1; h <= n; h++ {
			for ch := 1; ch <= n; ch++ {
				// The width pairs differ from the height pairs, so that
				// a swapped axis shows.
				w, cw := n+1-h, (ch+4)%n+1
				img := newImage(h, w, 2, func(y, x, c int) byte { return byte(1 + [2]int{y, x}[c]) })
				args := Args{"size": IntsVal(int64(ch), int64(cw)), "rounding": StrVal(r.rounding)}
				got := newRunner(t, mustBuild(t, "crop", args), 1).mustRun(t, img)
				rows, cols := r.axis(h, ch), r.axis(w, cw)
				want := make([]byte, 0, 2*ch*cw)
				for _, y := range rows {
					for _, x := range cols {
						if y < 0 || x < 0 {
							want = append(want, 0, 0)
						} else {
							want = append(want, byte(1+y), byte(1+x))
						}
					}
				}
				if !bytes.Equal(got.Data, want) {
					t.Errorf("%s: %dx%d cropped to %dx%d: got %v, want %v", r.rounding, h, w, ch, cw, got.Data, want)
				}
				if r.rounding == "floor" && torchvisionAxis(h, ch)[0] != rows[0] {
					differ++
				}
			}
		}
	}
	// The rules differ on odd margins (half of them when cropping, all of
	// them when padding): the test must have seen such windows.
	if differ == 0 {
		t.Error("no window where the two rules differ was tested")
	}
	// A default crop (no rounding) is torchvision's.
	def := mustBuild(t, "crop", Args{"size": IntsVal(2, 2)}).(*cropOp)
	if top, _, _, _ := def.window(5, 5); top != 2 {
		t.Errorf("default rounding: top %d for 5 → 2, want torchvision's 2", top)
	}
}

// The fused resize+crop and the GPU chain take the floor window too.
func TestCropRoundingFusedAndGPU(t *testing.T) {
	img := gradient(151, 203, 3)
	for _, r := range []string{"half_even", "floor"} {
		// 151x203 → shorter 32 → 32x43: margins 11 and 22 for 21x21.
		rs := mustBuild(t, "resize", Args{"shorter": IntVal(32)})
		crop := mustBuild(t, "crop", Args{"size": IntsVal(21, 21), "rounding": StrVal(r)})
		mid := newRunner(t, rs, 1).mustRun(t, img)
		want := newRunner(t, crop, 1).mustRun(t, mid)
		got := newRunner(t, fuse(t, rs, crop), 1).mustRun(t, img)
		if !bytes.Equal(got.Data, want.Data) {
			t.Errorf("%s: fused resize+crop differs from resize then crop", r)
		}
		g, err := chainGeom(t, 151, 203, DefaultLimits, nil, rs, crop)
		if err != nil {
			t.Fatal(err)
		}
		top, left, _, _ := crop.(*cropOp).window(32, 43)
		if g.Off != [2]int{-top, -left} || g.H != 21 || g.W != 21 {
			t.Errorf("%s: GPU geometry %+v, want offset (%d, %d)", r, g, -top, -left)
		}
		wantTop := map[string]int{"half_even": 6, "floor": 5}[r] // 11/2 = 5.5
		if top != wantTop || left != 11 {
			t.Errorf("%s: window at (%d, %d)", r, top, left)
		}
	}
	// A crop before any resize moves the source window on the GPU: an odd
	// margin of 3 starts at 1 with floor, 2 with half_even.
	for r, want := range map[string]int{"half_even": 2, "floor": 1} {
		crop := mustBuild(t, "crop", Args{"size": IntsVal(10, 10), "rounding": StrVal(r)})
		g, err := chainGeom(t, 13, 10, DefaultLimits, nil, crop)
		if err != nil {
			t.Fatal(err)
		}
		if g.Win != [4]int{want, 0, 10, 10} {
			t.Errorf("%s: GPU source window %v, want top %d", r, g.Win, want)
		}
	}
}
