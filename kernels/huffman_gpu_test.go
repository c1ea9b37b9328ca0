package kernels_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// sluice_huffman on the GPU against codec.CoefDecoder: one batch of the
// corpus's sequential JPEGs and generated ones (every sampling, restart
// intervals, odd sizes), every coefficient of every buffer equal, and the
// throughput of the decoder alone at batches of 64 and 256
// (TestGPUHuffmanThroughput logs it). huffman_test.go checks the same code
// on the CPU, where there is no GPU.

type gpuHuffCase struct {
	name  string
	src   []byte
	facts *codec.JPEGEntropy
	coef  []int16
}

// gpuHuffCases are the JPEGs the decoder takes and CoefDecoder decodes:
// the corpus's (in name order), then generated ones.
func gpuHuffCases(t *testing.T, generated bool) []gpuHuffCase {
	dec, err := codec.NewCoefDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var cs []gpuHuffCase
	add := func(name string, src []byte) {
		f, err := codec.ReadJPEGEntropy(src)
		if err != nil {
			return
		}
		blocks, err := dec.Frame(src)
		if err != nil || blocks != f.Blocks {
			return
		}
		coef := make([]int16, blocks*64)
		if dec.Decode(unsafe.Slice((*byte)(unsafe.Pointer(&coef[0])), blocks*codec.CoefBlock), make([]uint64, blocks), src) != nil {
			return
		}
		cs = append(cs, gpuHuffCase{name, src, f, coef})
	}
	files := kernels.HuffCorpus(t)
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	}) {
		add(n, files[n])
	}
	if !generated {
		return cs
	}
	for i, sz := range [][2]int{{333, 250}, {17, 9}, {1, 1}, {101, 77}, {640, 480}} {
		for _, luma := range [][2]int{{1, 1}, {2, 1}, {2, 2}, {1, 2}} {
			for _, restart := range []int{0, 1, 7} {
				src, err := testimg.LibJPEG(testImage(sz[1], sz[0], uint64(300+i)), sz[0], sz[1],
					testimg.LibJPEGOptions{Quality: 90, Luma: luma, Restart: restart})
				if err != nil {
					t.Fatal(err)
				}
				add(fmt.Sprintf("%dx%d/luma%dx%d/rst%d", sz[0], sz[1], luma[0], luma[1], restart), src)
			}
		}
		src, err := testimg.LibJPEG(testImage(sz[1], sz[0], 3), sz[0], sz[1], testimg.LibJPEGOptions{Quality: 80, Grey: true})
		if err != nil {
			t.Fatal(err)
		}
		add(fmt.Sprintf("%dx%d/grey", sz[0], sz[1]), src)
	}
	return cs
}

// huffBuffers allocates one device buffer for the cases' coefficients,
// each 256-byte aligned; it returns each case's address and the whole.
func huffBuffers(t *testing.T, cs []gpuHuffCase) ([]cuda.DevicePtr, cuda.DevicePtr, int) {
	offs := make([]int, len(cs))
	total := 0
	for i, c := range cs {
		offs[i] = total
		total += (len(c.coef)*2 + 255) &^ 255
	}
	dev, err := cuda.MemAlloc(total)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cuda.MemFree(dev) })
	ptrs := make([]cuda.DevicePtr, len(cs))
	for i := range cs {
		ptrs[i] = dev + cuda.DevicePtr(offs[i])
	}
	return ptrs, dev, total
}

func TestGPUHuffmanMatchesCoefDecoder(t *testing.T) {
	for _, k := range []struct {
		name string
		load func() (*kernels.Fused, error)
	}{{"cubin", kernels.LoadFused}, {"ptx", kernels.LoadFusedPTX}} {
		t.Run(k.name, func(t *testing.T) { testGPUHuffman(t, k.load) })
	}
}

