package cuda

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// gpu retains device 0's primary context and makes it current on the calling thread, which
// the caller has locked; it skips the test where there is no usable GPU.
func gpu(t *testing.T) *Context {
	t.Helper()
	if err := Init(); err != nil {
		t.Skipf("no CUDA driver: %v", err)
	}
	n, err := DeviceCount()
	if err != nil || n == 0 {
		t.Skipf("no CUDA device: %d, %v", n, err)
	}
	ctx, err := RetainPrimary(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctx.Release(); err != nil {
			t.Error(err)
		}
	})
	if err := ctx.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	return ctx
}

func TestGPUDevice(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx := gpu(t)
	if ctx.Device() != 0 {
		t.Errorf("Device() = %d", ctx.Device())
	}
	name, err := DeviceName(0)
	if err != nil || name == "" {
		t.Fatalf("DeviceName = %q, %v", name, err)
	}
	major, err := DeviceAttribute(0, AttrComputeCapabilityMajor)
	if err != nil || major < 3 {
		t.Errorf("compute capability major = %d, %v", major, err)
	}
	minor, err := DeviceAttribute(0, AttrComputeCapabilityMinor)
	if err != nil || minor < 0 {
		t.Errorf("compute capability minor = %d, %v", minor, err)
	}
	sms, err := DeviceAttribute(0, AttrMultiprocessorCount)
	if err != nil || sms < 1 {
		t.Errorf("multiprocessors = %d, %v", sms, err)
	}
	t.Logf("%s: sm_%d%d, %d SMs", name, major, minor, sms)
	if _, err := DeviceName(1 << 20); !IsResult(err, ErrorInvalidDevice) {
		t.Errorf("DeviceName of a missing device: %v", err)
	}
	free, total, err := MemGetInfo()
	if err != nil || total == 0 || free > total {
		t.Errorf("MemGetInfo = %d, %d, %v", free, total, err)
	}
}

func TestGPUMemoryRoundTrip(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gpu(t)
	s, err := NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	start, err := NewEvent(true)
	if err != nil {
		t.Fatal(err)
	}
	defer start.Destroy()
	end, err := NewEvent(true)
	if err != nil {
		t.Fatal(err)
	}
	defer end.Destroy()

	const n = 1<<20 + 13
	src, err := MemHostAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer MemFreeHost(src)
	dst, err := MemHostAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer MemFreeHost(dst)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	a, err := MemAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer MemFree(a)
	b, err := MemAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer MemFree(b)

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(start.Record(s))
	must(MemcpyHtoDAsync(a, src, s))
	must(MemsetD8Async(b, 0xAB, n, s))
	must(MemcpyDtoDAsync(b, a, n-100, s)) // the last 100 bytes keep the memset's value
	must(MemcpyDtoHAsync(dst, b, s))
	must(end.Record(s))
	must(end.Synchronize())
	must(s.Synchronize())

	if !bytes.Equal(dst[:n-100], src[:n-100]) {
		t.Error("round trip through device memory changed the data")
	}
	for i := n - 100; i < n; i++ {
		if dst[i] != 0xAB {
			t.Fatalf("dst[%d] = %#x, want the memset value 0xab", i, dst[i])
		}
	}
	d, err := Elapsed(start, end)
	if err != nil || d < 0 {
		t.Errorf("Elapsed = %v, %v", d, err)
	}

	// A second stream waiting on an event sees the first stream's writes.
	s2, err := NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Destroy()
	ev, err := NewEvent(false)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Destroy()
	must(MemsetD8Async(a, 0x11, n, s))
	must(ev.Record(s))
	must(s2.WaitEvent(ev))
	must(MemcpyDtoHAsync(dst, a, s2))
	must(s2.Synchronize())
	if dst[0] != 0x11 || dst[n-1] != 0x11 {
		t.Errorf("stream 2 read %#x..%#x before stream 1's memset finished", dst[0], dst[n-1])
	}
	if _, err := Elapsed(ev, ev); err == nil {
		t.Error("Elapsed on a non-timing event succeeded")
	}
}

