package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/pipeline"
)

// A megabyte value anywhere in the config comes back in the load error
// only as its start and length, and the error stays short.
func TestLoadErrorQuotesShort(t *testing.T) {
	mb := strings.Repeat("1234567890", 100000)
	quoted := `"12345678901234567890123456789012…" (1000000 bytes)`
	param := func(k, v string) func(m map[string]any) {
		return func(m map[string]any) {
			m["parameters"].(map[string]any)[k] = map[string]any{"string_value": v}
		}
	}
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want []string
	}{
		{"workers", param("workers", mb), []string{`parameter "workers": ` + quoted + " is not an integer from 1 to 1024"}},
		{"limit", param("max_image_pixels", mb), []string{`parameter "max_image_pixels": ` + quoted}},
		{"share", param("gpu_hardware_decode_share", mb), []string{`parameter "gpu_hardware_decode_share": ` + quoted}},
		{"image_errors", param("image_errors", mb), []string{`parameter "image_errors": ` + quoted}},
		{"unknown name", param(mb, "1"), []string{"unknown parameter " + quoted}},
		{"pipeline", param("pipeline", mb), []string{`parameter "pipeline": ` + quoted + " is 1000000 bytes, over the limit of 1024"}},
		{"pipeline outside", param("pipeline", "/"+mb[:1000]), []string{`parameter "pipeline": "/1234567890`, "(1001 bytes) must name a file inside"}},
		{"max_batch_size", func(m map[string]any) { m["max_batch_size"] = mb }, []string{"max_batch_size: " + quoted + " is not an integer"}},
		{"input name", func(m map[string]any) { entry(m, "input", 0)["name"] = mb }, []string{"config input " + quoted + " is not a pipeline input"}},
		{"output name", func(m map[string]any) { entry(m, "output", 0)["name"] = mb }, []string{"config output " + quoted + " is not a pipeline output"}},
		{"name a string", func(m map[string]any) { m["parameters"].(map[string]any)["workers"] = mb }, []string{`parameter "workers": want {string_value: ...}, got ` + quoted}},
		{"dims", func(m map[string]any) {
			dims := make([]any, 100000)
			for i := range dims {
				dims[i] = 7
			}
			entry(m, "output", 0)["dims"] = dims
		}, []string{`config output "PIXELS": dims [7, 7, 7, 7, 7, 7, 7, 7, … (100000 dims)], but pipeline.pbtxt produces [3, 224, 224]`}},
		{"many unknown parameters", func(m map[string]any) {
			for i := range 10000 {
				param(fmt.Sprintf("p%05d", i), "1")(m)
			}
		}, []string{`unknown parameter "p00000"`, "… and 9950 more problems"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, imagenetDir(t), editConfig(t, goodConfig, tc.edit), false)
			wantError(t, err, CodeInvalidArg, tc.want...)
			if n := len(err.Error()); n > 4096 && tc.name != "many unknown parameters" || n > 16384 {
				t.Errorf("error is %d bytes: %.600s", n, err)
			}
		})
	}
	// A JSON number of a megabyte where a string belongs (Triton's JSON
	// would not carry one, a test's can).
	cfg := strings.Replace(goodConfig, `"name": "pre"`, `"name": `+mb, 1)
	_, err := load(t, imagenetDir(t), cfg, false)
	wantError(t, err, CodeInvalidArg, "name: want a string, got 12345678901234567890")
	if len(err.Error()) > 300 {
		t.Errorf("error is %d bytes", len(err.Error()))
	}
}

