package backend

import (
	"encoding/binary"
	"fmt"

	"github.com/sluice-dev/sluice/internal/reuse"
)

// SizedResponse is a Response that can add an output whose size the
// shape does not fix: BYTES, in Triton's serialization (a 4-byte
// little-endian length before each element). image_errors "mark" needs it
// for IMAGE_ERROR.
type SizedResponse interface {
	OutputSized(name, dataType string, shape []int64, size int) ([]byte, error)
}

// marker writes IMAGE_OK and IMAGE_ERROR for image_errors "mark". Their
// sizes are known only after the run, so they are added then, not placed
// before it as the pipeline's outputs are.
type marker struct {
	shape []int64
	msgs  []string // per image of the request being marked
}

// marksWanted reports whether req asks for IMAGE_OK and for IMAGE_ERROR,
// of those the model has. Either needs every step of its images run,
// whatever other outputs it wants.
func (inst *Instance) marksWanted(req Request) (ok, msgs bool) {
	p := &inst.model.Params
	return p.MarkImageErrors && req.Requested(OutputImageOK), p.ImageErrorMessages && req.Requested(OutputImageError)
}

// mark answers request r despite failed images: their outputs are zero
// (the executor's doing), and IMAGE_OK and IMAGE_ERROR, those of them the
// request asks for, say which failed and why, in the words a failed
// request would have had.
func (inst *Instance) mark(req Request, resp Response, r *reqState) error {
	wantOK, wantErr := inst.marksWanted(req)
	if !wantOK && !wantErr {
		return nil
	}
	m := &inst.marks
	m.msgs = reuse.Zeroed(m.msgs, r.n)
	size := 0
	for k := range r.n {
		if err := inst.sample[r.start+k]; err != nil {
			m.msgs[k] = inst.blame.sampleMessage(k, err)
		}
		size += 4 + len(m.msgs[k])
	}
	m.shape = append(m.shape[:0], int64(r.n), 1)
	if wantOK {
		ok, err := resp.Output(OutputImageOK, "BOOL", m.shape)
		if err != nil {
			return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: %v", OutputImageOK, err)}
		}
		if len(ok) != r.n {
			return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: got a buffer of %d bytes for %d bytes", OutputImageOK, len(ok), r.n)}
		}
		for k, msg := range m.msgs {
			ok[k] = 0
			if msg == "" {
				ok[k] = 1
			}
		}
	}
	if !wantErr {
		clear(m.msgs)
		return nil
	}
	sr, _ := resp.(SizedResponse)
	if sr == nil {
		return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: the response cannot hold BYTES outputs", OutputImageError)}
	}
	buf, err := sr.OutputSized(OutputImageError, "BYTES", m.shape, size)
	if err != nil {
		return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: %v", OutputImageError, err)}
	}
	if len(buf) != size {
		return &Error{Code: CodeInternal, Msg: fmt.Sprintf("output %s: got a buffer of %d bytes for %d bytes", OutputImageError, len(buf), size)}
	}
	for _, msg := range m.msgs {
		binary.LittleEndian.PutUint32(buf, uint32(len(msg)))
		buf = buf[4+copy(buf[4:], msg):]
	}
	clear(m.msgs) // drop the strings
	return nil
}
