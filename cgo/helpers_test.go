package main

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/backend"
)

func TestByteSize(t *testing.T) {
	for _, c := range []struct {
		shape []int64
		elem  int64
		want  int
		bad   bool
	}{
		{[]int64{2, 3, 224, 224}, 4, 2 * 3 * 224 * 224 * 4, false},
		{nil, 4, 4, false}, // a scalar
		{[]int64{0, 3}, 4, 0, false},
		{[]int64{1, -1}, 4, 0, true},
		{[]int64{math.MaxInt64 / 2, 4}, 4, 0, true},
	} {
		got, err := byteSize(c.shape, c.elem)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("byteSize(%v, %d) = %d, %v", c.shape, c.elem, got, err)
		}
		var be *backend.Error
		if err != nil && (!errors.As(err, &be) || be.Code != backend.CodeInvalidArg) {
			t.Errorf("byteSize(%v): error %v is not a CodeInvalidArg *backend.Error", c.shape, err)
		}
	}
}

func TestTimeline(t *testing.T) {
	s, cs, ce, e := timeline(100, 900, backend.BatchStats{ExecStart: 110, ComputeStart: 200, ComputeEnd: 700, ExecEnd: 800, Samples: 3})
	if s != 100 || cs != 200 || ce != 700 || e != 900 {
		t.Errorf("ordinary batch: %d %d %d %d", s, cs, ce, e)
	}
	// A batch that failed before computing leaves zeros: still ordered.
	s, cs, ce, e = timeline(100, 900, backend.BatchStats{})
	if s != 100 || cs != 100 || ce != 100 || e != 900 {
		t.Errorf("empty stats: %d %d %d %d", s, cs, ce, e)
	}
	// Never ends before the compute span does.
	if _, _, _, e = timeline(100, 150, backend.BatchStats{ComputeStart: 120, ComputeEnd: 300}); e != 300 {
		t.Errorf("exec end %d before compute end 300", e)
	}
}

func TestArena(t *testing.T) {
	var a arena
	x := a.take(10)
	y := a.take(20)
	if len(x) != 10 || cap(x) != 10 || len(y) != 20 {
		t.Fatalf("lengths %d/%d %d", len(x), cap(x), len(y))
	}
	for i := range x {
		x[i] = 1
	}
	for i := range y {
		y[i] = 2
	}
	big := a.take(3 * minArenaChunk) // a new chunk: x and y stay intact
	if len(big) != 3*minArenaChunk || x[9] != 1 || y[0] != 2 {
		t.Fatal("growing the arena disturbed earlier slices")
	}
	a.reset()
	again := a.take(3 * minArenaChunk)
	if &again[0] != &big[0] {
		t.Error("reset did not reuse the chunk")
	}
	a.take(maxArenaKeep + 1) // over the most it keeps
	a.reset()
	if a.buf != nil {
		t.Errorf("reset kept a chunk of %d bytes", cap(a.buf))
	}
	a.reset()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b := a.take(64)
				for i := range b {
					b[i] = byte(g)
				}
				for i := range b {
					if b[i] != byte(g) {
						t.Errorf("slices overlap")
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestDataTypes(t *testing.T) {
	for _, n := range []string{"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"} {
		dt, size, ok := dataTypeByName(n)
		if !ok || dataTypeName(dt) != n {
			t.Errorf("%s: round trip gives %q, %v", n, dataTypeName(dt), ok)
		}
		if (size == 0) != (n == "BYTES") {
			t.Errorf("%s: element size %d", n, size)
		}
	}
	for _, n := range []string{"INVALID", "TYPE_FP32", "fp32", ""} {
		if _, _, ok := dataTypeByName(n); ok {
			t.Errorf("%q accepted", n)
		}
	}
	if got := dataTypeName(1000); got != "INVALID" {
		t.Errorf("unknown value named %q", got)
	}
	if got := instanceKindName(1000); got != "KIND_UNKNOWN" {
		t.Errorf("unknown kind named %q", got)
	}
}

// panicky is an error whose methods panic, as a buggy backend error might.
type panicky struct{}

func (*panicky) Error() string { panic("Error") }

func TestClassify(t *testing.T) {
	for code := range backend.CodeUnavailable + 1 {
		err := fmt.Errorf("wrapped: %w", &backend.Error{Code: code, Msg: "m"})
		got, msg := classify(err)
		if got != tritonCodes[code] || msg != "wrapped: m" || backendCode(got) != code {
			t.Errorf("code %d: classified as %d %q", code, got, msg)
		}
	}
	if got, _ := classify(errors.New("plain")); got != tritonCodes[backend.CodeInternal] {
		t.Errorf("plain error: code %d", got)
	}
	for _, err := range []error{&panicky{}, (*backend.Error)(nil)} {
		got, msg := classify(err)
		if got != tritonCodes[backend.CodeInternal] || !strings.Contains(msg, "unreadable error") {
			t.Errorf("%T: %d %q", err, got, msg)
		}
	}
}

// shim.c's list and triton.h must not drift apart silently; the symbol
// test checks the list against the library, this that it is sane.
func TestTritonSymbolsList(t *testing.T) {
	names := tritonSymbols()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || !(strings.HasPrefix(n, "TRITONSERVER_") || strings.HasPrefix(n, "TRITONBACKEND_")) {
			t.Errorf("bad or repeated name %q", n)
		}
		seen[n] = true
	}
	// In a test binary no Triton is loaded: every weak reference is NULL.
	if missingTritonSymbol() != names[0] {
		t.Errorf("missingTritonSymbol() = %q, want the first name %q", missingTritonSymbol(), names[0])
	}
}
