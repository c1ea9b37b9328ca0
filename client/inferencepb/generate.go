// Package inferencepb holds the gRPC stubs of Triton's inference protocol,
// generated from grpc_service.proto (the project's own, wire-compatible with
// Triton's) by protoc 3.21, protoc-gen-go v1.36.11 and protoc-gen-go-grpc
// v1.6.2 (make proto).
package inferencepb

//go:generate sh -c "PATH=\"$PATH:$(go env GOPATH)/bin\" protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative grpc_service.proto"
