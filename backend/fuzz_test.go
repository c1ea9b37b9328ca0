package backend

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"testing"

	"github.com/sluice-dev/sluice/internal/testimg"
)

// The fuzzed bytes describe one Execute call. Byte 0 gives the number of
// requests (1 to 4); then, for each request and each model input (A, then
// B), a record:
//
//	tag      1 byte: bits 0-1 the data type (0: the input is missing,
//	         1: UINT8, 2: BYTES, 3: FP32); bits 2-3 the shape (0: [B, N]
//	         with N = data bytes / B, 1: [B], 2: [B, N, 1], 3: two int32
//	         dims read from the record)
//	B        1 byte, the batch dimension (0 to 255)
//	[dims]   2 × int32 little-endian, with shape form 3
//	length   uint16 little-endian, then that many data bytes (fewer
//	         when the input ends)
//
// Anything missing reads as zero, so every input is a valid description.
var fuzzDataTypes = [4]string{"", "UINT8", "BYTES", "FP32"}

// fuzzReader reads a fuzz description, zeros past its end.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) next(n int) []byte {
	n = min(n, len(r.b))
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *fuzzReader) byte() byte {
	if b := r.next(1); len(b) == 1 {
		return b[0]
	}
	return 0
}

func (r *fuzzReader) uint(n int) uint64 {
	var buf [8]byte
	copy(buf[:], r.next(n))
	return binary.LittleEndian.Uint64(buf[:])
}

// fuzzRequests decodes a description into requests over the input names.
func fuzzRequests(data []byte, names []string) []Request {
	r := &fuzzReader{b: data}
	reqs := make([]Request, 1+int(r.byte()%4))
	for i := range reqs {
		req := &fakeRequest{inputs: map[string]Input{}}
		for _, name := range names {
			tag, b := r.byte(), int64(r.byte())
			var dims [2]int64
			if tag>>2&3 == 3 {
				dims[0], dims[1] = int64(int32(r.uint(4))), int64(int32(r.uint(4)))
			}
			x := Input{DataType: fuzzDataTypes[tag&3], Data: r.next(int(r.uint(2)))}
			switch tag >> 2 & 3 {
			case 0:
				n := int64(len(x.Data))
				if b > 0 {
					n /= b
				}
				x.Shape = []int64{b, n}
			case 1:
				x.Shape = []int64{b}
			case 2:
				x.Shape = []int64{b, int64(len(x.Data)), 1}
			case 3:
				x.Shape = dims[:]
			}
			if tag&3 != 0 {
				req.inputs[name] = x
			}
		}
		reqs[i] = req
	}
	return reqs
}

// fuzzRecord encodes one input record with the natural shape ([B, N] for
// UINT8, [B] for BYTES).
func fuzzRecord(x Input) []byte {
	tag := byte(1)
	if x.DataType == "BYTES" {
		tag = 2 | 1<<2
	}
	out := []byte{tag, byte(x.Shape[0])}
	out = binary.LittleEndian.AppendUint16(out, uint16(len(x.Data)))
	return append(out, x.Data...)
}

// fuzzCall encodes requests of (A, B) input pairs.
func fuzzCall(reqs ...[2]Input) []byte {
	out := []byte{byte(len(reqs) - 1)}
	for _, r := range reqs {
		out = append(out, fuzzRecord(r[0])...)
		out = append(out, fuzzRecord(r[1])...)
	}
	return out
}

