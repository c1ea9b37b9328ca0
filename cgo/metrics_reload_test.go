package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// inTritonLib marks the child process TestMetricsOfOverlappingCopies runs
// with Triton's library preloaded, so that the weak references bind.
const inTritonLib = "SLUICE_TEST_IN_TRITON_LIB"

// TestMetricsOfOverlappingCopies makes and deletes the metrics of one model
// name from several goroutines at once, as two copies of a model do when a
// reload overlaps the old copy's finalization, against the real
// libtritonserver of TRITON_VENV (make test-client sets it). Triton 2.51
// shares one series between metrics with the same labels but finds and
// counts it under separate locks; unserialized, this crashes the process
// within a second (a segfault or glibc's heap corruption abort).
func TestMetricsOfOverlappingCopies(t *testing.T) {
	if os.Getenv(inTritonLib) == "1" {
		overlappingCopies(t)
		return
	}
	venv := os.Getenv("TRITON_VENV")
	if venv == "" {
		if os.Getenv("SLUICE_TRITON_TESTS") == "1" {
			t.Fatal("SLUICE_TRITON_TESTS=1 but TRITON_VENV is not set")
		}
		t.Skip("TRITON_VENV is not set: no libtritonserver to run against (make test-client runs this)")
	}
	libs, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages", "nvidia_pytriton.libs", "libtritonserver*.so"))
	if len(libs) != 1 {
		t.Fatalf("want one libtritonserver under %s, found %v", venv, libs)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMetricsOfOverlappingCopies$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), inTritonLib+"=1", "LD_PRELOAD="+libs[0], "LD_LIBRARY_PATH="+filepath.Dir(libs[0]))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with %s preloaded: %v\n%s", libs[0], err, out)
	}
	t.Logf("%s", out)
}

func overlappingCopies(t *testing.T) {
	if name := missingTritonSymbol(); name != "" {
		t.Fatalf("Triton's library is preloaded but %s is unbound: build the test as the Makefile's PRELOAD_TEST_FLAGS say", name)
	}
	fs, err := newMetricFamilies()
	if err != nil {
		t.Fatal(err)
	}
	theFamilies.Store(fs)
	defer func() {
		theFamilies.Store(nil)
		fs.delete()
	}()
	const copies, reloads = 4, 3000
	var wg sync.WaitGroup
	errs := make(chan error, copies)
	for range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range reloads {
				mm, err := newModelMetrics("preprocess", 1)
				if err != nil {
					errs <- err
					return
				}
				increment(mm.images, 1)
				mm.labelledMu.Lock()
				increment(mm.series(seriesKey{famOps, "decode", ""}), 0.5)
				mm.labelledMu.Unlock()
				mm.delete()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d copies made and deleted their metrics %d times each, side by side", copies, reloads)
}
