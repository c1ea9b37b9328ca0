package main

import (
	"debug/elf"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The entry points Triton looks up in the library.
var entryPoints = []string{
	"TRITONBACKEND_Initialize",
	"TRITONBACKEND_Finalize",
	"TRITONBACKEND_ModelInitialize",
	"TRITONBACKEND_ModelFinalize",
	"TRITONBACKEND_ModelInstanceInitialize",
	"TRITONBACKEND_ModelInstanceFinalize",
	"TRITONBACKEND_ModelInstanceExecute",
}

// Undefined symbols the toolchain's startup files leave weak in every
// shared object; nothing calls them.
var toolchainWeak = []string{"__gmon_start__", "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__cxa_finalize"}

// Libraries the backend may need at run time: the C library's parts. The
// image libraries (build/pic: libjpeg-turbo, libwebp, libtiff, zlib,
// OpenJPEG, dav1d) in particular must not be: Triton's images lack them.
var allowedNeeded = []string{"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"}

// TestSharedLibrarySymbols builds the backend as make backend does and
// checks what it needs from the process that loads it: Triton's functions
// (weak, bound at dlopen, exactly those triton.h declares) and glibc,
// nothing else; that it exports every entry point; and that it exports
// none of the static libraries' symbols.
func TestSharedLibrarySymbols(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shared library")
	}
	picLib := filepath.Join("..", "build", "pic", "lib")
	archives, _ := filepath.Glob(filepath.Join(picLib, "*.a"))
	if !slices.Contains(archives, filepath.Join(picLib, "libturbojpeg.a")) {
		t.Skipf("no %s/libturbojpeg.a: make pic-libs builds the image libraries (Debian's static ones cannot go into a shared object)", picLib)
	}
	so := filepath.Join(t.TempDir(), "libtriton_sluice.so")
	cmd := exec.Command(goTool(), "build", "-buildmode=c-shared", "-ldflags="+backendLDFlags(t), "-o", so, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared: %v\n%s", err, out)
	}

	var triton []string
	for _, s := range nm(t, "--undefined-only", so) {
		name, version, _ := strings.Cut(s.name, "@")
		switch {
		case strings.HasPrefix(name, "TRITONSERVER_") || strings.HasPrefix(name, "TRITONBACKEND_"):
			triton = append(triton, name)
			if s.kind != "w" {
				t.Errorf("%s is undefined with type %q, want weak (w): see triton.h", name, s.kind)
			}
		case strings.HasPrefix(version, "GLIBC_"):
		case slices.Contains(toolchainWeak, name) && s.kind == "w":
		default:
			t.Errorf("unexpected undefined symbol %s (type %s): only Triton's functions and glibc's may be", s.name, s.kind)
		}
	}
	slices.Sort(triton)
	want := tritonSymbols()
	slices.Sort(want)
	if !slices.Equal(triton, want) {
		t.Errorf("undefined Triton symbols differ from shim.c's list (which TRITONBACKEND_Initialize checks):\n got %v\nwant %v", triton, want)
	}

	exported := map[string]string{}
	for _, s := range nm(t, "--defined-only", so) {
		exported[s.name] = s.kind
	}
	for _, e := range entryPoints {
		if kind := exported[e]; kind != "T" {
			t.Errorf("entry point %s: exported with type %q, want T", e, kind)
		}
	}
	// A library symbol in the dynamic table could bind to another copy of
	// that library in the process (or lend ours to it).
	for _, a := range archives {
		var leaked []string
		for _, name := range archiveSymbols(t, a) {
			if _, ok := exported[name]; ok {
				leaked = append(leaked, name)
			}
		}
		if len(leaked) > 0 {
			t.Errorf("the library exports %d symbols of %s, e.g. %v: they should stay local (--exclude-libs)",
				len(leaked), filepath.Base(a), leaked[:min(len(leaked), 5)])
		}
	}

	f, err := elf.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	needed, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range needed {
		if !slices.Contains(allowedNeeded, lib) {
			t.Errorf("the library needs %s; it may need only %v", lib, allowedNeeded)
		}
	}
}

type symbol struct{ kind, name string }

// backendLDFlags is the Makefile's BACKEND_LDFLAGS, so this test builds
// the library as make backend does.
func backendLDFlags(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mk), "\n") {
		if v, ok := strings.CutPrefix(line, "BACKEND_LDFLAGS := "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("the Makefile sets no BACKEND_LDFLAGS")
	return ""
}

// archiveSymbols lists the global symbols a static archive defines.
func archiveSymbols(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command("nm", "--defined-only", "--extern-only", "--format=posix", path).Output()
	if err != nil {
		t.Fatalf("nm %s: %v", path, err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		// "name type value size"; member headers end in ':' and have one field.
		if f := strings.Fields(line); len(f) >= 2 && !strings.HasSuffix(f[0], ":") {
			names = append(names, f[0])
		}
	}
	if len(names) == 0 {
		t.Fatalf("nm %s listed no symbols", path)
	}
	return names
}

// nm lists the dynamic symbols of a shared object: "nm -D <flag>", one
// "[address] type name[@version]" per line.
func nm(t *testing.T, flag, path string) []symbol {
	t.Helper()
	out, err := exec.Command("nm", "-D", flag, path).Output()
	if err != nil {
		t.Fatalf("nm -D %s: %v", flag, err)
	}
	var syms []symbol
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		syms = append(syms, symbol{kind: f[len(f)-2], name: f[len(f)-1]})
	}
	if len(syms) == 0 {
		t.Fatalf("nm -D %s %s listed nothing", flag, path)
	}
	return syms
}

// goTool is the go command running this test.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(build.Default.GOROOT, "bin", "go")
}
