package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu"
	"github.com/sluice-dev/sluice/pipeline"
)

// benchResult is what bench prints, also as JSON for scripts.
type benchResult struct {
	Pipeline       string  `json:"pipeline"`
	Images         int     `json:"images"` // distinct files cycled through
	Workers        int     `json:"workers"`
	Batch          int     `json:"batch"`
	Batches        int     `json:"batches"`
	Processed      int     `json:"processed"`
	Failed         int     `json:"failed"`
	Seconds        float64 `json:"seconds"`
	ImagesPerSec   float64 `json:"images_per_sec"`
	P50ms          float64 `json:"p50_ms"`
	P99ms          float64 `json:"p99_ms"`
	AllocsPerBatch float64 `json:"allocs_per_batch"`
	Instances      int     `json:"instances"` // per GPU with --gpu
	// With --gpu: the GPUs, and each one's images/s.
	GPUs  []int              `json:"gpus,omitempty"`
	ByGPU map[string]float64 `json:"images_per_sec_by_gpu,omitempty"`
	// GPU only: per batch of the first instance, milliseconds in each
	// phase (parse, decode, kernel), and images decoded by each path.
	StageMs map[string]float64 `json:"stage_ms,omitempty"`
	Decoded map[string]int64   `json:"decoded,omitempty"`
}

// benchInstance is one executor of a bench run with its own batches.
type benchInstance struct {
	dev int // GPU, or -1
	e   executor.Executor
	run func([][][]byte) ([]error, error)
	// samples[k] is what image k feeds each pipeline input: its bytes,
	// and with --boxes its boxes and count.
	samples [][][]byte
	batch   [][][]byte // per input, per sample of the batch
	next    int
	lat     []time.Duration
	failed  int
}

// deviceRunner is an executor that can keep a batch's outputs in device
// memory of its own (the GPU's).
type deviceRunner interface {
	RunOnDevice(in [][][]byte) ([]error, error)
}

func newBenchInstance(e executor.Executor, prog *pipeline.Compiled, samples [][][]byte, bs, i int, hostOut bool) *benchInstance {
	res := executor.NewResult(prog)
	bi := &benchInstance{e: e, samples: samples, batch: make([][][]byte, len(prog.Inputs)), next: i * bs}
	for k := range bi.batch {
		bi.batch[k] = make([][]byte, bs)
	}
	bi.run = func(in [][][]byte) ([]error, error) {
		err := executor.Run(e, in, res)
		return res.Errs, err
	}
	// On the GPU, outputs stay in device memory, as for the next model of
	// an ensemble; --host-out copies them out as a client would get them.
	if d, ok := e.(deviceRunner); ok && !hostOut {
		bi.run = d.RunOnDevice
	}
	return bi
}

