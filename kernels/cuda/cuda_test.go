package cuda

import (
	"cmp"
	"errors"
	"os"
	"reflect"
	"regexp"
	"slices"
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

// cudaHeader reads cuda.h, from SLUICE_CUDA_H or the toolkit's usual place;
// the header is not in the repository (make cuda-headers fetches CUDA 12's
// and 13's, and make gotest runs these tests against both). Without it the
// test skips, unless SLUICE_CUDA_H names it. It returns the versioned
// symbol each API name is mapped to (#define cuMemAlloc cuMemAlloc_v2),
// and the parameter list of each function's first declaration (legacy
// declarations come later, in an internal block).
func cudaHeader(t *testing.T) (target, params map[string]string) {
	t.Helper()
	path := os.Getenv("SLUICE_CUDA_H")
	src, err := os.ReadFile(cmp.Or(path, "/usr/local/cuda/include/cuda.h"))
	switch {
	case err != nil && path != "":
		t.Fatalf("SLUICE_CUDA_H: %v", err)
	case err != nil:
		t.Skipf("no cuda.h (set SLUICE_CUDA_H): %v", err)
	}
	if m := regexp.MustCompile(`(?m)^#define CUDA_VERSION (\d+)`).FindSubmatch(src); m != nil {
		t.Logf("%s: CUDA_VERSION %s", cmp.Or(path, "cuda.h"), m[1])
	}
	target, params = map[string]string{}, map[string]string{}
	def := regexp.MustCompile(`(?m)^\s*#define\s+(cu\w+)\s+(?:__CUDA_API_PT(?:SZ|DS)\()?(cu\w+)\)?\s*$`)
	for _, m := range def.FindAllStringSubmatch(string(src), -1) {
		if m[1] != m[2] {
			target[m[1]] = m[2]
		}
	}
	decl := regexp.MustCompile(`CUresult\s+CUDAAPI\s+(cu\w+)\s*\(([^)]*)\)\s*;`)
	for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
		if _, seen := params[m[1]]; !seen {
			params[m[1]] = strings.Join(strings.Fields(m[2]), " ")
		}
	}
	if len(target) < 50 || len(params) < 200 {
		t.Fatalf("%d versioned names, %d declarations: not a cuda.h?", len(target), len(params))
	}
	return target, params
}

// TestSymbolNames checks the binder's names against cuda.h. Where the header
// maps an API name to a versioned symbol, that symbol must be among the
// names bound, or we would get the old ABI on a driver of that header's
// age. Names tried before it are newer versions, which the header must
// declare with the same parameters (cuEventElapsedTime_v2 before
// cuEventElapsedTime: CUDA 12.8-12.9 declare both and map to the old one,
// CUDA 13 maps to _v2). Each function takes as many arguments as the
// header declares.
func TestSymbolNames(t *testing.T) {
	target, params := cudaHeader(t)
	for _, s := range symbols() {
		api := strings.TrimSuffix(s.names[0], "_v2")
		want := cmp.Or(target[api], api)
		at := slices.Index(s.names, want)
		if at < 0 {
			t.Errorf("%s: binds %v, header says %s", api, s.names, want)
			continue
		}
		// The header declares a mapped function under its API name.
		decl := func(name string) (string, bool) {
			if target[api] == name {
				name = api
			}
			p, ok := params[name]
			return p, ok
		}
		wp, ok := decl(want)
		if !ok {
			t.Errorf("%s: header declares no %s", api, want)
			continue
		}
		for _, newer := range s.names[:at] {
			if p, ok := decl(newer); !ok || p != wp {
				t.Errorf("%s: tries %s before %s; header: %q (declared %v), %q", api, newer, want, p, ok, wp)
			}
		}
		if n, in := len(strings.Split(wp, ",")), reflect.TypeOf(s.fn).Elem().NumIn(); n != in {
			t.Errorf("%s: header declares %d parameters (%s), ours takes %d", want, n, wp, in)
		}
	}
}
