package backend

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// inputForm is how a request carries the encoded images of one input.
type inputForm uint8

const (
	// rawForm: TYPE_UINT8 dims [-1], a request tensor [B, N] holding B
	// images of N bytes each. With B > 1 the client pads the shorter
	// images with trailing zeros, which the decoders ignore.
	rawForm inputForm = iota
	// bytesForm: TYPE_STRING dims [1], a request tensor [B, 1] (or [B])
	// of BYTES elements, one image each, of any sizes.
	bytesForm
	// decodedForm: a pipeline input with layout "HWC", TYPE_UINT8 dims
	// [-1, -1, C], a request tensor [B, H, W, C] holding B decoded images
	// of one size. Requests of different sizes batch together (ragged
	// batching: Triton hands each request's tensor with its own shape).
	decodedForm
	// tensorForm: a boxes or count input, TYPE_FP32 dims [max, 4] or
	// TYPE_INT32 dims [1], a request tensor [B, ...dims] holding B samples
	// of that fixed shape.
	tensorForm
)

// collectInput is what the collector knows of one pipeline input.
type collectInput struct {
	name     string
	form     inputForm
	dataType string // as requests carry it: "UINT8" or "BYTES"
	spec     ops.Spec
}

// newCollectInputs describes the inputs of prog, whose config tensors ts
// are in the pipeline's order.
func newCollectInputs(ts []TensorConfig, prog *pipeline.Compiled) []collectInput {
	in := make([]collectInput, len(ts))
	for i, t := range ts {
		in[i] = collectInput{name: t.Name, form: rawForm, dataType: "UINT8"}
		switch {
		case prog != nil && prog.Decoded(i):
			in[i].form, in[i].spec = decodedForm, prog.InputSpecs[i]
		case prog != nil && prog.Tensor(i):
			in[i].form, in[i].spec, in[i].dataType = tensorForm, prog.InputSpecs[i], prog.InputSpecs[i].DType.String()
		case t.DataType == typeString:
			in[i].form, in[i].dataType = bytesForm, "BYTES"
		}
	}
	return in
}

// collector gathers the images of all requests of one Execute into one
// batch, without copying them: batch[i][s] is a slice of the request's own
// buffer, valid until Execute returns. Its slices are reused from call to
// call, so a steady stream of batches allocates nothing here.
type collector struct {
	inputs   []collectInput
	maxBatch int64      // max_batch_size: Triton enforces it, the collector relies on it
	batch    [][][]byte // per pipeline input, per sample
	// dims[i][s] is the shape [H, W, C] of sample s of decoded input i
	// (dims[i] nil for an encoded one); dims is nil when no input is
	// decoded, which is what executors without such inputs are given.
	dims [][][]int
	flat [][]int // per decoded input, the ints dims[i] slices, reused
	n    int     // samples gathered so far
	// device is the GPU whose memory decoded inputs are asked in (a
	// KIND_GPU instance whose executor reads them there), -1: host memory.
	// dev[i][s] is where sample s of decoded input i lies in device
	// memory (zero: in batch[i][s]); onDev counts such samples in the batch.
	device int
	dev    [][]executor.DevSpan
	onDev  int
}

func newCollector(inputs []collectInput, maxBatch int64, device int) *collector {
	c := &collector{inputs: inputs, maxBatch: maxBatch, batch: make([][][]byte, len(inputs)), device: device}
	for i, in := range inputs {
		if in.form == decodedForm {
			if c.dims == nil {
				c.dims, c.flat = make([][][]int, len(inputs)), make([][]int, len(inputs))
			}
			c.dims[i] = [][]int{}
			if device >= 0 {
				if c.dev == nil {
					c.dev = make([][]executor.DevSpan, len(inputs))
				}
				c.dev[i] = []executor.DevSpan{}
			}
		}
	}
	return c
}

// checkBatch bounds a request's batch size before it sizes a loop, and
// the whole batch before its outputs are allocated: the load checked that
// max_batch_size samples' outputs fit max_batch_bytes. Triton's batcher
// never sends more; if it did, the request that tips the batch over would
// fail alone.
func (c *collector) checkBatch(in *collectInput, b int64) error {
	if b > c.maxBatch {
		return invalidf("input %s: batch size %d is over max_batch_size %d", in.name, b, c.maxBatch)
	}
	if int64(c.n)+b > c.maxBatch {
		return invalidf("input %s: batch size %d would bring this execution's batch to %d samples, over max_batch_size %d",
			in.name, b, int64(c.n)+b, c.maxBatch)
	}
	return nil
}

