package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEncodeDecodeBytes(t *testing.T) {
	elems := [][]byte{[]byte("abc"), {}, {0, 1, 2, 255}}
	got := EncodeBytes(elems...)
	want := []byte{3, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0, 4, 0, 0, 0, 0, 1, 2, 255}
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeBytes = %v, want %v", got, want)
	}
	back, err := DecodeBytes(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || string(back[0]) != "abc" || len(back[1]) != 0 || !bytes.Equal(back[2], elems[2]) {
		t.Fatalf("DecodeBytes = %q", back)
	}
	big := bytes.Repeat([]byte{7}, 70000)
	enc := EncodeBytes(big)
	if binary.LittleEndian.Uint32(enc) != 70000 {
		t.Fatalf("length prefix %v is not little-endian 70000", enc[:4])
	}
	if e, _ := DecodeBytes(nil); len(e) != 0 {
		t.Fatalf("DecodeBytes(nil) = %v", e)
	}
	for _, bad := range [][]byte{{1, 0}, {5, 0, 0, 0, 'a'}} {
		if _, err := DecodeBytes(bad); err == nil {
			t.Errorf("DecodeBytes(%v): no error", bad)
		}
	}
	bt := BytesTensor("IMAGE", [][]byte{[]byte("x"), []byte("yz")})
	if bt.Datatype != "BYTES" || len(bt.Shape) != 1 || bt.Shape[0] != 2 {
		t.Fatalf("BytesTensor = %+v", bt)
	}
}

func TestCheckInputs(t *testing.T) {
	ok := &InferRequest{Model: "m", Inputs: []Tensor{
		{Name: "A", Datatype: "FP32", Shape: []int64{2, 2}, Data: make([]byte, 16)},
		BytesTensor("B", [][]byte{[]byte("x")}),
	}}
	if err := checkInputs(ok); err != nil {
		t.Fatal(err)
	}
	bad := &InferRequest{Model: "m", Inputs: []Tensor{{Name: "A", Datatype: "FP32", Shape: []int64{2, 2}, Data: make([]byte, 15)}}}
	if err := checkInputs(bad); !IsInvalidArg(err) || !strings.Contains(err.Error(), "input A") {
		t.Fatalf("checkInputs(short FP32) = %v", err)
	}
	badBytes := &InferRequest{Model: "m", Inputs: []Tensor{{Name: "B", Datatype: "BYTES", Shape: []int64{2}, Data: EncodeBytes([]byte("x"))}}}
	if err := checkInputs(badBytes); !IsInvalidArg(err) {
		t.Fatalf("checkInputs(BYTES count) = %v", err)
	}
}

func f32bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func TestEncodeInferRequest(t *testing.T) {
	req := &InferRequest{Model: "m", ID: "7", Inputs: []Tensor{
		{Name: "IMAGE", Datatype: "UINT8", Shape: []int64{1, 3}, Data: []byte{1, 2, 3}},
		{Name: "X", Datatype: "FP32", Shape: []int64{1}, Data: f32bytes(1.5)},
	}}
	body, hlen, err := EncodeInferRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	head := string(body[:hlen])
	for _, want := range []string{`"binary_data_size":3`, `"binary_data_size":4`, `"binary_data_output":true`, `"id":"7"`, `"shape":[1,3]`} {
		if !strings.Contains(head, want) {
			t.Errorf("JSON header %s lacks %s", head, want)
		}
	}
	if !bytes.Equal(body[hlen:], append([]byte{1, 2, 3}, f32bytes(1.5)...)) {
		t.Errorf("binary part = %v", body[hlen:])
	}
	req.Outputs = []string{"PIXELS"}
	body, hlen, _ = EncodeInferRequest(req)
	if head := string(body[:hlen]); !strings.Contains(head, `"outputs":[{"name":"PIXELS","parameters":{"binary_data":true}}]`) || strings.Contains(head, "binary_data_output") {
		t.Errorf("JSON header with outputs = %s", head)
	}
}

func TestDecodeInferResponse(t *testing.T) {
	head := `{"model_name":"m","model_version":"1","outputs":[` +
		`{"name":"A","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":8}},` +
		`{"name":"J","datatype":"INT32","shape":[2,2],"data":[[1,-2],[3,4]]},` +
		`{"name":"S","datatype":"BYTES","shape":[1],"data":["hi"]},` +
		`{"name":"B","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":6}}]}`
	body := append([]byte(head), f32bytes(0.5, -2)...)
	body = append(body, EncodeBytes([]byte("ok"))...)
	r, err := DecodeInferResponse(body, len(head))
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "m" || r.Version != "1" || len(r.Outputs) != 4 {
		t.Fatalf("response = %+v", r)
	}
	a, err := r.Output("A").Float32s()
	if err != nil || len(a) != 2 || a[0] != 0.5 || a[1] != -2 {
		t.Fatalf("A = %v, %v", a, err)
	}
	j := r.Output("J")
	if len(j.Data) != 16 || int32(binary.LittleEndian.Uint32(j.Data[4:])) != -2 || len(j.Shape) != 2 {
		t.Fatalf("J = %+v", j)
	}
	if s, _ := DecodeBytes(r.Output("S").Data); len(s) != 1 || string(s[0]) != "hi" {
		t.Fatalf("S = %q", s)
	}
	if b, _ := DecodeBytes(r.Output("B").Data); len(b) != 1 || string(b[0]) != "ok" {
		t.Fatalf("B = %q", b)
	}
	// Truncated binary part, trailing garbage, a header longer than the body.
	if _, err := DecodeInferResponse(body[:len(body)-1], len(head)); err == nil {
		t.Error("truncated body: no error")
	}
	if _, err := DecodeInferResponse(append(body, 0), len(head)); err == nil {
		t.Error("trailing bytes: no error")
	}
	if _, err := DecodeInferResponse(body[:10], len(head)); err == nil {
		t.Error("short body: no error")
	}
	// No header: all JSON.
	r, err = DecodeInferResponse([]byte(`{"outputs":[{"name":"X","datatype":"FP32","shape":["1"],"data":[2.0]}]}`), -1)
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := r.Output("X").Float32s(); len(x) != 1 || x[0] != 2 || r.Output("X").Shape[0] != 1 {
		t.Fatalf("X = %+v", r.Output("X"))
	}
}

