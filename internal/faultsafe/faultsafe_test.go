package faultsafe

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// mapFile maps a file of size bytes shared, as Triton maps a client's
// system shared-memory region, and returns the mapping and the file.
func mapFile(t *testing.T, size int) ([]byte, *os.File) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "region"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return b, f
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func TestCopyOfTruncatedMapping(t *testing.T) {
	const size = 1 << 20
	region, f := mapFile(t, size)
	for i := range region {
		region[i] = byte(i)
	}
	dst := make([]byte, size)
	if err := Copy(dst, region); err != nil {
		t.Fatalf("copy of an intact mapping: %v", err)
	}
	if dst[size-1] != byte((size-1)&0xff) {
		t.Fatal("copy did not copy")
	}
	// The client shrinks its region after registering it.
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	err := Copy(dst, region)
	if !errors.Is(err, ErrFault) {
		t.Fatalf("copy past the truncated end: %v, want ErrFault", err)
	}
	// The first page is still there.
	if err := Copy(dst[:4096], region[:4096]); err != nil {
		t.Fatalf("copy of the page left: %v", err)
	}
}

func TestVolatile(t *testing.T) {
	region, _ := mapFile(t, 3*4096)
	heap := make([]byte, 1<<20)
	var m Mappings
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	if !m.Volatile(addr(region), len(region)) {
		t.Error("a shared file mapping is not volatile")
	}
	if !m.Volatile(addr(region)+100, 1) {
		t.Error("a byte inside a shared file mapping is not volatile")
	}
	if m.Volatile(addr(heap), len(heap)) {
		t.Error("Go's heap is volatile")
	}
	if m.Volatile(addr(region), 0) {
		t.Error("an empty span is volatile")
	}
	// A span that starts on the heap and runs into nothing mapped is not
	// volatile; one ending inside the mapping is.
	if !m.Volatile(addr(region)-1, 2) {
		t.Error("a span reaching into the mapping is not volatile")
	}
}

func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{"7f0000000000-7f0000001000 rw-s 00000000 00:1a 1234 /dev/shm/region", true},
		{"7f0000000000-7f0000001000 r--p 00000000 08:01 99 /usr/lib/libc.so.6", true},
		{"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 ", false},
		{"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 [heap]", false},
		{"7f0000000000-7f0000001000 rw-s 00000000 00:01 0 /SYSV00000000 (deleted)", true},
		{"garbage", false},
	} {
		if _, ok := parseLine([]byte(c.line)); ok != c.ok {
			t.Errorf("%q: volatile %v, want %v", c.line, ok, c.ok)
		}
	}
}

// BenchmarkLoad: reading the mappings, once per Execute of a batch.
func BenchmarkLoad(b *testing.B) {
	var m Mappings
	for b.Loop() {
		if err := m.Load(); err != nil {
			b.Fatal(err)
		}
	}
}
