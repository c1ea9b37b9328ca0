// Package faultsafe reads memory that another process can take away: a
// file or shared-memory mapping (Triton's system shared memory) whose file
// is truncated after it was mapped. Touching a page past the new end
// raises SIGBUS, which kills the whole process, tritonserver included,
// unless the read happens in Go with debug.SetPanicOnFault set, where it
// becomes a panic that Copy turns into an error.
//
// The rule the backend follows: an input in such a mapping is copied into
// the process's own memory with Copy before anything else reads it (the
// decoders, Go or C, read their input in place), and an output bound for
// one is written in the process's memory and copied over with Copy;
// anonymous private memory (Triton's heap, where HTTP and gRPC bodies
// land) cannot be taken away and is used in place.
package faultsafe

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
)

// ErrFault is Copy's error when a page of its source or destination is
// gone.
var ErrFault = errors.New("its memory is gone: a shared-memory region shrunk (truncated) after it was registered")

// Copy copies src into dst (len(dst) >= len(src)) and returns ErrFault,
// instead of the process dying, when a page of either is gone.
func Copy(dst, src []byte) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			if _, ok := p.(interface{ Addr() uintptr }); ok {
				err = ErrFault
				return
			}
			panic(p)
		}
	}()
	copy(dst, src)
	return nil
}

// Mappings are the address ranges of a process whose pages can vanish
// under it: shared mappings and file-backed ones. Load reads them; a
// mapping made after Load is not among them, so a caller loads them after
// the memory it asks about was mapped (for a request: at Execute).
type Mappings struct {
	spans []span // sorted by start, not overlapping
}

type span struct{ start, end uintptr }

// Load reads the calling process's mappings from /proc/self/maps.
func (m *Mappings) Load() error {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	m.spans = m.spans[:0]
	sc := bufio.NewScanner(f)
	// A line is at most a path (PATH_MAX) and some fields.
	sc.Buffer(make([]byte, 0, 8<<10), 64<<10)
	for sc.Scan() {
		if s, ok := parseLine(sc.Bytes()); ok {
			m.spans = append(m.spans, s)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// The kernel lists mappings in address order, which Volatile's search
	// needs; sorting keeps that true whatever the source.
	slices.SortFunc(m.spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	return nil
}

// parseLine reads one line of /proc/self/maps,
// "start-end perms offset dev inode [path]", and reports whether the
// mapping is shared (perms' fourth letter 's') or backed by a file (inode
// not 0).
func parseLine(line []byte) (span, bool) {
	f := bytes.Fields(line)
	if len(f) < 5 || len(f[1]) < 4 {
		return span{}, false
	}
	shared := f[1][3] == 's'
	if !shared && string(f[4]) == "0" {
		return span{}, false
	}
	lo, hi, ok := bytes.Cut(f[0], []byte{'-'})
	if !ok {
		return span{}, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return span{}, false
	}
	return span{uintptr(start), uintptr(end)}, true
}

// Volatile reports whether any of the n bytes at p lie in a shared or
// file-backed mapping.
func (m *Mappings) Volatile(p uintptr, n int) bool {
	if n <= 0 {
		return false
	}
	end := p + uintptr(n)
	// The first span ending after p.
	i, _ := slices.BinarySearchFunc(m.spans, p, func(s span, p uintptr) int {
		if s.end <= p {
			return -1
		}
		return 1
	})
	return i < len(m.spans) && m.spans[i].start < end
}
