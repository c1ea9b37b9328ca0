package backend

import (
	"fmt"

	"github.com/sluice-dev/sluice/executor"
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
// only grow, and are kept from call to call.
type responder struct {
	outputs []respondOutput
	device  int               // the GPU whose memory outputs may go to, or -1: host only
	dst     [][]executor.Dest // per output, per sample of the batch
	scratch [][]byte          // per output: where samples of failed requests go
	shape   []int64           // scratch for Output's shape argument
}

func newResponder(outputs []respondOutput, device int) *responder {
	return &responder{outputs: outputs, device: device,
		dst: make([][]executor.Dest, len(outputs)), scratch: make([][]byte, len(outputs))}
}

// prepare sizes the destinations for n samples.
func (r *responder) prepare(n int) {
	for o := range r.dst {
		r.dst[o] = zeroed(r.dst[o], n)
	}
}

// place adds the request's outputs to its response (in GPU memory where
// the instance runs on a GPU and Triton allows it) and points samples
// [start, start+n) at them. Once one output fails the request has
// failed: the rest are not asked for.
func (r *responder) place(resp Response, start, n int) error {
	if resp == nil {
		return &Error{Code: CodeInternal, Msg: "no response for the request"}
	}
	var dr DeviceResponse
	if r.device >= 0 {
		dr, _ = resp.(DeviceResponse)
	}
	for o := range r.outputs {
		out := &r.outputs[o]
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
			if buf.Device != r.device {
				return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: Triton placed it on GPU %d, the instance runs on GPU %d", out.name, buf.Device, r.device)}
			}
			for k := range n {
				r.dst[o][start+k] = executor.Dest{Dev: buf.Ptr + uintptr(k*size)}
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

// toScratch sends samples [start, start+n) of a batch of batch samples,
// whose request has failed, to host memory no one reads: they are in the
// batch already.
func (r *responder) toScratch(start, n, batch int) {
	for o := range r.outputs {
		size := r.outputs[o].sample
		buf := r.scratchFor(o, batch*size)
		for k := start; k < start+n; k++ {
			r.dst[o][k] = executor.Dest{Host: buf[k*size : (k+1)*size]}
		}
	}
}

// scratchFor returns output o's scratch buffer, grown to at least need
// bytes.
func (r *responder) scratchFor(o, need int) []byte {
	if len(r.scratch[o]) < need {
		r.scratch[o] = make([]byte, need)
	}
	return r.scratch[o]
}
