package gpu

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// Destinations on another GPU (a client's CUDA shared memory there): an
// executor on GPU 1 writes those on GPU 0 through a copy, each counted,
// beside its own GPU's and host ones in one batch; every destination gets
// what a host run gives, a failed sample's zeros included.
func TestGPUCrossDevice(t *testing.T) {
	gputest.RequireDevices(t, 2)
	g, err := New(compile(t, fmt.Sprintf(letterbox, "linear", "FP32")), executor.Options{Device: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	imgs := [][]byte{testimg.JPEG(640, 480, 1), testimg.JPEG(300, 500, 2), []byte("not an image"),
		testimg.JPEG(123, 77, 3), testimg.JPEG(800, 600, 4), testimg.JPEG(64, 64, 5)}
	refOut, refErrs := hostRun(t, g, imgs)
	if refErrs[2] == nil {
		t.Fatal("the sample that is not an image succeeded")
	}

	ctxs := []*cuda.Context{gputest.ContextOn(t, 0), gputest.ContextOn(t, 1)}
	n := len(imgs)
	// Per output, a buffer on each GPU, filled with 0xff so that a
	// destination left unwritten shows.
	devBuf := make([][2]cuda.DevicePtr, len(refOut))
	dst := make([][]Dest, len(refOut))
	hosts := make([][]byte, len(refOut))
	peerDests := 0
	for i := range dst {
		sz := g.SampleBytes(i)
		for dev, ctx := range ctxs {
			if err := ctx.SetCurrent(); err != nil {
				t.Fatal(err)
			}
			p, err := cuda.MemAlloc(n * sz)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { ctx.SetCurrent(); cuda.MemFree(p) }()
			if err := cuda.MemsetD8Async(p, 0xff, n*sz, 0); err != nil {
				t.Fatal(err)
			}
			if err := cuda.Stream(0).Synchronize(); err != nil {
				t.Fatal(err)
			}
			devBuf[i][dev] = p
		}
		hosts[i] = make([]byte, n*sz)
		dst[i] = make([]Dest, n)
		for s := range n {
			switch (s + i) % 3 {
			case 0:
				dst[i][s].Host = hosts[i][s*sz : (s+1)*sz]
			case 1:
				dst[i][s] = Dest{Dev: uintptr(devBuf[i][0]) + uintptr(s*sz), Device: 0}
				peerDests++
			case 2:
				dst[i][s] = Dest{Dev: uintptr(devBuf[i][1]) + uintptr(s*sz), Device: 1}
			}
		}
	}
	var before, after executor.Stats
	g.Stats(&before)
	errs := make([]error, n)
	if err := g.RunInto([][][]byte{imgs}, dst, errs, nil); err != nil {
		t.Fatal(err)
	}
	g.Stats(&after)
	if got := after.CrossDevice - before.CrossDevice; got != int64(peerDests) {
		t.Errorf("%d copies to GPU 0 counted, want %d (one per destination there)", got, peerDests)
	}
	for i := range dst {
		sz := g.SampleBytes(i)
		var back [2][]byte
		for dev, ctx := range ctxs {
			if err := ctx.SetCurrent(); err != nil {
				t.Fatal(err)
			}
			back[dev] = make([]byte, n*sz)
			if err := cuda.MemcpyDtoHAsync(back[dev], devBuf[i][dev], 0); err != nil {
				t.Fatal(err)
			}
			if err := cuda.Stream(0).Synchronize(); err != nil {
				t.Fatal(err)
			}
		}
		for s := range n {
			if (errs[s] == nil) != (refErrs[s] == nil) {
				t.Fatalf("sample %d: error %v, host run's %v", s, errs[s], refErrs[s])
			}
			got, where := hosts[i][s*sz:(s+1)*sz], "host"
			if d := dst[i][s]; d.Dev != 0 {
				got, where = back[d.Device][s*sz:(s+1)*sz], fmt.Sprintf("GPU %d", d.Device)
			}
			if !slices.Equal(got, refOut[i][s*sz:(s+1)*sz]) {
				t.Errorf("output %d sample %d (%s) differs from the host run", i, s, where)
			}
		}
	}
}

// Executors on two GPUs run at once, each with its own decoders (the
// GPU's service), and give the same results.
func TestGPUTwoDevices(t *testing.T) {
	gputest.RequireDevices(t, 2)
	text := fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", "")
	var imgs [][]byte
	for i := range 48 {
		imgs = append(imgs, testimg.JPEG(200+7*i, 150+5*i, i))
	}
	var ex [2]*Executor
	for dev := range ex {
		g, err := New(compile(t, text), executor.Options{Device: dev})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		ex[dev] = g
	}
	if ex[0].svc == ex[1].svc {
		t.Fatal("the two GPUs share one decode service")
	}
	var out [2][]byte
	var errs [2]error
	var wg sync.WaitGroup
	for dev, g := range ex {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				res, err := g.Run([][][]byte{imgs})
				if err != nil {
					errs[dev] = err
					return
				}
				for s, e := range res.Errs {
					if e != nil {
						errs[dev] = fmt.Errorf("sample %d: %v", s, e)
						return
					}
				}
				out[dev] = slices.Clone(res.Outputs[0].Data)
			}
		}()
	}
	wg.Wait()
	for dev, err := range errs {
		if err != nil {
			t.Fatalf("GPU %d: %v", dev, err)
		}
	}
	if !slices.Equal(out[0], out[1]) {
		t.Error("GPU 0 and GPU 1 give different outputs for the same batch")
	}
}
