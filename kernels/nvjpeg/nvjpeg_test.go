package nvjpeg

import (
	"cmp"
	"errors"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

func TestImageLayout(t *testing.T) {
	// nvjpegImage_t: unsigned char *channel[4]; size_t pitch[4].
	var im Image
	if got := unsafe.Sizeof(im); got != 64 {
		t.Errorf("sizeof(Image) = %d, want 64", got)
	}
	if got := unsafe.Offsetof(im.Channel); got != 0 {
		t.Errorf("offsetof(Channel) = %d, want 0", got)
	}
	if got := unsafe.Offsetof(im.Pitch); got != 32 {
		t.Errorf("offsetof(Pitch) = %d, want 32", got)
	}
	if got := unsafe.Alignof(im); got != 8 {
		t.Errorf("alignof(Image) = %d, want 8", got)
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{Call: "nvjpegDecodeBatched", Status: StatusBadJPEG}
	if got, want := e.Error(), "nvjpegDecodeBatched: NVJPEG_STATUS_BAD_JPEG (3)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &Error{Call: "nvjpegCreateEx", Status: 42}
	if got, want := e.Error(), "nvjpegCreateEx: nvjpegStatus_t(42) (42)"; got != want {
		t.Errorf("Error() of an unknown status = %q, want %q", got, want)
	}
	wrapped := errors.Join(errors.New("batch 3"), &Error{Call: "nvjpegCreateEx", Status: StatusArchMismatch})
	if !IsStatus(wrapped, StatusArchMismatch) || IsStatus(wrapped, StatusBadJPEG) {
		t.Errorf("IsStatus does not see through wrapping: %v", wrapped)
	}
}

func TestStatusNames(t *testing.T) {
	for s := StatusSuccess; s <= StatusIncompleteBitstream; s++ {
		if !strings.HasPrefix(s.String(), "NVJPEG_STATUS_") {
			t.Errorf("status %d has no name: %q", int(s), s)
		}
	}
	if got := Status(-1).String(); got != "nvjpegStatus_t(-1)" {
		t.Errorf("Status(-1) = %q", got)
	}
}

// headerText reads nvjpeg.h, from SLUICE_NVJPEG_H or the toolkit's usual place; the header is
// not in the repository (make cuda-headers fetches CUDA 12's and 13's, and make gotest runs
// these tests against both). Without it the test skips, unless SLUICE_NVJPEG_H names it.
func headerText(t *testing.T) string {
	t.Helper()
	path := os.Getenv("SLUICE_NVJPEG_H")
	src, err := os.ReadFile(cmp.Or(path, "/usr/local/cuda/include/nvjpeg.h"))
	switch {
	case err != nil && path != "":
		t.Fatalf("SLUICE_NVJPEG_H: %v", err)
	case err != nil:
		t.Skipf("no nvjpeg.h (set SLUICE_NVJPEG_H): %v", err)
	}
	return string(src)
}

// header reads nvjpeg.h's "NAME = value" enumerators with the given prefix.
func header(t *testing.T, prefix string) map[string]int {
	t.Helper()
	src := headerText(t)
	re := regexp.MustCompile(`(?m)^\s*(` + prefix + `\w+)\s*=\s*(-?\d+)`)
	out := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		v, _ := strconv.Atoi(m[2])
		out[m[1]] = v
	}
	if len(out) == 0 {
		t.Fatalf("nvjpeg.h: no %s enumerators", prefix)
	}
	return out
}

func TestStatusTableCoversHeader(t *testing.T) {
	for name, v := range header(t, "NVJPEG_STATUS_") {
		if got := Status(v).String(); got != name {
			t.Errorf("Status(%d) = %q, header says %s", v, got, name)
		}
	}
}

func TestConstantsMatchHeader(t *testing.T) {
	check := func(prefix string, ours map[string]int) {
		h := header(t, prefix)
		for name, v := range ours {
			if hv, ok := h[prefix+name]; !ok || hv != v {
				t.Errorf("%s%s: ours %d, header %d (present %v)", prefix, name, v, hv, ok)
			}
		}
	}
	check("NVJPEG_BACKEND_", map[string]int{
		"DEFAULT": int(Default), "HYBRID": int(Hybrid), "GPU_HYBRID": int(GPUHybrid),
		"HARDWARE": int(Hardware), "GPU_HYBRID_DEVICE": int(GPUHybridDevice),
		"HARDWARE_DEVICE": int(HardwareDevice), "LOSSLESS_JPEG": int(LosslessJPEG),
	})
	check("NVJPEG_OUTPUT_", map[string]int{
		"UNCHANGED": int(OutputUnchanged), "YUV": int(OutputYUV), "Y": int(OutputY),
		"RGB": int(OutputRGB), "BGR": int(OutputBGR), "RGBI": int(OutputRGBI), "BGRI": int(OutputBGRI),
		"UNCHANGEDI_U16": int(OutputUnchangedIU16), "NV12": int(OutputNV12), "YUY2": int(OutputYUY2),
	})
	check("NVJPEG_CSS_", map[string]int{
		"444": int(CSS444), "422": int(CSS422), "420": int(CSS420), "440": int(CSS440),
		"411": int(CSS411), "410": int(CSS410), "GRAY": int(CSSGray), "410V": int(CSS410V),
		"UNKNOWN": int(CSSUnknown),
	})
}

// TestSymbolsDeclared: every function we bind is declared by the header, with as many
// parameters as our signature takes.
func TestSymbolsDeclared(t *testing.T) {
	src := headerText(t)
	decl := regexp.MustCompile(`nvjpegStatus_t\s+NVJPEGAPI\s+(nvjpeg\w+)\s*\(([^)]*)\)\s*;`)
	params := map[string]string{}
	for _, m := range decl.FindAllStringSubmatch(src, -1) {
		params[m[1]] = strings.Join(strings.Fields(m[2]), " ")
	}
	for _, s := range symbols() {
		p, ok := params[s.name]
		if !ok {
			t.Errorf("header declares no %s", s.name)
			continue
		}
		if n, in := len(strings.Split(p, ",")), reflect.TypeOf(s.fn).Elem().NumIn(); n != in {
			t.Errorf("%s: header declares %d parameters (%s), ours takes %d", s.name, n, p, in)
		}
	}
}

func TestLoadNamesEveryFileTried(t *testing.T) {
	names := []string{"libnvjpeg-sluice-missing.so.13", "libnvjpeg-sluice-missing.so.12"}
	err := load(names)
	want := "nvJPEG unavailable: tried libnvjpeg-sluice-missing.so.13, libnvjpeg-sluice-missing.so.12: "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("load of missing libraries = %v, want prefix %q", err, want)
	}
	// The reason is the last dlopen's.
	if !strings.Contains(err.Error()[len(want):], "libnvjpeg-sluice-missing.so.12") {
		t.Errorf("reason is not the last file's: %v", err)
	}
}

