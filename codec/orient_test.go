package codec

import (
	"math/rand"
	"testing"
)

// TestOrient compares Orient with the specification's flips and
// transposes, on sizes around the tile size and every channel count.
func TestOrient(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, size := range [][2]int{{1, 1}, {1, 7}, {5, 1}, {3, 4}, {31, 33}, {64, 65}, {70, 37}} {
		h, w := size[0], size[1]
		for _, c := range []int{1, 2, 3, 4} {
			src := make([]byte, h*w*c)
			rng.Read(src)
			grid := make([][][]byte, h)
			for y := range grid {
				grid[y] = make([][]byte, w)
				for x := range grid[y] {
					grid[y][x] = src[(y*w+x)*c : (y*w+x+1)*c]
				}
			}
			for o := 1; o <= 8; o++ {
				dst := make([]byte, len(src))
				Orient(dst, src, h, w, c, o)
				want := orientRef(grid, o)
				oh, ow := OrientedDims(h, w, o)
				if len(want) != oh || len(want[0]) != ow {
					t.Fatalf("OrientedDims(%d,%d,%d) = %d,%d; reference %d,%d", h, w, o, oh, ow, len(want), len(want[0]))
				}
				for y := 0; y < oh; y++ {
					for x := 0; x < ow; x++ {
						if got := dst[(y*ow+x)*c : (y*ow+x+1)*c]; string(got) != string(want[y][x]) {
							t.Fatalf("%dx%dx%d orientation %d: pixel (%d,%d) = %v, want %v", h, w, c, o, y, x, got, want[y][x])
						}
					}
				}
			}
		}
	}
}

func BenchmarkOrient6(b *testing.B) {
	h, w, c := 480, 640, 3
	src, dst := make([]byte, h*w*c), make([]byte, h*w*c)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		Orient(dst, src, h, w, c, 6)
	}
}
