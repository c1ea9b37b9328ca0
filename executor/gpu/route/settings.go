package route

import (
	"os"
	"strconv"
	"sync"
)

// Settings are the route's tunables. Their defaults are the measured best
// (docs/perf.md); the environment overrides them for measurements only,
// read once per process (Env), as README's parameter table lists.
type Settings struct {
	// Coefficients is which JPEGs the coefficient route takes
	// (SLUICE_GPU_COEFFICIENTS: all, progressive, or 0 for none, which
	// leaves them to nvJPEG's decoupled decoder).
	Coefficients Coefficients
	// SluiceGPUHuffman sends baseline JPEGs up to GPUHuffmanPixels that
	// the engines leave to Sluice's entropy decoder on the SMs
	// (SLUICE_GPU_SLUICE_HUFFMAN=1) instead of the CPU workers: a third
	// decode resource, off: in the split it lowers the rate (docs/perf.md).
	SluiceGPUHuffman bool
	// SMShare is the SMs' part of the pixels of a part's engine-decodable
	// JPEGs while SluiceGPUHuffman is on (SLUICE_GPU_SM_SHARE, a
	// percentage), whether other executors are busy or not: the engines
	// take the rest.
	SMShare float64
	// GPUHuffmanPixels is the size over which a JPEG's Huffman codes are
	// decoded on the GPU instead of a CPU worker (DALI's
	// hybrid_huffman_threshold default; SLUICE_GPU_HUFFMAN_PIXELS).
	GPUHuffmanPixels int
	// BusyShare is the engines' share of a part while two or more
	// executors of the GPU have a batch in flight (SLUICE_GPU_BUSY_SHARE,
	// a percentage): each then leaves the other cores, and the CPU
	// workers' route adds to the engines. Three quarters is ahead of a
	// share of 1 and of both smaller and larger shares; it pays only while
	// the executors share the cores.
	BusyShare float64
	// SharedQueue is the part of their plan the engines' first runs take
	// from a queue they share with the CPU workers while two or more
	// executors are busy (SLUICE_GPU_SHARED_QUEUE, a percentage; 0: no
	// queue): then each route takes what the other has not started, so
	// that neither waits at the part's end. One executor alone plans
	// every JPEG for the engines, where the queue costs more than it
	// gains, so it is not used then.
	SharedQueue float64
	// EngineCalls is how many calls the engines of a GPU should have in
	// flight (SLUICE_GPU_HW_LANES): with one executor, two at once are
	// faster than one or four, and with two executors sharing the
	// engines, a call each is faster than two each. The batched hybrid
	// decoder takes up to as many.
	EngineCalls int
}

// Coefficients is which JPEGs the coefficient route takes.
type Coefficients uint8

const (
	CoefficientsAll         Coefficients = iota // baseline and progressive
	CoefficientsProgressive                     // progressive only: baseline ones to nvJPEG's decoupled decoder
	CoefficientsOff                             // none
)

// Defaults are the settings without the environment.
func Defaults() Settings {
	return Settings{Coefficients: CoefficientsAll, GPUHuffmanPixels: 1_000_000, BusyShare: 0.75, SharedQueue: 1, EngineCalls: 2, SMShare: 0.3}
}

// FromEnv is Defaults with what getenv says of each variable; a value
// that does not parse keeps the default.
func FromEnv(getenv func(string) string) Settings {
	s := Defaults()
	switch getenv("SLUICE_GPU_COEFFICIENTS") {
	case "progressive":
		s.Coefficients = CoefficientsProgressive
	case "0":
		s.Coefficients = CoefficientsOff
	}
	s.SluiceGPUHuffman = getenv("SLUICE_GPU_SLUICE_HUFFMAN") == "1"
	if n, err := strconv.Atoi(getenv("SLUICE_GPU_HUFFMAN_PIXELS")); err == nil && n > 0 {
		s.GPUHuffmanPixels = n
	}
	if n, err := strconv.Atoi(getenv("SLUICE_GPU_HW_LANES")); err == nil && n > 0 {
		s.EngineCalls = n
	}
	percent(getenv("SLUICE_GPU_BUSY_SHARE"), &s.BusyShare)
	percent(getenv("SLUICE_GPU_SHARED_QUEUE"), &s.SharedQueue)
	percent(getenv("SLUICE_GPU_SM_SHARE"), &s.SMShare)
	return s
}

// percent sets *f to v, a percentage from 0 to 100, as a fraction.
func percent(v string, f *float64) {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		*f = float64(min(n, 100)) / 100
	}
}

// Env is the process's settings, read from the environment on first use.
var Env = sync.OnceValue(func() Settings { return FromEnv(os.Getenv) })