// A fake Triton HTTP endpoint: checks the request's binary framing and
// answers with a binary output.
func TestHTTPInferFraming(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v2/models/m/infer":
		case "/v2/models/missing/infer":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"Request for unknown model: 'missing' is not found"}`)
			return
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		hl, err := strconv.Atoi(r.Header.Get(HeaderContentLength))
		if err != nil || hl > len(body) || !bytes.Equal(body[hl:], []byte{9, 8, 7}) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"bad framing"}`)
			return
		}
		head := `{"model_name":"m","outputs":[{"name":"O","datatype":"UINT8","shape":[2],"parameters":{"binary_data_size":2}}]}`
		w.Header().Set(HeaderContentLength, strconv.Itoa(len(head)))
		io.WriteString(w, head)
		w.Write([]byte{42, 43})
	}))
	defer srv.Close()
	c, err := NewHTTP(srv.URL, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := []Tensor{{Name: "I", Datatype: "UINT8", Shape: []int64{3}, Data: []byte{9, 8, 7}}}
	r, err := c.Infer(context.Background(), &InferRequest{Model: "m", Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	if o := r.Output("O"); o == nil || !bytes.Equal(o.Data, []byte{42, 43}) {
		t.Fatalf("outputs = %+v", r.Outputs)
	}
	_, err = c.Infer(context.Background(), &InferRequest{Model: "missing", Inputs: in})
	var e *Error
	if !errors.As(err, &e) || !IsNotFound(err) || e.HTTPStatus != 400 || !strings.Contains(e.Message, "unknown model") {
		t.Fatalf("unknown model: %#v", err)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestUnreachableRetriesThenFails(t *testing.T) {
	addr := closedAddr(t)
	opts := Options{Retry: RetryPolicy{MaxAttempts: 4, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}}
	hc, _ := NewHTTP(addr, opts, nil)
	gc, err := NewGRPC(addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	for name, c := range map[string]Client{"http": hc, "grpc": gc} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t0 := time.Now()
		_, err := c.ServerReady(ctx)
		cancel()
		el := time.Since(t0)
		if !IsUnavailable(err) {
			t.Errorf("%s: ServerReady on a closed port = %v, want UNAVAILABLE", name, err)
		}
		// Three backoffs of 20, 40, 50 ms at least; far less than the deadline.
		if el < 100*time.Millisecond || el > 4*time.Second {
			t.Errorf("%s: failed after %v, want the retries' backoff (>= 110ms) and no hang", name, el)
		}
		t.Logf("%s: %v after %v", name, err, el)
	}
}

func TestRetryStopsAtDeadline(t *testing.T) {
	calls := 0
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err := retry(ctx, RetryPolicy{MaxAttempts: 100, InitialBackoff: 40 * time.Millisecond, MaxBackoff: 40 * time.Millisecond},
		func(error) bool { return true }, func() error { calls++; return errors.New("down") })
	if err == nil || time.Since(t0) > time.Second || calls < 2 || calls > 5 {
		t.Fatalf("retry: %v after %d calls in %v", err, calls, time.Since(t0))
	}
}

func TestImageErrors(t *testing.T) {
	r := &InferResponse{Outputs: []Tensor{
		{Name: "IMAGE_OK", Datatype: "BOOL", Shape: []int64{3, 1}, Data: []byte{1, 0, 1}},
		{Name: "IMAGE_ERROR", Datatype: "BYTES", Shape: []int64{3, 1}, Data: EncodeBytes(nil, []byte("IMAGE element 1: truncated"), nil)},
	}}
	msgs, ok, err := r.ImageErrors()
	if err != nil || !ok || len(msgs) != 3 || msgs[0] != "" || msgs[1] != "IMAGE element 1: truncated" || msgs[2] != "" {
		t.Fatalf("ImageErrors = %q, %v, %v", msgs, ok, err)
	}
	r.Outputs[1].Data = EncodeBytes(nil, nil)
	if _, _, err := r.ImageErrors(); err == nil || !strings.Contains(err.Error(), "IMAGE_OK has 3 elements, IMAGE_ERROR 2") {
		t.Errorf("mismatched lengths: %v", err)
	}
	if _, ok, err := (&InferResponse{}).ImageErrors(); ok || err != nil {
		t.Errorf("no marks: ok %v, err %v", ok, err)
	}
}
