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
// The sluice_gpu_* metrics are KIND_GPU instances', labelled gpu too: the
// device ordinal of the instances that reported them.
//
//	sluice_gpu_decoded_images_total  images decoded, label path: hardware
//	                                 (the GPU's JPEG engines), coefficients
//	                                 (codec's entropy decoding on a CPU
//	                                 worker, sluice_idct on the GPU), hybrid (nvJPEG
//	                                 on the SMs), cpu_huffman (nvJPEG's
//	                                 decoupled decoder: Huffman on a CPU
//	                                 worker), gpu_huffman (its GPU-Huffman
//	                                 state, large images), cpu
//	                                 (libjpeg-turbo, then uploaded), input
//	                                 (a decoded-image input, uploaded),
//	                                 device (one in this GPU's memory),
//	                                 sluice_gpu_huffman (codec's entropy
//	                                 decoding's twin on the SMs)
//	sluice_gpu_phase_duration_seconds_total  cumulative seconds of the batch
//	                                 phases, label phase: parse (headers,
//	                                 routing), decode, kernel
//	sluice_gpu_cross_device_copies_total  copies of outputs that Triton placed
//	                                 on another GPU than the instance's (a
//	                                 client's CUDA shared memory there);
//	                                 outputs on the instance's own GPU are
//	                                 written in place, uncounted
//	sluice_gpu_cross_device_bytes_total  their bytes
//
// The op, path, phase and cross-device series are made on their first
// report: which there are depends on the executor (fusion, the instance's
// kind and GPU).

const (
	famImages = iota
	famImageBytes
	famFailures
	famStages
	famOps
	famDecoded
	famPhases
	famCrossCopies
	famCrossBytes
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
	famCrossCopies: {"sluice_gpu_cross_device_copies_total",
		"Copies the Sluice GPU instances made of outputs Triton placed on another GPU than the instance's"},
	famCrossBytes: {"sluice_gpu_cross_device_bytes_total",
		"Bytes of the copies the Sluice GPU instances made of outputs Triton placed on another GPU than the instance's"},
}

// labelOf names the label of the families whose series are made on their
// first report, beside model, version and (gpuFamily) gpu; "" for none.
var labelOf = [numFamilies]string{famOps: "op", famDecoded: "path", famPhases: "phase"}

// gpuFamily marks the families labelled gpu.
var gpuFamily = [numFamilies]bool{famDecoded: true, famPhases: true, famCrossCopies: true, famCrossBytes: true}

// Stage label values, in modelMetrics.stages order.
var stageNames = [...]string{"collect", "pipeline", "respond"}

type metricFamilies [numFamilies]*C.TRITONSERVER_MetricFamily

// lifeMu is held across every TRITONSERVER_MetricNew and MetricDelete of
// Sluice's families. A model reloaded while its old copy finalizes makes
// series with the same labels as the old copy deletes; Triton shares one
// series between them, counted, but finds it and counts it under separate
// locks, so a delete can free the series a concurrent new has just found:
// the new model then writes into freed memory (glibc "unsorted double
// linked list corrupted", tritonserver 2.51, seen in a reload loop).
// Only Sluice makes metrics in these families, so serializing its own
// calls closes the gap.
var lifeMu sync.Mutex

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
	lifeMu.Lock()
	err := goError("TRITONSERVER_MetricNew", C.sluice_metric_new(&m, fs[i], kp, vp, C.size_t(n)))
	lifeMu.Unlock()
	if err != nil {
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

// seriesKey names one series of a family made on first report: its
// label's value and GPU.
type seriesKey struct {
	family int
	value  string
	gpu    string
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
			lifeMu.Lock()
			logIfError("TRITONSERVER_MetricDelete", C.TRITONSERVER_MetricDelete(*m))
			lifeMu.Unlock()
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

// record adds one Execute's counts, of an instance on GPU gpu ("" for a
// CPU instance). Zero increments are skipped: each is a call into Triton.
func (mm *modelMetrics) record(st *backend.BatchStats, gpu string) {
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
		increment(mm.series(seriesKey{famOps, t.Name, ""}), seconds(t.Ns))
	}
	for _, t := range st.Phases {
		increment(mm.series(seriesKey{famPhases, t.Name, gpu}), seconds(t.Ns))
	}
	for _, c := range st.Decoded {
		increment(mm.series(seriesKey{famDecoded, c.Name, gpu}), float64(c.N))
	}
	if st.CrossDevice > 0 {
		increment(mm.series(seriesKey{famCrossCopies, "", gpu}), float64(st.CrossDevice))
		increment(mm.series(seriesKey{famCrossBytes, "", gpu}), float64(st.CrossDeviceBytes))
	}
}

func seconds(ns uint64) float64 { return float64(ns) / 1e9 }

// series returns a series made on first report, making it on first use;
// nil when it cannot be made. labelledMu is held.
func (mm *modelMetrics) series(k seriesKey) *C.TRITONSERVER_Metric {
	m, ok := mm.labelled[k]
	if ok {
		return m
	}
	fs := theFamilies.Load()
	if fs == nil {
		return nil
	}
	labels := []string{"model", mm.name, "version", mm.version}
	if gpuFamily[k.family] {
		labels = append(labels, "gpu", k.gpu)
	}
	if l := labelOf[k.family]; l != "" {
		labels = append(labels, l, k.value)
	}
	var err error
	if m, err = fs.metric(k.family, labels...); err != nil {
		logger().Warn("sluice: cannot make a metric; going on without it",
			zap.String("family", familyDefs[k.family].name), zap.Strings("labels", labels), zap.Error(err))
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
