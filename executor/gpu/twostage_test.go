package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
)

// boxesText is a box-crop pipeline: relative boxes with a count, each crop
// 48x64 (%s: crop_boxes' extra arguments), then normalize (%s).
const boxesText = `version: 1
input { name: "IMAGE" }
input { name: "BOXES" boxes { max: 5 coords: "relative" } }
input { name: "COUNT" count_of: "BOXES" }
node { op: "decode" input: "IMAGE" }
node { op: "crop_boxes" input: ["decode", "BOXES"] arg { name: "size" ints { v: [48, 64] } } %s }
node { op: "normalize" %s }
output { name: "CROPS" }
output { name: "N" source: "crop_boxes:count" }
output { name: "SAMPLED" source: "crop_boxes:boxes" }
`

func f32Rows(rows ...[4]float32) []byte {
	var b []byte
	for _, r := range rows {
		for _, v := range r {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return b
}

// boxSets are the boxes of the test's samples, taken in turn: boxes well
// inside, reaching outside (clipped), thin (one axis barely resized), a
// NaN row, and one empty once clipped; with their counts.
var boxSets = []struct {
	rows  []byte
	count int32
}{
	{f32Rows([4]float32{0.1, 0.2, 0.6, 0.9}, [4]float32{0.25, 0.125, 0.75, 0.5}, [4]float32{0.5, 0.5, 0.5078, 0.9},
		[4]float32{0, 0, 1, 1}, [4]float32{0.33, 0.01, 0.97, 0.4}), 5},
	{f32Rows([4]float32{-0.2, 0.5, 0.4, 1.3}, [4]float32{float32(math.NaN()), 0, 1, 1}, [4]float32{0.05, 0.05, 0.95, 0.15},
		[4]float32{0.7, 0.3, 0.9, 0.31}, [4]float32{0, 0, 0.5, 0.5}), 4},
	{f32Rows([4]float32{0.4, 0.4, 0.6, 0.6}, [4]float32{1.2, 0, 1.5, 1}, [4]float32{0, 0, 0.1, 1},
		[4]float32{0.2, 0.6, 0.9, 0.95}, [4]float32{0.1, 0.1, 0.2, 0.2}), 5},
	{f32Rows([4]float32{0.1, 0.1, 0.9, 0.9}, [4]float32{0.2, 0.2, 0.3, 0.3}, [4]float32{}, [4]float32{}, [4]float32{}), 2},
}

// TestGPUBoxCrops runs box crops of every corpus image on the GPU and the
// CPU executor, for each filter, letterboxed or not, and empty boxes as
// errors or zero rows: the same samples fail with the same messages, the
// counts are equal, unused rows are zeros on both, and every crop is
// within the decode's rounding bounds of the CPU's.
func TestGPUBoxCrops(t *testing.T) {
	gputest.Context(t)
	tc := loadCorpus(t)
	uint8HWC := `arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" }`
	imagenet := `arg { name: "scale" float: 0.00392156862745098 } arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } } arg { name: "std" floats { v: [0.229, 0.224, 0.225] } }`
	for _, c := range []struct{ name, crop, norm string }{
		{"linear/zero", `arg { name: "empty" str: "zero" }`, uint8HWC},
		{"cubic/error", `arg { name: "interp" str: "cubic" }`, uint8HWC},
		{"nearest/letterbox", `arg { name: "interp" str: "nearest" } arg { name: "letterbox" bool: true } arg { name: "empty" str: "zero" }`, uint8HWC},
		{"area/letterbox-fp32", `arg { name: "interp" str: "area" } arg { name: "letterbox" bool: true } arg { name: "empty" str: "zero" }`, imagenet},
		{"linear-noaa/fp32", `arg { name: "antialias" bool: false } arg { name: "empty" str: "zero" }`, imagenet},
	} {
		t.Run(c.name, func(t *testing.T) { matchBoxes(t, tc, fmt.Sprintf(boxesText, c.crop, c.norm)) })
	}
}

func matchBoxes(t *testing.T, tc *testCorpus, text string) {
	prog := compile(t, text)
	cpu, err := executor.New(prog, executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	g, err := New(compile(t, text), executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	spec := prog.Outputs[0].Spec
	max := spec.Dims[0]
	pc := pipeCase{mul: [4]float64{1, 1, 1, 1}}
	if spec.DType == ops.Float32 {
		for k, s := range []float64{0.229, 0.224, 0.225} {
			pc.mul[k] = 1 / 255.0 / s
			pc.add[k] = -[]float64{0.485, 0.456, 0.406}[k] / s
		}
	}
	const batch = 32
	var worstMean, worstMax float64
	crops, failed := 0, 0
	for start := 0; start < len(tc.imgs); start += batch {
		imgs := tc.imgs[start:min(start+batch, len(tc.imgs))]
		var boxes, counts [][]byte
		for s := range imgs {
			set := boxSets[(start+s)%len(boxSets)]
			boxes = append(boxes, set.rows)
			counts = append(counts, binary.LittleEndian.AppendUint32(nil, uint32(set.count)))
		}
		if start == 0 {
			counts[1] = binary.LittleEndian.AppendUint32(nil, 6) // over max: that sample fails
		}
		in := [][][]byte{imgs, boxes, counts}
		res, err := cpu.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		want := [][]byte{slices.Clone(res.Outputs[0].Data), slices.Clone(res.Outputs[1].Data), slices.Clone(res.Outputs[2].Data)}
		wantErrs := slices.Clone(res.Errs)
		got, err := g.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		row := g.SampleBytes(0) / max
		for s := range imgs {
			f := filepath.Base(tc.files[start+s])
			we, ge := wantErrs[s], got.Errs[s]
			if se, ok := we.(*executor.SampleError); ok && ge == nil && se.Cause() == ops.Corrupt && knownCorrupt[f] {
				continue
			}
			if (we == nil) != (ge == nil) || (we != nil && we.Error() != ge.Error()) {
				t.Errorf("%s: CPU error %v, GPU error %v", f, we, ge)
				continue
			}
			if we != nil {
				failed++
				continue
			}
			if gn, wn := got.Outputs[1].Data[4*s:4*s+4], want[1][4*s:4*s+4]; !slices.Equal(gn, wn) {
				t.Errorf("%s: count %v, CPU %v", f, gn, wn)
			}
			if sz := g.SampleBytes(2); !slices.Equal(got.Outputs[2].Data[s*sz:(s+1)*sz], want[2][s*sz:(s+1)*sz]) {
				t.Errorf("%s: the boxes sampled differ from the CPU's", f)
			}
			for k := range max {
				at := s*g.SampleBytes(0) + k*row
				gb, wb := got.Outputs[0].Data[at:at+row], want[0][at:at+row]
				if zero(wb) || zero(gb) {
					if !zero(wb) || !zero(gb) {
						t.Errorf("%s: crop %d is zeros on one executor only", f, k)
					}
					continue
				}
				crops++
				mean, mx := compare(values(gb, spec.DType), values(wb, spec.DType), ops.Spec{Dims: spec.Dims[1:]}, pc)
				worstMean, worstMax = math.Max(worstMean, mean), math.Max(worstMax, mx)
				if mean > gpuMeanBound || mx > gpuMaxBound {
					t.Errorf("%s: crop %d: mean |diff| %.3f, max %.2f on the 0..255 scale (bounds %g, %g)",
						f, k, mean, mx, gpuMeanBound, gpuMaxBound)
				}
			}
		}
	}
	t.Logf("%d crops compared, %d samples failed alike; worst mean |diff| %.3f, worst max %.2f", crops, failed, worstMean, worstMax)
	if crops == 0 || failed == 0 {
		t.Error("no crop compared, or no sample failed (the count over max must)")
	}
}

func zero(b []byte) bool {
	return !slices.ContainsFunc(b, func(x byte) bool { return x != 0 })
}

// TestChainBoxes: crop_boxes' chain, the kernel making each image's rows
// (its refusals are in TestChainRefuses).
func TestChainBoxes(t *testing.T) {
	c, err := newChain(compile(t, fmt.Sprintf(boxesText, "", "")))
	if err != nil {
		t.Fatal(err)
	}
	if c.boxes != 1 || c.count != 2 || c.crops != 5 || c.outHW != [2]int{48, 64} || c.in != 0 {
		t.Errorf("chain: boxes %d, count %d, crops %d, out %v, input %d", c.boxes, c.count, c.crops, c.outHW, c.in)
	}
}

// TestChainDecoded: a decoded-image input is the kernel's source as it
// came: a BGR one read in its own order, a grey one as its one channel;
// every node is the kernel's, and crop_boxes may read the input.
func TestChainDecoded(t *testing.T) {
	for _, c := range []struct {
		color, order string
		want         [4]int32
		srcC         int
	}{
		{"BGR", `arg { name: "order" str: "RGB" }`, [4]int32{2, 1, 0, 0}, 3},
		{"RGB", `arg { name: "order" str: "RGB" }`, [4]int32{0, 1, 2, 0}, 3},
		{"GRAY", "", [4]int32{kernels.ChanLuma}, 1},
	} {
		ch, err := newChain(compile(t, fmt.Sprintf(`version: 1 input { name: "FRAME" layout: "HWC" color: %q }
			input { name: "BOXES" boxes { max: 2 coords: "pixel" } }
			node { op: "crop_boxes" input: ["FRAME", "BOXES"] arg { name: "size" ints { v: [8, 8] } } }
			node { op: "normalize" %s }
			output { name: "O" }`, c.color, c.order)))
		if err != nil {
			t.Fatal(err)
		}
		if !ch.decoded || ch.in != 0 || ch.boxes != 1 || ch.srcC != c.srcC || ch.params.SrcChan != c.want {
			t.Errorf("%s: decoded %v, input %d, boxes %d, %d channels, reads %v (want %v)", c.color, ch.decoded, ch.in, ch.boxes, ch.srcC, ch.params.SrcChan, c.want)
		}
	}
}

// TestGPUDecodedInput: decoded-image inputs of several colours and sizes
// on the GPU and the CPU executor: the same pixels go in, so the outputs
// are equal within float rounding (a level on rare pixels); a shape that
// does not match its bytes, a wrong channel count and an image over the
// pixel limit fail alike, naming the input; crop_boxes reads the input.
func TestGPUDecodedInput(t *testing.T) {
	gputest.Context(t)
	imagenet := `node { op: "resize" arg { name: "shorter" int: 64 } }
		node { op: "crop" arg { name: "size" ints { v: [56, 56] } } }
		node { op: "normalize" arg { name: "scale" float: 0.00392156862745098 } arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } } arg { name: "std" floats { v: [0.229, 0.224, 0.225] } } }`
	for _, c := range []struct {
		color string
		ch    int
		nodes string
		boxes bool
	}{
		{"RGB", 3, imagenet, false},
		{"BGR", 3, `node { op: "letterbox" arg { name: "size" ints { v: [64, 64] } } }
			node { op: "normalize" input: "letterbox:image" arg { name: "order" str: "RGB" } arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }`, false},
		{"GRAY", 1, `node { op: "resize" arg { name: "size" ints { v: [40, 50] } } arg { name: "interp" str: "cubic" } }
			node { op: "normalize" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }`, false},
		{"RGB", 3, `node { op: "crop_boxes" input: ["FRAME", "BOXES"] arg { name: "size" ints { v: [48, 64] } } arg { name: "empty" str: "zero" } }
			node { op: "normalize" arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "HWC" } }`, true},
	} {
		t.Run(fmt.Sprintf("%s/boxes=%v", c.color, c.boxes), func(t *testing.T) {
			text := fmt.Sprintf(`version: 1 input { name: "FRAME" layout: "HWC" color: %q }`, c.color)
			if c.boxes {
				text += ` input { name: "BOXES" boxes { max: 5 coords: "relative" } }`
			}
			text += c.nodes + ` output { name: "OUT" }`
			var imgs [][]byte
			var dims [][]int
			for i, hw := range [][2]int{{97, 131}, {480, 640}, {31, 23}, {1, 1}, {600, 200}} {
				r := rand.New(rand.NewPCG(uint64(i), 3))
				px := make([]byte, hw[0]*hw[1]*c.ch)
				for j := range px {
					px[j] = byte((j/c.ch)%hw[1]*3 + j%c.ch*50 + r.IntN(30))
				}
				imgs, dims = append(imgs, px), append(dims, []int{hw[0], hw[1], c.ch})
			}
			good := len(imgs)
			imgs = append(imgs, imgs[0][:len(imgs[0])-1], imgs[2], make([]byte, 3000*3000*c.ch))
			dims = append(dims, dims[0], []int{31, 23, c.ch + 1}, []int{3000, 3000, c.ch})
			in, shapes := [][][]byte{imgs}, [][][]int{dims}
			if c.boxes {
				var bx [][]byte
				for s := range imgs {
					bx = append(bx, boxSets[s%len(boxSets)].rows)
				}
				in, shapes = append(in, bx), append(shapes, nil)
			}
			lim := ops.WithPixels(ops.DefaultLimits, 4<<20)
			prog := compile(t, text)
			cpu, err := executor.New(prog, executor.Options{Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			defer cpu.Close()
			g, err := New(compile(t, text), executor.Options{Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			want, got := executor.NewResult(prog), executor.NewResult(prog)
			if err := executor.RunShaped(cpu, in, shapes, want); err != nil {
				t.Fatal(err)
			}
			if err := executor.RunShaped(g, in, shapes, got); err != nil {
				t.Fatal(err)
			}
			spec := prog.Outputs[0].Spec
			sz := g.SampleBytes(0)
			for s := range imgs {
				we, ge := want.Errs[s], got.Errs[s]
				if (we == nil) != (s < good) || (we == nil) != (ge == nil) || we != nil && we.Error() != ge.Error() {
					t.Errorf("sample %d: CPU error %v, GPU error %v", s, we, ge)
					continue
				}
				if we != nil {
					if !strings.Contains(we.Error(), "FRAME") {
						t.Errorf("sample %d: %v does not name the input", s, we)
					}
					continue
				}
				gv := values(got.Outputs[0].Data[s*sz:(s+1)*sz], spec.DType)
				wv := values(want.Outputs[0].Data[s*sz:(s+1)*sz], spec.DType)
				pc := pipeCase{mul: [4]float64{1, 1, 1, 1}}
				if spec.DType == ops.Float32 {
					for k, sd := range []float64{0.229, 0.224, 0.225} {
						pc.mul[k], pc.add[k] = 1/255.0/sd, -[]float64{0.485, 0.456, 0.406}[k]/sd
					}
				}
				var mean, mx float64
				if c.boxes {
					// Compared whole: crops are rows of [max, h, w, c].
					mean, mx = compare(gv, wv, ops.Spec{Dims: []int{1, len(gv) / spec.Dims[3], spec.Dims[3]}}, pc)
				} else {
					mean, mx = compare(gv, wv, spec, pc)
				}
				if mean > 0.01 || mx > 1.01 {
					t.Errorf("sample %d (%v): mean |diff| %.4f, max %.2f: the same pixels must give the same levels", s, dims[s], mean, mx)
				}
			}
			var st executor.Stats
			g.Stats(&st)
			for _, d := range st.Decoded {
				if d.Name == route.Input.String() && d.N != int64(good) {
					t.Errorf("%d images counted as %s, want %d", d.N, d.Name, good)
				}
			}
		})
	}
}

// TestGPUDeviceInput: decoded images already in this GPU's memory (as an
// upstream model leaves them) are read in place: the outputs equal those
// of the same images from host memory byte for byte, they count as path
// "device", not "input", and a shape that does not match the span's bytes
// fails naming the input.
func TestGPUDeviceInput(t *testing.T) {
	ctx := gputest.Context(t)
	text := `version: 1 input { name: "FRAME" layout: "HWC" color: "RGB" }
		node { op: "resize" arg { name: "shorter" int: 64 } }
		node { op: "crop" arg { name: "size" ints { v: [56, 56] } } }
		node { op: "normalize" arg { name: "scale" float: 0.00392156862745098 } }
		output { name: "OUT" }`
	g, err := New(compile(t, text), executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var imgs [][]byte
	var dims [][]int
	for i, hw := range [][2]int{{97, 131}, {480, 640}, {31, 23}} {
		r := rand.New(rand.NewPCG(uint64(i), 5))
		px := make([]byte, hw[0]*hw[1]*3)
		for j := range px {
			px[j] = byte(j%251 + r.IntN(5))
		}
		imgs, dims = append(imgs, px), append(dims, []int{hw[0], hw[1], 3})
	}
	dims = append(dims, []int{97, 131, 3}) // a fourth sample: its span is a byte short
	host := executor.NewResult(g.prog)
	if err := executor.RunShaped(g, [][][]byte{append(slices.Clone(imgs), imgs[0][1:])}, [][][]int{dims}, host); err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := ctx.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	spans := make([]executor.DevSpan, len(dims))
	for s, px := range imgs {
		d, err := cuda.MemAlloc(len(px))
		if err != nil {
			t.Fatal(err)
		}
		defer cuda.MemFree(d)
		if err := cuda.MemcpyHtoDAsync(d, px, 0); err != nil {
			t.Fatal(err)
		}
		spans[s] = executor.DevSpan{Ptr: uintptr(d), Len: len(px), Device: g.Device()}
	}
	if err := cuda.Stream(0).Synchronize(); err != nil {
		t.Fatal(err)
	}
	spans[3] = spans[0]
	spans[3].Len--
	var st0, st1 executor.Stats
	g.Stats(&st0)
	sz := g.SampleBytes(0)
	out := make([]byte, len(dims)*sz)
	dst := [][]Dest{make([]Dest, len(dims))}
	for s := range dims {
		dst[0][s] = Dest{Host: out[s*sz : (s+1)*sz]}
	}
	errs := make([]error, len(dims))
	if err := g.RunDevice([][][]byte{make([][]byte, len(dims))}, [][]executor.DevSpan{spans}, [][][]int{dims}, dst, errs, nil); err != nil {
		t.Fatal(err)
	}
	g.Stats(&st1)
	for s := range dims {
		if (errs[s] == nil) != (host.Errs[s] == nil) || errs[s] != nil && errs[s].Error() != host.Errs[s].Error() {
			t.Errorf("sample %d: from device memory %v, from host memory %v", s, errs[s], host.Errs[s])
		}
	}
	if errs[3] == nil || !strings.Contains(errs[3].Error(), "FRAME") || !strings.Contains(errs[3].Error(), "does not match the 38120 bytes") {
		t.Errorf("a short span: %v", errs[3])
	}
	if !slices.Equal(out[:3*sz], host.Outputs[0].Data[:3*sz]) {
		t.Error("outputs from device memory differ from those from host memory")
	}
	count := func(st executor.Stats, p route.Path) int64 { return st.Decoded[p].N }
	if d, in := count(st1, route.Device)-count(st0, route.Device), count(st1, route.Input)-count(st0, route.Input); d != 3 || in != 0 {
		t.Errorf("read in place %d, copied %d; want 3 and 0", d, in)
	}
}