// step runs one batch, the next images in turn, and counts its failures.
func (bi *benchInstance) step() (int, error) {
	for j := range bi.batch[0] {
		sample := bi.samples[bi.next%len(bi.samples)]
		for k := range bi.batch {
			bi.batch[k][j] = sample[k]
		}
		bi.next++
	}
	errs, err := bi.run(bi.batch)
	if err != nil {
		return 0, err
	}
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	return failed, nil
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	ef := addExecFlags(fs)
	dur := fs.Duration("duration", 5*time.Second, "how long to measure, after one warm-up pass")
	asJSON := fs.Bool("json", false, "print one JSON object")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured part to this file")
	memProfile := fs.String("memprofile", "", "write the measured part's allocations (every one, so slower) to this file")
	hostOut := fs.Bool("host-out", false, "with --gpu: copy outputs to host memory (default: keep them on the GPU)")
	instances := fs.Int("instances", 1, "executors running batches at once, on each GPU of --gpu (as a Triton instance count)")
	boxesFile := fs.String("boxes", "", "for a pipeline with a boxes input: the boxes of every image, as sluice run --boxes takes them")
	traceFile := fs.String("trace", "", "with --gpu: write the measured part's timeline (every lane's, worker's and instance's busy spans) to this JSON file, for bench/timeline.py")
	pos, err := parse(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("want one or more image directories")
	}
	var imgs [][]byte
	var names []string
	for _, dir := range pos {
		b, n, err := readImages(dir)
		if err != nil {
			return err
		}
		imgs, names = append(imgs, b...), append(names, n...)
	}
	if *instances < 1 {
		return fmt.Errorf("--instances must be at least 1")
	}
	// Several executors at once, as a Triton instance group of that count
	// (on each of its GPUs): each runs its own batches; throughput is their
	// sum.
	devs := []int(*ef.gpus)
	if len(devs) == 0 {
		devs = []int{-1}
	}
	var insts []*benchInstance
	var samples [][][]byte
	for _, dev := range devs {
		for range *instances {
			e, prog, err := ef.open(dev)
			if err != nil {
				return err
			}
			defer e.Close()
			if samples == nil {
				if samples, err = benchSamples(prog, imgs, names, *boxesFile); err != nil {
					return err
				}
			}
			bi := newBenchInstance(e, prog, samples, *ef.batch, len(insts), *hostOut)
			bi.dev = dev
			insts = append(insts, bi)
		}
	}
	bs := *ef.batch
	// Warm up: every image once, so buffers reach their steady size.
	for _, bi := range insts {
		for range (len(imgs) + bs - 1) / bs {
			if _, err := bi.step(); err != nil {
				return err
			}
		}
	}
	r := benchResult{Pipeline: *ef.pipeline, Images: len(imgs), Workers: insts[0].e.Workers(), Batch: bs, Instances: *instances,
		GPUs: *ef.gpus}
	var ms0, ms1 runtime.MemStats
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		// Every allocation sampled, so the profile counts them exactly.
		runtime.MemProfileRate = 1
	}
	var before executor.Stats
	insts[0].e.Stats(&before)
	runtime.ReadMemStats(&ms0)
	if *traceFile != "" {
		gpu.StartTrace(maxTraceSpans)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(insts))
	for i, bi := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < *dur {
				t := time.Now()
				failed, err := bi.step()
				if err != nil {
					errs[i] = err
					return
				}
				bi.lat = append(bi.lat, time.Since(t))
				bi.failed += failed
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if *traceFile != "" {
		if err := writeTrace(*traceFile, gpu.StopTrace(), elapsed); err != nil {
			return err
		}
	}
	runtime.ReadMemStats(&ms1)
	if *memProfile != "" {
		if err := writeAllocProfile(*memProfile); err != nil {
			return err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var lat []time.Duration
	for _, bi := range insts {
		lat = append(lat, bi.lat...)
		r.Failed += bi.failed
		if bi.dev >= 0 {
			if r.ByGPU == nil {
				r.ByGPU = map[string]float64{}
			}
			r.ByGPU[strconv.Itoa(bi.dev)] += float64(len(bi.lat)*bs) / elapsed.Seconds()
		}
	}
	r.Batches = len(lat)
	r.Processed = len(lat) * bs
	r.Seconds = elapsed.Seconds()
	r.ImagesPerSec = float64(r.Processed) / r.Seconds
	// The latency slice itself grows while measuring; its few
	// allocations are left in, an upper bound on the executor's.
	r.AllocsPerBatch = float64(ms1.Mallocs-ms0.Mallocs) / float64(r.Batches)
	slices.Sort(lat)
	r.P50ms = float64(lat[len(lat)/2].Microseconds()) / 1e3
	r.P99ms = float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()) / 1e3
	// The first instance's split of a batch's time, and its decoders.
	var after executor.Stats
	insts[0].e.Stats(&after)
	if len(after.Phases) > 0 {
		r.StageMs = map[string]float64{}
	}
	for i, p := range after.Phases {
		r.StageMs[p.Name] = float64(p.N-before.Phases[i].N) / 1e6 / float64(len(insts[0].lat))
	}
	if len(after.Decoded) > 0 {
		r.Decoded = map[string]int64{}
	}
	for _, d := range after.Decoded {
		r.Decoded[d.Name] = d.N
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(r)
	}
	fmt.Fprintf(stdout, "%s: %d images, %d workers, batch %d, %d instances", r.Pipeline, r.Images, r.Workers, r.Batch, r.Instances)
	if len(r.GPUs) > 0 {
		fmt.Fprintf(stdout, " on each of GPUs %v", r.GPUs)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "%.0f images/s  p50 %.2f ms  p99 %.2f ms  (%d batches in %.1fs, %d failed samples, %.1f allocs/batch)\n",
		r.ImagesPerSec, r.P50ms, r.P99ms, r.Batches, r.Seconds, r.Failed, r.AllocsPerBatch)
	if len(r.GPUs) > 1 {
		for _, d := range r.GPUs {
			fmt.Fprintf(stdout, "  GPU %d: %.0f images/s\n", d, r.ByGPU[strconv.Itoa(d)])
		}
	}
	return nil
}

// writeAllocProfile writes the allocations made since MemProfileRate was
// set to 1 (go tool pprof -sample_index=alloc_objects).
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile reports allocations up to the last GC
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	return errors.Join(err, f.Close())
}

