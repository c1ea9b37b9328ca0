// Package reuse sizes slices that are kept from one call to the next: the
// array is reused when it is large enough, so that calls in steady state
// allocate nothing.
package reuse

// Len returns s with length n, reusing its array when its capacity is n or
// more. The elements are what the array held: the caller overwrites them.
func Len[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Room is Len for slices whose length creeps up from call to call (a
// decoder's scratch for images of similar sizes): a new array gets a
// quarter more, so that the next slightly larger call fits.
func Room[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// Zeroed is Len with every element zero.
func Zeroed[T any](s []T, n int) []T {
	s = Len(s, n)
	clear(s)
	return s
}
