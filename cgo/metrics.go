package main

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"go.uber.org/zap"

	"github.com/sluice-dev/sluice/backend"
)

// Sluice's own metrics, registered through Triton's metrics API so that
// they show at Triton's /metrics next to its nv_* ones. All are counters
// (Triton's are doubles) labelled model and version:
//
//	sluice_images_total              images the pipeline processed without error
//	sluice_image_bytes_total         their encoded bytes
//	sluice_image_failures_total      images it failed on, label cause: one
//	                                 metric per backend.Causes value
//	sluice_stage_duration_us_total   cumulative microseconds of Execute's
//	                                 stages, label stage: collect (inputs into
//	                                 the batch), pipeline (the executor's run),
//	                                 respond (outputs into the responses)
//	sluice_op_duration_us_total      cumulative worker microseconds of each
//	                                 operator call of the pipeline, label op:
//	                                 decode, resize+crop, normalize... (the
//	                                 pipeline stage's split; workers run in
//	                                 parallel, so it can exceed wall time)
//
// The families are made once, in TRITONBACKEND_Initialize, and deleted in
// TRITONBACKEND_Finalize; each model makes its metrics in ModelInitialize
// and deletes them in ModelFinalize (Triton wants a family's metrics
// deleted before it). Metrics are optional: when Triton refuses a family
// (metrics disabled, or a Triton built without them), Sluice logs that
// once and runs without.
//
//	sluice_gpu_decoded_images_total  images a KIND_GPU instance decoded, label
//	                                 path: hardware (the GPU's JPEG engines),
//	                                 hybrid (nvJPEG on the SMs), cpu
//	                                 (libjpeg-turbo, then uploaded)

const (
	famImages = iota
	famImageBytes
	famFailures
	famStages
	famOps
	famDecoded
	numFamilies
)

var familyDefs = [numFamilies]struct{ name, help string }{
	famImages:     {"sluice_images_total", "Images the Sluice pipeline processed successfully"},
	famImageBytes: {"sluice_image_bytes_total", "Encoded bytes of the images the Sluice pipeline processed successfully"},
	famFailures:   {"sluice_image_failures_total", "Images the Sluice pipeline failed on, by cause"},
	famStages: {"sluice_stage_duration_us_total",
		"Cumulative microseconds of the Sluice backend's Execute stages: collect (inputs into the batch), pipeline (executor run), respond (outputs into the responses)"},
	famOps: {"sluice_op_duration_us_total",
		"Cumulative worker microseconds of each operator call of the Sluice pipeline (decode, resize+crop, normalize...)"},
	famDecoded: {"sluice_gpu_decoded_images_total",
		"Images the GPU instances of a Sluice model decoded, by decoder: hardware (JPEG engines), hybrid (nvJPEG on the SMs), cpu (libjpeg-turbo, uploaded)"},
}

// Stage label values, in modelMetrics.stages order.
var stageNames = [...]string{"collect", "pipeline", "respond"}

type metricFamilies [numFamilies]*C.TRITONSERVER_MetricFamily

// theFamilies is nil when metrics are off.
var theFamilies atomic.Pointer[metricFamilies]

// newMetricFamilies makes every family, or none.
func newMetricFamilies() (*metricFamilies, error) {
	var fs metricFamilies
	for i, d := range familyDefs {
		name, help := C.CString(d.name), C.CString(d.help)
		err := goError("TRITONSERVER_MetricFamilyNew",
			C.TRITONSERVER_MetricFamilyNew(&fs[i], C.TRITONSERVER_METRIC_KIND_COUNTER, name, help))
		C.free(unsafe.Pointer(name))
		C.free(unsafe.Pointer(help))
		if err != nil {
			fs[i] = nil
			fs.delete()
			return nil, err
		}
	}
	return &fs, nil
}

// delete deletes the families; their metrics must be gone.
func (fs *metricFamilies) delete() {
	for i, f := range fs {
		if f != nil {
			logIfError("TRITONSERVER_MetricFamilyDelete", C.TRITONSERVER_MetricFamilyDelete(f))
			fs[i] = nil
		}
	}
}

// metric makes a metric of family i with the labels given as name, value
// pairs.
func (fs *metricFamilies) metric(i int, labels ...string) (*C.TRITONSERVER_Metric, error) {
	n := len(labels) / 2
	keys := make([]*C.char, n, C.SLUICE_MAX_LABELS)
	values := make([]*C.char, n, C.SLUICE_MAX_LABELS)
	for k := range n {
		keys[k], values[k] = C.CString(labels[2*k]), C.CString(labels[2*k+1])
	}
	defer func() {
		for k := range n {
			C.free(unsafe.Pointer(keys[k]))
			C.free(unsafe.Pointer(values[k]))
		}
	}()
	var m *C.TRITONSERVER_Metric
	// The slices hold C pointers only, as cgo allows.
	var kp, vp **C.char
	if n > 0 {
		kp, vp = &keys[0], &values[0]
	}
	if err := goError("TRITONSERVER_MetricNew", C.sluice_metric_new(&m, fs[i], kp, vp, C.size_t(n))); err != nil {
		return nil, err
	}
	return m, nil
}

