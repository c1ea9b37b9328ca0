package gpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/internal/testcorpus"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels/cuda"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
	"github.com/sluice-dev/sluice/ops"
)

// The GPU executor against the CPU executor on real photos. These tests
// need an NVIDIA GPU and skip without one; scripts/gpu.sh runs them on one.

// corpusFiles lists the corpus images, broken ones included.
func corpusFiles(t *testing.T) []string {
	dir := testcorpus.Dir(t)
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
		t.Fatalf("no images under %s", dir)
	}
	slices.Sort(files)
	return files
}

// routeWant is where the executor must decode an image, worked out here from
// the image's own header by the rules the executor states: the CPU for
// anything that is not a JPEG; arithmetic-coded or lossless JPEGs; JPEGs
// of other than 1 or 3 components (CMYK); RGB-coded ones (libjpeg's rule:
// no JFIF marker, and an Adobe marker with transform 0 or else component
// ids 'R', 'G', 'B'); and chroma subsamplings other than 4:4:4, 4:2:2,
// 4:2:0 and 4:4:0; progressive ones whose script ends with refinement
// pending. The rest go to nvJPEG: progressive ones to its
// decoupled decoder (Huffman on a CPU thread), the others to the engines
// or the decoupled decoder.
type routeWant struct {
	cpu         string // why the CPU; "" for nvJPEG
	gray        bool
	progressive bool
	// either: factors other than the usual ones (luma 2x2 with chroma
	// 1x2 is 4:2:2 by its ratios) that nvJPEG may or may not report as
	// a subsampling it has a name for.
	either bool
}

