package client

// Tests against a real tritonserver 2.51 (scripts/triton.sh) serving
// model_repository/ with the Sluice backend, over both protocols.
//
// They need .venv-triton (make triton) and
// build/backends/sluice/libtriton_sluice.so (make backend). With both
// present they run; without, they skip with a message. SLUICE_TRITON_TESTS=1
// makes a missing prerequisite a failure (make test-client), =0 skips them.
// SLUICE_CORPUS (default ../shared/corpus) supplies a real photo; without
// it a JPEG is generated.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/internal/tritontest"
)

const imagenet = "preprocess_imagenet"

var srv = tritontest.New(repoRoot(), tritontest.Options{
	// Explicit model control: the repository tests load and unload models.
	Explicit: true, Load: []string{imagenet},
})

func TestMain(m *testing.M) {
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

func repoRoot() string {
	abs, _ := filepath.Abs("..")
	return abs
}

// clients starts the server once and returns a gRPC and an HTTP client to
// it, or skips.
func clients(t *testing.T) map[string]Client {
	t.Helper()
	srv.Need(t)
	opts := Options{Timeout: 60 * time.Second}
	gc, err := NewGRPC(srv.GRPCAddr, opts)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := NewHTTP(srv.HTTPAddr, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close(); hc.Close() })
	return map[string]Client{"grpc": gc, "http": hc}
}

