package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/ops"
)

// The GPU executor against the CPU executor on real photos. These tests
// need an NVIDIA GPU and skip without one; scripts/gpu.sh runs them on one.

// corpusFiles lists the corpus images (SLUICE_CORPUS, else the shared
// corpus beside the checkout), broken ones included.
func corpusFiles(t *testing.T) []string {
	dir := os.Getenv("SLUICE_CORPUS")
	if dir == "" {
		dir = "../../../shared/corpus"
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			switch strings.ToLower(filepath.Ext(p)) {
			case ".jpg", ".jpeg", ".png":
				files = append(files, p)
			}
		}
		return nil
	})
	if len(files) == 0 {
		t.Skipf("no corpus images under %s (set SLUICE_CORPUS)", dir)
	}
	slices.Sort(files)
	return files
}

const imagenet = `version: 1 input { name: "IMAGE" }
node { op: "decode" arg { name: "dct_scale" bool: false } %s }
node { op: "resize" arg { name: "shorter" int: 256 } arg { name: "interp" str: "%s" } arg { name: "antialias" bool: %v } }
node { op: "crop" arg { name: "size" ints { v: [224, 224] } } }
node { op: "normalize" arg { name: "scale" float: 0.00392156862745098 }
       arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } } arg { name: "std" floats { v: [0.229, 0.224, 0.225] } }
       arg { name: "layout" str: "%s" } arg { name: "dtype" str: "%s" } %s }
output { name: "PIXELS" }`

const letterbox = `version: 1 input { name: "IMAGE" }
node { op: "decode" arg { name: "dct_scale" bool: false } }
node { op: "letterbox" arg { name: "size" ints { v: [640, 640] } } arg { name: "fill" floats { v: [114] } } arg { name: "interp" str: "%s" } }
node { op: "normalize" input: "letterbox:image" arg { name: "scale" float: 0.00392156862745098 } arg { name: "dtype" str: "%s" } }
output { name: "PIXELS" source: "normalize" }
output { name: "SCALE" source: "letterbox:scale" }
output { name: "OFFSET" source: "letterbox:offset" }`

// knownCorrupt are corpus files whose damage only libjpeg notices.
var knownCorrupt = map[string]bool{"corrupt_scan.jpg": true}

type pipeCase struct {
	name string
	text string
	mul  [4]float64 // undo normalize: v = (out - add) / mul, per output channel
	add  [4]float64
}

func cases() []pipeCase {
	in := func(m, s [3]float64) ([4]float64, [4]float64) {
		var mul, add [4]float64
		for k := range 3 {
			mul[k] = 1 / 255.0 / s[k]
			add[k] = -m[k] / s[k]
		}
		return mul, add
	}
	mean, std := [3]float64{0.485, 0.456, 0.406}, [3]float64{0.229, 0.224, 0.225}
	mul, add := in(mean, std)
	var cs []pipeCase
	for _, interp := range []string{"linear", "nearest", "cubic", "area"} {
		cs = append(cs, pipeCase{"imagenet/" + interp, fmt.Sprintf(imagenet, "", interp, true, "CHW", "FP32", ""), mul, add})
	}
	cs = append(cs,
		pipeCase{"imagenet/linear-noaa-fp16-HWC", fmt.Sprintf(imagenet, "", "linear", false, "HWC", "FP16", ""), mul, add},
		pipeCase{"imagenet/bgr-uint8", fmt.Sprintf(imagenet, `arg { name: "color" str: "BGR" }`, "cubic", true, "CHW", "UINT8", ""),
			[4]float64{1, 1, 1, 1}, [4]float64{}},
		pipeCase{"imagenet/gray", fmt.Sprintf(imagenet, `arg { name: "color" str: "GRAY" }`, "linear", true, "CHW", "FP32", ""),
			[4]float64{mul[0]}, [4]float64{add[0]}},
	)
	lm := [4]float64{1 / 255.0, 1 / 255.0, 1 / 255.0}
	cs = append(cs,
		pipeCase{"letterbox/linear", fmt.Sprintf(letterbox, "linear", "FP32"), lm, [4]float64{}},
		pipeCase{"letterbox/nearest-fp16", fmt.Sprintf(letterbox, "nearest", "FP16"), lm, [4]float64{}},
	)
	// The gray case's mean and std are one value for the one channel.
	cs[6].text = strings.Replace(cs[6].text, `floats { v: [0.485, 0.456, 0.406] }`, `floats { v: [0.485] }`, 1)
	cs[6].text = strings.Replace(cs[6].text, `floats { v: [0.229, 0.224, 0.225] }`, `floats { v: [0.229] }`, 1)
	cs[5].text = strings.Replace(cs[5].text, `arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } } arg { name: "std" floats { v: [0.229, 0.224, 0.225] } }`, "", 1)
	cs[5].text = strings.Replace(cs[5].text, `arg { name: "scale" float: 0.00392156862745098 }`, "", 1)
	return cs
}

