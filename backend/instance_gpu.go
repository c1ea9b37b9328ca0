package backend

import (
	"fmt"

	"github.com/sluice-dev/sluice/executor/gpu"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// runGPU places every request's outputs first — in GPU memory where
// Triton allows it — then runs the batch once, the kernel writing each
// sample straight into its response. It reports whether the executor ran.
func (inst *Instance) runGPU(n int, resps []Response) bool {
	inst.sample = resize(inst.sample, n)
	for o := range inst.dst {
		inst.dst[o] = resize(inst.dst[o], n)
	}
	for i := range inst.reqs {
		r := &inst.reqs[i]
		if r.failed {
			continue
		}
		var resp Response
		if i < len(resps) {
			resp = resps[i]
		}
		if err := inst.place(resp, r.start, r.n); err != nil {
			inst.fail(i, err)
			inst.toScratch(r.start, r.n, n)
		}
	}
	// An error is the GPU's (or a bug here), not the requests'.
	return inst.ran("GPU executor", inst.gpu.RunInto(inst.col.batch, inst.dst, inst.sample))
}

// place adds the request's outputs to its response and points its samples'
// destinations into them.
func (inst *Instance) place(resp Response, start, n int) error {
	if resp == nil {
		return &Error{Code: CodeInternal, Msg: "no response for the request"}
	}
	dr, _ := resp.(DeviceResponse)
	for o := range inst.resp.outputs {
		out := &inst.resp.outputs[o]
		inst.resp.shape = append(append(inst.resp.shape[:0], int64(n)), out.dims...)
		var buf Buffer
		var err error
		if dr != nil {
			buf, err = dr.OutputOn(out.name, out.dataType, inst.resp.shape, inst.Device)
		} else {
			buf.Host, err = resp.Output(out.name, out.dataType, inst.resp.shape)
		}
		if err != nil {
			return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: %v", out.name, err)}
		}
		size := out.sample
		if buf.Host == nil {
			if buf.Device != inst.Device {
				return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: Triton placed it on GPU %d, the instance runs on GPU %d", out.name, buf.Device, inst.Device)}
			}
			for k := range n {
				inst.dst[o][start+k] = gpu.Dest{Dev: cuda.DevicePtr(buf.Ptr + uintptr(k*size))}
			}
			continue
		}
		if len(buf.Host) != n*size {
			return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: got a buffer of %d bytes for %d bytes", out.name, len(buf.Host), n*size)}
		}
		for k := range n {
			inst.dst[o][start+k] = gpu.Dest{Host: buf.Host[k*size : (k+1)*size]}
		}
	}
	return nil
}

// toScratch sends samples whose request has failed to a host buffer no
// one reads: they are in the batch already. batch is at most
// max_batch_size, whose outputs the load fit in max_batch_bytes; the
// buffer goes when the instance is idle.
func (inst *Instance) toScratch(start, n, batch int) {
	for o := range inst.resp.outputs {
		size := inst.resp.outputs[o].sample
		if len(inst.scratch[o]) < batch*size {
			inst.scratch[o] = make([]byte, batch*size)
		}
		for k := start; k < start+n; k++ {
			inst.dst[o][k] = gpu.Dest{Host: inst.scratch[o][k*size : (k+1)*size]}
		}
	}
}

// countDecoded adds the decoder paths' counts since the last Execute (of
// a GPU instance; a CPU instance has none).
func (inst *Instance) countDecoded(st *ImageStats) {
	if inst.gpu == nil {
		return
	}
	now := inst.gpu.Decoded()
	for p := range st.Decoded {
		st.Decoded[p] = int(now[p] - inst.decTotal[p])
		inst.decTotal[p] = now[p]
	}
}