func forEach(t *testing.T, f func(t *testing.T, c Client)) {
	for _, name := range []string{"grpc", "http"} {
		c := clients(t)[name]
		t.Run(name, func(t *testing.T) { f(t, c) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// photo is a real JPEG from the corpus, else a generated one.
func photo(t *testing.T) []byte {
	t.Helper()
	corpus := os.Getenv("SLUICE_CORPUS")
	if corpus == "" {
		corpus = filepath.Join(repoRoot(), "..", "shared", "corpus")
	}
	if b, err := os.ReadFile(filepath.Join(corpus, "jpeg", "derived", "lom-bridge_full_512x384_b420q75.jpg")); err == nil {
		return b
	}
	if m, _ := filepath.Glob(filepath.Join(corpus, "jpeg", "derived", "*.jpg")); len(m) > 0 {
		if b, err := os.ReadFile(m[0]); err == nil {
			return b
		}
	}
	if os.Getenv("SLUICE_REQUIRE_CORPUS") == "1" {
		t.Fatalf("no corpus photo under %s (SLUICE_REQUIRE_CORPUS=1)", corpus)
	}
	t.Logf("no corpus photo under %s: a generated JPEG", corpus)
	return testimg.JPEG(320, 240, 0)
}

func imageInput(b []byte) Tensor {
	return Tensor{Name: "IMAGE", Datatype: "UINT8", Shape: []int64{1, int64(len(b))}, Data: b}
}

func checkPixels(t *testing.T, r *InferResponse) []float32 {
	t.Helper()
	o := r.Output("PIXELS")
	if o == nil {
		t.Fatalf("no PIXELS output in %+v", r.Outputs)
	}
	if fmt.Sprint(o.Shape) != "[1 3 224 224]" || o.Datatype != "FP32" {
		t.Fatalf("PIXELS is %s %v, want FP32 [1 3 224 224]", o.Datatype, o.Shape)
	}
	px, err := o.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if len(px) != 3*224*224 {
		t.Fatalf("PIXELS has %d values", len(px))
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for i, v := range px {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("PIXELS[%d] = %v", i, v)
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	// ImageNet normalisation of 0..255: about -2.12 .. 2.64.
	if lo < -2.2 || hi > 2.7 || hi-lo < 0.5 {
		t.Fatalf("PIXELS range [%v, %v] is not a normalised photo", lo, hi)
	}
	return px
}

func TestTritonHealthAndMetadata(t *testing.T) {
	forEach(t, func(t *testing.T, c Client) {
		ctx := ctxT(t)
		if live, err := c.ServerLive(ctx); err != nil || !live {
			t.Fatalf("ServerLive = %v, %v", live, err)
		}
		if ready, err := c.ServerReady(ctx); err != nil || !ready {
			t.Fatalf("ServerReady = %v, %v", ready, err)
		}
		if ready, err := c.ModelReady(ctx, imagenet, ""); err != nil || !ready {
			t.Fatalf("ModelReady = %v, %v", ready, err)
		}
		if ready, err := c.ModelReady(ctx, imagenet, "1"); err != nil || !ready {
			t.Fatalf("ModelReady version 1 = %v, %v", ready, err)
		}
		sm, err := c.ServerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sm.Name != "triton" || sm.Version != "2.51.0" || !strings.Contains(strings.Join(sm.Extensions, " "), "binary_tensor_data") {
			t.Fatalf("ServerMetadata = %+v", sm)
		}
		mm, err := c.ModelMetadata(ctx, imagenet, "")
		if err != nil {
			t.Fatal(err)
		}
		if mm.Name != imagenet || len(mm.Inputs) != 1 || len(mm.Outputs) != 1 ||
			fmt.Sprint(mm.Inputs[0]) != "{IMAGE UINT8 [-1 -1]}" || fmt.Sprint(mm.Outputs[0]) != "{PIXELS FP32 [-1 3 224 224]}" {
			t.Fatalf("ModelMetadata = %+v", mm)
		}
		cfg, err := c.ModelConfig(ctx, imagenet, "")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Name != imagenet || cfg.Backend != "sluice" || cfg.MaxBatchSize != 64 || len(cfg.Inputs) != 1 || len(cfg.Outputs) != 1 {
			t.Fatalf("ModelConfig = %+v", cfg)
		}
		in, out := cfg.Inputs[0], cfg.Outputs[0]
		if in.Name != "IMAGE" || in.DataType != "TYPE_UINT8" || fmt.Sprint(in.Dims) != "[-1]" || !in.AllowRaggedBatch {
			t.Fatalf("config input = %+v", in)
		}
		if out.Name != "PIXELS" || out.DataType != "TYPE_FP32" || fmt.Sprint(out.Dims) != "[3 224 224]" {
			t.Fatalf("config output = %+v", out)
		}
	})
}

func TestTritonInfer(t *testing.T) {
	img := photo(t)
	results := map[string][]float32{}
	forEach(t, func(t *testing.T, c Client) {
		r, err := c.Infer(ctxT(t), &InferRequest{Model: imagenet, ID: "req-1", Inputs: []Tensor{imageInput(img)}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Model != imagenet || r.ID != "req-1" {
			t.Errorf("response names model %q id %q", r.Model, r.ID)
		}
		results[t.Name()] = checkPixels(t, r)
		// Naming the output gives the same.
		r2, err := c.Infer(ctxT(t), &InferRequest{Model: imagenet, Version: "1", Inputs: []Tensor{imageInput(img)}, Outputs: []string{"PIXELS"}})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r2.Output("PIXELS").Data, r.Output("PIXELS").Data) {
			t.Error("the same image twice gave different pixels")
		}
	})
	g, h := results["TestTritonInfer/grpc"], results["TestTritonInfer/http"]
	if g != nil && h != nil {
		for i := range g {
			if g[i] != h[i] {
				t.Fatalf("gRPC and HTTP disagree at %d: %v vs %v", i, g[i], h[i])
			}
		}
	}
}

func TestTritonConcurrentInfer(t *testing.T) {
	img := photo(t)
	forEach(t, func(t *testing.T, c Client) {
		const workers, each = 8, 4
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		var first []byte
		var mu sync.Mutex
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					r, err := c.Infer(ctxT(t), &InferRequest{Model: imagenet, Inputs: []Tensor{imageInput(img)}})
					if err != nil {
						errs <- err
						continue
					}
					o := r.Output("PIXELS")
					if o == nil {
						errs <- errors.New("no PIXELS output")
						continue
					}
					mu.Lock()
					if first == nil {
						first = o.Data
					} else if !bytes.Equal(first, o.Data) {
						errs <- errors.New("concurrent results differ")
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
	if gc, ok := clients(t)["grpc"].(*GRPCClient); ok && gc.Conn() == nil {
		t.Fatal("no shared connection")
	}
}

func TestTritonBrokenImage(t *testing.T) {
	img := photo(t)
	broken := img[:len(img)/3]
	forEach(t, func(t *testing.T, c Client) {
		_, err := c.Infer(ctxT(t), &InferRequest{Model: imagenet, Inputs: []Tensor{imageInput(broken)}})
		var e *Error
		if !errors.As(err, &e) || !IsInvalidArg(err) {
			t.Fatalf("truncated JPEG: %v, want INVALID_ARG", err)
		}
		if !strings.Contains(e.Message, "IMAGE element 0") || !strings.Contains(strings.ToLower(e.Message), "truncated") {
			t.Fatalf("message %q does not name the input and the cause", e.Message)
		}
		t.Logf("%v", err)
		// The server still serves good images afterwards.
		if _, err := c.Infer(ctxT(t), &InferRequest{Model: imagenet, Inputs: []Tensor{imageInput(img)}}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTritonUnknownModel(t *testing.T) {
	forEach(t, func(t *testing.T, c Client) {
		ctx := ctxT(t)
		_, err := c.Infer(ctx, &InferRequest{Model: "no_such_model", Inputs: []Tensor{imageInput([]byte{1, 2, 3})}})
		if !IsNotFound(err) || !strings.Contains(err.Error(), "no_such_model") {
			t.Fatalf("Infer on an unknown model: %v, want NOT_FOUND naming it", err)
		}
		t.Logf("%v", err)
		if _, err := c.ModelMetadata(ctx, "no_such_model", ""); !IsNotFound(err) {
			t.Fatalf("ModelMetadata on an unknown model: %v, want NOT_FOUND", err)
		}
		if _, err := c.ModelConfig(ctx, "no_such_model", ""); !IsNotFound(err) {
			t.Fatalf("ModelConfig on an unknown model: %v, want NOT_FOUND", err)
		}
		if ready, err := c.ModelReady(ctx, "no_such_model", ""); ready {
			t.Fatalf("ModelReady on an unknown model = true, %v", err)
		}
	})
}

func TestTritonStatistics(t *testing.T) {
	img := photo(t)
	forEach(t, func(t *testing.T, c Client) {
		ctx := ctxT(t)
		before, err := c.ModelStatistics(ctx, imagenet, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Infer(ctx, &InferRequest{Model: imagenet, Inputs: []Tensor{imageInput(img)}}); err != nil {
			t.Fatal(err)
		}
		// The backend sends a response before it reports the request's
		// and the batch's statistics (their end time is the send's), so
		// they may lag the answer briefly.
		var after []ModelStats
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if after, err = c.ModelStatistics(ctx, imagenet, ""); err != nil {
				t.Fatal(err)
			}
			if len(before) != 1 || len(after) != 1 || time.Now().After(deadline) ||
				after[0].InferenceCount > before[0].InferenceCount && after[0].ExecutionCount > before[0].ExecutionCount {
				break
			}
		}
		if len(before) != 1 || len(after) != 1 || after[0].Name != imagenet || after[0].Version != "1" {
			t.Fatalf("ModelStatistics = %+v", after)
		}
		a, b := after[0], before[0]
		if a.InferenceCount != b.InferenceCount+1 || a.Success.Count != b.Success.Count+1 || a.ExecutionCount < b.ExecutionCount+1 ||
			a.ComputeInfer.Ns == 0 || a.LastInference == 0 || len(a.Batches) == 0 {
			t.Fatalf("statistics before %+v, after %+v", b, a)
		}
		all, err := c.ModelStatistics(ctx, "", "")
		if err != nil || len(all) == 0 {
			t.Fatalf("all statistics: %v, %v", all, err)
		}
	})
}

func waitReady(t *testing.T, c Client, model string, want bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready, _ := c.ModelReady(ctxT(t), model, "")
		if ready == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s ready=%v after 60s, want %v", model, ready, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTritonRepository(t *testing.T) {
	const letterbox = "preprocess_letterbox"
	cs := clients(t)
	forEach(t, func(t *testing.T, c Client) {
		ctx := ctxT(t)
		idx, err := c.RepositoryIndex(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]string{}
		for _, m := range idx {
			states[m.Name] = m.State
		}
		if states[imagenet] != "READY" {
			t.Fatalf("index: %s is %q, want READY (%+v)", imagenet, states[imagenet], idx)
		}
		if _, ok := states[letterbox]; !ok {
			t.Fatalf("index lacks %s: %+v", letterbox, idx)
		}
		ready, err := c.RepositoryIndex(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ready {
			if m.State != "READY" {
				t.Fatalf("ready-only index holds %+v", m)
			}
		}

		// Load with this client, check with the other protocol, unload.
		if err := c.LoadModel(ctx, letterbox); err != nil {
			t.Fatal(err)
		}
		other := cs["http"]
		if _, ok := c.(*HTTPClient); ok {
			other = cs["grpc"]
		}
		waitReady(t, other, letterbox, true)
		cfg, err := other.ModelConfig(ctx, letterbox, "")
		if err != nil || len(cfg.Inputs) == 0 || len(cfg.Outputs) == 0 {
			t.Fatalf("auto-completed config of %s: %+v, %v", letterbox, cfg, err)
		}
		if err := c.UnloadModel(ctx, letterbox); err != nil {
			t.Fatal(err)
		}
		waitReady(t, other, letterbox, false)
		if _, err := c.Infer(ctx, &InferRequest{Model: letterbox, Inputs: []Tensor{imageInput(photo(t))}}); !IsNotFound(err) {
			t.Fatalf("infer on an unloaded model: %v, want NOT_FOUND", err)
		}
		if err := c.LoadModel(ctx, "no_such_model"); err == nil {
			t.Fatal("loading a model the repository lacks succeeded")
		} else {
			t.Logf("%v", err)
		}
	})
}

func TestTritonUnreachableDeadline(t *testing.T) {
	// A closed port with a generous retry budget: the context's deadline
	// ends it, with an error, and nothing hangs.
	addr := closedAddr(t)
	opts := Options{Retry: RetryPolicy{MaxAttempts: 1000, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}}
	gc, err := NewGRPC(addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	hc, _ := NewHTTP(addr, opts, nil)
	for name, c := range map[string]Client{"grpc": gc, "http": hc} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		t0 := time.Now()
		_, err := c.Infer(ctx, &InferRequest{Model: imagenet, Inputs: []Tensor{imageInput([]byte{1})}})
		cancel()
		if err == nil || time.Since(t0) > 2*time.Second {
			t.Fatalf("%s: %v after %v", name, err, time.Since(t0))
		}
		if !IsUnavailable(err) && codeOf(err) != CodeDeadlineExceeded {
			t.Fatalf("%s: %v, want UNAVAILABLE or DEADLINE_EXCEEDED", name, err)
		}
		t.Logf("%s: %v after %v", name, err, time.Since(t0))
	}
}
