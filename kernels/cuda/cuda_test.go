package cuda

import (
	"bufio"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

func TestErrorFormat(t *testing.T) {
	e := &Error{Call: "cuMemAlloc", Code: ErrorOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"}
	if got, want := e.Error(), "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &Error{Call: "cuInit", Code: 12345}
	if got, want := e.Error(), "cuInit: CUresult (12345)"; got != want {
		t.Errorf("Error() without names = %q, want %q", got, want)
	}
	wrapped := errors.Join(errors.New("context"), &Error{Call: "cuLaunchKernel", Code: ErrorInvalidValue})
	if !IsResult(wrapped, ErrorInvalidValue) || IsResult(wrapped, ErrorOutOfMemory) {
		t.Errorf("IsResult does not see through wrapping: %v", wrapped)
	}
	if IsResult(errors.New("plain"), Success) {
		t.Error("IsResult matched a non-CUDA error")
	}
}

func TestLoadMissingLibrary(t *testing.T) {
	const lib = "libcuda-sluice-test-missing.so.1"
	err := load(lib)
	if err == nil {
		t.Fatal("load of a missing library succeeded")
	}
	if want := "CUDA driver unavailable: dlopen " + lib + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
}

func TestBindMissingSymbolIsAnError(t *testing.T) {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skipf("no libc.so.6 to resolve against: %v", err)
	}
	var fn func() int32
	err = bind(h, "libc.so.6", symbol{&fn, []string{"cuSluiceNoSuchCall_v9", "cuSluiceNoSuchCall"}})
	if err == nil || !strings.Contains(err.Error(), "libc.so.6 lacks cuSluiceNoSuchCall_v9") {
		t.Fatalf("bind of a missing symbol: err = %v", err)
	}
	if fn != nil {
		t.Error("bind registered a function for a missing symbol")
	}
	// A symbol that exists binds and can be called.
	var getpid func() int32
	if err := bind(h, "libc.so.6", symbol{&getpid, []string{"sluiceMissing", "getpid"}}); err != nil {
		t.Fatalf("bind of the fallback name: %v", err)
	}
	if got := getpid(); int(got) != os.Getpid() {
		t.Errorf("bound getpid() = %d, want %d", got, os.Getpid())
	}
}

func TestInit(t *testing.T) {
	err := Init()
	if err2 := Init(); err2 != err {
		t.Errorf("second Init returned %v, first %v", err2, err)
	}
	if _, derr := purego.Dlopen(libName, purego.RTLD_NOW|purego.RTLD_GLOBAL); derr != nil {
		// No driver on this host: the error must say which library is missing.
		if err == nil || !strings.HasPrefix(err.Error(), "CUDA driver unavailable: dlopen libcuda.so.1: ") {
			t.Errorf("Init without %s = %v", libName, err)
		}
	} else if err != nil {
		// A driver without a usable GPU: the failure is cuInit's, named as such.
		if !strings.HasPrefix(err.Error(), "CUDA driver unavailable: ") {
			t.Errorf("Init error %q lacks the prefix", err)
		}
		t.Logf("driver present, Init: %v", err)
	}
	if err != nil {
		// Every call reports Init's error instead of calling into an unbound function.
		if _, e := MemAlloc(16); e != err {
			t.Errorf("MemAlloc after failed Init = %v, want %v", e, err)
		}
		if _, e := NewStream(); e != err {
			t.Errorf("NewStream after failed Init = %v, want %v", e, err)
		}
		if e := Launch(0, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0); e != err {
			t.Errorf("Launch after failed Init = %v, want %v", e, err)
		}
	}
	// Zero sizes never reach the driver.
	if p, e := MemAlloc(0); p != 0 || e != nil {
		t.Errorf("MemAlloc(0) = %v, %v", p, e)
	}
	if e := MemFree(0); e != nil {
		t.Errorf("MemFree(0) = %v", e)
	}
	if b, e := MemHostAlloc(0); b != nil || e != nil {
		t.Errorf("MemHostAlloc(0) = %v, %v", b, e)
	}
	if e := MemFreeHost(nil); e != nil {
		t.Errorf("MemFreeHost(nil) = %v", e)
	}
	if _, e := MemAlloc(-1); e == nil {
		t.Error("MemAlloc(-1) succeeded")
	}
}

// TestSymbolNames checks each bound name against cuda.h: where the header maps an API name to
// a versioned symbol, we must bind that symbol, or we would get the old ABI. The header is
// not in the repository; point SLUICE_CUDA_H at one (CUDA 12.8 or later) to run it.
func TestSymbolNames(t *testing.T) {
	path := os.Getenv("SLUICE_CUDA_H")
	if path == "" {
		path = "/usr/local/cuda/include/cuda.h"
	}
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("no cuda.h (set SLUICE_CUDA_H): %v", err)
	}
	defer f.Close()
	def := regexp.MustCompile(`^\s*#define\s+(cu\w+)\s+(?:__CUDA_API_PT(?:SZ|DS)\()?(cu\w+)\)?\s*$`)
	target := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := def.FindStringSubmatch(sc.Text()); m != nil && m[1] != m[2] {
			target[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(target) < 50 {
		t.Fatalf("%s: only %d versioned names found; not a cuda.h?", path, len(target))
	}
	for _, s := range symbols() {
		name := s.names[0]
		api := strings.TrimSuffix(name, "_v2")
		want := api
		if v, ok := target[api]; ok {
			want = v
		}
		if name != want {
			t.Errorf("%s: bound %s, header says %s", api, name, want)
		}
	}
}
