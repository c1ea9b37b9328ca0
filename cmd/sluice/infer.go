package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/client"
	"github.com/sluice-dev/sluice/ops"
)

// cmdInfer sends encoded images to a Triton server, one request per image,
// and prints a summary of every output (and the top classes of class
// scores).
func cmdInfer(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("infer", flag.ContinueOnError)
	addr := fs.String("url", "", "server address host:port (default 127.0.0.1:8001 for grpc, 127.0.0.1:8000 for http)")
	proto := fs.String("protocol", "grpc", "grpc or http")
	model := fs.String("model", "", "model name (required)")
	version := fs.String("model-version", "", "model version (default: the server's choice)")
	input := fs.String("input", "", "input name (default: the model's only input)")
	timeout := fs.Duration("timeout", 10*time.Second, "deadline of each call to the server")
	top := fs.Int("top", 5, "classes to print for class scores (0: none)")
	pos, err := parse(fs, args, stderr)
	if err != nil {
		return err
	}
	if *model == "" {
		return fmt.Errorf("--model is required")
	}
	if len(pos) == 0 {
		return fmt.Errorf("no images given")
	}
	if *timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	if *top < 0 {
		return fmt.Errorf("--top must be at least 0")
	}
	// Retries of an unreachable server stay well inside the deadline.
	opts := client.Options{
		Timeout: *timeout,
		Retry:   client.RetryPolicy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second},
	}
	var c client.Client
	switch *proto {
	case "grpc":
		if *addr == "" {
			*addr = "127.0.0.1:8001"
		}
		c, err = client.NewGRPC(*addr, opts)
	case "http":
		if *addr == "" {
			*addr = "127.0.0.1:8000"
		}
		c, err = client.NewHTTP(*addr, opts, nil)
	default:
		return fmt.Errorf("--protocol must be grpc or http, not %q", *proto)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	where := fmt.Sprintf("Triton at %s (%s)", *addr, *proto)

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	meta, err := c.ModelMetadata(ctx, *model, *version)
	cancel()
	if err != nil {
		return serverErr(err, where, *model, *timeout)
	}
	in, err := pickInput(meta, *input)
	if err != nil {
		return err
	}
	ensemble := meta.Platform == "ensemble"

	failed := 0
	for _, path := range pos {
		img, err := os.ReadFile(path)
		if err == nil && len(img) == 0 {
			err = errors.New("empty file")
		}
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "sluice infer: %s: %s\n", path, oneLine(strings.TrimPrefix(err.Error(), "open "+path+": ")))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		r, err := c.Infer(ctx, &client.InferRequest{Model: *model, Version: *version, Inputs: []client.Tensor{imageTensor(in, img)}})
		cancel()
		if err != nil {
			if client.IsUnavailable(err) || client.IsNotFound(err) {
				// The server went away or the model was unloaded: every
				// further image would fail the same way.
				return serverErr(err, where, *model, *timeout)
			}
			failed++
			fmt.Fprintf(stderr, "sluice infer: %s: %s\n", path, oneLine(inferErrText(err, *timeout)))
			continue
		}
		// A model with image_errors "mark" answers a broken image with
		// zeros and says why in IMAGE_ERROR.
		msgs, marked, err := r.ImageErrors()
		if err == nil && marked && len(msgs) == 1 && msgs[0] != "" {
			err = errors.New(msgs[0])
		}
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "sluice infer: %s: %s\n", path, oneLine(err.Error()))
			continue
		}
		fmt.Fprintf(stdout, "%s:\n", path)
		for i := range r.Outputs {
			printOutput(stdout, &r.Outputs[i], ensemble, *top)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d image(s) failed", failed, len(pos))
	}
	return nil
}

// pickInput chooses the input that gets the encoded image: the named one,
// or the model's only input. It must take UINT8 (one image as [1, N]) or
// BYTES (TYPE_STRING: one element).
func pickInput(meta *client.ModelMetadata, name string) (client.TensorMetadata, error) {
	var names []string
	for _, in := range meta.Inputs {
		names = append(names, in.Name)
	}
	var in *client.TensorMetadata
	for i := range meta.Inputs {
		if meta.Inputs[i].Name == name || (name == "" && len(meta.Inputs) == 1) {
			in = &meta.Inputs[i]
		}
	}
	switch {
	case in == nil && name != "":
		return client.TensorMetadata{}, fmt.Errorf("model %s has no input %q (inputs: %s)", meta.Name, name, strings.Join(names, ", "))
	case in == nil:
		return client.TensorMetadata{}, fmt.Errorf("model %s has %d inputs (%s): choose one with --input", meta.Name, len(names), strings.Join(names, ", "))
	case in.Datatype != "UINT8" && in.Datatype != "BYTES":
		return client.TensorMetadata{}, fmt.Errorf("model %s input %s is %s; encoded images go to a UINT8 or BYTES (TYPE_STRING) input", meta.Name, in.Name, in.Datatype)
	}
	if in.Datatype == "UINT8" {
		// [-1, -1] (batching) or [-1]: the last dimension takes the bytes.
		if len(in.Shape) == 0 || in.Shape[len(in.Shape)-1] != -1 {
			return client.TensorMetadata{}, fmt.Errorf("model %s input %s has fixed shape %v; an encoded image needs a variable last dimension", meta.Name, in.Name, in.Shape)
		}
	}
	return *in, nil
}