func routeOf(b []byte) routeWant {
	if len(b) < 4 || b[0] != 0xFF || b[1] != 0xD8 {
		return routeWant{cpu: "not a JPEG"}
	}
	jfif, adobe, transform := false, false, -1
	for i := 2; i+4 <= len(b); {
		m := b[i+1]
		switch {
		case b[i] != 0xFF || m == 0xDA || m == 0xD9:
			return routeWant{cpu: "no frame header"}
		case m == 0xFF:
			i++
			continue
		case m == 0x01 || m >= 0xD0 && m <= 0xD7:
			i += 2
			continue
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		seg := b[i+4 : min(i+2+n, len(b))]
		i += 2 + n
		switch {
		case m == 0xE0 && bytes.HasPrefix(seg, []byte("JFIF\x00")):
			jfif = true
		case m == 0xEE && bytes.HasPrefix(seg, []byte("Adobe")) && len(seg) >= 12:
			adobe, transform = true, int(seg[11])
		case m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC:
			if m != 0xC0 && m != 0xC1 && m != 0xC2 {
				return routeWant{cpu: fmt.Sprintf("SOF%d coding", m-0xC0)}
			}
			prog := m == 0xC2
			if len(seg) < 6 || len(seg) < 6+3*int(seg[5]) {
				return routeWant{cpu: "short frame header"}
			}
			switch seg[5] {
			case 1:
				return routeWant{gray: true, progressive: prog}
			case 3:
			default:
				return routeWant{cpu: fmt.Sprintf("%d components", seg[5])}
			}
			var id, h, v [3]int
			for k := range 3 {
				id[k], h[k], v[k] = int(seg[6+3*k]), int(seg[7+3*k]>>4), int(seg[7+3*k]&15)
			}
			if !jfif && (adobe && transform == 0 || !adobe && id == [3]int{'R', 'G', 'B'}) {
				return routeWant{cpu: "RGB-coded"}
			}
			sampling := fmt.Sprintf("sampling %dx%d,%dx%d,%dx%d", h[0], v[0], h[1], v[1], h[2], v[2])
			if h[1] != h[2] || v[1] != v[2] || h[1] == 0 || v[1] == 0 || h[0]%h[1] != 0 || v[0]%v[1] != 0 ||
				h[0]/h[1] > 2 || v[0]/v[1] > 2 {
				return routeWant{cpu: sampling}
			}
			if h[1] != 1 || v[1] != 1 {
				return routeWant{cpu: sampling, either: true}
			}
			if prog && refinementPending(b) {
				return routeWant{cpu: "refinement pending"}
			}
			return routeWant{progressive: prog}
		}
	}
	return routeWant{cpu: "no frame header"}
}

// refinementPending reports whether a progressive JPEG's script ends with
// refinement pending, which libjpeg smooths and nvJPEG does not: codec's
// reading of the scans (its own tests hold it to libjpeg's).
func refinementPending(b []byte) bool {
	d := codec.NewDecoder()
	defer d.Close()
	h, err := d.Header(b, ops.DefaultLimits)
	return err == nil && h.JPEG().Pending
}

// TestRouteOf checks routeOf against the corpus's MANIFEST.tsv, which
// records each image's coding and sampling as its maker wrote it. No GPU.
func TestRouteOf(t *testing.T) {
	dir := testcorpus.Dir(t)
	raw, err := os.ReadFile(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n")[1:] {
		col := strings.Split(line, "\t")
		name, mode, coding, sampling := col[0], col[7], col[8], col[9]
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || coding == "-" {
			continue // not carried, or a file the manifest does not describe
		}
		r := routeOf(b)
		var want string
		switch {
		case strings.Contains(coding, "interlaced"):
			want = "cpu: not a JPEG"
		case !strings.HasPrefix(coding, "baseline") && !strings.HasPrefix(coding, "progressive") ||
			mode == "CMYK" || sampling == "other":
			want = "cpu"
		case strings.HasPrefix(coding, "progressive") && r.cpu == "refinement pending":
			want = "cpu" // the manifest does not record the script's end
		case strings.HasPrefix(coding, "progressive"):
			want = "huffman"
		case mode == "L":
			want = "gray"
		default:
			want = "nvjpeg"
		}
		got := "nvjpeg"
		switch {
		case r.cpu == "not a JPEG":
			got = "cpu: not a JPEG"
		case r.cpu != "":
			got = "cpu"
		case r.progressive:
			got = "huffman"
		case r.gray:
			got = "gray"
		}
		if got != want {
			t.Errorf("%s (%s %s %s): route %s (%+v), want %s", name, mode, coding, sampling, got, r, want)
		}
		n++
	}
	if n < 100 {
		t.Errorf("only %d manifest entries checked", n)
	}
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
		pipeCase{"letterbox/opencv_linear", fmt.Sprintf(letterbox, "opencv_linear", "FP32"), lm, [4]float64{}},
	)
	// The gray case's mean and std are one value for the one channel.
	cs[6].text = strings.Replace(cs[6].text, `floats { v: [0.485, 0.456, 0.406] }`, `floats { v: [0.485] }`, 1)
	cs[6].text = strings.Replace(cs[6].text, `floats { v: [0.229, 0.224, 0.225] }`, `floats { v: [0.229] }`, 1)
	cs[5].text = strings.Replace(cs[5].text, `arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } } arg { name: "std" floats { v: [0.229, 0.224, 0.225] } }`, "", 1)
	cs[5].text = strings.Replace(cs[5].text, `arg { name: "scale" float: 0.00392156862745098 }`, "", 1)
	cs = append(cs, pipeCase{fastUpsampling,
		fmt.Sprintf(imagenet, `arg { name: "jpeg_fancy_upsampling" bool: false }`, "linear", true, "CHW", "FP32", ""), mul, add})
	return cs
}

// fastUpsampling is the case whose decode replicates chroma: the engines
// write RGB themselves, the other routes convert with Simple set.
const fastUpsampling = "imagenet/linear-fast-upsampling"

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

// Bounds of the GPU-CPU difference of one image's output on the 0..255
// scale: nvJPEG's IDCT rounds differently from libjpeg's. Measured on an
// H200 (driver 580) over the corpus and every case below: worst mean
// |diff| 0.11, worst max 3 (docs/gpu.md). The mean bound is about
// twice that; the max allows one level more for FP16 outputs.
const (
	gpuMeanBound = 0.25
	gpuMaxBound  = 4.0
)