// add appends one request's images, returning where they start in the
// batch and how many there are. A request that cannot be read fails alone:
// its images are taken back out and the error says why.
func (c *collector) add(req Request) (start, n int, err error) {
	start = c.n
	if req == nil {
		return start, 0, &Error{Code: CodeInternal, Msg: "no request"}
	}
	n = -1
	for i := range c.inputs {
		in := &c.inputs[i]
		var x Input
		var err error
		if dr, ok := req.(DeviceRequest); ok && in.form == decodedForm && c.device >= 0 {
			x, err = dr.InputOn(in.name, c.device)
		} else {
			x, err = req.Input(in.name)
		}
		if err != nil {
			c.truncate(start)
			return start, 0, invalidf("input %s: %v", in.name, err)
		}
		var k int
		switch in.form {
		case bytesForm:
			k, err = c.appendBytes(i, x)
		case decodedForm:
			k, err = c.appendDecoded(i, x)
		case tensorForm:
			k, err = c.appendTensor(i, x)
		default:
			k, err = c.appendRaw(i, x)
		}
		if err == nil && n >= 0 && k != n {
			err = invalidf("input %s has %d elements, input %s has %d: every input needs the same batch size",
				in.name, k, c.inputs[0].name, n)
		}
		if err != nil {
			c.truncate(start)
			return start, 0, err
		}
		n = k
	}
	n = max(n, 0) // a pipeline without inputs
	c.n += n
	return start, n, nil
}

// appendRaw splits a UINT8 [B, N] tensor into B images of N bytes.
func (c *collector) appendRaw(i int, x Input) (int, error) {
	in := &c.inputs[i]
	if x.DataType != in.dataType {
		return 0, invalidf("input %s: data type %s, the model takes %s", in.name, x.DataType, in.dataType)
	}
	if len(x.Shape) != 2 || x.Shape[0] < 0 || x.Shape[1] < 0 {
		return 0, invalidf("input %s: shape %v, want [batch, bytes]: one encoded image per batch element", in.name, x.Shape)
	}
	b, size := x.Shape[0], x.Shape[1]
	if err := c.checkBatch(in, b); err != nil {
		return 0, err
	}
	if size > 0 && b > int64(len(x.Data))/size || b*size != int64(len(x.Data)) {
		return 0, invalidf("input %s: %d bytes of data for shape %v", in.name, len(x.Data), x.Shape)
	}
	n := int(size)
	for k := range int(b) {
		c.batch[i] = append(c.batch[i], x.Data[k*n:(k+1)*n:(k+1)*n])
	}
	return int(b), nil
}

// appendDecoded splits a UINT8 [B, H, W, C] tensor into B images of
// H×W×C bytes, each with its shape. The shape comes from the client: it is
// checked against the declared channels and the bytes
// (executor.CheckDecodedBatch) before it sizes anything. The pixel limits
// are the executor's, as for encoded images.
func (c *collector) appendDecoded(i int, x Input) (int, error) {
	in := &c.inputs[i]
	n := int64(len(x.Data))
	if x.Dev != 0 {
		if c.dev == nil || c.dev[i] == nil {
			return 0, &Error{Code: CodeInternal, Msg: fmt.Sprintf("input %s: given in GPU memory, which this instance does not read", in.name)}
		}
		n = int64(x.DevBytes)
	}
	if err := executor.CheckDecodedBatch(in.spec, x.DataType, x.Shape, n); err != nil {
		return 0, refused(in, err)
	}
	b, h, w, ch := x.Shape[0], x.Shape[1], x.Shape[2], in.spec.Dims[2]
	if err := c.checkBatch(in, b); err != nil {
		return 0, err
	}
	size := int(h * w * int64(ch))
	for k := range int(b) {
		if x.Dev != 0 {
			c.batch[i] = append(c.batch[i], nil)
			c.dev[i] = append(c.dev[i], executor.DevSpan{Ptr: x.Dev + uintptr(k*size), Len: size, Device: x.Device})
			c.onDev++
		} else {
			c.batch[i] = append(c.batch[i], x.Data[k*size:(k+1)*size:(k+1)*size])
			if c.dev != nil {
				c.dev[i] = append(c.dev[i], executor.DevSpan{})
			}
		}
		// A slice that outgrows flat's array keeps pointing at the old
		// one, which stays valid: the earlier samples' shapes are intact.
		at := len(c.flat[i])
		c.flat[i] = append(c.flat[i], int(h), int(w), ch)
		c.dims[i] = append(c.dims[i], c.flat[i][at:at+3:at+3])
	}
	return int(b), nil
}

