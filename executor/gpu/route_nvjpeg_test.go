package gpu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels/nvjpeg"
)

// TestGPURouteMatchesNvjpeg: the route reads a JPEG's header once (codec's
// facts) instead of asking nvJPEG, so its answers must be nvJPEG's own for
// every JPEG it sends to a GPU path: the chroma subsampling nvJPEG's parse
// reports, and, where it offers a JPEG to the engines, the engines'
// support check. Over the corpus and generated edge cases (sizes of one
// pixel to 8K, every sampling libjpeg writes, a greyscale JPEG saying 2x2,
// extended sequential, restart intervals).
func TestGPURouteMatchesNvjpeg(t *testing.T) {
	gputest.Context(t)
	if err := nvjpeg.Init(); err != nil {
		t.Skipf("no nvJPEG: %v", err)
	}
	hw, err := nvjpeg.NewHandle(nvjpeg.Hardware)
	if err != nil {
		t.Skipf("no JPEG engines: %v", err)
	}
	defer hw.Close()
	js, err := hw.NewJpegStream()
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	type input struct {
		name string
		src  []byte
	}
	var in []input
	for _, f := range corpusFiles(t) {
		if ext := filepath.Ext(f); ext == ".png" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, input{filepath.Base(f), b})
	}
	for _, sz := range [][2]int{{1, 1}, {7, 9}, {8, 8}, {17, 1}, {1, 33}, {640, 480}, {4097, 3}, {8192, 16}} {
		for _, o := range []testimg.LibJPEGOptions{{}, {Luma: [2]int{1, 1}}, {Luma: [2]int{2, 1}}, {Luma: [2]int{1, 2}}, {Grey: true}, {Restart: 2}} {
			o.Quality = 85
			w, h := sz[0], sz[1]
			pix := make([]byte, w*h*3)
			for i := range pix {
				pix[i] = byte(i*13 + i/7)
			}
			src, err := testimg.LibJPEG(pix, w, h, o)
			if err != nil {
				t.Fatal(err)
			}
			in = append(in, input{fmt.Sprintf("%dx%d %+v", w, h, o), src})
			if i := bytes.Index(src, []byte{0xFF, 0xC0}); i >= 0 {
				ext := bytes.Clone(src)
				ext[i+1] = 0xC1 // extended sequential, 8-bit Huffman: coded the same
				in = append(in, input{"extended sequential", ext})
				if o.Grey {
					odd := bytes.Clone(src)
					odd[i+11] = 0x22
					in = append(in, input{"grey saying 2x2", odd})
				}
			}
		}
	}
	dec := codec.NewDecoder()
	defer dec.Close()
	set := route.Defaults()
	all := route.Decoders{Engines: true, Decoupled: true, DecoupledGPU: true}
	gpuPaths, engines, notOffered := 0, 0, 0
	for _, c := range in {
		h, err := dec.Header(c.src, codec.Limits{})
		if err != nil {
			continue // broken files: the CPU names their error
		}
		d := set.Decide(h.JPEG(), h.Pixels(), all)
		if d.Path == route.CPU {
			continue
		}
		gpuPaths++
		if err := js.Parse(hw, c.src, true); err != nil {
			t.Errorf("%s (%dx%d): routed to %s, nvJPEG's parse fails: %v", c.name, h.Width, h.Height, d.Path, err)
			continue
		}
		css, err := js.Subsampling()
		if err != nil || css != d.Chroma {
			t.Errorf("%s (%dx%d): route says chroma %d, nvJPEG %d (%v)", c.name, h.Width, h.Height, d.Chroma, css, err)
		}
		ok, err := hw.BatchedSupported(js)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d.Engines && !ok:
			t.Errorf("%s (%dx%d, %+v): the route offers it to the engines, which do not take it", c.name, h.Width, h.Height, h.JPEG())
		case d.Engines:
			engines++
		case ok:
			notOffered++
		}
	}
	t.Logf("%d JPEGs on GPU paths, %d offered to the engines, %d the engines would take that the route does not offer (progressive: none expected)", gpuPaths, engines, notOffered)
	if engines == 0 {
		t.Error("no JPEG was offered to the engines")
	}
}
