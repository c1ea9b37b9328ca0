package backend

import (
	"fmt"
)

// respondOutput is what the responder knows of one pipeline output.
type respondOutput struct {
	name     string
	dataType string  // as responses carry it: "FP32", "FP16", "UINT8"
	dims     []int64 // one sample's
	sample   int     // bytes per sample
}

// responder owns the batch buffers the executor writes into and scatters
// each request's rows into its response. The buffers only grow, and are
// kept from call to call.
type responder struct {
	outputs []respondOutput
	bufs    [][]byte // per output: the whole batch
	shape   []int64  // scratch for Output's shape argument
}

func newResponder(outputs []respondOutput) *responder {
	return &responder{outputs: outputs, bufs: make([][]byte, len(outputs))}
}

// prepare sizes the batch buffers for n samples.
func (r *responder) prepare(n int) {
	for i, o := range r.outputs {
		need := n * o.sample
		if cap(r.bufs[i]) < need {
			r.bufs[i] = make([]byte, need)
		}
		r.bufs[i] = r.bufs[i][:need]
	}
}

// respond fills resp with samples [start, start+n) of every output. Once
// one Output call fails the request has failed: the rest are not asked for.
func (r *responder) respond(resp Response, start, n int) error {
	if resp == nil {
		return &Error{Code: CodeInternal, Msg: "no response for the request"}
	}
	for i := range r.outputs {
		o := &r.outputs[i]
		r.shape = append(append(r.shape[:0], int64(n)), o.dims...)
		buf, err := resp.Output(o.name, o.dataType, r.shape)
		if err != nil {
			return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: %v", o.name, err)}
		}
		want := n * o.sample
		if len(buf) != want {
			return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: got a buffer of %d bytes for %d bytes", o.name, len(buf), want)}
		}
		copy(buf, r.bufs[i][start*o.sample:start*o.sample+want])
	}
	return nil
}
