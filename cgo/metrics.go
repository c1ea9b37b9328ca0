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
// (Triton's are doubles) labelled model and version. Durations are in
// seconds, Prometheus' base unit, added as float64 per Execute: a sum
// such as 0.052147623 is what rate() and the other Prometheus tools
// expect, so that they compare with any other exporter's *_seconds_total.
//
//	sluice_images_total              images the pipeline processed without error
//	sluice_image_bytes_total         their encoded bytes
//	sluice_image_failures_total      images it failed on, label cause: one
//	                                 metric per backend.Causes value
//	sluice_stage_duration_seconds_total  cumulative seconds of Execute's
//	                                 stages, label stage: collect (inputs into
//	                                 the batch), pipeline (outputs placed, the
//	                                 executor's run), respond (each request's
//	                                 outcome)
//	sluice_op_duration_seconds_total cumulative seconds of each operator
//	                                 call of the pipeline, label op: decode,
//	                                 resize+crop, normalize... (the pipeline
//	                                 stage's split; CPU workers run in
//	                                 parallel, so it can exceed wall time; a
//	                                 GPU instance's kernel is one call of
//	                                 every operator after decode)
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
//	                                 hybrid (nvJPEG on the SMs), cpu_huffman
//	                                 (nvJPEG's decoupled decoder: Huffman on a
//	                                 CPU worker), cpu (libjpeg-turbo, then
//	                                 uploaded)
//	sluice_gpu_phase_duration_seconds_total  cumulative seconds of a KIND_GPU
//	                                 instance's batch phases, label phase:
//	                                 parse (headers, routing), decode, kernel
//
// The op, path and phase series are made on their first report: which
// there are depends on the executor (fusion, the instance's kind).

const (
	famImages = iota
	famImageBytes
	famFailures
	famStages
	famOps
	famDecoded
	famPhases
	numFamilies
)

var familyDefs = [numFamilies]struct{ name, help string }{
	famImages:     {"sluice_images_total", "Images the Sluice pipeline processed successfully"},
	famImageBytes: {"sluice_image_bytes_total", "Encoded bytes of the images the Sluice pipeline processed successfully"},
	famFailures:   {"sluice_image_failures_total", "Images the Sluice pipeline failed on, by cause"},
	famStages: {"sluice_stage_duration_seconds_total",
		"Cumulative seconds of the Sluice backend's Execute stages: collect (inputs into the batch), pipeline (outputs placed, executor run), respond (each request's outcome)"},
	famOps: {"sluice_op_duration_seconds_total",
		"Cumulative seconds of each operator call of the Sluice pipeline (decode, resize+crop, normalize...)"},
	famDecoded: {"sluice_gpu_decoded_images_total",
		"Images the GPU instances of a Sluice model decoded, by decoder: hardware (JPEG engines), hybrid (nvJPEG on the SMs), cpu (libjpeg-turbo, uploaded)"},
	famPhases: {"sluice_gpu_phase_duration_seconds_total",
		"Cumulative seconds of the Sluice GPU instances' batch phases: parse (headers, routing), decode, kernel"},
}

// labelOf names the one label of the families whose series are made on
// their first report.
var labelOf = [numFamilies]string{famOps: "op", famDecoded: "path", famPhases: "phase"}

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

	// The series of families in labelOf, by label value. Instances record
	// concurrently.
	name, version string
	labelledMu    sync.Mutex
	labelled      map[seriesKey]*C.TRITONSERVER_Metric
}

// seriesKey names one series of a family in labelOf.
type seriesKey struct {
	family int
	value  string
}

// newModelMetrics makes a model's metrics, or returns nil, nil when
// metrics are off. On an error none are left.
func newModelMetrics(name string, version int64) (*modelMetrics, error) {
	fs := theFamilies.Load()
	if fs == nil {
		return nil, nil
	}
	v := strconv.FormatInt(version, 10)
	mm := &modelMetrics{name: name, version: v, labelled: map[seriesKey]*C.TRITONSERVER_Metric{}}
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
	mm.labelledMu.Lock()
	for k, m := range mm.labelled {
		del(&m)
		delete(mm.labelled, k)
	}
	mm.labelledMu.Unlock()
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
	increment(mm.stages[0], seconds(st.CollectNs()))
	increment(mm.stages[1], seconds(st.PipelineNs()))
	increment(mm.stages[2], seconds(st.RespondNs()))
	if len(st.Ops) == 0 {
		return
	}
	mm.labelledMu.Lock()
	defer mm.labelledMu.Unlock()
	for _, t := range st.Ops {
		increment(mm.series(famOps, t.Name), seconds(t.Ns))
	}
	for _, t := range st.Phases {
		increment(mm.series(famPhases, t.Name), seconds(t.Ns))
	}
	for _, c := range st.Decoded {
		increment(mm.series(famDecoded, c.Name), float64(c.N))
	}
}

func seconds(ns uint64) float64 { return float64(ns) / 1e9 }

// series returns the series of a family in labelOf for a label value,
// making it on first use; nil when it cannot be made. labelledMu is held.
func (mm *modelMetrics) series(family int, value string) *C.TRITONSERVER_Metric {
	k := seriesKey{family, value}
	m, ok := mm.labelled[k]
	if ok {
		return m
	}
	fs := theFamilies.Load()
	if fs == nil {
		return nil
	}
	var err error
	if m, err = fs.metric(family, "model", mm.name, "version", mm.version, labelOf[family], value); err != nil {
		logger().Warn("sluice: cannot make a metric; going on without it",
			zap.String("family", familyDefs[family].name), zap.String(labelOf[family], value), zap.Error(err))
	}
	mm.labelled[k] = m // nil after an error: not tried again
	return m
}

func increment(m *C.TRITONSERVER_Metric, v float64) {
	if m == nil || v <= 0 {
		return
	}
	logIfError("TRITONSERVER_MetricIncrement", C.TRITONSERVER_MetricIncrement(m, C.double(v)))
}
