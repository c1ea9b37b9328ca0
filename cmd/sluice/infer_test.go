package main

// sluice infer against a real tritonserver 2.51 (scripts/triton.sh), the
// pattern of client/triton_test.go: it needs .venv-triton (make triton) and
// build/backends/sluice/libtriton_sluice.so (make backend), and skips with
// a message when either is missing. SLUICE_TRITON_TESTS=1 makes a missing
// prerequisite a failure, =0 skips these tests.
//
// The server serves a repository of its own: preprocess_imagenet,
// ensemble_imagenet and classifier from model_repository/ (linked), and
// preprocess_bytes, the same pipeline behind a TYPE_STRING input.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/client"
	"github.com/sluice-dev/sluice/cmd/sluice/npy"
	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/internal/tritontest"
	"github.com/sluice-dev/sluice/ops"
)

// srv serves a repository of its own (makeRepo).
var srv = tritontest.New(repoRoot(), tritontest.Options{Repo: makeRepo})

func TestMain(m *testing.M) {
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

func repoRoot() string {
	abs, _ := filepath.Abs(filepath.Join("..", ".."))
	return abs
}

const bytesConfig = `name: "preprocess_bytes"
backend: "sluice"
max_batch_size: 64
input [ { name: "IMAGE", data_type: TYPE_STRING, dims: [ 1 ] } ]
output [ { name: "PIXELS", data_type: TYPE_FP32, dims: [ 3, 224, 224 ] } ]
instance_group [ { kind: KIND_CPU, count: 1 } ]
`

// markConfig answers broken images with zeros and IMAGE_OK/IMAGE_ERROR.
const markConfig = `name: "preprocess_mark"
backend: "sluice"
max_batch_size: 64
input [ { name: "IMAGE", data_type: TYPE_STRING, dims: [ 1 ] } ]
output [ { name: "PIXELS", data_type: TYPE_FP32, dims: [ 3, 224, 224 ] },
  { name: "IMAGE_OK", data_type: TYPE_BOOL, dims: [ 1 ] },
  { name: "IMAGE_ERROR", data_type: TYPE_STRING, dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU, count: 1 } ]
parameters { key: "image_errors" value { string_value: "mark" } }
`

func makeRepo(root, repo string) error {
	for _, m := range []string{"preprocess_imagenet", "ensemble_imagenet", "classifier"} {
		if err := os.MkdirAll(filepath.Join(repo, m), 0o755); err != nil {
			return err
		}
		for _, f := range []string{"config.pbtxt", "1"} {
			if err := os.Symlink(filepath.Join(root, "model_repository", m, f), filepath.Join(repo, m, f)); err != nil {
				return err
			}
		}
	}
	// Copies: the backend refuses a pipeline file that links outside the
	// model folder.
	def, err := os.ReadFile(filepath.Join(root, imagenet))
	if err != nil {
		return err
	}
	for name, cfg := range map[string]string{"preprocess_bytes": bytesConfig, "preprocess_mark": markConfig} {
		b := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Join(b, "1"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(b, "1", "pipeline.pbtxt"), def, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(b, "config.pbtxt"), []byte(cfg), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// server starts the server once and returns its address per protocol, or
// skips.
func server(t *testing.T) map[string]string {
	t.Helper()
	srv.Need(t)
	return map[string]string{"grpc": srv.GRPCAddr, "http": srv.HTTPAddr}
}

func imageFiles(t *testing.T) (good, broken string) {
	dir := t.TempDir()
	good, broken = filepath.Join(dir, "photo.jpg"), filepath.Join(dir, "broken.jpg")
	img := testimg.JPEG(320, 240, 3)
	os.WriteFile(good, img, 0o644)
	os.WriteFile(broken, img[:len(img)/3], 0o644)
	return good, broken
}

func TestInferTriton(t *testing.T) {
	addr := server(t)
	good, _ := imageFiles(t)
	outs := map[string]string{}
	for _, proto := range []string{"grpc", "http"} {
		for _, tc := range []struct {
			model string
			want  []string
		}{
			{"preprocess_imagenet", []string{"  PIXELS FP32 [1 3 224 224]  min -"}},
			{"preprocess_bytes", []string{"  PIXELS FP32 [1 3 224 224]  min -"}},
			{"ensemble_imagenet", []string{"  SCORES FP32 [1 1000]  min ", "  top 5: "}},
		} {
			t.Run(proto+"/"+tc.model, func(t *testing.T) {
				code, out, e := sluice("infer", "--url", addr[proto], "--protocol", proto, "--model", tc.model, good, good)
				if code != 0 || e != "" {
					t.Fatalf("code %d, stderr %q", code, e)
				}
				if strings.Count(out, good+":\n") != 2 {
					t.Fatalf("stdout does not name the image twice:\n%s", out)
				}
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Fatalf("stdout lacks %q:\n%s", w, out)
					}
				}
				if tc.model == "ensemble_imagenet" {
					line := out[strings.Index(out, "  top 5: "):]
					line = line[:strings.Index(line, "\n")]
					if n := strings.Count(line, "("); n != 5 {
						t.Fatalf("%d classes in %q", n, line)
					}
				}
				t.Logf("%s", out)
				outs[proto+tc.model] = out
			})
		}
	}
	if g, h := outs["grpcensemble_imagenet"], outs["httpensemble_imagenet"]; g != "" && h != "" && g != h {
		t.Errorf("ensemble_imagenet: gRPC and HTTP print different results:\n%s\n%s", g, h)
	}
	// The pixels themselves: the same bytes through gRPC and HTTP, UINT8
	// and BYTES inputs, as `sluice run` computes here without a server; and
	// what infer printed is their summary.
	want := localPixels(t, good)
	img, _ := os.ReadFile(good)
	for _, via := range [][2]string{{"grpc", "preprocess_imagenet"}, {"http", "preprocess_imagenet"}, {"grpc", "preprocess_bytes"}} {
		if got := serverPixels(t, via[0], addr[via[0]], via[1], img); !bytes.Equal(got, want) {
			t.Errorf("%s %s: PIXELS differ from sluice run's", via[0], via[1])
		}
	}
	px := make([]float64, len(want)/4)
	for i := range px {
		px[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(want[4*i:])))
	}
	for _, key := range []string{"grpcpreprocess_imagenet", "httppreprocess_imagenet", "grpcpreprocess_bytes"} {
		if outs[key] != "" {
			checkSummary(t, key, outs[key], px)
		}
	}
	// --top changes the number of classes.
	code, out, _ := sluice("infer", "--url", addr["grpc"], "--model", "ensemble_imagenet", "--top", "2", good)
	if code != 0 || !strings.Contains(out, "  top 2: ") {
		t.Fatalf("--top 2: code %d\n%s", code, out)
	}
}

// localPixels runs preprocess_imagenet's pipeline on the image here, with
// `sluice run`, and returns its PIXELS as little-endian float32 bytes.
func localPixels(t *testing.T, img string) []byte {
	t.Helper()
	out := t.TempDir()
	if code, _, e := sluice("run", "--pipeline", repoFile(t, imagenet), "--out", out, img); code != 0 {
		t.Fatalf("sluice run: %s", e)
	}
	raw, err := os.ReadFile(filepath.Join(out, strings.TrimSuffix(filepath.Base(img), filepath.Ext(img))+".PIXELS.npy"))
	if err != nil {
		t.Fatal(err)
	}
	dt, shape, px, err := npy.Read(raw)
	if err != nil || dt != ops.Float32 || !slices.Equal(shape, []int{3, 224, 224}) {
		t.Fatalf("sluice run's output: %v %v %v", dt, shape, err)
	}
	return px
}

// serverPixels asks the server for the image's PIXELS with the client
// package, over proto; preprocess_bytes takes the image as one BYTES
// element.
func serverPixels(t *testing.T, proto, addr, model string, img []byte) []byte {
	t.Helper()
	var c client.Client
	var err error
	if proto == "grpc" {
		c, err = client.NewGRPC(addr, client.Options{Timeout: 30 * time.Second})
	} else {
		c, err = client.NewHTTP(addr, client.Options{Timeout: 30 * time.Second}, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := client.Tensor{Name: "IMAGE", Datatype: "UINT8", Shape: []int64{1, int64(len(img))}, Data: img}
	if model == "preprocess_bytes" {
		in = client.BytesTensor("IMAGE", [][]byte{img}, 1, 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Infer(ctx, &client.InferRequest{Model: model, Inputs: []client.Tensor{in}})
	if err != nil {
		t.Fatalf("%s %s: %v", proto, model, err)
	}
	o := r.Output("PIXELS")
	if o == nil || o.Datatype != "FP32" || !slices.Equal(o.Shape, []int64{1, 3, 224, 224}) {
		t.Fatalf("%s %s: PIXELS %+v", proto, model, o)
	}
	return o.Data
}

// checkSummary finds infer's "min X max Y mean Z" in out and checks each
// against the pixels, to the 4 significant digits printed.
func checkSummary(t *testing.T, what, out string, px []float64) {
	t.Helper()
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range px {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	var got [3]float64
	i := strings.Index(out, "  min ")
	if i < 0 {
		t.Fatalf("%s: no summary in %q", what, out)
	}
	if _, err := fmt.Sscanf(out[i:], "  min %g max %g mean %g", &got[0], &got[1], &got[2]); err != nil {
		t.Fatalf("%s: %v in %q", what, err, out[i:])
	}
	for k, want := range []float64{lo, hi, sum / float64(len(px))} {
		if math.Abs(got[k]-want) > 5e-4*math.Abs(want)+1e-12 {
			t.Errorf("%s: printed %v, the pixels give %v", what, got, [3]float64{lo, hi, sum / float64(len(px))})
			break
		}
	}
}

// errLines checks that stderr is the given number of lines, each starting
// "sluice infer: ", and no trace.
func errLines(t *testing.T, stderr string, n int) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != n || strings.Contains(stderr, "goroutine") {
		t.Fatalf("want %d line(s) on stderr, got %q", n, stderr)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "sluice infer: ") {
			t.Fatalf("stderr line %q", l)
		}
	}
	return lines
}

func TestInferTritonErrors(t *testing.T) {
	addr := server(t)
	good, broken := imageFiles(t)
	missing := filepath.Join(t.TempDir(), "missing.jpg")
	for _, proto := range []string{"grpc", "http"} {
		t.Run(proto, func(t *testing.T) {
			for _, model := range []string{"preprocess_imagenet", "ensemble_imagenet"} {
				// A broken image fails alone: one line naming the file and
				// the cause; the good one is printed; exit status 1.
				code, out, e := sluice("infer", "--url", addr[proto], "--protocol", proto, "--model", model, broken, good, missing)
				if code != 1 || !strings.Contains(out, good+":\n") || strings.Contains(out, broken) {
					t.Fatalf("%s: code %d, stdout %q", model, code, out)
				}
				lines := errLines(t, e, 3)
				if !strings.HasPrefix(lines[0], "sluice infer: "+broken+": ") || !strings.Contains(lines[0], "IMAGE element 0: truncated") ||
					!strings.HasSuffix(lines[0], "(INVALID_ARG)") {
					t.Fatalf("%s: broken image: %q", model, lines[0])
				}
				if lines[1] != "sluice infer: "+missing+": no such file or directory" || lines[2] != "sluice infer: 2 of 3 image(s) failed" {
					t.Fatalf("%s: %q", model, lines[1:])
				}
			}
			// With image_errors "mark" the request succeeds; infer reads
			// the cause from IMAGE_ERROR and reports the image the same way.
			code, out, e := sluice("infer", "--url", addr[proto], "--protocol", proto, "--model", "preprocess_mark", broken, good)
			if code != 1 || !strings.Contains(out, good+":\n") || !strings.Contains(out, "IMAGE_OK BOOL [1 1]  min 1 max 1") || strings.Contains(out, broken) {
				t.Fatalf("preprocess_mark: code %d, stdout %q", code, out)
			}
			if lines := errLines(t, e, 2); !strings.HasPrefix(lines[0], "sluice infer: "+broken+": IMAGE element 0: truncated: decode: JPEG data ends early") ||
				lines[1] != "sluice infer: 1 of 2 image(s) failed" {
				t.Fatalf("preprocess_mark: %q", lines)
			}
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"--model", "no_such_model"}, `model "no_such_model" is not available on Triton at ` + addr[proto] + " (" + proto + "): "},
				{[]string{"--model", "preprocess_imagenet", "--input", "PIXELS"}, `model preprocess_imagenet has no input "PIXELS" (inputs: IMAGE)`},
				{[]string{"--model", "classifier"}, "model classifier input PIXELS is FP32; encoded images go to a UINT8 or BYTES"},
			} {
				args := append([]string{"infer", "--url", addr[proto], "--protocol", proto, good}, tc.args...)
				code, out, e := sluice(args...)
				if code != 1 || out != "" || !strings.Contains(errLines(t, e, 1)[0], tc.want) {
					t.Fatalf("%v: code %d, stderr %q; want %q", tc.args, code, e, tc.want)
				}
				t.Logf("%s", e)
			}
		})
	}
}

// An unreachable server and one that never answers: one line, within the
// timeout, no server needed.
func TestInferUnreachable(t *testing.T) {
	good, _ := imageFiles(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() { // accept and never answer
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	for _, proto := range []string{"grpc", "http"} {
		for _, tc := range []struct{ addr, want string }{
			{closed, "cannot reach Triton at " + closed + " (" + proto + "): "},
			{silent.Addr().String(), "Triton at " + silent.Addr().String() + " (" + proto + ") did not answer within 1s (--timeout)"},
		} {
			t0 := time.Now()
			code, _, e := sluice("infer", "--url", tc.addr, "--protocol", proto, "--timeout", "1s", "--model", "preprocess_imagenet", good)
			if took := time.Since(t0); took > 3*time.Second {
				t.Fatalf("%s %s: took %v with --timeout 1s", proto, tc.addr, took)
			}
			if code != 1 || !strings.Contains(errLines(t, e, 1)[0], tc.want) {
				t.Fatalf("%s: code %d, stderr %q; want %q", proto, code, e, tc.want)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"infer", good}, "--model is required"},
		{[]string{"infer", "--model", "m"}, "no images given"},
		{[]string{"infer", "--model", "m", "--protocol", "udp", good}, "--protocol must be grpc or http"},
		{[]string{"infer", "--model", "m", "--timeout", "0s", good}, "--timeout must be positive"},
	} {
		code, _, e := sluice(tc.args...)
		if code != 1 || !strings.Contains(e, tc.want) {
			t.Errorf("sluice %v: code %d, stderr %q; want %q", tc.args, code, e, tc.want)
		}
	}
}
