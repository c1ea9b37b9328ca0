package kernels

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// sourceHash is scripts/ptx.sh's hash of the kernel sources: sha256 over
// kernels/*.cu and *.cuh sorted by name, each as its name, NUL, its size in
// decimal, NUL, its bytes.
func sourceHash(t *testing.T) string {
	t.Helper()
	var names []string
	for _, pat := range []string{"*.cu", "*.cuh"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m...)
	}
	if len(names) == 0 {
		t.Fatal("no kernels/*.cu sources")
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(n + "\x00" + strconv.Itoa(len(b)) + "\x00"))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestPTXCurrent(t *testing.T) {
	first, _, _ := bytes.Cut(PTX, []byte("\n"))
	const prefix = "// sluice-source-sha256: "
	got, ok := strings.CutPrefix(string(first), prefix)
	if !ok {
		t.Fatalf("kernels/sluice.ptx does not start with %q: run make ptx", prefix)
	}
	if want := sourceHash(t); got != want {
		t.Fatalf("kernels/sluice.ptx is stale against kernels/*.cu: run make ptx (PTX built from %s, sources are %s)", got, want)
	}
}

func TestCubinCurrent(t *testing.T) {
	side, err := os.ReadFile("sluice_sm90.cubin.sha256")
	if err != nil {
		t.Fatalf("%v: run make ptx", err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(side)), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		fields[k] = v
	}
	if want := sourceHash(t); fields["sluice-source-sha256"] != want {
		t.Errorf("kernels/sluice_sm90.cubin is stale against kernels/*.cu: run make ptx (built from %q, sources are %s)", fields["sluice-source-sha256"], want)
	}
	sum := sha256.Sum256(Cubin)
	if got := hex.EncodeToString(sum[:]); fields["cubin-sha256"] != got {
		t.Errorf("kernels/sluice_sm90.cubin.sha256 names cubin %q, the embedded one is %s: run make ptx", fields["cubin-sha256"], got)
	}
	// An ELF image for the GPU (EM_CUDA, 190), not text.
	if len(Cubin) < 20 || string(Cubin[:4]) != "\x7fELF" || Cubin[18] != 190 {
		t.Errorf("kernels/sluice_sm90.cubin is not a CUDA ELF image")
	}
}

func TestPTXEntryAndTarget(t *testing.T) {
	for _, name := range []string{"sluice_fused", "sluice_ycc", "sluice_idct"} {
		if !regexp.MustCompile(`(?m)^\.visible \.entry ` + name + `\(`).Match(PTX) {
			t.Errorf("the PTX declares no .entry %s", name)
		}
	}
	m := regexp.MustCompile(`(?m)^\.target sm_(\d+)`).FindSubmatch(PTX)
	if m == nil {
		t.Fatal("the PTX has no .target line")
	}
	// The PTX must JIT on every GPU from Volta on.
	if sm, _ := strconv.Atoi(string(m[1])); sm > 70 {
		t.Errorf("the PTX targets sm_%d; build it for compute_70 so that Volta and later load it", sm)
	}
}

// sameField reports whether C field c mirrors Go field g: src_pitch and
// SrcPitch, dtype and DType.
func sameField(c, g string) bool {
	return strings.EqualFold(strings.ReplaceAll(c, "_", ""), g)
}

// TestLayoutMatchesC checks the Go mirrors against every size and offset
// that fused.cu's static_asserts pin down, and requires the asserts to
// cover the structs' sizes and at least a few fields of each.
func TestLayoutMatchesC(t *testing.T) {
	src, err := os.ReadFile("fused.cu")
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]uintptr{
		"sluice_sample": unsafe.Sizeof(Sample{}),
		"sluice_params": unsafe.Sizeof(Params{}),
		"sluice_ycc":    unsafe.Sizeof(YCC{}),
		"sluice_idct":   unsafe.Sizeof(IDCT{}),
	}
	types := map[string]reflect.Type{
		"sluice_sample": reflect.TypeFor[Sample](),
		"sluice_params": reflect.TypeFor[Params](),
		"sluice_ycc":    reflect.TypeFor[YCC](),
		"sluice_idct":   reflect.TypeFor[IDCT](),
	}
	sizeRe := regexp.MustCompile(`static_assert\(sizeof\((\w+)\) == (\d+)`)
	offRe := regexp.MustCompile(`static_assert\(offsetof\((\w+), (\w+)\) == (\d+)`)
	seenSize := map[string]bool{}
	for _, m := range sizeRe.FindAllStringSubmatch(string(src), -1) {
		want, _ := strconv.Atoi(m[2])
		got, ok := sizes[m[1]]
		if !ok {
			t.Errorf("fused.cu asserts the size of %s, which has no Go mirror here", m[1])
			continue
		}
		seenSize[m[1]] = true
		if int(got) != want {
			t.Errorf("sizeof(%s) = %d in fused.cu, the Go mirror has %d", m[1], want, got)
		}
	}
	offsets := map[string]int{}
	for _, m := range offRe.FindAllStringSubmatch(string(src), -1) {
		want, _ := strconv.Atoi(m[3])
		typ, ok := types[m[1]]
		if !ok {
			t.Errorf("fused.cu asserts an offset in %s, which has no Go mirror here", m[1])
			continue
		}
		found := false
		for i := range typ.NumField() {
			f := typ.Field(i)
			if sameField(m[2], f.Name) {
				found = true
				if int(f.Offset) != want {
					t.Errorf("offsetof(%s, %s) = %d in fused.cu, Go's %s is at %d", m[1], m[2], want, f.Name, f.Offset)
				}
			}
		}
		if !found {
			t.Errorf("fused.cu asserts offsetof(%s, %s), a field the Go mirror lacks", m[1], m[2])
		}
		offsets[m[1]]++
	}
	for name := range sizes {
		if !seenSize[name] {
			t.Errorf("fused.cu has no static_assert on sizeof(%s)", name)
		}
		if offsets[name] < 3 {
			t.Errorf("fused.cu asserts %d offsets of %s; want at least 3", offsets[name], name)
		}
	}
	if s, p, y, d := unsafe.Sizeof(Sample{}), unsafe.Sizeof(Params{}), unsafe.Sizeof(YCC{}), unsafe.Sizeof(IDCT{}); s != 96 || p != 84 || y != 72 || d != 176 {
		t.Errorf("Sample is %d bytes, Params %d, YCC %d, IDCT %d; the spec says 96, 84, 72 and 176", s, p, y, d)
	}
}

