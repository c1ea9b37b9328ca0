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
// each request's rows into its response. The buffers are kept from call
// to call, up to max_batch_bytes in all; the instance releases them when
// it has been idle a while.
type responder struct {
	outputs []respondOutput
	limit   int64    // max_batch_bytes
	bufs    [][]byte // per output: the whole batch
	shape   []int64  // scratch for Output's shape argument
}

func newResponder(outputs []respondOutput, limit int64) *responder {
	return &responder{outputs: outputs, limit: limit, bufs: make([][]byte, len(outputs))}
}

// prepare sizes the batch buffers for n samples, after checking that they
// fit max_batch_bytes. The load made sure that max_batch_size samples do
// and the collector takes no more, so an error here is a bug.
func (r *responder) prepare(n int) error {
	var need int64
	for _, o := range r.outputs {
		need += int64(n) * int64(o.sample)
	}
	if need > r.limit {
		return fmt.Errorf("a batch of %d samples needs %d bytes of outputs, over max_batch_bytes %d", n, need, r.limit)
	}
	for i, o := range r.outputs {
		need := n * o.sample
		if cap(r.bufs[i]) < need {
			r.bufs[i] = make([]byte, need)
		}
		r.bufs[i] = r.bufs[i][:need]
	}
	return nil
}

// release drops the batch buffers and returns how many bytes they held.
func (r *responder) release() int {
	n := 0
	for i := range r.bufs {
		n += cap(r.bufs[i])
		r.bufs[i] = nil
	}
	return n
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