// TestGPUMatchesCPU runs every corpus image through the GPU and the CPU
// executor for each pipeline case, with the hardware decoder taking all it
// can, then none (decoupled only), then a split, then the queue the
// engines and the CPU workers share: the same samples fail with the same
// messages, every image is within the bounds above, and each image was
// decoded where its header says it must be (routeOf): a run where nvJPEG
// failed and everything fell back to the CPU compares the CPU with itself,
// and fails here. It runs on every GPU of the host.
func TestGPUMatchesCPU(t *testing.T) {
	devs := gputest.Devices(t)
	tc := loadCorpus(t)
	hw := hardwareDecoder(t)
	for _, dev := range devs {
		// The engines taking all they can, none (decoupled only), a
		// split, and the shared queue (-1); the last three for three
		// cases only: the kernel is the same, and replicated chroma
		// takes other routes on the engines (their own RGB) and beside
		// them (the conversion kernel's).
		for _, share := range []float64{1, 0, 0.65, -1} {
			for _, c := range cases() {
				if share != 1 && c.name != "imagenet/linear" && c.name != "letterbox/linear" && c.name != fastUpsampling {
					continue
				}
				t.Run(fmt.Sprintf("gpu%d/%s/hw%g", dev, c.name, share), func(t *testing.T) {
					matchCPU(t, c, dev, share, hw, tc)
				})
			}
		}
	}
}

// TestGPUCoefficientsFlushEach is TestGPUMatchesCPU's case with every JPEG
// on the CPU workers, each worker sending its gathered coefficients to the
// GPU after every image instead of once a part: a flush in the middle of
// a worker's run must leave the next image's gathering intact.
func TestGPUCoefficientsFlushEach(t *testing.T) {
	gputest.Require(t)
	tc := loadCorpus(t)
	defer func(n int) { coefFlushBytes = n }(coefFlushBytes)
	coefFlushBytes = 1
	for _, c := range cases() {
		if c.name == "imagenet/linear" {
			matchCPU(t, c, 0, 0, hardwareDecoder(t), tc)
		}
	}
}

// testCorpus is the corpus's files, their bytes and routes, and how many
// are under broken/.
type testCorpus struct {
	files  []string
	imgs   [][]byte
	routes []routeWant
	broken int
}

// loadCorpus reads the corpus's files and routes them.
func loadCorpus(t *testing.T) *testCorpus {
	tc := &testCorpus{files: corpusFiles(t)}
	tc.routes = make([]routeWant, len(tc.files))
	for i, f := range tc.files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tc.imgs = append(tc.imgs, b)
		tc.routes[i] = routeOf(b)
		if filepath.Base(filepath.Dir(f)) == "broken" {
			tc.broken++
		}
	}
	return tc
}

