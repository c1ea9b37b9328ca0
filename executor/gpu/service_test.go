package gpu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/internal/gputest"
)

// TestGPUSharedService runs two executors of different pipelines on one GPU
// at once: they share one decode service, each gets the outputs it gets
// alone, and the service is gone once both are closed.
func TestGPUSharedService(t *testing.T) {
	gputest.Require(t)
	var imgs [][]byte
	files := corpusFiles(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, b)
	}
	texts := []string{
		fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", ""),
		fmt.Sprintf(letterbox, "nearest", "FP16"),
	}
	in := [][][]byte{imgs}
	// Alone, one after the other.
	alone := make([][][]byte, len(texts))
	alonePaths := make([][]route.Path, len(texts))
	for i, text := range texts {
		e, err := New(compile(t, text), executor.Options{HWShare: 1})
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range r.Outputs {
			alone[i] = append(alone[i], slices.Clone(o.Data))
		}
		alonePaths[i] = paths(e)
		if n := e.retried.Load(); n > 0 {
			t.Errorf("pipeline %d alone: %d images decoded again on the CPU after %v", i, n, e.lastRetry)
		}
		e.Close()
	}
	if n := serviceCount(); n != 0 {
		t.Fatalf("%d decode services left after closing every executor", n)
	}

	execs := make([]*Executor, len(texts))
	for i, text := range texts {
		e, err := New(compile(t, text), executor.Options{HWShare: 1})
		if err != nil {
			t.Fatal(err)
		}
		execs[i] = e
	}
	if execs[0].svc != execs[1].svc {
		t.Fatal("two executors on GPU 0 have their own decode services")
	}
	// Their batches then go to the engines in one call each (the outputs
	// must not depend on it: compared with alone's two below).
	if n := execs[0].svc.executors(); n != 2 || execs[0].set.CallsPerBatch(n) != 1 {
		t.Errorf("the service counts %d executors, %d engine calls a batch; want 2 and 1", n, execs[0].set.CallsPerBatch(n))
	}
	var wg sync.WaitGroup
	for i, e := range execs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 3 {
				r, err := e.Run(in)
				if err != nil {
					t.Error(err)
					return
				}
				for k, o := range r.Outputs {
					if bytes.Equal(o.Data, alone[i][k]) {
						continue
					}
					sz := e.SampleBytes(k)
					got := paths(e)
					for s := range len(imgs) {
						if knownCorrupt[filepath.Base(files[s])] {
							// nvJPEG's hardware decoder fills what it cannot
							// decode of this damaged stream from earlier
							// work: not the same twice (docs/gpu.md).
							continue
						}
						if !bytes.Equal(o.Data[s*sz:(s+1)*sz], alone[i][k][s*sz:(s+1)*sz]) {
							t.Errorf("pipeline %d, round %d: output %s of sample %d differs from the executor's output alone (decoded by %v, alone by %v)",
								i, round, o.Name, s, got[s], alonePaths[i][s])
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	for i, e := range execs {
		if n := e.retried.Load(); n > 0 {
			t.Errorf("pipeline %d: %d images decoded again on the CPU after %v", i, n, e.lastRetry)
		}
	}
	execs[0].Close()
	if n := serviceCount(); n != 1 {
		t.Errorf("%d decode services with one executor open, want 1", n)
	}
	execs[1].Close()
	if n := serviceCount(); n != 0 {
		t.Errorf("%d decode services after closing every executor, want 0", n)
	}
}

func serviceCount() int {
	services.Lock()
	defer services.Unlock()
	return len(services.m)
}

// paths lists the decoder of each sample of e's last batch.
func paths(e *Executor) []route.Path {
	p := make([]route.Path, len(e.samples))
	for s := range e.samples {
		p[s] = e.samples[s].path
	}
	return p
}

// TestGPUConcurrentRuns: batches from three goroutines on one executor,
// two through Run (whose Result the executor reuses: only their errors are
// theirs) and one into its own Result, which must hold what a batch alone
// gives. Run under the race detector (scripts/gpu.sh builds
// executor_gpu_race.test) it checks that nothing of the executor is
// shared unguarded: without Run's own lock, the two Runs raced on the
// Result.
func TestGPUConcurrentRuns(t *testing.T) {
	gputest.Require(t)
	var imgs [][]byte
	for _, f := range corpusFiles(t)[:min(16, len(corpusFiles(t)))] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, b)
	}
	in := [][][]byte{imgs}
	e, err := New(compile(t, fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", "")), executor.Options{HWShare: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ref, err := e.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ref.Outputs[0].Data)
	var wg sync.WaitGroup
	wg.Add(3)
	for range 2 {
		go func() {
			defer wg.Done()
			for range 4 {
				if _, err := e.Run(in); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() {
		defer wg.Done()
		own := executor.NewResult(e.prog)
		for round := range 4 {
			if err := executor.Run(e, in, own); err != nil {
				t.Error(err)
				return
			}
			if !bytes.Equal(own.Outputs[0].Data, want) {
				t.Errorf("round %d: its own result differs from the batch alone", round)
			}
		}
	}()
	wg.Wait()
}
