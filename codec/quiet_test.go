package codec

import (
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestNativeDecodersQuiet: libtiff and OpenJPEG report through the handlers
// set per handle, never on the process's stderr (Triton's log), even for
// broken inputs. Garbled copies of the test files are decoded with file
// descriptor 2 pointing at a file, which must stay empty.
func TestNativeDecodersQuiet(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "formats"))
	if err != nil {
		t.Fatal(err)
	}
	var inputs [][]byte
	rng := rand.New(rand.NewSource(1))
	for _, e := range entries {
		src := readFormatFile(t, e.Name())
		inputs = append(inputs, src, src[:len(src)/2], src[:len(src)-1])
		for i := 0; i < 20; i++ {
			bad := append([]byte(nil), src...)
			for j := 0; j < 1+i; j++ {
				bad[12+rng.Intn(len(bad)-12)] = byte(rng.Intn(256))
			}
			inputs = append(inputs, bad)
		}
	}
	log, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup3(int(log.Fd()), 2, 0); err != nil {
		t.Fatal(err)
	}
	failed := 0
	d := NewDecoder()
	for _, src := range inputs {
		if h, err := d.Header(src, LimitsFor(1<<20)); err != nil {
			failed++
		} else if err := d.Decode(make([]byte, 3*h.Width*h.Height), src, h, Options{}); err != nil {
			failed++
		}
	}
	d.Close()
	syscall.Dup3(saved, 2, 0)
	syscall.Close(saved)
	out, _ := os.ReadFile(log.Name())
	t.Logf("%d inputs, %d failed", len(inputs), failed)
	if failed == 0 {
		t.Fatal("no input failed: the garbling does not reach the decoders")
	}
	if len(out) > 0 {
		t.Errorf("decoders wrote to stderr:\n%s", out)
	}
}