func TestChecks(t *testing.T) {
	good := Sample{Src: 1, Dst: 2, SrcH: 4, SrcW: 5, SrcPitch: 15, SrcC: 3, Orient: 1,
		WinH: 4, WinW: 5, RsH: 2, RsW: 2, OutH: 2, OutW: 2}
	if err := good.Check(); err != nil {
		t.Errorf("good sample: %v", err)
	}
	for _, bad := range []func(*Sample){
		func(s *Sample) { s.SrcPitch = 14 },
		func(s *Sample) { s.SrcC = 2 },
		func(s *Sample) { s.Orient = 9 },
		func(s *Sample) { s.RsW = 0 },
		func(s *Sample) { s.Src = 0 },
		func(s *Sample) { s.BoxY0, s.BoxX0, s.BoxY1, s.BoxX1 = 0, 0, 4.5, 5 }, // past the window
		func(s *Sample) { s.BoxY0, s.BoxX0, s.BoxY1, s.BoxX1 = 2, 1, 2, 5 },   // empty
	} {
		s := good
		bad(&s)
		if s.Check() == nil {
			t.Errorf("%+v passes Check", s)
		}
	}
	p := Params{Interp: InterpCubic, OutC: 3, Layout: LayoutHWC, DType: DTypeFloat16, SrcChan: [4]int32{2, 1, 0, 0}}
	if err := p.Check(); err != nil {
		t.Errorf("good params: %v", err)
	}
	p.SrcChan[1] = -1
	if p.Check() == nil {
		t.Error("source channel -1 passes Check")
	}
	var f *Fused
	if err := f.Launch(0, &p, 1, 1, 1, 1); err == nil {
		t.Error("Launch on a nil kernel succeeded")
	}
	if err := f.LaunchYCC(0, 1, 1, 1, 1); err == nil {
		t.Error("LaunchYCC on a nil kernel succeeded")
	}
	ycc := YCC{Y: 1, Cb: 2, Cr: 3, Dst: 4, W: 17, H: 13, YPitch: 17, CPitch: 9, CW: 9, CH: 7, SubX: 2, SubY: 2, DstPitch: 51}
	if err := ycc.Check(); err != nil {
		t.Errorf("good YCbCr image: %v", err)
	}
	for _, bad := range []func(*YCC){
		func(m *YCC) { m.CW = 8 },
		func(m *YCC) { m.CH = 6 },
		func(m *YCC) { m.CPitch = 8 },
		func(m *YCC) { m.YPitch = 16 },
		func(m *YCC) { m.DstPitch = 50 },
		func(m *YCC) { m.SubX = 4 },
		func(m *YCC) { m.SubY = 0 },
		func(m *YCC) { m.Cr = 0 },
		func(m *YCC) { m.W = 0 },
	} {
		m := ycc
		bad(&m)
		if m.Check() == nil {
			t.Errorf("%+v passes Check", m)
		}
	}
	if b := Bytes([]YCC{ycc, ycc}); len(b) != 144 || b[72] != 1 {
		t.Errorf("Bytes gives %d bytes", len(b))
	}
	if err := f.LaunchIDCT(0, 1, 1, 1); err == nil {
		t.Error("LaunchIDCT on a nil kernel succeeded")
	}
	idct := IDCT{Coef: 1, Dst: 2, Pitch: 4, BlocksW: 3, BlocksH: 2, W: 17, H: 9, DstPitch: 17}
	if err := idct.Check(); err != nil {
		t.Errorf("good IDCT component: %v", err)
	}
	for _, bad := range []func(*IDCT){
		func(m *IDCT) { m.Pitch = 2 },
		func(m *IDCT) { m.W = 25 },
		func(m *IDCT) { m.H = 17 },
		func(m *IDCT) { m.DstPitch = 16 },
		func(m *IDCT) { m.BlocksH = 0 },
		func(m *IDCT) { m.First = -1 },
		func(m *IDCT) { m.Coef = 0 },
	} {
		m := idct
		bad(&m)
		if m.Check() == nil {
			t.Errorf("%+v passes Check", m)
		}
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close of a nil kernel: %v", err)
	}
}