// FuzzExecute drives the whole request path (collector, compiled
// pipeline, CPU executor, responder) of one instance with arbitrary
// requests: nothing may panic or fail as an internal error, and every
// request that succeeds gets all its outputs, sized for its batch. One
// instance serves every input, as in a server, so that state left behind
// by one call would show in later ones.
func FuzzExecute(f *testing.F) {
	small := 1 << 20 // pixels: keeps each decode, and the JPEG work budget, cheap
	cfg := editConfig(f, twoInputConfig, func(m map[string]any) {
		m["parameters"].(map[string]any)["max_image_pixels"] = map[string]any{"string_value": fmt.Sprint(small)}
	})
	m := mustLoad(f, modelDir(f, map[string][]byte{TextFile: []byte(twoInputPipeline)}), cfg)
	inst := mustInstance(f, m)
	names := []string{"A", "B"}

	jpg := testimg.JPEG(24, 16, 1)
	var pngBuf bytes.Buffer
	if err := png.Encode(&pngBuf, image.NewGray(image.Rect(0, 0, 5, 7))); err != nil {
		f.Fatal(err)
	}
	pix := make([]byte, 16*8*3)
	for i := range pix {
		pix[i] = byte(i * 13)
	}
	rgb, err := testimg.LibJPEG(pix, 16, 8, testimg.LibJPEGOptions{Quality: 90, RGB: true})
	if err != nil {
		f.Fatal(err)
	}
	scans := testimg.ManyScans(24, 16, 20)
	for _, seed := range [][]byte{
		fuzzCall([2]Input{rawInput(jpg), bytesInput(pngBuf.Bytes())}),
		fuzzCall([2]Input{rawInput(jpg, rgb), bytesInput(scans, jpg)}, [2]Input{rawInput(pngBuf.Bytes()), bytesInput(rgb)}),
		fuzzCall([2]Input{rawInput(jpg[:len(jpg)/2]), bytesInput(jpg)}),
		fuzzCall([2]Input{rawInput(testimg.ManyScans(16, 16, 501)), bytesInput([]byte("not an image"))}),
		{0, 0x0D, 1, 0xFF, 0xFF, 0xFF, 0x7F, 8, 0, 0, 0, 0, 0}, // A with dims [2147483647, 8]
	} {
		f.Add(seed)
	}
	resps := make([]*fakeResponse, 4)
	for i := range resps {
		resps[i] = newResponse()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs := fuzzRequests(data, names)
		rs := make([]Response, len(reqs))
		for i := range reqs {
			resps[i].reset()
			rs[i] = resps[i]
		}
		errs, st := inst.Execute(reqs, rs)
		if len(errs) != len(reqs) {
			t.Fatalf("%d errors for %d requests", len(errs), len(reqs))
		}
		for i, err := range errs {
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Code == CodeInternal || e.Msg == "" {
					t.Fatalf("request %d: %T %v", i, err, err)
				}
				continue
			}
			b := reqs[i].(*fakeRequest).inputs["A"].Shape[0]
			for _, o := range m.Outputs {
				out := resps[i].outputs[o.Name]
				want := append([]int64{b}, o.Dims...)
				if out == nil || fmt.Sprint(out.shape) != fmt.Sprint(want) {
					t.Fatalf("request %d: output %s is %+v, want shape %v", i, o.Name, out, want)
				}
				size := b // the outputs are UINT8: one byte per element
				for _, d := range o.Dims {
					size *= d
				}
				if n := int64(len(out.data)); n != size {
					t.Fatalf("request %d: output %s holds %d bytes for shape %v", i, o.Name, n, want)
				}
			}
		}
		if st.Samples < 0 || st.Samples > len(reqs)*255 {
			t.Fatalf("batch of %d samples", st.Samples)
		}
	})
}

// TestFuzzCall: the fuzz description of requests reads back as written,
// so that FuzzExecute's seeds are the well-formed calls they stand for.
func TestFuzzCall(t *testing.T) {
	jpg := testimg.JPEG(24, 16, 1)
	want := [][2]Input{{rawInput(jpg, jpg[:100]), bytesInput(jpg, nil)}, {rawInput(jpg), bytesInput([]byte("x"))}}
	want[1][1].Shape = want[1][1].Shape[:1] // the description's BYTES shape is [B]
	want[0][1].Shape = want[0][1].Shape[:1]
	reqs := fuzzRequests(fuzzCall(want...), []string{"A", "B"})
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	for i, r := range reqs {
		for k, name := range []string{"A", "B"} {
			got := r.(*fakeRequest).inputs[name]
			if fmt.Sprint(got.DataType, got.Shape) != fmt.Sprint(want[i][k].DataType, want[i][k].Shape) || !bytes.Equal(got.Data, want[i][k].Data) {
				t.Errorf("request %d input %s: got %s %v (%d bytes), want %s %v (%d bytes)", i, name,
					got.DataType, got.Shape, len(got.Data), want[i][k].DataType, want[i][k].Shape, len(want[i][k].Data))
			}
		}
	}
}
