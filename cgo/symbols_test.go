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

// Libraries the backend may need at run time: the C library's parts.
// libturbojpeg in particular must not be one: Triton's images lack it.
var allowedNeeded = []string{"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"}

// TestSharedLibrarySymbols builds the backend as make backend does and
// checks what it needs from the process that loads it: Triton's functions
// (weak, bound at dlopen, exactly those triton.h declares) and glibc,
// nothing else; and that it exports every entry point.
func TestSharedLibrarySymbols(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shared library")
	}
	pic := filepath.Join("..", "build", "turbojpeg-pic", "libturbojpeg.a")
	if _, err := os.Stat(pic); err != nil {
		t.Skipf("no %s: make turbojpeg-pic builds it (Debian's libturbojpeg.a cannot go into a shared object)", pic)
	}
	so := filepath.Join(t.TempDir(), "libtriton_sluice.so")
	cmd := exec.Command(goTool(), "build", "-buildmode=c-shared", "-o", so, ".")
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
