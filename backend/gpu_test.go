package backend

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// deviceResponse hands out GPU memory, as Triton does when the next model
// of an ensemble wants its input there: on ctx's GPU (where a client's
// CUDA shared memory is), else on the one asked for; or host memory when
// onHost.
type deviceResponse struct {
	*fakeResponse
	onHost bool
	ctx    *cuda.Context
	ptr    cuda.DevicePtr
	size   int
}

func (r *deviceResponse) OutputOn(name, dataType string, shape []int64, device int) (Buffer, error) {
	if r.onHost {
		b, err := r.Output(name, dataType, shape)
		return Buffer{Host: b}, err
	}
	size := 4
	for _, d := range shape {
		size *= int(d)
	}
	if err := r.ctx.SetCurrent(); err != nil {
		return Buffer{}, err
	}
	p, err := cuda.MemAlloc(size)
	if err != nil {
		return Buffer{}, err
	}
	r.ptr, r.size = p, size
	return Buffer{Ptr: uintptr(p), Device: r.ctx.Device()}, nil
}

// A KIND_GPU instance answers like a KIND_CPU one, on every GPU of the
// host: requests whose outputs are in GPU memory and requests whose
// outputs are in host memory in one batch, a bad image failing its request
// alone with the CPU's message.
func TestGPUInstance(t *testing.T) {
	for _, dev := range gputest.Devices(t) {
		t.Run(fmt.Sprintf("gpu%d", dev), func(t *testing.T) { gpuInstance(t, dev, dev) })
	}
}

// Outputs that Triton places on another GPU than the instance's arrive
// there, each sample's copy counted.
func TestGPUInstanceCrossDevice(t *testing.T) {
	gputest.RequireDevices(t, 2)
	gpuInstance(t, 1, 0)
}

// gpuInstance runs TestGPUInstance's requests on an instance on GPU dev
// whose device outputs Triton places on GPU outDev.
func gpuInstance(t *testing.T, dev, outDev int) {
	ctx := gputest.ContextOn(t, outDev)
	m := mustLoad(t, imagenetDir(t), goodConfig)
	cpu, err := m.NewInstance("cpu", "KIND_CPU", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	gpu, err := m.NewInstance("gpu", "KIND_GPU", dev)
	if err != nil {
		t.Fatal(err)
	}
	defer gpu.Close()

	imgs := [][]byte{testimg.JPEG(640, 480, 1), testimg.JPEG(300, 500, 2), []byte("not an image"), testimg.JPEG(256, 256, 4)}
	reqs := []Request{
		request("IMAGE", rawInput(imgs[0], imgs[1])),
		request("IMAGE", rawInput(imgs[2])),
		request("IMAGE", rawInput(imgs[3])),
	}
	cpuResps := []Response{newResponse(), newResponse(), newResponse()}
	cpuErrs, _ := cpu.Execute(reqs, cpuResps)
	cpuErrs = append([]error(nil), cpuErrs...)
	gpuResps := []*deviceResponse{{fakeResponse: newResponse(), ctx: ctx}, {fakeResponse: newResponse(), ctx: ctx},
		{fakeResponse: newResponse(), onHost: true}}
	errs, st := gpu.Execute(reqs, []Response{gpuResps[0], gpuResps[1], gpuResps[2]})
	if err := ctx.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("errors %v", errs)
	}
	if errs[1] == nil || errs[1].Error() != cpuErrs[1].Error() {
		t.Errorf("bad image: GPU %v, CPU %v", errs[1], cpuErrs[1])
	}
	if st.Images.Images != 3 || decodedImages(st) != 3 {
		t.Errorf("image stats %+v", st.Images)
	}
	// The three images of requests 0 and 1 have GPU outputs (the bad
	// one's zeroed): copied when those are on another GPU.
	if want := map[bool]int64{true: 0, false: 3}[dev == outDev]; st.CrossDevice != want {
		t.Errorf("%d cross-device copies counted, want %d", st.CrossDevice, want)
	}
	for _, i := range []int{0, 2} {
		want := cpuResps[i].(*fakeResponse).outputs["PIXELS"].data
		got := gpuResps[i].outputs["PIXELS"]
		var data []byte
		if gpuResps[i].onHost {
			data = got.data
		} else {
			defer cuda.MemFree(gpuResps[i].ptr)
			data = make([]byte, gpuResps[i].size)
			if err := cuda.MemcpyDtoHAsync(data, gpuResps[i].ptr, 0); err != nil {
				t.Fatal(err)
			}
			if err := cuda.Stream(0).Synchronize(); err != nil {
				t.Fatal(err)
			}
		}
		if len(data) != len(want) {
			t.Fatalf("request %d: %d bytes, want %d", i, len(data), len(want))
		}
		// ImageNet normalisation makes one 0..255 level about 0.017.
		var worst float64
		for k := 0; k+4 <= len(data); k += 4 {
			a := math.Float32frombits(leU32(data[k:]))
			b := math.Float32frombits(leU32(want[k:]))
			worst = max(worst, math.Abs(float64(a-b)))
		}
		if worst > 4*0.0175 {
			t.Errorf("request %d: largest difference %.4f, more than 4 levels", i, worst)
		}
	}
	if !strings.Contains(errs[1].Error(), "IMAGE element 0") {
		t.Errorf("error %q does not name the element", errs[1])
	}
}

func decodedImages(st BatchStats) int {
	n := 0
	for _, d := range st.Decoded {
		n += d.N
	}
	return n
}

func leU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
