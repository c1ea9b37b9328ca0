// Package npy writes and reads NumPy's .npy format (version 1.0), so that
// any tool can read what the CLI produces.
package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluice-dev/sluice/ops"
)

var magic = []byte("\x93NUMPY\x01\x00")

// descr is NumPy's little-endian type string for each dtype.
func descr(dt ops.DType) (string, error) {
	switch dt {
	case ops.Uint8:
		return "|u1", nil
	case ops.Float16:
		return "<f2", nil
	case ops.Float32:
		return "<f4", nil
	case ops.Int32:
		return "<i4", nil
	}
	return "", fmt.Errorf("npy: no NumPy type for %v", dt)
}

// Write writes data, C-ordered, of the given dtype and shape.
func Write(w io.Writer, dt ops.DType, shape []int, data []byte) error {
	d, err := descr(dt)
	if err != nil {
		return err
	}
	n := dt.Size()
	for _, x := range shape {
		n *= x
	}
	if n != len(data) {
		return fmt.Errorf("npy: %d bytes of data for %v %v (%d bytes)", len(data), dt, shape, n)
	}
	dims := make([]string, len(shape))
	for i, x := range shape {
		dims[i] = strconv.Itoa(x)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", d, tuple)
	// The header, with its 10-byte preamble, is padded with spaces to a
	// multiple of 64 and ends in a newline.
	pad := 64 - (len(magic)+2+len(h)+1)%64
	if pad == 64 {
		pad = 0
	}
	h += strings.Repeat(" ", pad) + "\n"
	var pre [2]byte
	binary.LittleEndian.PutUint16(pre[:], uint16(len(h)))
	for _, b := range [][]byte{magic, pre[:], []byte(h), data} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

var headerRE = regexp.MustCompile(`'descr':\s*'([^']+)'.*'fortran_order':\s*(True|False).*'shape':\s*\(([^)]*)\)`)

// Read parses a version 1.0 .npy file of one of the dtypes Write produces.
func Read(b []byte) (ops.DType, []int, []byte, error) {
	if len(b) < 10 || !bytes.Equal(b[:8], magic) {
		return 0, nil, nil, errors.New("npy: not a version 1.0 .npy file")
	}
	hl := int(binary.LittleEndian.Uint16(b[8:10]))
	if len(b) < 10+hl {
		return 0, nil, nil, errors.New("npy: header runs past the end")
	}
	m := headerRE.FindStringSubmatch(string(b[10 : 10+hl]))
	if m == nil || m[2] != "False" {
		return 0, nil, nil, errors.New("npy: unsupported header")
	}
	var dt ops.DType
	for _, c := range []ops.DType{ops.Uint8, ops.Float16, ops.Float32, ops.Int32} {
		if d, _ := descr(c); d == m[1] {
			dt = c
		}
	}
	if dt == ops.Invalid {
		return 0, nil, nil, fmt.Errorf("npy: unsupported dtype %s", m[1])
	}
	var shape []int
	n := dt.Size()
	for _, f := range strings.Split(m[3], ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		x, err := strconv.Atoi(f)
		if err != nil || x < 0 {
			return 0, nil, nil, fmt.Errorf("npy: bad dimension %q", f)
		}
		shape = append(shape, x)
		n *= x
	}
	data := b[10+hl:]
	if len(data) != n {
		return 0, nil, nil, fmt.Errorf("npy: %d bytes of data, shape needs %d", len(data), n)
	}
	return dt, shape, data, nil
}