// A config with more inputs or outputs than any pipeline has is refused on
// the count, before auto-complete and validation match them by name.
func TestLoadConfigCounts(t *testing.T) {
	cfg := editConfig(t, goodConfig, func(m map[string]any) {
		var outs []any
		for i := range 50000 {
			outs = append(outs, map[string]any{"name": fmt.Sprint("O", i), "data_type": "TYPE_FP32", "dims": []any{1}})
		}
		m["output"] = outs
		ins := m["input"].([]any)
		for i := range 100 {
			ins = append(ins, map[string]any{"name": fmt.Sprint("I", i), "data_type": "TYPE_UINT8", "dims": []any{-1}})
		}
		m["input"] = ins
	})
	for _, auto := range []bool{false, true} {
		start := time.Now()
		_, err := load(t, imagenetDir(t), cfg, auto)
		took := time.Since(start)
		wantError(t, err, CodeInvalidArg,
			fmt.Sprintf("model config: 101 inputs, over the limit of %d", pipeline.MaxInputs),
			fmt.Sprintf("model config: 50000 outputs, over the limit of %d", pipeline.MaxOutputs+2))
		t.Logf("auto-complete %v: refused in %v (the config's JSON decoded first)", auto, took)
	}
}

// A pipeline of too many outputs, as a file in the version folder, is
// refused naming the count and the limit, in milliseconds.
func TestLoadPipelineTooLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\ninput { name: \"IMAGE\" }\nnode { op: \"decode\" }\nnode { op: \"resize\" arg { name: \"size\" ints { v: [8, 8] } } }\n")
	for i := range 50000 {
		fmt.Fprintf(&b, "output { name: \"O%d\" }\n", i)
	}
	dir := modelDir(t, map[string][]byte{TextFile: []byte(b.String())})
	cfg := `{"name": "pre", "backend": "sluice"}`
	start := time.Now()
	_, err := load(t, dir, cfg, true)
	took := time.Since(start)
	wantError(t, err, CodeInvalidArg, filepath.Join(dir, "1", TextFile),
		fmt.Sprintf("output: 50000 given, over the limit of %d", pipeline.MaxOutputs))
	t.Logf("%d bytes, 50000 outputs: refused in %v", b.Len(), took)
	if took > 2*time.Second {
		t.Errorf("took %v", took)
	}
}