func TestInit(t *testing.T) {
	err := Init()
	if err2 := Init(); err2 != err {
		t.Errorf("second Init = %v, first %v", err2, err)
	}
	present := false
	for _, n := range libNames {
		if _, e := purego.Dlopen(n, purego.RTLD_NOW); e == nil {
			present = true
		}
	}
	if !present {
		want := "nvJPEG unavailable: tried libnvjpeg.so.13, libnvjpeg.so.12, libnvjpeg.so.11: "
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Init without nvJPEG = %v, want prefix %q", err, want)
		}
		if a, b, c := Version(); a|b|c != 0 {
			t.Errorf("Version without nvJPEG = %d.%d.%d", a, b, c)
		}
		if _, e := NewHandle(Default); e != err {
			t.Errorf("NewHandle without nvJPEG = %v, want Init's error", e)
		}
		return
	}
	if err != nil {
		t.Fatalf("nvJPEG is installed but Init failed: %v", err)
	}
	major, minor, patch := Version()
	if major < 11 {
		t.Errorf("Version() = %d.%d.%d", major, minor, patch)
	}
	t.Logf("nvJPEG %d.%d.%d", major, minor, patch)
	// Calls on closed objects are errors, not crashes.
	var h *Handle
	if _, e := h.ImageInfo([]byte{0xff, 0xd8}); e == nil {
		t.Error("ImageInfo on a nil handle succeeded")
	}
	if e := h.Close(); e != nil {
		t.Errorf("Close of a nil handle: %v", e)
	}
	var js *JpegStream
	if css, e := js.Subsampling(); e == nil || css != CSSUnknown {
		t.Errorf("Subsampling of a nil stream = %v, %v; want an error", css, e)
	}
}
