package cuda

import (
	"errors"
	"runtime"

	"github.com/ebitengine/purego"
)

// Dlopen and Dlsym wrap purego's, which read dlerror in a second call. dlerror is per
// thread, so the goroutine is held on one thread across both; otherwise it can move in
// between and the reason comes back empty (seen on a loaded 2-core CI machine).
func Dlopen(lib string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	return h, reason(err, "not found or not loadable")
}

// Dlsym resolves name in h; a zero address is an error.
func Dlsym(h uintptr, name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	addr, err := purego.Dlsym(h, name)
	if err == nil && addr == 0 {
		err = errors.New("null address")
	}
	return addr, reason(err, "symbol not found")
}

func reason(err error, fallback string) error {
	if err != nil && err.Error() == "" {
		return errors.New(fallback)
	}
	return err
}