// The unified-address copies that reach another GPU's memory: from host
// memory and from device memory, on one GPU, and from device 0 to device 1
// with peer access enabled where the host has two.
func TestGPUPeerCopies(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx0 := gpu(t)
	const n = 300<<10 + 7
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i*13 + i>>9)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a, err := MemAlloc(n)
	must(err)
	defer MemFree(a)
	b, err := MemAlloc(n)
	must(err)
	defer MemFree(b)
	back := make([]byte, n)
	must(MemcpyHtoPeerAsync(a, src, 0))
	must(MemcpyPeerAsync(b, a, n, 0))
	must(MemcpyDtoHAsync(back, b, 0))
	must(Stream(0).Synchronize())
	if !bytes.Equal(back, src) {
		t.Fatal("copies through unified addresses on one GPU changed the data")
	}
	if k, err := DeviceCount(); err != nil || k < 2 {
		t.Logf("one GPU: the copy to a second GPU is not tested (%d devices, %v)", k, err)
		return
	}
	ctx1, err := RetainPrimary(1)
	must(err)
	defer ctx1.Release()
	can, err := CanAccessPeer(0, 1)
	must(err)
	t.Logf("GPU 0 can access GPU 1 directly: %v", can)
	if can {
		must(EnablePeerAccess(ctx1))
		must(EnablePeerAccess(ctx1)) // enabled already: not an error
	}
	must(ctx1.SetCurrent())
	c, err := MemAlloc(n)
	must(err)
	defer func() { ctx1.SetCurrent(); MemFree(c); ctx0.SetCurrent() }()
	must(ctx0.SetCurrent())
	clear(back)
	must(MemcpyPeerAsync(c, a, n, 0)) // GPU 0 to GPU 1, on GPU 0's stream
	must(Stream(0).Synchronize())
	must(ctx1.SetCurrent())
	must(MemcpyDtoHAsync(back, c, 0))
	must(Stream(0).Synchronize())
	must(ctx0.SetCurrent())
	if !bytes.Equal(back, src) {
		t.Fatal("the copy from GPU 0 to GPU 1 changed the data")
	}
}

// addOnePTX adds 1 to each of n bytes at p: add1(u8 *p, u32 n).
const addOnePTX = `.version 7.0
.target sm_70
.address_size 64

.visible .entry add1(
	.param .u64 add1_p,
	.param .u32 add1_n
)
{
	.reg .pred %p<2>;
	.reg .b16 %rs<3>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;

	ld.param.u64 %rd1, [add1_p];
	ld.param.u32 %r1, [add1_n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.ge.u32 %p1, %r5, %r1;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd2, %rd1;
	cvt.u64.u32 %rd3, %r5;
	add.s64 %rd2, %rd2, %rd3;
	ld.global.u8 %rs1, [%rd2];
	add.s16 %rs2, %rs1, 1;
	st.global.u8 [%rd2], %rs2;
DONE:
	ret;
}
`

func TestGPULaunch(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gpu(t)
	m, err := LoadModule([]byte(addOnePTX)) // no trailing NUL: LoadModule adds it
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unload()
	f, err := m.Function("add1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Function("no_such_kernel"); !IsResult(err, ErrorNotFound) {
		t.Errorf("Function of a missing kernel: %v", err)
	}
	s, err := NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()

	const n = 1000
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(i)
	}
	p, err := MemAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer MemFree(p)
	if err := MemcpyHtoDAsync(p, buf, s); err != nil {
		t.Fatal(err)
	}
	count := uint32(n)
	const block = 256
	grid := uint32((n + block - 1) / block)
	if err := Launch(f, [3]uint32{grid, 1, 1}, [3]uint32{block, 1, 1}, 0, s,
		unsafe.Pointer(&p), unsafe.Pointer(&count)); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, n)
	if err := MemcpyDtoHAsync(out, p, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if out[i] != byte(i+1) {
			t.Fatalf("out[%d] = %d, want %d", i, out[i], byte(i+1))
		}
	}
	if err := m.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := m.Unload(); err != nil {
		t.Errorf("second Unload: %v", err)
	}
}

func TestGPUBadPTX(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gpu(t)
	bad := ".version 7.0\n.target sm_70\n.address_size 64\n\n.visible .entry broken()\n{\n\tfrobnicate.u32 %r1;\n\tret;\n}\n\x00"
	m, err := LoadModule([]byte(bad))
	if err == nil {
		m.Unload()
		t.Fatal("LoadModule of bad PTX succeeded")
	}
	if !strings.Contains(err.Error(), "cuModuleLoadDataEx: ") || !strings.Contains(err.Error(), "JIT log: ") {
		t.Fatalf("error lacks the call or the JIT log: %v", err)
	}
	if !strings.Contains(strings.ToLower(err.Error()), "error") {
		t.Errorf("JIT log says no error: %v", err)
	}
	t.Log(err)
}
