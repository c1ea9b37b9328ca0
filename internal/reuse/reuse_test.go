package reuse

import "testing"

func TestLenReusesAndZeroedClears(t *testing.T) {
	s := Len[int](nil, 4)
	if len(s) != 4 || cap(s) != 4 {
		t.Fatalf("len %d cap %d, want 4 4", len(s), cap(s))
	}
	s[0] = 7
	if r := Len(s, 2); &r[0] != &s[0] || r[0] != 7 {
		t.Error("Len did not reuse the array and keep its elements")
	}
	if z := Zeroed(s, 3); &z[0] != &s[0] || z[0] != 0 {
		t.Error("Zeroed did not reuse and clear the array")
	}
	if g := Len(s, 5); &g[0] == &s[0] || len(g) != 5 {
		t.Error("Len did not allocate past the capacity")
	}
	if r := Room[byte](nil, 100); len(r) != 100 || cap(r) != 125 {
		t.Errorf("Room: len %d cap %d, want 100 125", len(r), cap(r))
	}
}
