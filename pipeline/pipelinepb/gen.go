// Package pipelinepb holds the generated Go types of pipeline.proto.
// Regenerate with `make proto` (protoc 3.21, protoc-gen-go v1.36.11).
package pipelinepb

//go:generate protoc --go_out=. --go_opt=paths=source_relative pipeline.proto
