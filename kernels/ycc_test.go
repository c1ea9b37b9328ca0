package kernels_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// sluice_ycc against TurboJPEG: a JPEG's planes from codec.DecodeYUVPlanes
// (libjpeg-turbo's IDCT), converted on the GPU, must equal codec.Decode's
// RGB bytes exactly, with fancy upsampling and with replicated chroma
// (FastUpsample), for every subsampling and at odd and tiny sizes where
// libjpeg's edge rules and fallbacks apply.

// yccImage is one image's planes, rows packed.
type yccImage struct {
	planes       [3][]byte
	w, h, cw, ch int
	subX, subY   int
	simple       bool // replicated chroma: YCC.Simple, codec.Options.FastUpsample
	name         string
	want         []byte // codec.Decode's RGB
}

// yccRunner converts a batch in one launch and returns each image's RGB,
// rows packed.
type yccRunner func(t *testing.T, imgs []yccImage) [][]byte

var newYCCRunner = cudaYCCRunner

// Pitches wider than the rows, so that the kernel must use them.
const yPad, cPad, dstPad = 5, 3, 7

func cudaYCCRunner(t *testing.T) yccRunner {
	ctx, f, st := cudaSetup(t)
	return func(t *testing.T, imgs []yccImage) [][]byte {
		t.Helper()
		upload, done := onDevice(t, ctx, st)
		defer done()
		descs := make([]kernels.YCC, len(imgs))
		outs := make([][]byte, len(imgs))
		maxW, maxH := 0, 0
		for i, m := range imgs {
			d := &descs[i]
			*d = kernels.YCC{W: int32(m.w), H: int32(m.h), YPitch: int32(m.w + yPad), CPitch: int32(m.cw + cPad),
				CW: int32(m.cw), CH: int32(m.ch), SubX: int32(m.subX), SubY: int32(m.subY), DstPitch: int32(3*m.w + dstPad)}
			if m.simple {
				d.Simple = 1
			}
			d.Y = uint64(upload(pad(m.planes[0], m.w, m.h, m.w+yPad)))
			d.Cb = uint64(upload(pad(m.planes[1], m.cw, m.ch, m.cw+cPad)))
			d.Cr = uint64(upload(pad(m.planes[2], m.cw, m.ch, m.cw+cPad)))
			// A sentinel shows unwritten pixels.
			outs[i] = bytes.Repeat([]byte{0xA5}, int(d.DstPitch)*m.h)
			d.Dst = uint64(upload(outs[i]))
			if err := d.Check(); err != nil {
				t.Fatal(err)
			}
			maxW, maxH = max(maxW, m.w), max(maxH, m.h)
		}
		dev := upload(kernels.Bytes(descs))
		if err := f.LaunchYCC(st, dev, len(descs), maxW, maxH); err != nil {
			t.Fatal(err)
		}
		for i := range descs {
			if err := cuda.MemcpyDtoHAsync(outs[i], cuda.DevicePtr(descs[i].Dst), st); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Synchronize(); err != nil {
			t.Fatal(err)
		}
		for i, m := range imgs {
			outs[i] = unpad(outs[i], 3*m.w, m.h, 3*m.w+dstPad)
		}
		return outs
	}
}

// pad copies packed rows of w bytes into rows of pitch bytes.
func pad(b []byte, w, h, pitch int) []byte {
	out := bytes.Repeat([]byte{0x5A}, pitch*h)
	for y := range h {
		copy(out[y*pitch:], b[y*w:(y+1)*w])
	}
	return out
}

func unpad(b []byte, w, h, pitch int) []byte {
	out := make([]byte, w*h)
	for y := range h {
		copy(out[y*w:], b[y*pitch:y*pitch+w])
	}
	return out
}

// yccSizes are odd sizes, and chroma planes of one or two columns or rows
// (libjpeg replicates rather than interpolates two columns or fewer).
var yccSizes = [][2]int{{17, 13}, {1, 1}, {1, 7}, {2, 5}, {3, 3}, {4, 2}, {5, 1}, {6, 9}, {33, 2}, {64, 48}, {131, 97}}

func yccCases(t *testing.T) []yccImage {
	type enc struct {
		name string
		jpg  []byte
	}
	encs := []enc{{"testimg-420", testimg.JPEG(37, 21, 2)}}
	for i, sz := range yccSizes {
		for _, sub := range [][2]int{{1, 1}, {2, 1}, {2, 2}, {1, 2}} {
			b, err := codec.EncodeJPEG(testImage(sz[1], sz[0], uint64(300+i)), sz[0], sz[1], 90, sub[0], sub[1])
			if err != nil {
				t.Fatal(err)
			}
			encs = append(encs, enc{fmt.Sprintf("%dx%d/sub%dx%d", sz[0], sz[1], sub[0], sub[1]), b})
		}
	}
	var imgs []yccImage
	for _, e := range encs {
		p, w, h, cw, ch, sx, sy, err := codec.DecodeYUVPlanes(e.jpg)
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		for _, simple := range []bool{false, true} {
			img, err := codec.Decode(e.jpg, codec.Options{Color: codec.RGB, FastUpsample: simple})
			if err != nil {
				t.Fatalf("%s: %v", e.name, err)
			}
			name := e.name
			if simple {
				name += "/simple"
			}
			imgs = append(imgs, yccImage{planes: p, w: w, h: h, cw: cw, ch: ch, subX: sx, subY: sy, simple: simple, name: name, want: img.Pix})
		}
	}
	return imgs
}

func TestYCCMatchesTurboJPEG(t *testing.T) {
	run := newYCCRunner(t)
	imgs := yccCases(t)
	// All in one launch: each image must keep to its own size.
	got := run(t, imgs)
	for i, m := range imgs {
		t.Run(m.name, func(t *testing.T) {
			worst, at := 0, -1
			for k := range m.want {
				if d := max(int(got[i][k])-int(m.want[k]), int(m.want[k])-int(got[i][k])); d > worst {
					worst, at = d, k
				}
			}
			if worst != 0 {
				t.Errorf("max |diff| %d at pixel (%d,%d) channel %d: got %d, TurboJPEG %d",
					worst, at/3%m.w, at/3/m.w, at%3, got[i][at], m.want[at])
			}
		})
	}
}
