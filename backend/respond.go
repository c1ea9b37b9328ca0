package backend

import (
	"fmt"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/reuse"
)

// respondOutput is what the responder knows of one pipeline output.
type respondOutput struct {
	name     string
	dataType string  // as responses carry it: "FP32", "FP16", "UINT8"
	dims     []int64 // one sample's
	sample   int     // bytes per sample
}

// responder places each request's outputs in its response before the
// batch runs, and points the executor's per-sample destinations into
// them: the executor writes every sample once, where it goes. Its slices
// are kept from call to call; the scratch buffers, up to max_batch_bytes
// in all, until the instance has been idle a while.
type responder struct {
	outputs []respondOutput
	device  int               // the GPU whose memory outputs may go to, or -1: host only
	limit   int64             // max_batch_bytes
	dst     [][]executor.Dest // per output, per sample of the batch
	scratch [][]byte          // per output: where samples of failed requests go
	shape   []int64           // scratch for Output's shape argument
}

func newResponder(outputs []respondOutput, device int, limit int64) *responder {
	return &responder{outputs: outputs, device: device, limit: limit,
		dst: make([][]executor.Dest, len(outputs)), scratch: make([][]byte, len(outputs))}
}

// prepare sizes the destinations for n samples.
func (r *responder) prepare(n int) {
	for o := range r.dst {
		r.dst[o] = reuse.Zeroed(r.dst[o], n)
	}
}

// place adds the outputs the request asks for to its response (in GPU
// memory where the instance runs on a GPU and Triton allows it: the
// instance's GPU, or the one Triton names) and points samples
// [start, start+n) at them. An output not asked for is not added: it is
// written nowhere (a discarded Dest, whose work the executor may skip),
// or, when whole tells that every step must run (the request asks
// whether its images succeeded), to scratch memory. Once one output
// fails the request has failed: the rest are not asked for.
func (r *responder) place(req Request, resp Response, start, n int, whole bool) error {
	if req == nil || resp == nil {
		return &Error{Code: CodeInternal, Msg: "no response for the request"}
	}
	var dr DeviceResponse
	if r.device >= 0 {
		dr, _ = resp.(DeviceResponse)
	}
	for o := range r.outputs {
		out := &r.outputs[o]
		if !req.Requested(out.name) {
			if !whole {
				clear(r.dst[o][start : start+n])
			} else if err := r.toScratch(o, start, n); err != nil {
				return err
			}
			continue
		}
		r.shape = append(append(r.shape[:0], int64(n)), out.dims...)
		var buf Buffer
		var err error
		if dr != nil {
			buf, err = dr.OutputOn(out.name, out.dataType, r.shape, r.device)
		} else {
			buf.Host, err = resp.Output(out.name, out.dataType, r.shape)
		}
		if err != nil {
			return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: %v", out.name, err)}
		}
		size := out.sample
		if buf.Host == nil {
			// On another GPU (a client's CUDA shared memory there) the
			// executor writes it through a copy.
			for k := range n {
				r.dst[o][start+k] = executor.Dest{Dev: buf.Ptr + uintptr(k*size), Device: buf.Device}
			}
			continue
		}
		if len(buf.Host) != n*size {
			return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: got a buffer of %d bytes for %d bytes", out.name, len(buf.Host), n*size)}
		}
		for k := range n {
			r.dst[o][start+k] = executor.Dest{Host: buf.Host[k*size : (k+1)*size]}
		}
	}
	return nil
}

// toScratch sends samples [start, start+n) of output o to host memory no
// one reads: their request has failed, or does not want o but needs its
// steps run. The load checked that max_batch_size samples of every output
// fit max_batch_bytes, and the collector takes no more; the check here
// keeps a bug from allocating without a bound.
func (r *responder) toScratch(o, start, n int) error {
	batch := len(r.dst[o])
	var need int64
	for _, out := range r.outputs {
		need += int64(batch) * int64(out.sample)
	}
	if need > r.limit {
		return &Error{Code: CodeInternal, Msg: fmt.Sprintf("a batch of %d samples needs %d bytes of outputs, over max_batch_bytes %d", batch, need, r.limit)}
	}
	size := r.outputs[o].sample
	if len(r.scratch[o]) < batch*size {
		r.scratch[o] = make([]byte, batch*size)
	}
	for k := start; k < start+n; k++ {
		r.dst[o][k] = executor.Dest{Host: r.scratch[o][k*size : (k+1)*size]}
	}
	return nil
}

// scratchAll sends samples [start, start+n), whose request has failed, to
// scratch memory: they are in the batch already.
func (r *responder) scratchAll(start, n int) error {
	for o := range r.outputs {
		if err := r.toScratch(o, start, n); err != nil {
			return err
		}
	}
	return nil
}

// release drops the scratch buffers and returns how many bytes they held.
func (r *responder) release() int {
	n := 0
	for o := range r.scratch {
		n += cap(r.scratch[o])
		r.scratch[o] = nil
	}
	return n
}
