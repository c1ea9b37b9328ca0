package main

/*
#include "triton.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"go.uber.org/zap"

	"github.com/sluice-dev/sluice/backend"
)

// TRITONBACKEND_ModelInstanceExecute runs one batch. Once every request
// has a response object the requests are the backend's: from then on each
// one gets exactly one response, error or not, its statistics and one
// release, whatever fails or panics on the way, and the function returns
// success. Returning an error (which hands the requests back to Triton)
// happens only before that point, when nothing has been done with them.
//
//export TRITONBACKEND_ModelInstanceExecute
func TRITONBACKEND_ModelInstanceExecute(ti *C.TRITONBACKEND_ModelInstance, reqs **C.TRITONBACKEND_Request, n C.uint32_t) (result *C.TRITONSERVER_Error) {
	const where = "TRITONBACKEND_ModelInstanceExecute"
	owned := false
	defer func() {
		if r := recover(); r != nil {
			err := panicError(where, r)
			if owned {
				// Unreachable by design (finish does not panic), but if it
				// were reached: Triton must not answer and release these
				// requests a second time.
				logger().Error("requests of this batch may have been left without a response", zap.Error(err))
				result = nil
				return
			}
			result = newTritonError(err)
		}
	}()
	start := monotonicNow()
	if n == 0 {
		return nil
	}
	st, err := instanceStateOf(ti)
	if err != nil {
		return newTritonError(err)
	}
	if err := st.begin(unsafe.Slice(reqs, int(n))); err != nil {
		return newTritonError(err)
	}
	owned = true
	errs, stats := st.execute()
	st.finish(ti, start, errs, stats)
	// After the responses: metrics are not worth a client's wait.
	st.metrics.record(&stats, st.gpu)
	return nil
}

// begin sets up one exchange per request, each with its response. If a
// response cannot be made, the ones made so far are deleted and the error
// returned, leaving the requests untouched for Triton to answer.
func (st *instanceState) begin(creqs []*C.TRITONBACKEND_Request) error {
	n := len(creqs)
	if cap(st.exchanges) < n {
		st.exchanges = make([]exchange, n)
		st.reqs = make([]backend.Request, n)
		st.resps = make([]backend.Response, n)
	}
	st.exchanges, st.reqs, st.resps = st.exchanges[:n], st.reqs[:n], st.resps[:n]
	// The previous batch's inputs are no longer in use, and this batch's
	// may lie in memory mapped since.
	st.arena.reset()
	st.mapsLoaded = false
	clear(st.staged) // nothing of a released request stays reachable
	st.staged = st.staged[:0]
	for i, r := range creqs {
		var resp *C.TRITONBACKEND_Response
		if e := C.TRITONBACKEND_ResponseNew(&resp, r); e != nil {
			for j := range i {
				logIfError("TRITONBACKEND_ResponseDelete", C.TRITONBACKEND_ResponseDelete(st.exchanges[j].resp))
				st.exchanges[j] = exchange{}
			}
			return goError("TRITONBACKEND_ResponseNew", e)
		}
		st.exchanges[i] = exchange{st: st, req: r, resp: resp}
		st.reqs[i], st.resps[i] = &st.exchanges[i], &st.exchanges[i]
	}
	return nil
}

// execute runs backend on the batch. A panic in backend fails every
// request of the batch instead of the server.
func (st *instanceState) execute() (errs []error, stats backend.BatchStats) {
	defer func() {
		if r := recover(); r != nil {
			err := panicError("backend Instance.Execute", r)
			errs = make([]error, len(st.exchanges))
			for i := range errs {
				errs[i] = err
			}
			stats = backend.BatchStats{}
		}
	}()
	return st.inst.Execute(st.reqs, st.resps)
}

// finish sends every response, then reports statistics and releases every
// request (statistics must precede the release), then reports the batch.
func (st *instanceState) finish(ti *C.TRITONBACKEND_ModelInstance, start uint64, errs []error, stats backend.BatchStats) {
	ok := st.ok[:0]
	for i := range st.exchanges {
		ok = append(ok, st.exchanges[i].send(statusOf(errs, i)))
	}
	st.ok = ok
	execStart, computeStart, computeEnd, execEnd := timeline(start, monotonicNow(), stats)
	for i := range st.exchanges {
		req := st.exchanges[i].req
		logIfError("TRITONBACKEND_ModelInstanceReportStatistics", C.TRITONBACKEND_ModelInstanceReportStatistics(
			ti, req, C.bool(ok[i]), C.uint64_t(execStart), C.uint64_t(computeStart), C.uint64_t(computeEnd), C.uint64_t(execEnd)))
		logIfError("TRITONBACKEND_RequestRelease", C.TRITONBACKEND_RequestRelease(req, C.TRITONSERVER_REQUEST_RELEASE_ALL))
		// Nothing of a released request may be reachable afterwards.
		st.exchanges[i] = exchange{}
	}
	// A batch that produced no samples is not reported: Triton would count
	// an execution of batch size 0.
	if stats.Samples > 0 {
		logIfError("TRITONBACKEND_ModelInstanceReportBatchStatistics", C.TRITONBACKEND_ModelInstanceReportBatchStatistics(
			ti, C.uint64_t(stats.Samples), C.uint64_t(execStart), C.uint64_t(computeStart), C.uint64_t(computeEnd), C.uint64_t(execEnd)))
	}
}

// statusOf is backend's verdict on request i; a missing one (backend
// returned too few) is an internal error rather than a success.
// (backend logs the requests that fail; this one is logged here.)
func statusOf(errs []error, i int) error {
	if i < len(errs) {
		return errs[i]
	}
	err := &backend.Error{Code: backend.CodeInternal,
		Msg: fmt.Sprintf("sluice: backend returned %d results for a batch with request %d", len(errs), i)}
	logger().Error("missing result", zap.Error(err))
	return err
}

// send sends the exchange's response, final, carrying err if there is one,
// and reports whether the request succeeded.
func (x *exchange) send(err error) bool {
	if err == nil {
		err = x.deliverStaged()
	}
	cerr := newTritonError(err)
	sendErr := goError("TRITONBACKEND_ResponseSend",
		C.TRITONBACKEND_ResponseSend(x.resp, C.TRITONSERVER_RESPONSE_COMPLETE_FINAL, cerr))
	// ResponseSend copies the error's code and message and leaves the
	// error to the caller; the response is Triton's now, sent or not.
	if cerr != nil {
		C.TRITONSERVER_ErrorDelete(cerr)
	}
	x.resp = nil
	if sendErr != nil {
		logger().Error("sending a response failed", zap.String("instance", x.st.name), zap.Error(sendErr))
		return false
	}
	return err == nil
}
