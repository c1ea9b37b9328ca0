package backend

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/testimg"
)

// sourceModePipeline resizes as Pillow does per image mode (source_mode),
// which the GPU kernel cannot express.
const sourceModePipeline = `version: 1 input { name: "IMAGE" }
node { op: "decode" arg { name: "orient" bool: false } }
node { op: "resize" arg { name: "shorter" int: 64 } arg { name: "interp" str: "cubic" } arg { name: "source_mode" bool: true } }
node { op: "crop" arg { name: "size" ints { v: [64, 64] } } }
node { op: "normalize" }
output { name: "PIXELS" }`

// A KIND_GPU instance of a pipeline the GPU kernel cannot express loads
// and runs it on the CPU executor (no GPU is needed to see it: the GPU
// executor refuses the pipeline before it opens a device), answering
// byte for byte as a KIND_CPU instance, a palette and a translucent PNG
// among the images, and a bad image failing its request alone.
func TestKindGPUFallsBackToCPU(t *testing.T) {
	m, err := load(t, modelDir(t, map[string][]byte{TextFile: []byte(sourceModePipeline)}), `{
  "name": "pre", "backend": "sluice", "max_batch_size": 8,
  "input": [{"name": "IMAGE", "data_type": "TYPE_UINT8", "dims": ["-1"], "allow_ragged_batch": true}],
  "parameters": {"workers": {"string_value": "2"}}
}`, true)
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := m.NewInstance("cpu", "KIND_CPU", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	gpu, err := m.NewInstance("gpu", "KIND_GPU", 0)
	if err != nil {
		t.Fatalf("KIND_GPU instance of a source_mode pipeline: %v", err)
	}
	defer gpu.Close()
	if gpu.Kind != "KIND_GPU" || gpu.Executor != executor.KindCPU || cpu.Executor != executor.KindCPU {
		t.Fatalf("kinds: gpu %s runs %s, cpu runs %s", gpu.Kind, gpu.Executor, cpu.Executor)
	}
	imgs := [][]byte{testimg.JPEG(120, 90, 1), pngOf(t, paletted(97, 75)), []byte("not an image"), pngOf(t, translucent(80, 130))}
	reqs := func() []Request {
		return []Request{
			request("IMAGE", rawInput(imgs[0], imgs[1])),
			request("IMAGE", rawInput(imgs[2])),
			request("IMAGE", rawInput(imgs[3])),
		}
	}
	run := func(inst *Instance) ([]error, []*fakeResponse) {
		resps := []*fakeResponse{newResponse(), newResponse(), newResponse()}
		errs, _ := inst.Execute(reqs(), []Response{resps[0], resps[1], resps[2]})
		return append([]error(nil), errs...), resps
	}
	cErrs, cResps := run(cpu)
	gErrs, gResps := run(gpu)
	for i := range cErrs {
		if (cErrs[i] == nil) != (gErrs[i] == nil) || cErrs[i] != nil && cErrs[i].Error() != gErrs[i].Error() {
			t.Errorf("request %d: KIND_GPU %v, KIND_CPU %v", i, gErrs[i], cErrs[i])
		}
	}
	if gErrs[1] == nil || gErrs[0] != nil || gErrs[2] != nil {
		t.Fatalf("errors %v: want the bad image's request alone to fail", gErrs)
	}
	for _, i := range []int{0, 2} {
		g, c := gResps[i].outputs["PIXELS"], cResps[i].outputs["PIXELS"]
		if g == nil || c == nil || len(g.data) == 0 || !bytes.Equal(g.data, c.data) {
			t.Errorf("request %d: KIND_GPU's PIXELS differ from KIND_CPU's", i)
		}
	}
}

func pngOf(t *testing.T, im image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, im); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// paletted is a palette image of stripes, which source_mode resamples
// with NEAREST whatever the filter, as Pillow does mode "P".
func paletted(w, h int) image.Image {
	pal := color.Palette{color.RGBA{200, 30, 40, 255}, color.RGBA{20, 180, 60, 255}, color.RGBA{30, 40, 220, 255}}
	im := image.NewPaletted(image.Rect(0, 0, w, h), pal)
	for y := range h {
		for x := range w {
			im.SetColorIndex(x, y, uint8((x/3+y/5)%3))
		}
	}
	return im
}

// translucent is an image whose alpha varies, which source_mode
// resamples premultiplied, as Pillow does mode "RGBA".
func translucent(w, h int) image.Image {
	im := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			im.SetNRGBA(x, y, color.NRGBA{uint8(x * 3), uint8(y * 2), uint8(x ^ y), uint8(40 + (x+y)%200)})
		}
	}
	return im
}
