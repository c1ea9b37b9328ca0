// Package client is a Go client for Triton Inference Server's inference
// protocol (KServe v2), over gRPC (GRPCClient) and HTTP/REST with the
// binary tensor data extension (HTTPClient). Both implement Client.
//
// Tensors travel as raw little-endian bytes in row-major order, as Triton
// expects them; BYTES tensors hold each element behind a 4-byte
// little-endian length (EncodeBytes, DecodeBytes).
//
// Errors from the server are *Error values carrying Triton's message and a
// status Code (IsNotFound, IsInvalidArg, IsUnavailable). Calls that fail
// because the server cannot be reached (gRPC UNAVAILABLE, HTTP connection
// refused) are retried with exponential backoff, a bounded number of times
// (Options.Retry), and never past the context's deadline.
//
// The gRPC stubs in inferencepb come from the project's own
// grpc_service.proto, wire-compatible with Triton's.
package client
