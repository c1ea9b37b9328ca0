package nvjpeg

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"runtime"
	"testing"

	"github.com/sluice-dev/sluice/internal/gputest"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// gpu makes device 0's primary context current on the test's thread, or
// skips without a GPU or nvJPEG.
func gpu(t *testing.T) {
	t.Helper()
	gputest.Context(t)
	if err := Init(); err != nil {
		t.Skipf("no nvJPEG: %v", err)
	}
}

// gradient is a 64x48 test image (colourJPEG) and the standard library's
// decoding of it.
func gradient(t *testing.T) ([]byte, *image.RGBA) {
	t.Helper()
	const w, h = 64, 48
	data := colourJPEG(t, w, h)
	dec, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ref := image.NewRGBA(dec.Bounds())
	for y := range h {
		for x := range w {
			ref.Set(x, y, dec.At(x, y))
		}
	}
	return data, ref
}

// colourJPEG is a w x h gradient, encoded by the standard library (always
// 4:2:0 for colour).
func colourJPEG(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), uint8(128 + x - y), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestGPUDecodeBatched(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gpu(t)
	data, ref := gradient(t)
	h, err := NewHandle(Default)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	decodeAndCompare(t, h, data, ref)

	if _, err := h.ImageInfo([]byte("not a jpeg at all")); err == nil {
		t.Error("ImageInfo of garbage succeeded")
	} else if _, ok := err.(*Error); !ok {
		t.Errorf("ImageInfo of garbage: %T %v, want *Error", err, err)
	}
}

// hardwareHandle opens the hardware backend (the JPEG engines) on the
// caller's locked thread, which closes it there; it skips the test without
// a GPU or without engines.
func hardwareHandle(t *testing.T) *Handle {
	t.Helper()
	gpu(t)
	h, err := NewHandle(Hardware)
	if IsStatus(err, StatusArchMismatch) || IsStatus(err, StatusJPEGNotSupported) ||
		IsStatus(err, StatusImplementationNotSupported) {
		t.Skipf("no hardware JPEG decoder on this GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestGPUHardwareBackend(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := hardwareHandle(t)
	defer h.Close()
	data, ref := gradient(t)
	js, err := h.NewJpegStream()
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	for _, headerOnly := range []bool{true, false} {
		if err := js.Parse(h, data, headerOnly); err != nil {
			t.Fatalf("Parse(headerOnly=%v): %v", headerOnly, err)
		}
		if css, err := js.Subsampling(); css != CSS420 || err != nil {
			t.Fatalf("Subsampling after Parse(headerOnly=%v) = %v, %v; want 4:2:0 (%v)", headerOnly, css, err, CSS420)
		}
		ok, err := h.BatchedSupported(js)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Skip("hardware decoder declines this image (too small?)")
		}
	}
	engines, cores, err := h.HardwareInfo()
	if err != nil || engines < 1 || cores < 1 {
		t.Fatalf("HardwareInfo = %d engines x %d cores, %v", engines, cores, err)
	}
	t.Logf("hardware JPEG decoder: %d engines x %d cores", engines, cores)
	decodeAndCompare(t, h, data, ref)
}

func decodeAndCompare(t *testing.T, h *Handle, data []byte, ref *image.RGBA) {
	t.Helper()
	if err := h.SetDeviceMemoryPadding(1 << 16); err != nil {
		t.Fatal(err)
	}
	if err := h.SetPinnedMemoryPadding(1 << 16); err != nil {
		t.Fatal(err)
	}
	info, err := h.ImageInfo(data)
	if err != nil {
		t.Fatal(err)
	}
	want := Info{Components: 3, Subsampling: CSS420, Widths: [4]int{64, 32, 32}, Heights: [4]int{48, 24, 24}}
	if info != want {
		t.Fatalf("ImageInfo = %+v, want %+v", info, want)
	}
	w, ht := info.Widths[0], info.Heights[0]

	st, err := h.NewState()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := h.BatchedInitialize(st, 1, 1, OutputRGBI); err != nil {
		t.Fatal(err)
	}
	stream, err := cuda.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Destroy()
	n := w * ht * 3
	dev, out := rgbBuffers(t, n)

	// The bitstream goes through pinned memory, as Bitstreams requires.
	src, err := cuda.MemHostAlloc(len(data))
	if err != nil {
		t.Fatal(err)
	}
	defer cuda.MemFreeHost(src)
	copy(src, data)
	var in Bitstreams
	in.Add(src[:len(data)])
	dst := []Image{{Channel: [4]uintptr{uintptr(dev)}, Pitch: [4]uint64{uint64(w * 3)}}}
	if err := h.DecodeBatched(st, &in, dst, stream); err != nil {
		t.Fatal(err)
	}
	if err := cuda.MemcpyDtoHAsync(out, dev, stream); err != nil {
		t.Fatal(err)
	}
	if err := stream.Synchronize(); err != nil {
		t.Fatal(err)
	}
	checkRGB(t, out, w, ht, ref)
}

// rgbBuffers allocates n bytes of device memory to decode into and n of
// pinned host memory to read them back, both freed at the test's end.
func rgbBuffers(t *testing.T, n int) (cuda.DevicePtr, []byte) {
	t.Helper()
	dev, err := cuda.MemAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cuda.MemFree(dev) })
	out, err := cuda.MemHostAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cuda.MemFreeHost(out) })
	return dev, out
}

// checkRGB compares an interleaved RGB decode with the standard library's.
func checkRGB(t *testing.T, out []byte, w, ht int, ref *image.RGBA) {
	t.Helper()
	var sum int
	for y := range ht {
		for x := range w {
			for c := range 3 {
				d := int(out[(y*w+x)*3+c]) - int(ref.Pix[y*ref.Stride+x*4+c])
				sum += max(d, -d)
			}
		}
	}
	mean := float64(sum) / float64(w*ht*3)
	t.Logf("mean |nvJPEG - image/jpeg| = %.3f", mean)
	if mean > 2 {
		t.Errorf("mean abs difference from the standard library's decode = %.3f, want <= 2", mean)
	}
}

// TestGPUDecoupled decodes through the decoupled API: Huffman on this
// thread, the rest on the GPU.
func TestGPUDecoupled(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gpu(t)
	if !Decoupled() {
		t.Skip("this nvJPEG has no decoupled API")
	}
	data, ref := gradient(t)
	h, err := NewHandle(Hybrid)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	dec, err := h.NewDecoder(Hybrid)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	st, err := dec.NewState(OutputRGBI)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stream, err := cuda.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Destroy()
	w, ht := ref.Rect.Dx(), ref.Rect.Dy()
	n := w * ht * 3
	dev, out := rgbBuffers(t, n)
	dst := Image{Channel: [4]uintptr{uintptr(dev)}, Pitch: [4]uint64{uint64(w * 3)}}
	for range 2 { // the second time on a used state
		clear(out)
		if err := st.Decode(data, &dst, stream); err != nil {
			t.Fatal(err)
		}
		if err := cuda.MemcpyDtoHAsync(out[:n], dev, stream); err != nil {
			t.Fatal(err)
		}
		if err := stream.Synchronize(); err != nil {
			t.Fatal(err)
		}
		checkRGB(t, out, w, ht, ref)
	}
	if err := st.Decode(data[:len(data)/2], &dst, stream); err == nil {
		t.Error("half a JPEG decoded without an error")
	}
}
