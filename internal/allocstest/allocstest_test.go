package allocstest

import "testing"

var sink []byte

// TestPerRun: an allocation in every call is counted, none is zero.
func TestPerRun(t *testing.T) {
	if n := PerRun(t, 10, func() { sink = make([]byte, 64) }); n != 1 {
		t.Errorf("one allocation a call counted as %v", n)
	}
	buf := make([]byte, 64)
	if n := PerRun(t, 10, func() { sink = buf[:32] }); n != 0 {
		t.Errorf("no allocation counted as %v", n)
	}
}
