package npy

import (
	"bytes"
	"slices"
	"testing"

	"github.com/sluice-dev/sluice/ops"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		dt    ops.DType
		shape []int
	}{
		{ops.Uint8, []int{2, 3, 3}},
		{ops.Float32, []int{3, 4, 5}},
		{ops.Float16, []int{7}},
		{ops.Float32, []int{2}},
	} {
		n := tc.dt.Size()
		for _, d := range tc.shape {
			n *= d
		}
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 7)
		}
		var buf bytes.Buffer
		if err := Write(&buf, tc.dt, tc.shape, data); err != nil {
			t.Fatal(err)
		}
		if hl := 10 + int(buf.Bytes()[8]) + int(buf.Bytes()[9])<<8; hl%64 != 0 {
			t.Errorf("%v %v: header ends at %d, not a multiple of 64", tc.dt, tc.shape, hl)
		}
		dt, shape, got, err := Read(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if dt != tc.dt || !slices.Equal(shape, tc.shape) || !bytes.Equal(got, data) {
			t.Errorf("round trip of %v %v gave %v %v", tc.dt, tc.shape, dt, shape)
		}
	}
}

func TestWriteRejectsWrongSize(t *testing.T) {
	if err := Write(&bytes.Buffer{}, ops.Float32, []int{2, 2}, make([]byte, 15)); err == nil {
		t.Fatal("15 bytes for a 2x2 float32 array was accepted")
	}
}

func TestReadRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("hello world"), append([]byte("\x93NUMPY\x01\x00\xff\x00"), "{}"...)} {
		if _, _, _, err := Read(b); err == nil {
			t.Errorf("Read(%q) succeeded", b)
		}
	}
}
