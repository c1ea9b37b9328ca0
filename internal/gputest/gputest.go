// Package gputest holds what the GPU tests of several packages share:
// skipping, with the reason, where there is no usable GPU (CI) or too few,
// listing the devices, and holding a device's primary context the way
// Triton does.
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

// Devices returns every device's ordinal, so that a test runs on each GPU
// of a multi-GPU host; it skips the test without a GPU.
func Devices(t testing.TB) []int {
	t.Helper()
	Require(t)
	n, _ := cuda.DeviceCount()
	devs := make([]int, n)
	for i := range devs {
		devs[i] = i
	}
	return devs
}

// RequireDevices skips the test unless the host has at least n GPUs.
func RequireDevices(t testing.TB, n int) {
	t.Helper()
	if have := len(Devices(t)); have < n {
		t.Skipf("needs %d GPUs: this host has %d", n, have)
	}
}

// Context retains device 0's primary context for the rest of the test and
// makes it current on the test's thread, which stays locked until the
// test ends. It skips the test without a GPU.
func Context(t testing.TB) *cuda.Context {
	t.Helper()
	return ContextOn(t, 0)
}

// ContextOn is Context for device dev.
func ContextOn(t testing.TB, dev int) *cuda.Context {
	t.Helper()
	Require(t)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	ctx, err := cuda.RetainPrimary(dev)
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