// benchSamples pairs each image with what the pipeline's other inputs
// take: the boxes (and count) of --boxes.
func benchSamples(prog *pipeline.Compiled, imgs [][]byte, names []string, boxesFile string) ([][][]byte, error) {
	boxes, err := loadBoxes(boxesFile, prog)
	if err != nil {
		return nil, err
	}
	img := 0
	for i := range prog.Inputs {
		if !prog.Tensor(i) {
			img = i
		}
	}
	if prog.Decoded(img) {
		return nil, fmt.Errorf("input %s takes decoded images: bench feeds encoded files", prog.Inputs[img])
	}
	samples := make([][][]byte, len(imgs))
	for k, b := range imgs {
		in := make([][][]byte, len(prog.Inputs))
		for i := range in {
			in[i] = make([][]byte, 1)
		}
		in[img][0] = b
		if boxes != nil {
			if err := boxes.fill(in, 0, names[k]); err != nil {
				return nil, err
			}
		}
		samples[k] = make([][]byte, len(in))
		for i := range in {
			samples[k][i] = in[i][0]
		}
	}
	return samples, nil
}

// readImages loads every file directly in dir that a registered format
// recognises by its content (names do not count, as on a server).
func readImages(dir string) ([][]byte, []string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var imgs [][]byte
	var names []string
	for _, ent := range ents {
		// Links count as what they point to (benchmarks link a
		// corpus's files into folders by kind).
		name := filepath.Join(dir, ent.Name())
		if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, nil, err
		}
		if codec.Sniff(b) != "" {
			imgs, names = append(imgs, b), append(names, name)
		}
	}
	if len(imgs) == 0 {
		return nil, nil, fmt.Errorf("no image files in %s", dir)
	}
	return imgs, names, nil
}

// maxTraceSpans bounds a trace's memory (about 48 bytes a span): some 20 s
// of 16 workers at 30,000 images a second.
const maxTraceSpans = 1 << 22

// writeTrace writes a GPU trace as JSON: the measured seconds and every
// span, times in microseconds since the measured part began.
func writeTrace(path string, spans []gpu.Span, elapsed time.Duration) error {
	type span struct {
		Actor string  `json:"actor"`
		Index int     `json:"index"`
		Step  string  `json:"step"`
		N     int     `json:"n"`
		Start float64 `json:"start_us"`
		End   float64 `json:"end_us"`
	}
	out := struct {
		Seconds float64 `json:"seconds"`
		Spans   []span  `json:"spans"`
	}{Seconds: elapsed.Seconds(), Spans: make([]span, len(spans))}
	for i, s := range spans {
		out.Spans[i] = span{s.Actor.String(), s.Index, s.Step.String(), s.N,
			float64(s.Start) / 1e3, float64(s.End) / 1e3}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