// imageTensor is one encoded image in the shape the input wants: UINT8
// [1, N] (or [N] without a batch dimension), BYTES [1, 1] (or [1]).
func imageTensor(in client.TensorMetadata, img []byte) client.Tensor {
	shape := make([]int64, len(in.Shape))
	for i := range shape {
		shape[i] = 1
	}
	if in.Datatype == "BYTES" {
		if len(shape) == 0 {
			shape = []int64{1}
		}
		return client.BytesTensor(in.Name, [][]byte{img}, shape...)
	}
	shape[len(shape)-1] = int64(len(img))
	return client.Tensor{Name: in.Name, Datatype: "UINT8", Shape: shape, Data: img}
}

// serverErr words a failure that is not about one image.
func serverErr(err error, where, model string, timeout time.Duration) error {
	var ce *client.Error
	msg := err.Error()
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	switch {
	case client.IsNotFound(err):
		return fmt.Errorf("model %q is not available on %s: %s", model, where, msg)
	case client.IsUnavailable(err):
		return fmt.Errorf("cannot reach %s: %s", where, msg)
	case errors.As(err, &ce) && ce.Code == client.CodeDeadlineExceeded:
		return fmt.Errorf("%s did not answer within %v (--timeout)", where, timeout)
	}
	return fmt.Errorf("%s: %s", where, msg)
}

// inferErrText words a failure of one image's request: the server's own
// message (it names the input and the cause) and its code.
func inferErrText(err error, timeout time.Duration) string {
	var ce *client.Error
	if !errors.As(err, &ce) {
		return err.Error()
	}
	if ce.Code == client.CodeDeadlineExceeded {
		return fmt.Sprintf("no answer within %v (--timeout)", timeout)
	}
	return ce.Message + " (" + ce.Code.String() + ")"
}

// printOutput prints an output's name, datatype and shape, min/max/mean of
// numeric data, and the top classes of class scores.
func printOutput(w io.Writer, t *client.Tensor, ensemble bool, top int) {
	fmt.Fprintf(w, "  %s %s %v", t.Name, t.Datatype, t.Shape)
	vals, ok := numbers(t)
	if !ok {
		fmt.Fprintf(w, "  %d bytes\n", len(t.Data))
		return
	}
	if len(vals) == 0 {
		fmt.Fprintln(w, "  empty")
		return
	}
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range vals {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	fmt.Fprintf(w, "  min %.4g max %.4g mean %.4g\n", lo, hi, sum/float64(len(vals)))
	if top > 0 && isClassScores(t, ensemble) {
		idx := make([]int, len(vals))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return vals[idx[a]] > vals[idx[b]] })
		fmt.Fprintf(w, "  top %d:", min(top, len(idx)))
		for _, i := range idx[:min(top, len(idx))] {
			fmt.Fprintf(w, " %d (%.4g)", i, vals[i])
		}
		fmt.Fprintln(w)
	}
}

// isClassScores: a float vector of one sample, [1000] or [1, 1000]
// (ImageNet), or any [C] / [1, C] with C > 1 coming out of an ensemble
// (the last step of which is a classifier).
func isClassScores(t *client.Tensor, ensemble bool) bool {
	if t.Datatype != "FP32" && t.Datatype != "FP64" && t.Datatype != "FP16" {
		return false
	}
	s := t.Shape
	if len(s) == 2 && s[0] == 1 {
		s = s[1:]
	}
	if len(s) != 1 {
		return false
	}
	return s[0] == 1000 || (ensemble && s[0] > 1)
}

// numbers reads a numeric tensor's data as float64.
func numbers(t *client.Tensor) ([]float64, bool) {
	size := map[string]int{"BOOL": 1, "UINT8": 1, "INT8": 1, "UINT16": 2, "INT16": 2, "FP16": 2,
		"UINT32": 4, "INT32": 4, "FP32": 4, "UINT64": 8, "INT64": 8, "FP64": 8}[t.Datatype]
	if size == 0 || len(t.Data)%size != 0 {
		return nil, false
	}
	d, le := t.Data, binary.LittleEndian
	out := make([]float64, len(d)/size)
	for i := range out {
		b := d[i*size:]
		switch t.Datatype {
		case "BOOL", "UINT8":
			out[i] = float64(b[0])
		case "INT8":
			out[i] = float64(int8(b[0]))
		case "UINT16":
			out[i] = float64(le.Uint16(b))
		case "INT16":
			out[i] = float64(int16(le.Uint16(b)))
		case "FP16":
			out[i] = ops.Float16Value(le.Uint16(b))
		case "UINT32":
			out[i] = float64(le.Uint32(b))
		case "INT32":
			out[i] = float64(int32(le.Uint32(b)))
		case "FP32":
			out[i] = float64(math.Float32frombits(le.Uint32(b)))
		case "UINT64":
			out[i] = float64(le.Uint64(b))
		case "INT64":
			out[i] = float64(int64(le.Uint64(b)))
		case "FP64":
			out[i] = math.Float64frombits(le.Uint64(b))
		}
	}
	return out, true
}
