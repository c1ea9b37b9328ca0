package codec

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sluice-dev/sluice/internal/testimg"
)

// ReadJPEGEntropy against CoefDecoder's frame, and its restart intervals
// against the file's RSTn markers; what it refuses, refused as
// Unsupported. kernels' Huffman tests check the facts decode to
// CoefDecoder's coefficients.
func TestJPEGEntropy(t *testing.T) {
	rgb := make([]byte, 99*61*3)
	for i := range rgb {
		rgb[i] = byte(i * 7 % 251)
	}
	dec, err := NewCoefDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, o := range []testimg.LibJPEGOptions{
		{Quality: 90}, {Quality: 90, Luma: [2]int{2, 1}, Restart: 3}, {Quality: 70, Luma: [2]int{1, 2}, Restart: 1},
		{Quality: 80, Grey: true, Restart: 5}, {Quality: 95, Luma: [2]int{1, 1}},
	} {
		src, err := testimg.LibJPEG(rgb, 99, 61, o)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadJPEGEntropy(src)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		blocks, err := dec.Frame(src)
		if err != nil {
			t.Fatal(err)
		}
		if f.Blocks != blocks || len(f.Comps) != dec.Components() || f.Restart != o.Restart {
			t.Fatalf("%+v: %d blocks, %d components, restart %d; CoefDecoder's %d, %d", o, f.Blocks, len(f.Comps), f.Restart, blocks, dec.Components())
		}
		for i, c := range f.Comps {
			cc := dec.Component(i)
			if c.H != cc.H || c.V != cc.V || c.BlocksW != cc.BlocksW || c.BlocksH != cc.BlocksH || c.Pitch != cc.Pitch || c.First != cc.First || c.W != cc.W || c.Height != cc.Height {
				t.Fatalf("%+v: component %d %+v, CoefDecoder's %+v", o, i, c, cc)
			}
		}
		want := 1
		if o.Restart > 0 {
			want = (f.MCUX*f.MCUY + o.Restart - 1) / o.Restart
		}
		if len(f.Segments) != want {
			t.Fatalf("%+v: %d segments, want %d", o, len(f.Segments), want)
		}
		for k, s := range f.Segments {
			if k > 0 && (src[s.Start-2] != 0xFF || src[s.Start-1] != byte(0xD0+(k-1)%8)) {
				t.Fatalf("%+v: segment %d does not follow RST%d", o, k, (k-1)%8)
			}
			if src[s.End] != 0xFF || src[s.End+1] == 0 || bytes.Contains(bytes.ReplaceAll(src[s.Start:s.End], []byte{0xFF, 0}, nil), []byte{0xFF}) {
				t.Fatalf("%+v: segment %d [%d, %d) holds a marker or ends elsewhere", o, k, s.Start, s.End)
			}
		}
	}
	unsupported := func(name string, src []byte) {
		_, err := ReadJPEGEntropy(src)
		var e *Error
		if !errors.As(err, &e) || e.Cause != Unsupported {
			t.Errorf("%s: %v, want Unsupported", name, err)
		}
	}
	prog, err := testimg.LibJPEG(rgb, 99, 61, testimg.LibJPEGOptions{Quality: 90, Scans: testimg.SimpleProgression})
	if err != nil {
		t.Fatal(err)
	}
	unsupported("progressive", prog)
	multi, err := testimg.LibJPEG(rgb, 99, 61, testimg.LibJPEGOptions{Quality: 90, Scans: []testimg.Scan{{Comps: []int{0}, Se: 63}, {Comps: []int{1, 2}, Se: 63}}})
	if err != nil {
		t.Fatal(err)
	}
	unsupported("two scans", multi)
	arith, err := testimg.LibJPEG(rgb, 99, 61, testimg.LibJPEGOptions{Quality: 90, Arithmetic: true})
	if err != nil {
		t.Fatal(err)
	}
	unsupported("arithmetic", arith)
	// A missing restart marker fails, as CoefDecoder fails.
	rst, err := testimg.LibJPEG(rgb, 99, 61, testimg.LibJPEGOptions{Quality: 90, Restart: 2})
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(rst, []byte{0xFF, 0xD0})
	rst[i+1] = 0x00
	if _, err := ReadJPEGEntropy(rst); err == nil {
		t.Error("a JPEG missing a restart marker read")
	}
}

// BenchmarkReadJPEGEntropy: the host's part of the SMs' route for one
// ImageNet-size photo (its facts, walking its entropy-coded data once).
func BenchmarkReadJPEGEntropy(b *testing.B) {
	const w, h = 500, 375
	rgb := make([]byte, w*h*3)
	for i := range rgb {
		rgb[i] = byte(i*7%251 ^ i/w*13)
	}
	src, err := testimg.LibJPEG(rgb, w, h, testimg.LibJPEGOptions{Quality: 92})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := ReadJPEGEntropy(src); err != nil {
			b.Fatal(err)
		}
	}
}
