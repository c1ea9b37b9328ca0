package main

// The backend is a shared object, and Debian's libturbojpeg.a (which
// package codec links with -l:libturbojpeg.a) cannot be part of one; see
// scripts/turbojpeg-pic.sh, which builds a PIC copy into build/turbojpeg-pic.
// The linker searches -L directories before its default ones, whatever
// their order on the command line, so with that copy present the backend
// links it; without it, building the .so fails with a TPOFF32 relocation
// error (ordinary executables of this package link either copy).

/*
#cgo LDFLAGS: -L${SRCDIR}/../build/turbojpeg-pic
*/
import "C"