// values reads output element i of a dtype as float64.
func values(b []byte, dt ops.DType) []float64 {
	var v []float64
	switch dt {
	case ops.Float32:
		for i := 0; i+4 <= len(b); i += 4 {
			v = append(v, float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))))
		}
	case ops.Float16:
		for i := 0; i+2 <= len(b); i += 2 {
			v = append(v, ops.Float16Value(binary.LittleEndian.Uint16(b[i:])))
		}
	default:
		for _, x := range b {
			v = append(v, float64(x))
		}
	}
	return v
}

// TestGPUMatchesCPU runs every corpus image through the GPU and the CPU
// executor for each pipeline case, with the hardware decoder taking all it
// can and then none (hybrid only): the same samples fail with the same
// messages, and on the 0..255 scale every image is within mean 0.5, max 4.
func TestGPUMatchesCPU(t *testing.T) {
	gputest.Require(t)
	files := corpusFiles(t)
	var imgs [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, b)
	}
	for _, share := range []float64{1, 0} {
		for _, c := range cases() {
			// Hybrid-only runs for two cases: the kernel is the same.
			if share == 0 && c.name != "imagenet/linear" && c.name != "letterbox/linear" {
				continue
			}
			t.Run(fmt.Sprintf("%s/hw%.0f", c.name, share), func(t *testing.T) {
				prog := compile(t, c.text)
				cpu, err := executor.New(prog, executor.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer cpu.Close()
				g, err := New(compile(t, c.text), executor.Options{HWShare: share})
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				const batch = 64
				var worstMean, worstMax float64
				var worstFile string
				ok, failed := 0, 0
				for start := 0; start < len(imgs); start += batch {
					in := [][][]byte{imgs[start:min(start+batch, len(imgs))]}
					want, err := cpu.Run(in)
					if err != nil {
						t.Fatal(err)
					}
					wantOut := make([][]byte, len(want.Outputs))
					for i, o := range want.Outputs {
						wantOut[i] = slices.Clone(o.Data)
					}
					wantErrs := slices.Clone(want.Errs)
					got, err := g.Run(in)
					if err != nil {
						t.Fatal(err)
					}
					for s := range in[0] {
						f := files[start+s]
						we, ge := wantErrs[s], got.Errs[s]
						if se, ok := we.(*executor.SampleError); ok && ge == nil && se.Cause() == ops.Corrupt && knownCorrupt[filepath.Base(f)] {
							// libjpeg flags entropy data that ends early
							// (a warning Sluice makes an error); nvJPEG
							// decodes what there is without a word.
							t.Logf("%s: known difference: CPU %v, GPU decodes it", filepath.Base(f), we)
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
						ok++
						for i, o := range got.Outputs {
							sz := g.SampleBytes(i)
							gv := values(o.Data[s*sz:(s+1)*sz], o.Spec.DType)
							wv := values(wantOut[i][s*sz:(s+1)*sz], o.Spec.DType)
							if i > 0 { // letterbox's scale and offset: exact
								if !slices.Equal(gv, wv) {
									t.Errorf("%s: %s %v, CPU %v", f, o.Name, gv, wv)
								}
								continue
							}
							mean, mx := compare(gv, wv, o.Spec, c)
							if mean > worstMean {
								worstMean, worstFile = mean, f
							}
							worstMax = max(worstMax, mx)
							if mean > 0.5 || mx > 4 {
								t.Errorf("%s: mean |diff| %.3f, max %.2f on the 0..255 scale (bounds 0.5, 4)", f, mean, mx)
							}
						}
					}
				}
				var st executor.Stats
				g.Stats(&st)
				d := st.Decoded
				t.Logf("%d images ok, %d failed alike; worst mean |diff| %.3f (%s), worst max %.2f; decoded hardware %d, hybrid %d, cpu %d",
					ok, failed, worstMean, filepath.Base(worstFile), worstMax, d[PathHardware].N, d[PathHybrid].N, d[PathCPU].N)
				if ok == 0 {
					t.Error("no image succeeded")
				}
			})
		}
	}
}

// compare gives the mean and max absolute difference of two outputs on
// the 0..255 scale, undoing the normalisation per channel.
func compare(got, want []float64, spec ops.Spec, c pipeCase) (mean, mx float64) {
	chw := len(spec.Dims) == 3 && spec.Dims[0] <= 4 && spec.Dims[2] > 4
	var ch, hw int
	if chw {
		ch, hw = spec.Dims[0], spec.Dims[1]*spec.Dims[2]
	} else {
		ch, hw = spec.Dims[2], spec.Dims[0]*spec.Dims[1]
	}
	sum := 0.0
	for i := range got {
		k := i % ch
		if chw {
			k = i / hw
		}
		d := math.Abs((got[i]-c.add[k])/c.mul[k] - (want[i]-c.add[k])/c.mul[k])
		sum += d
		mx = max(mx, d)
	}
	return sum / float64(len(got)), mx
}

// Memory: everything an executor allocates is freed by Close. The test
// holds the primary context itself, as Triton does, so that the context's
// own memory is not part of the difference.
func TestGPUMemoryReleased(t *testing.T) {
	ctx := gputest.Context(t)
	free := func() uint64 {
		if err := ctx.SetCurrent(); err != nil {
			t.Fatal(err)
		}
		f, _, err := cuda.MemGetInfo()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	text := fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", "")
	batch := [][]byte{testimg.JPEG(640, 480, 1), testimg.JPEG(500, 375, 2), testimg.JPEG(1024, 768, 3)}
	for range 40 {
		batch = append(batch, batch[len(batch)%3])
	}
	// One load and unload first: the driver and nvJPEG keep caches of
	// their own on first use.
	for round := range 4 {
		before := free()
		g, err := New(compile(t, text), executor.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.RunOnDevice([][][]byte{batch}); err != nil {
			t.Fatal(err)
		}
		during := free()
		g.Close()
		after := free()
		t.Logf("round %d: free before load %d MiB, loaded %d MiB, after unload %d MiB", round, before>>20, during>>20, after>>20)
		if round > 0 && int64(before)-int64(after) > 4<<20 {
			t.Errorf("round %d: %d MiB of device memory not released at unload", round, (int64(before)-int64(after))>>20)
		}
	}
}

// A memory cap smaller than the batch splits it into parts; an image that
// alone needs more than the cap fails with a message, and the rest of the
// batch is right.
func TestGPUMemoryCap(t *testing.T) {
	gputest.Require(t)
	text := fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", "")
	small := testimg.JPEG(400, 300, 1) // 360 kB decoded
	big := testimg.JPEG(2000, 1500, 2) // 9 MB decoded
	g, err := New(compile(t, text), executor.Options{MemoryCap: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	in := [][][]byte{{small, small, big, small, small, small, small, small, small, small, small, small, small}}
	res, err := g.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := executor.New(compile(t, text), executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	want, err := cpu.Run([][][]byte{{small}})
	if err != nil {
		t.Fatal(err)
	}
	sz := g.SampleBytes(0)
	for s, err := range res.Errs {
		if s == 2 {
			if err == nil || !strings.Contains(err.Error(), "over the instance's cap of 4194304") {
				t.Errorf("big image: %v, want the memory cap error", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("sample %d: %v", s, err)
			continue
		}
		gv := values(res.Outputs[0].Data[s*sz:(s+1)*sz], ops.Float32)
		wv := values(want.Outputs[0].Data, ops.Float32)
		if mean, mx := compare(gv, wv, res.Outputs[0].Spec, cases()[0]); mean > 0.5 || mx > 4 {
			t.Errorf("sample %d: mean %.3f max %.2f", s, mean, mx)
		}
	}
}

// Outputs can go to device memory and host memory in one batch, side
// outputs included; a device destination receives what a host one would.
func TestGPUDestinations(t *testing.T) {
	gputest.Require(t)
	text := fmt.Sprintf(letterbox, "linear", "FP32")
	g, err := New(compile(t, text), executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	imgs := [][]byte{testimg.JPEG(640, 480, 1), testimg.JPEG(300, 500, 2), testimg.JPEG(123, 77, 3)}
	ref, err := g.Run([][][]byte{imgs})
	if err != nil {
		t.Fatal(err)
	}
	refOut := make([][]byte, len(ref.Outputs))
	for i, o := range ref.Outputs {
		refOut[i] = slices.Clone(o.Data)
	}

	ctx := gputest.Context(t)
	n := len(imgs)
	dst := make([][]Dest, 3)
	devs := make([]cuda.DevicePtr, 3)
	hosts := make([][]byte, 3)
	for i := range dst {
		sz := g.SampleBytes(i)
		if devs[i], err = cuda.MemAlloc(n * sz); err != nil {
			t.Fatal(err)
		}
		defer cuda.MemFree(devs[i])
		hosts[i] = make([]byte, n*sz)
		dst[i] = make([]Dest, n)
		for s := range n {
			if (s+i)%2 == 0 {
				dst[i][s].Dev = uintptr(devs[i]) + uintptr(s*sz)
			} else {
				dst[i][s].Host = hosts[i][s*sz : (s+1)*sz]
			}
		}
	}
	errs := make([]error, n)
	if err := g.RunInto([][][]byte{imgs}, dst, errs); err != nil {
		t.Fatal(err)
	}
	if err := ctx.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	for i := range dst {
		sz := g.SampleBytes(i)
		back := make([]byte, n*sz)
		if err := cuda.MemcpyDtoHAsync(back, devs[i], 0); err != nil {
			t.Fatal(err)
		}
		if err := cuda.Stream(0).Synchronize(); err != nil {
			t.Fatal(err)
		}
		for s := range n {
			if errs[s] != nil {
				t.Fatalf("sample %d: %v", s, errs[s])
			}
			got := hosts[i][s*sz : (s+1)*sz]
			if dst[i][s].Dev != 0 {
				got = back[s*sz : (s+1)*sz]
			}
			if !slices.Equal(got, refOut[i][s*sz:(s+1)*sz]) {
				t.Errorf("output %d sample %d (device %v) differs from the host run", i, s, dst[i][s].Dev != 0)
			}
		}
	}
}