// appendTensor splits a [B, ...dims] tensor of a boxes or count input into
// B samples of the pipeline's fixed shape, once executor.CheckTensorBatch
// has checked its type, shape and bytes.
func (c *collector) appendTensor(i int, x Input) (int, error) {
	in := &c.inputs[i]
	if err := executor.CheckTensorBatch(in.spec, x.DataType, x.Shape, int64(len(x.Data))); err != nil {
		return 0, refused(in, err)
	}
	b := x.Shape[0]
	if err := c.checkBatch(in, b); err != nil {
		return 0, err
	}
	size := in.spec.Elems() * in.spec.DType.Size()
	for k := range int(b) {
		c.batch[i] = append(c.batch[i], x.Data[k*size:(k+1)*size:(k+1)*size])
	}
	return int(b), nil
}

// refused is the client's error for input in's tensor, which the
// executor's input contract refused with err.
func refused(in *collectInput, err error) error {
	var e *ops.Error
	if errors.As(err, &e) {
		return invalidf("input %s: %s", in.name, e.Msg)
	}
	return invalidf("input %s: %v", in.name, err)
}

// appendBytes parses Triton's BYTES serialization, a 4-byte little-endian
// length before each element, checking every length against the buffer:
// the lengths come from the client.
func (c *collector) appendBytes(i int, x Input) (int, error) {
	in := &c.inputs[i]
	if x.DataType != in.dataType {
		return 0, invalidf("input %s: data type %s, the model takes %s", in.name, x.DataType, in.dataType)
	}
	var b int64
	switch {
	case len(x.Shape) == 1 && x.Shape[0] >= 0:
		b = x.Shape[0]
	case len(x.Shape) == 2 && x.Shape[0] >= 0 && x.Shape[1] == 1:
		b = x.Shape[0]
	default:
		return 0, invalidf("input %s: shape %v, want [batch, 1]: one encoded image per BYTES element", in.name, x.Shape)
	}
	if err := c.checkBatch(in, b); err != nil {
		return 0, err
	}
	// Every element takes at least its 4-byte length: a larger count
	// cannot be in the buffer, and must not size a loop.
	if b > int64(len(x.Data)/4) {
		return 0, invalidf("input %s: %d bytes cannot hold %d BYTES elements", in.name, len(x.Data), b)
	}
	data := x.Data
	off := 0
	for k := range int(b) {
		if len(data)-off < 4 {
			return 0, invalidf("input %s: BYTES element %d: the buffer ends inside its 4-byte length (at byte %d of %d)", in.name, k, off, len(data))
		}
		size := binary.LittleEndian.Uint32(data[off:])
		off += 4
		if uint64(size) > uint64(len(data)-off) {
			return 0, invalidf("input %s: BYTES element %d: length %d, but only %d bytes are left", in.name, k, size, len(data)-off)
		}
		end := off + int(size)
		c.batch[i] = append(c.batch[i], data[off:end:end])
		off = end
	}
	if off != len(data) {
		return 0, invalidf("input %s: %d bytes after the last of %d BYTES elements", in.name, len(data)-off, b)
	}
	return int(b), nil
}

// truncate takes back the images appended since sample start.
func (c *collector) truncate(start int) {
	for i := range c.batch {
		clear(c.batch[i][start:])
		c.batch[i] = c.batch[i][:start]
	}
	for i := range c.dims {
		if c.dims[i] != nil {
			clear(c.dims[i][start:])
			c.dims[i] = c.dims[i][:start]
			c.flat[i] = c.flat[i][:3*start]
		}
	}
	for i := range c.dev {
		if c.dev[i] != nil {
			for _, d := range c.dev[i][start:] {
				if d.Ptr != 0 {
					c.onDev--
				}
			}
			c.dev[i] = c.dev[i][:start]
		}
	}
}

// reset empties the batch for the next Execute, dropping the references to
// the requests' buffers.
func (c *collector) reset() {
	c.truncate(0)
	c.n = 0
}

// invalidf makes a request's error: the client sent something unreadable.
func invalidf(format string, a ...any) *Error {
	return &Error{Code: CodeInvalidArg, Msg: fmt.Sprintf(format, a...)}
}
