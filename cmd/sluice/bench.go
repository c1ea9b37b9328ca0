package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
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
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	ef := addExecFlags(fs)
	dur := fs.Duration("duration", 5*time.Second, "how long to measure, after one warm-up pass")
	asJSON := fs.Bool("json", false, "print one JSON object")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured part to this file")
	pos, err := parse(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("want one or more image directories")
	}
	var imgs [][]byte
	for _, dir := range pos {
		b, err := readImages(dir)
		if err != nil {
			return err
		}
		imgs = append(imgs, b...)
	}
	e, _, err := ef.open()
	if err != nil {
		return err
	}
	defer e.Close()

	bs := *ef.batch
	batch := make([][]byte, bs)
	next := 0
	fill := func() {
		for i := range batch {
			batch[i] = imgs[next%len(imgs)]
			next++
		}
	}
	in := [][][]byte{batch}
	// Warm up: every image once, so buffers reach their steady size.
	for range (len(imgs) + bs - 1) / bs {
		fill()
		if _, err := e.Run(in); err != nil {
			return err
		}
	}
	r := benchResult{Pipeline: *ef.pipeline, Images: len(imgs), Workers: e.Workers(), Batch: bs}
	var lat []time.Duration
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
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for time.Since(start) < *dur {
		fill()
		t := time.Now()
		res, err := e.Run(in)
		if err != nil {
			return err
		}
		lat = append(lat, time.Since(t))
		for _, err := range res.Errs {
			if err != nil {
				r.Failed++
			}
		}
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
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
	if *asJSON {
		return json.NewEncoder(stdout).Encode(r)
	}
	fmt.Fprintf(stdout, "%s: %d images, %d workers, batch %d\n", r.Pipeline, r.Images, r.Workers, r.Batch)
	fmt.Fprintf(stdout, "%.0f images/s  p50 %.2f ms  p99 %.2f ms  (%d batches in %.1fs, %d failed samples, %.1f allocs/batch)\n",
		r.ImagesPerSec, r.P50ms, r.P99ms, r.Batches, r.Seconds, r.Failed, r.AllocsPerBatch)
	return nil
}

// readImages loads every .jpg, .jpeg and .png file directly in dir.
func readImages(dir string) ([][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var imgs [][]byte
	for _, ent := range ents {
		switch strings.ToLower(filepath.Ext(ent.Name())) {
		case ".jpg", ".jpeg", ".png":
		default:
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, b)
	}
	if len(imgs) == 0 {
		return nil, fmt.Errorf("no .jpg, .jpeg or .png files in %s", dir)
	}
	return imgs, nil
}