// modelMetrics are one model's metrics. A nil *modelMetrics records
// nothing.
type modelMetrics struct {
	images, bytes *C.TRITONSERVER_Metric
	failures      [len(backend.Causes)]*C.TRITONSERVER_Metric
	stages        [len(stageNames)]*C.TRITONSERVER_Metric
	decoded       [len(backend.DecodePaths)]*C.TRITONSERVER_Metric

	// Per-operator metrics, made on an operator's first report: the
	// operator calls are the executor's (fusion decides them), known once
	// an instance exists. Instances record concurrently.
	name, version string
	opsMu         sync.Mutex
	ops           map[string]*C.TRITONSERVER_Metric
}

// newModelMetrics makes a model's metrics, or returns nil, nil when
// metrics are off. On an error none are left.
func newModelMetrics(name string, version int64) (*modelMetrics, error) {
	fs := theFamilies.Load()
	if fs == nil {
		return nil, nil
	}
	v := strconv.FormatInt(version, 10)
	mm := &modelMetrics{name: name, version: v, ops: map[string]*C.TRITONSERVER_Metric{}}
	var err error
	if mm.images, err = fs.metric(famImages, "model", name, "version", v); err != nil {
		mm.delete()
		return nil, err
	}
	if mm.bytes, err = fs.metric(famImageBytes, "model", name, "version", v); err != nil {
		mm.delete()
		return nil, err
	}
	for i, c := range backend.Causes {
		if mm.failures[i], err = fs.metric(famFailures, "model", name, "version", v, "cause", string(c)); err != nil {
			mm.delete()
			return nil, err
		}
	}
	for i, s := range stageNames {
		if mm.stages[i], err = fs.metric(famStages, "model", name, "version", v, "stage", s); err != nil {
			mm.delete()
			return nil, err
		}
	}
	for i, p := range backend.DecodePaths {
		if mm.decoded[i], err = fs.metric(famDecoded, "model", name, "version", v, "path", p); err != nil {
			mm.delete()
			return nil, err
		}
	}
	return mm, nil
}

// delete deletes the model's metrics (before the families go).
func (mm *modelMetrics) delete() {
	if mm == nil {
		return
	}
	del := func(m **C.TRITONSERVER_Metric) {
		if *m != nil {
			logIfError("TRITONSERVER_MetricDelete", C.TRITONSERVER_MetricDelete(*m))
			*m = nil
		}
	}
	del(&mm.images)
	del(&mm.bytes)
	for i := range mm.failures {
		del(&mm.failures[i])
	}
	for i := range mm.stages {
		del(&mm.stages[i])
	}
	for i := range mm.decoded {
		del(&mm.decoded[i])
	}
	mm.opsMu.Lock()
	for k, m := range mm.ops {
		del(&m)
		delete(mm.ops, k)
	}
	mm.opsMu.Unlock()
}

// record adds one Execute's counts. Zero increments are skipped: each is
// a call into Triton.
func (mm *modelMetrics) record(st *backend.BatchStats) {
	if mm == nil {
		return
	}
	increment(mm.images, float64(st.Images.Images))
	increment(mm.bytes, float64(st.Images.ImageBytes))
	for i, n := range st.Images.Failures {
		increment(mm.failures[i], float64(n))
	}
	increment(mm.stages[0], float64(st.CollectNs())/1e3)
	increment(mm.stages[1], float64(st.PipelineNs())/1e3)
	increment(mm.stages[2], float64(st.RespondNs())/1e3)
	for i, n := range st.Images.Decoded {
		increment(mm.decoded[i], float64(n))
	}
	if len(st.Ops) == 0 {
		return
	}
	mm.opsMu.Lock()
	defer mm.opsMu.Unlock()
	for _, op := range st.Ops {
		m, ok := mm.ops[op.Name]
		if !ok {
			fs := theFamilies.Load()
			if fs == nil {
				return
			}
			var err error
			if m, err = fs.metric(famOps, "model", mm.name, "version", mm.version, "op", op.Name); err != nil {
				logger().Warn("sluice: cannot make an operator metric; going on without it", zap.String("op", op.Name), zap.Error(err))
			}
			mm.ops[op.Name] = m // nil after an error: not tried again
		}
		increment(m, float64(op.Ns)/1e3)
	}
}

func increment(m *C.TRITONSERVER_Metric, v float64) {
	if m == nil || v <= 0 {
		return
	}
	logIfError("TRITONSERVER_MetricIncrement", C.TRITONSERVER_MetricIncrement(m, C.double(v)))
}
