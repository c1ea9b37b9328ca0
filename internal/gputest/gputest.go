// Package gputest holds what the GPU tests of several packages share:
// skipping, with the reason, where there is no usable GPU (CI), and holding
// device 0's primary context the way Triton does.
package gputest

import (
	"runtime"
	"testing"

	"github.com/sluice-dev/sluice/kernels/cuda"
)

// Require skips the test unless the CUDA driver loads and sees a device.
func Require(t testing.TB) {
	t.Helper()
	if err := cuda.Init(); err != nil {
		t.Skip("no CUDA driver: " + err.Error())
	}
	if n, err := cuda.DeviceCount(); err != nil || n == 0 {
		t.Skipf("no CUDA device: %d devices, %v", n, err)
	}
}

// Context retains device 0's primary context for the rest of the test and
// makes it current on the test's thread, which stays locked until the
// test ends. It skips the test without a GPU.
func Context(t testing.TB) *cuda.Context {
	t.Helper()
	Require(t)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	ctx, err := cuda.RetainPrimary(0)
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