// matchCPU is one case of TestGPUMatchesCPU, on GPU dev.
func matchCPU(t *testing.T, c pipeCase, dev int, share float64, hw bool, tc *testCorpus) {
	imgs, files, routes, broken := tc.imgs, tc.files, tc.routes, tc.broken
	prog := compile(t, c.text)
	cpu, err := executor.New(prog, executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	g, err := New(compile(t, c.text), executor.Options{HWShare: share, Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if share < 0 {
		// The queue on (as while other executors are busy), with a
		// plan that leaves the CPU workers baseline JPEGs beside their
		// own progressive ones and PNGs.
		set := route.Env()
		set.BusyShare = 0.3
		g.split = set.BusySplitter()
	}
	const batch = 64
	var worstMean, worstMax float64
	var worstFile string
	ok, failed := 0, 0
	var want pathCounts // over the images the GPU decoded
	for start := 0; start < len(imgs); start += batch {
		in := [][][]byte{imgs[start:min(start+batch, len(imgs))]}
		res, err := cpu.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		wantOut := make([][]byte, len(res.Outputs))
		for i, o := range res.Outputs {
			wantOut[i] = slices.Clone(o.Data)
		}
		wantErrs := slices.Clone(res.Errs)
		got, err := g.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		for s := range in[0] {
			f := files[start+s]
			we, ge := wantErrs[s], got.Errs[s]
			if ge == nil {
				want.add(f, routes[start+s])
			}
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
				if p := g.samples[s].path; strings.Contains(c.name, "opencv") && (p == route.CPU || p == route.SluiceCoefficients) && mx > 0.01 {
					// Decoded on the CPU workers, or through libjpeg's
					// own IDCT on the GPU, so the same pixels: OpenCV's
					// integer arithmetic gives the same levels (float
					// rounding of the normalisation aside).
					t.Errorf("%s: decoded on path %v, yet max |diff| %.3f levels: opencv_linear must be exact", f, p, mx)
				}
				if mean > worstMean {
					worstMean, worstFile = mean, f
				}
				worstMax = max(worstMax, mx)
				if mean > gpuMeanBound || mx > gpuMaxBound {
					t.Errorf("%s: mean |diff| %.3f, max %.2f on the 0..255 scale (bounds %g, %g)",
						f, mean, mx, gpuMeanBound, gpuMaxBound)
				}
			}
		}
	}
	var st executor.Stats
	g.Stats(&st)
	d := st.Decoded
	t.Logf("%d images ok, %d failed alike; worst mean |diff| %.3f (%s), worst max %.2f; decoded %v",
		ok, failed, worstMean, filepath.Base(worstFile), worstMax, d)
	if ok == 0 {
		t.Error("no image succeeded")
	}
	if broken > 0 && failed == 0 {
		t.Errorf("none of the %d files under broken/ failed on both executors", broken)
	}
	want.check(t, d, hw && share != 0)
	if share < 0 && hw && int(d[route.Hardware].N) >= want.nvjpeg {
		t.Errorf("shared queue: the engines decoded %d of the %d baseline JPEGs, the CPU workers none", d[route.Hardware].N, want.nvjpeg)
	}
}

// hardwareDecoder reports whether nvJPEG's hardware backend (the JPEG
// engines of an A100, H100, H200) opens on device 0.
func hardwareDecoder(t *testing.T) bool {
	gputest.Context(t)
	h, err := nvjpeg.NewHandle(nvjpeg.Hardware)
	if err != nil {
		t.Logf("no hardware JPEG decoder: %v", err)
		return false
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	return true
}

// pathCounts are the images a run should have decoded on each path, by
// their routes.
type pathCounts struct {
	nvjpeg, cpu, huffman, either int
	cpuFiles                     []string // "name (why)"
}

func (p *pathCounts) add(file string, r routeWant) {
	switch {
	case r.either:
		p.either++
	case r.cpu != "":
		p.cpu++
	case r.progressive:
		p.huffman++
	default:
		p.nvjpeg++
	}
	if r.cpu != "" {
		p.cpuFiles = append(p.cpuFiles, fmt.Sprintf("%s (%s)", filepath.Base(file), r.cpu))
	}
}

// check compares the executor's decode counts with the routes (package route):
// the CPU decoded exactly the images that need it (no fallback of
// others); the hardware engines took some when they are on, none when
// off, and no progressive JPEG; the coefficient route took some
// progressive JPEGs and none the engines decoded; with nvJPEG's decoupled
// decoder, the two took every progressive JPEG and the baseline ones the
// engines did not, and the batched hybrid decoder nothing.
func (p *pathCounts) check(t *testing.T, d []executor.Counter, hwOn bool) {
	t.Helper()
	hw, hy, cpu, coef := int(d[route.Hardware].N), int(d[route.Hybrid].N), int(d[route.CPU].N), int(d[route.SluiceCoefficients].N)
	switch {
	case coef > p.huffman+p.nvjpeg+p.either-int(d[route.Hardware].N):
		t.Errorf("the coefficient route took %d images, more than the %d JPEGs nvJPEG could take less the engines' %d",
			coef, p.huffman+p.nvjpeg+p.either, d[route.Hardware].N)
	case route.Env().Coefficients != route.CoefficientsOff && p.huffman > 0 && coef == 0:
		t.Errorf("the coefficient route took none of the %d progressive JPEGs", p.huffman)
	}
	// The routes that decode Huffman codes off the engines: nvJPEG's
	// decoupled decoder, the coefficient route, the SMs'.
	sm := int(d[route.SluiceGPUHuffman].N)
	dec := int(d[route.NvjpegCPUHuffman].N+d[route.NvjpegGPUHuffman].N) + coef + sm
	total := p.nvjpeg + p.cpu + p.huffman + p.either
	if hw+hy+cpu+dec != total {
		t.Errorf("decoded %d images (hardware %d, hybrid %d, cpu %d, decoupled %d), the GPU executor returned %d",
			hw+hy+cpu+dec, hw, hy, cpu, dec, total)
	}
	if cpu < p.cpu || cpu > p.cpu+p.either {
		t.Errorf("CPU decoded %d images; their headers send %d there (%d more may go): %s",
			cpu, p.cpu, p.either, strings.Join(p.cpuFiles, ", "))
	}
	switch {
	case hwOn && hw == 0:
		t.Errorf("the hardware decoder is on but decoded nothing (hybrid %d, decoupled %d, cpu %d)", hy, dec, cpu)
	case !hwOn && hw != 0:
		t.Errorf("the hardware decoder is off but decoded %d images", hw)
	case hw > p.nvjpeg+p.either:
		t.Errorf("the hardware decoder took %d images; only %d baseline JPEGs may go there", hw, p.nvjpeg+p.either)
	}
	if !nvjpeg.Decoupled() {
		if dec != coef+sm {
			t.Errorf("without the decoupled decoder: decoupled %d, want 0", dec-coef-sm)
		}
		return
	}
	if hy != 0 {
		t.Errorf("the batched hybrid decoder took %d images; with the decoupled one it takes none", hy)
	}
	if lo, hi := p.huffman+p.nvjpeg-hw, p.huffman+p.nvjpeg-hw+p.either; dec < lo || dec > hi {
		t.Errorf("the decoupled decoder took %d images; want %d to %d (every progressive JPEG, and the %d baseline ones the engines left)",
			dec, lo, hi, p.nvjpeg-hw)
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

// Memory: everything an executor allocates is freed by Close, on every GPU
// of the host. The test holds the primary context itself, as Triton does,
// so that the context's own memory is not part of the difference.
func TestGPUMemoryReleased(t *testing.T) {
	for _, dev := range gputest.Devices(t) {
		t.Run(fmt.Sprintf("gpu%d", dev), func(t *testing.T) { memoryReleased(t, dev) })
	}
}

func memoryReleased(t *testing.T, dev int) {
	ctx := gputest.ContextOn(t, dev)
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
		g, err := New(compile(t, text), executor.Options{Device: dev})
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
		// Measured on an H200 (three runs): 0 MiB left after
		// rounds 1-3, 238-270 MiB in use while loaded; 4 MiB leaves room
		// for the driver's page granularity, not for a leaked buffer.
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
		if mean, mx := compare(gv, wv, res.Outputs[0].Spec, cases()[0]); mean > gpuMeanBound || mx > gpuMaxBound {
			t.Errorf("sample %d: mean %.3f max %.2f", s, mean, mx)
		}
	}
}

// hostRun runs a batch into host memory: a copy of each output, and the
// samples' errors.
func hostRun(t *testing.T, g *Executor, imgs [][]byte) ([][]byte, []error) {
	t.Helper()
	ref, err := g.Run([][][]byte{imgs})
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(ref.Outputs))
	for i, o := range ref.Outputs {
		out[i] = slices.Clone(o.Data)
	}
	return out, slices.Clone(ref.Errs)
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
	refOut, _ := hostRun(t, g, imgs)

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
	if err := g.RunInto([][][]byte{imgs}, dst, errs, nil); err != nil {
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

// An output nobody asked for (a discarded Dest) is written nowhere, the
// image output or a side output; the others are what a full run gives.
func TestGPUDiscardedOutputs(t *testing.T) {
	gputest.Require(t)
	g, err := New(compile(t, fmt.Sprintf(letterbox, "linear", "FP32")), executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	imgs := [][]byte{testimg.JPEG(640, 480, 1), testimg.JPEG(300, 500, 2)}
	refOut, _ := hostRun(t, g, imgs)
	n := len(imgs)
	for keep := range 3 {
		dst := make([][]Dest, 3)
		host := make([]byte, n*g.SampleBytes(keep))
		for i := range dst {
			dst[i] = make([]Dest, n)
			if i == keep {
				for s := range n {
					sz := g.SampleBytes(i)
					dst[i][s].Host = host[s*sz : (s+1)*sz]
				}
			}
		}
		errs := make([]error, n)
		if err := g.RunInto([][][]byte{imgs}, dst, errs, nil); err != nil {
			t.Fatal(err)
		}
		for s, err := range errs {
			if err != nil {
				t.Fatalf("output %d kept, sample %d: %v", keep, s, err)
			}
		}
		if !slices.Equal(host, refOut[keep]) {
			t.Errorf("output %d alone differs from the full run", keep)
		}
	}
}

// A large image's scratch stays with its CPU worker while batches keep
// coming, and goes once the GPU's decoders have been idle for idleRelease.
func TestGPUIdleSweep(t *testing.T) {
	gputest.Require(t)
	g, err := New(compile(t, fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", "")), executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// A PNG decodes on a CPU worker into pinned memory of 4 bytes a
	// pixel, over ops.RetainBytes at this size.
	im := image.NewRGBA(image.Rect(0, 0, 2400, 1800))
	for i := range im.Pix {
		im.Pix[i] = byte(i / 4096)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, im); err != nil {
		t.Fatal(err)
	}
	res, err := g.Run([][][]byte{{b.Bytes()}})
	if err != nil || res.Errs[0] != nil {
		t.Fatalf("run: %v, %v", err, res.Errs)
	}
	grown := func() (n int) {
		g.svc.free.each(func(w *cpuWorker) {
			if w.grown > 0 {
				n++
			}
		})
		return n
	}
	if n := grown(); n != 1 {
		t.Fatalf("%d workers hold a large image's scratch after its batch, want 1", n)
	}
	time.Sleep(idleRelease + time.Second)
	if n := grown(); n != 0 {
		t.Fatalf("%d workers still hold a large image's scratch after %v idle", n, idleRelease+time.Second)
	}
}

// The parsers copy the JPEGs of nvJPEG's batched calls to pinned memory
// (stageSrc); a batch over maxSrcs goes without, and the lanes copy them
// instead. Both give the same bytes and errors on the whole corpus, and
// the copies were made and read.
func TestGPUStagedSources(t *testing.T) {
	gputest.Require(t)
	tc := loadCorpus(t)
	g, err := New(compile(t, fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", "")), executor.Options{HWShare: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	staged, stagedErrs := hostRun(t, g, tc.imgs)
	if !g.srcOn || g.srcUsed.Load() == 0 {
		t.Fatalf("no JPEG was staged (on %v, %d bytes)", g.srcOn, g.srcUsed.Load())
	}
	defer func(n int) { maxSrcs = n }(maxSrcs)
	maxSrcs = 0
	copied, copiedErrs := hostRun(t, g, tc.imgs)
	if g.srcOn {
		t.Fatal("staged a batch over maxSrcs")
	}
	for i := range staged {
		if !bytes.Equal(staged[i], copied[i]) {
			t.Errorf("output %d differs between staged and copied JPEGs", i)
		}
	}
	for s := range stagedErrs {
		if fmt.Sprint(stagedErrs[s]) != fmt.Sprint(copiedErrs[s]) {
			t.Errorf("%s: %v staged, %v copied", tc.files[s], stagedErrs[s], copiedErrs[s])
		}
	}
}