// Only regular files are read as a pipeline: a FIFO (whose open would
// block until a writer came), a link to one, a socket, a device or a
// folder is refused at once, naming the file and what it is.
func TestPipelineFileNotRegular(t *testing.T) {
	text := readFileT(t, imagenetPipeline)
	fifo := func(t *testing.T, p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, file, param, what string
		make                    func(t *testing.T, p string)
	}{
		{"fifo compact", CompactFile, "", "a named pipe (FIFO)", fifo},
		{"fifo text", TextFile, "", "a named pipe (FIFO)", fifo},
		{"fifo named by the parameter", "alt.pbtxt", "alt.pbtxt", "a named pipe (FIFO)", fifo},
		{"link to a fifo", CompactFile, "", "a named pipe (FIFO)", func(t *testing.T, p string) {
			fifo(t, p+".fifo")
			if err := os.Symlink(filepath.Base(p)+".fifo", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"socket", TextFile, "", "a socket", func(t *testing.T, p string) {
			// mknod makes the socket file without binding one, which a
			// temporary folder's long path would not allow.
			if err := syscall.Mknod(p, syscall.S_IFSOCK|0o644, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"folder", TextFile, "", "a folder", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := modelDir(t, map[string][]byte{"README": nil})
			p := filepath.Join(dir, "1", tc.file)
			tc.make(t, p)
			cfg := goodConfig
			if tc.param != "" {
				cfg = withPipelineParam(t, tc.param)
			}
			err := loadWithin(t, dir, cfg, p)
			wantError(t, err, CodeInvalidArg, "pipeline file "+p+" is "+tc.what+", not a regular file")
		})
	}
	// Beside a good text file, a FIFO model.sluice is still refused: both
	// files are read to compare them.
	t.Run("fifo beside text", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{TextFile: text})
		p := filepath.Join(dir, "1", CompactFile)
		fifo(t, p)
		wantError(t, loadWithin(t, dir, goodConfig, p), CodeInvalidArg, p, "named pipe")
	})
	// /dev/null through a link: outside the folder, so refused.
	t.Run("device", func(t *testing.T) {
		dir := modelDir(t, map[string][]byte{"README": nil})
		p := filepath.Join(dir, "1", TextFile)
		if err := os.Symlink("/dev/null", p); err != nil {
			t.Fatal(err)
		}
		wantError(t, loadWithin(t, dir, goodConfig, p), CodeInvalidArg, p)
	})
}

// loadWithin loads the model, failing the test if that takes more than a
// few seconds; a load blocked on the FIFO at fifo is freed by opening it
// for writing, so that a regression fails rather than hangs.
func loadWithin(t *testing.T, dir, cfg, fifo string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		m, err := LoadModel(ModelArgs{Name: "pre", Version: 1, RepoPath: dir, Config: []byte(cfg)})
		if m != nil {
			m.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatalf("the load blocked on %s", fifo)
		return nil
	}
}

// largestPipeline is a definition at the output limit: each output a
// pipeline output, as a hostile but allowed model would have.
func largestPipeline() []byte {
	var b strings.Builder
	b.WriteString("version: 1\ninput { name: \"IMAGE\" }\nnode { op: \"decode\" }\nnode { op: \"resize\" arg { name: \"size\" ints { v: [8, 8] } } }\n")
	for i := range pipeline.MaxOutputs {
		fmt.Fprintf(&b, "output { name: \"OUTPUT_%03d\" source: \"resize\" }\n", i)
	}
	return []byte(b.String())
}

// retainedHeap is the Go heap in use after full collections.
func retainedHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Loading, using and unloading a model leaves nothing behind: after
// cycles of LoadModel (auto-completing a config of MaxOutputs outputs), an
// instance, one request and Close, the retained heap and the goroutines
// are where they were after the first cycles. Anything a model or
// instance left registered (a cache of names or specs, a logger, a timer,
// a worker) would grow both with every cycle.
func TestLoadUnloadRetainsNothing(t *testing.T) {
	dir := modelDir(t, map[string][]byte{TextFile: largestPipeline()})
	cfg := []byte(`{"name": "big", "backend": "sluice", "instance_group": [{"kind": "KIND_CPU", "count": 1}], "parameters": {"workers": {"string_value": "2"}}}`)
	img := testimg.JPEG(64, 48, 1)
	cycle := func() {
		m, err := LoadModel(ModelArgs{Name: "big", Version: 1, RepoPath: dir, Config: cfg, AutoComplete: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Outputs) != pipeline.MaxOutputs {
			t.Fatalf("%d outputs", len(m.Outputs))
		}
		inst, err := m.NewInstance("big_0", "KIND_CPU", 0)
		if err != nil {
			t.Fatal(err)
		}
		resp := newResponse()
		errs, _ := inst.Execute([]Request{request("IMAGE", rawInput(img))}, []Response{resp})
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
		if len(resp.outputs) != pipeline.MaxOutputs {
			t.Fatalf("%d outputs answered", len(resp.outputs))
		}
		inst.Close()
		m.Close()
	}
	const warm, cycles = 5, 40
	for range warm {
		cycle()
	}
	time.Sleep(50 * time.Millisecond) // goroutines of the closed executors end
	heap0, g0 := retainedHeap(), runtime.NumGoroutine()
	for range cycles {
		cycle()
	}
	time.Sleep(50 * time.Millisecond)
	heap1, g1 := retainedHeap(), runtime.NumGoroutine()
	grew := int64(heap1) - int64(heap0)
	t.Logf("retained heap %d kB after %d warm-up cycles, %d kB after %d more (%+d B/cycle); goroutines %d, %d",
		heap0/1024, warm, heap1/1024, cycles, grew/cycles, g0, g1)
	// A model kept after Close is tens of kilobytes a cycle (32 kB with 64
	// outputs); without one, under 100 B a cycle (the runtime's own
	// bookkeeping).
	if grew > 2048*cycles {
		t.Errorf("retained heap grew by %d B over %d cycles", grew, cycles)
	}
	if g1 > g0+2 {
		t.Errorf("goroutines: %d before the cycles, %d after", g0, g1)
	}
}
