package gpu

import (
	"bytes"
	"testing"

	"github.com/sluice-dev/sluice/internal/gputest"
)

// growPinned keeps what it is told to keep when it grows, and keeps the
// buffer when it is large enough already.
func TestGPUGrowPinned(t *testing.T) {
	gputest.Context(t)
	var b []byte
	defer freePinned(&b)
	if err := growPinned(&b, 100, 0); err != nil {
		t.Fatal(err)
	}
	if len(b) < 100 {
		t.Fatalf("asked for 100 bytes, got %d", len(b))
	}
	for i := range b {
		b[i] = byte(i)
	}
	before := &b[0]
	if err := growPinned(&b, 50, 50); err != nil || &b[0] != before {
		t.Fatalf("a large enough buffer was replaced (err %v)", err)
	}
	want := bytes.Clone(b[:60])
	if err := growPinned(&b, 1<<20, 60); err != nil {
		t.Fatal(err)
	}
	if len(b) < 1<<20 || &b[0] == before {
		t.Fatalf("asked for 1 MiB, got %d bytes in the same place", len(b))
	}
	if !bytes.Equal(b[:60], want) {
		t.Errorf("the 60 bytes to keep changed: % x, want % x", b[:60], want)
	}
	freePinned(&b)
	if b != nil {
		t.Error("freePinned left the buffer")
	}
}
