// Package hostile makes the files of the hostile-input suite: images built
// to cost a decoder the most for the fewest bytes (too many tags, layers,
// boxes, frames or code-blocks behind a small file). They are made at test
// time, never stored: codec's tests and fuzz seeds use them directly, and
// mkhostile writes them for the tests against a real tritonserver
// (tests/triton/test_hostile_formats.py).
//
// Each format's file adds its cases from init, as codec's formats register
// themselves.
package hostile

import (
	"slices"
	"strings"
	"sync"
)

// Case is one hostile file and what a server must make of it.
type Case struct {
	// Name is unique and names the file ("jp2-8192-cblk4"): letters,
	// digits and '-'.
	Name string
	// Format is the codec format name the file claims ("JPEG 2000").
	Format string
	// Row is what the case stands for, as the suite's table says it.
	Row string
	// Make builds the file.
	Make func() []byte
	// Refused lists words the error must contain (the cause, the limit
	// named); empty means the file is legal and must decode.
	Refused []string
	// PerRequest is how many copies go into one request (0 means 1): a
	// request's budget is part of what such a case checks.
	PerRequest int
}

var (
	mu    sync.Mutex
	cases []Case
)

// Register adds a case; a name used twice panics (a programming error in
// this package's own init).
func Register(c Case) {
	mu.Lock()
	defer mu.Unlock()
	for _, d := range cases {
		if d.Name == c.Name {
			panic("hostile: case registered twice: " + c.Name)
		}
	}
	if strings.Trim(c.Name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		panic("hostile: bad case name " + c.Name)
	}
	cases = append(cases, c)
}

// Cases lists the registered cases by name.
func Cases() []Case {
	mu.Lock()
	defer mu.Unlock()
	out := slices.Clone(cases)
	slices.SortFunc(out, func(a, b Case) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Named is the case of that name; ok is false when none is registered.
func Named(name string) (c Case, ok bool) {
	mu.Lock()
	defer mu.Unlock()
	for _, c := range cases {
		if c.Name == name {
			return c, true
		}
	}
	return Case{}, false
}

// Of lists the cases of one format.
func Of(format string) []Case {
	var out []Case
	for _, c := range Cases() {
		if c.Format == format {
			out = append(out, c)
		}
	}
	return out
}