func testGPUHuffman(t *testing.T, load func() (*kernels.Fused, error)) {
	ctx, f, st := cudaSetupWith(t, load)
	_, done := onDevice(t, ctx, st)
	defer done()
	cs := gpuHuffCases(t, true)
	d, err := kernels.NewHuffmanDecoder(f)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ptrs, dev, total := huffBuffers(t, cs)
	// A pattern where the coefficients go: one left unwritten shows.
	if err := cuda.MemsetD8Async(dev, 0x5A, total, st); err != nil {
		t.Fatal(err)
	}
	var in []int
	for i, c := range cs {
		if err := d.Add(c.src, c.facts, ptrs[i]); err != nil {
			t.Logf("%s: not taken: %v", c.name, err)
			continue
		}
		in = append(in, i)
	}
	if err := d.Launch(st); err != nil {
		t.Fatal(err)
	}
	outs := make([][]int16, len(cs))
	for _, i := range in {
		outs[i] = make([]int16, len(cs[i].coef))
		if err := cuda.MemcpyDtoHAsync(unsafe.Slice((*byte)(unsafe.Pointer(&outs[i][0])), 2*len(outs[i])), ptrs[i], st); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Synchronize(); err != nil {
		t.Fatal(err)
	}
	most := 0
	for j, i := range in {
		c := cs[i]
		if err := d.Err(j); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		most = max(most, d.Rounds(j))
		for k := range c.coef {
			if outs[i][k] != c.coef[k] {
				t.Errorf("%s: block %d coefficient %d is %d, CoefDecoder's %d", c.name, k/64, k%64, outs[i][k], c.coef[k])
				break
			}
		}
	}
	t.Logf("%d JPEGs in one launch, all coefficients checked; at most %d rounds", len(in), most)
}

// Damaged data fails its image alone: the others of the batch decode.
func TestGPUHuffmanDamage(t *testing.T) {
	ctx, f, st := cudaSetup(t)
	_, done := onDevice(t, ctx, st)
	defer done()
	good, err := testimg.LibJPEG(testImage(120, 160, 8), 160, 120, testimg.LibJPEGOptions{Quality: 90})
	if err != nil {
		t.Fatal(err)
	}
	gf, err := codec.ReadJPEGEntropy(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(good)
	s := gf.Segments[0]
	for k := s.Start + 40; k < s.Start+80; k++ {
		bad[k] = 0xFE // a run of 1s: codes no table has, or runs past the block
	}
	bf, err := codec.ReadJPEGEntropy(bad)
	if err != nil {
		t.Fatal(err)
	}
	d, err := kernels.NewHuffmanDecoder(f)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cs := []gpuHuffCase{{"good", good, gf, make([]int16, gf.Blocks*64)}, {"bad", bad, bf, make([]int16, bf.Blocks*64)}}
	ptrs, _, _ := huffBuffers(t, cs)
	for i, c := range cs {
		if err := d.Add(c.src, c.facts, ptrs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Launch(st); err != nil {
		t.Fatal(err)
	}
	if err := st.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := d.Err(0); err != nil {
		t.Errorf("the good image: %v", err)
	}
	if err := d.Err(1); err == nil {
		t.Errorf("the damaged image decoded")
	} else {
		t.Logf("the damaged image: %v", err)
	}
}

// TestGPUHuffmanThroughput times the decoder alone on batches of the
// corpus's baseline colour and grey JPEGs (cycled to fill the batch): the
// host's part (ReadJPEGEntropy and Add), the upload, and the kernel alone by
// CUDA events; and CoefDecoder on one core on the same images for scale.
// It logs the numbers; HUFF_BENCH_ITERS sets the kernel runs timed (20).
func TestGPUHuffmanThroughput(t *testing.T) {
	ctx, f, st := cudaSetup(t)
	_, done := onDevice(t, ctx, st)
	defer done()
	var base []gpuHuffCase
	for _, c := range gpuHuffCases(t, false) {
		if strings.HasPrefix(c.name, "jpeg/derived/") || strings.HasPrefix(c.name, "jpeg/native/") {
			base = append(base, c)
		}
	}
	if len(base) == 0 {
		t.Skip("no baseline JPEGs in the corpus")
	}
	iters := 20
	if s := os.Getenv("HUFF_BENCH_ITERS"); s != "" {
		fmt.Sscan(s, &iters)
	}
	d, err := kernels.NewHuffmanDecoder(f)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ev := make([]cuda.Event, 3)
	for i := range ev {
		if ev[i], err = cuda.NewEvent(true); err != nil {
			t.Fatal(err)
		}
		defer func(e cuda.Event) { _ = e.Destroy() }(ev[i])
	}
	for _, batch := range []int{64, 256} {
		cs := make([]gpuHuffCase, batch)
		bytesIn, pixels := 0, 0
		for i := range cs {
			cs[i] = base[i%len(base)]
			bytesIn += len(cs[i].src)
			pixels += cs[i].facts.Width * cs[i].facts.Height
		}
		ptrs, _, _ := huffBuffers(t, cs)
		// The host's part, as a route would do it per batch.
		d.Reset()
		t0 := time.Now()
		for i, c := range cs {
			fc, err := codec.ReadJPEGEntropy(c.src)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Add(c.src, fc, ptrs[i]); err != nil {
				t.Fatal(err)
			}
		}
		host := time.Since(t0)
		var upload, kernel, whole time.Duration
		most := 0
		for it := -1; it < iters; it++ { // a first run unmeasured
			if err := ev[0].Record(st); err != nil {
				t.Fatal(err)
			}
			if err := d.Upload(st); err != nil {
				t.Fatal(err)
			}
			if err := ev[1].Record(st); err != nil {
				t.Fatal(err)
			}
			if err := d.Run(st); err != nil {
				t.Fatal(err)
			}
			if err := ev[2].Record(st); err != nil {
				t.Fatal(err)
			}
			if err := st.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if it < 0 {
				continue
			}
			u, _ := cuda.Elapsed(ev[0], ev[1])
			k, _ := cuda.Elapsed(ev[1], ev[2])
			upload += u
			kernel += k
			whole += u + k
		}
		for i := range cs {
			if err := d.Err(i); err != nil {
				t.Fatalf("%s: %v", cs[i].name, err)
			}
			most = max(most, d.Rounds(i))
		}
		upload /= time.Duration(iters)
		kernel /= time.Duration(iters)
		whole /= time.Duration(iters)
		// CoefDecoder on one core, the same images.
		dec, err := codec.NewCoefDecoder()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 0)
		t0 = time.Now()
		for _, c := range cs {
			n := c.facts.Blocks * codec.CoefBlock
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			if err := dec.Decode(buf[:n], make([]uint64, c.facts.Blocks), c.src); err != nil {
				t.Fatal(err)
			}
		}
		cpu := time.Since(t0)
		dec.Close()
		rate := func(d time.Duration) float64 { return float64(batch) / d.Seconds() }
		t.Logf("batch %d (%d distinct JPEGs, %.1f MB, %.1f MP): kernel %v = %.0f images/s (%.0f MP/s); upload %v; upload+kernel %.0f images/s; host facts+Add %v (%.1f µs an image); CoefDecoder one core %.0f images/s; at most %d rounds",
			batch, min(batch, len(base)), float64(bytesIn)/1e6, float64(pixels)/1e6, kernel, rate(kernel), float64(pixels)/1e6/kernel.Seconds(),
			upload, rate(whole), host, float64(host.Microseconds())/float64(batch), rate(cpu), most)
	}
}
