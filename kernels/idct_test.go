package kernels_test

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// sluice_idct against libjpeg-turbo: progressive JPEGs' coefficients from
// codec.CoefDecoder, through the kernel, must give libjpeg's planes
// exactly (codec.DecodeYUVPlanes; a greyscale JPEG's grey decode), for
// every subsampling and for sizes that leave partial blocks and MCUs. Every
// component of every image goes in one launch, so that each block must find
// its own component.

type idctCase struct {
	name   string
	src    []byte
	planes [][]byte // libjpeg's, rows packed
}

func idctCases(t *testing.T) []idctCase {
	var cs []idctCase
	for i, sz := range [][2]int{{333, 250}, {17, 9}, {64, 48}, {1, 1}, {101, 77}, {8, 16}} {
		for _, luma := range [][2]int{{1, 1}, {2, 1}, {2, 2}, {1, 2}} {
			rgb := testImage(sz[1], sz[0], uint64(700+i))
			src, err := testimg.LibJPEG(rgb, sz[0], sz[1], testimg.LibJPEGOptions{Quality: 90, Luma: luma, Scans: testimg.SimpleProgression})
			if err != nil {
				t.Fatal(err)
			}
			p, _, _, _, _, _, _, err := codec.DecodeYUVPlanes(src)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, idctCase{fmt.Sprintf("%dx%d/luma%dx%d", sz[0], sz[1], luma[0], luma[1]), src, p[:]})
		}
	}
	grey, err := testimg.LibJPEG(testImage(45, 123, 9), 123, 45, testimg.LibJPEGOptions{Quality: 80, Grey: true, Restart: 2,
		Scans: []testimg.Scan{{Comps: []int{0}, Se: 0, Al: 1}, {Comps: []int{0}, Ss: 1, Se: 63, Al: 1},
			{Comps: []int{0}, Se: 0, Ah: 1}, {Comps: []int{0}, Ss: 1, Se: 63, Ah: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := codec.Decode(grey, codec.Options{Color: codec.Gray})
	if err != nil {
		t.Fatal(err)
	}
	return append(cs, idctCase{"grey/123x45", grey, [][]byte{img.Pix}})
}

func TestIDCTMatchesLibJPEG(t *testing.T) {
	for _, k := range []struct {
		name string
		load func() (*kernels.Fused, error)
	}{{"cubin", kernels.LoadFused}, {"ptx", kernels.LoadFusedPTX}} {
		t.Run(k.name, func(t *testing.T) { testIDCT(t, k.load) })
	}
}

func testIDCT(t *testing.T, load func() (*kernels.Fused, error)) {
	ctx, f, st := cudaSetupWith(t, load)
	cases := idctCases(t)
	upload, done := onDevice(t, ctx, st)
	defer done()
	dec, err := codec.NewCoefDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var comps []kernels.IDCT
	var outs [][]byte // per component, pitch = W + dstPad, a sentinel in the padding
	first := 0
	for _, c := range cases {
		blocks, err := dec.Frame(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		coef := make([]int16, blocks*64)
		if err := dec.Decode(unsafe.Slice((*byte)(unsafe.Pointer(&coef[0])), blocks*codec.CoefBlock), make([]uint64, blocks), c.src); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if dec.Components() != len(c.planes) {
			t.Fatalf("%s: %d components, libjpeg's %d planes", c.name, dec.Components(), len(c.planes))
		}
		dev := upload(unsafe.Slice((*byte)(unsafe.Pointer(&coef[0])), blocks*codec.CoefBlock))
		for i := range dec.Components() {
			cc := dec.Component(i)
			out := bytes.Repeat([]byte{0xA5}, (cc.W+dstPad)*cc.Height)
			m := kernels.IDCT{Coef: uint64(dev) + uint64(cc.First*codec.CoefBlock), Dst: uint64(upload(out)),
				Pitch: int32(cc.Pitch), BlocksW: int32(cc.BlocksW), BlocksH: int32(cc.BlocksH), W: int32(cc.W), H: int32(cc.Height),
				DstPitch: int32(cc.W + dstPad), First: int32(first), Quant: cc.Quant}
			if err := m.Check(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			first += cc.BlocksW * cc.BlocksH
			comps = append(comps, m)
			outs = append(outs, out)
		}
	}
	if err := f.LaunchIDCT(st, upload(kernels.Bytes(comps)), len(comps), first); err != nil {
		t.Fatal(err)
	}
	for i := range comps {
		if err := cuda.MemcpyDtoHAsync(outs[i], cuda.DevicePtr(comps[i].Dst), st); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Synchronize(); err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, c := range cases {
		for p, want := range c.planes {
			m, out := comps[at], outs[at]
			at++
			w, h := int(m.W), int(m.H)
			for y := range h {
				if !bytes.Equal(out[y*(w+dstPad)+w:(y+1)*(w+dstPad)], bytes.Repeat([]byte{0xA5}, dstPad)) {
					t.Fatalf("%s plane %d: row %d written past its width", c.name, p, y)
				}
			}
			got := unpad(out, w, h, w+dstPad)
			if len(want) != len(got) {
				t.Fatalf("%s plane %d: %dx%d, libjpeg's has %d samples", c.name, p, w, h, len(want))
			}
			for k := range got {
				if got[k] != want[k] {
					t.Fatalf("%s plane %d: sample (%d,%d) is %d, libjpeg's %d", c.name, p, k%w, k/w, got[k], want[k])
				}
			}
		}
	}
}
