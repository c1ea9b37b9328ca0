// Package nvjpeg is the part of NVIDIA's nvJPEG library that Sluice's GPU path uses: handles,
// decode states, header parsing and batched decoding into device memory.
//
// Like package cuda, it opens the library at run time through purego (libnvjpeg.so.13, then
// .12, then .11), so the same backend binary runs on hosts without it and falls back to the
// CPU decoders there. nvJPEG runs on the CUDA runtime's primary context: callers make
// cuda.RetainPrimary's context current on the calling thread first.
//
// nvJPEG's cudaStream_t parameters take a cuda.Stream: a runtime stream and a driver CUstream
// are the same handle.
package nvjpeg
