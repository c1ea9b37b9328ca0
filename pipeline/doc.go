// Package pipeline reads, validates and compiles Sluice pipeline
// definitions: the preprocessing graph a model in a Triton model
// repository carries.
//
// # Forms
//
// A definition is a pipelinepb.Pipeline in one of two forms:
//
//   - Text: protobuf text format, like Triton's config.pbtxt, with #
//     comments. This is what people write and review.
//   - Compact: Magic ("SLUICE", NUL, revision 1) followed by deterministic
//     protobuf binary. Parse tells them apart by the magic.
//
// Both forms carry exactly the same information: FormatText and
// FormatCompact of a parsed definition parse back to an equal message.
// Fields unknown to this build are errors in either form.
//
// # Text form
//
//	version: 1                       # required; this build reads 1
//	name: "preprocess_imagenet"
//	input { name: "IMAGE" }          # one encoded image per sample
//	node { op: "decode" arg { name: "color" str: "RGB" } }
//	node { op: "resize" arg { name: "shorter" int: 256 } }
//	node { name: "crop224" op: "crop" input: "resize"
//	       arg { name: "size" ints { v: [224, 224] } } }
//	output { name: "PIXELS" dtype: "UINT8" dims: [224, 224, 3] }
//
// Rules:
//
//   - Arguments are typed by the field holding their value: int, float,
//     str, bool, ints { v: [...] }, floats { v: [...] }. An int is
//     accepted where the operator wants a float. Each name at most once.
//   - A node's name defaults to its op; two nodes with the same op need
//     explicit names. Inputs and nodes share one namespace; names may not
//     contain ':' or spaces.
//   - A reference is "NAME" (a pipeline input, or a node's first output) or
//     "NODE:PORT" (a node's named output port).
//   - A node without input reads the node before it in the file; the first
//     reads the only pipeline input (with several, it must name one).
//     Operators with several input ports must list them all.
//   - An output without source exposes the last node's first output. Its
//     dtype and dims are optional; when given, they must match inference.
//   - Every node must contribute to an output and every input must be read;
//     the graph may not have cycles; outputs must have static shapes
//     (Triton batches them).
//
// Compile checks all this, builds the operators and infers every tensor's
// spec, giving the Compiled form an executor runs. Its errors name the
// file, the element and the field:
//
//	preprocess.pbtxt: node "resize" (#2): argument "interp": "bilinar" is not one of nearest, linear, cubic, area
package pipeline
