//go:build !cgo

package kernels

import "errors"

// huffEmulated says the CPU emulation of sluice_huffman is built: it needs
// cgo.
const huffEmulated = false

func emulateHuffman(b *huffBatch, coefs [][]int16, reverse bool) ([]int32, int, error) {
	return nil, 0, errors.New("kernels: the Huffman decoder's emulation needs cgo")
}

func huffCSizes() [5]uintptr { return [5]uintptr{} }
