package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-dev/sluice/cmd/sluice/npy"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline"
)

// execFlags are the executor settings shared by run and bench.
type execFlags struct {
	pipeline  *string
	workers   *int
	batch     *int
	maxPixels *int
	maxBytes  *int
	gpus      *deviceList
	gpuMem    *int64
	hwShare   *float64
}

func addExecFlags(fs *flag.FlagSet) execFlags {
	return execFlags{
		pipeline:  fs.String("pipeline", "", "pipeline file, text or compact (required)"),
		workers:   fs.Int("workers", 0, "worker threads (0: GOMAXPROCS)"),
		batch:     fs.Int("batch", 32, "images per batch"),
		maxPixels: fs.Int("max-pixels", ops.DefaultLimits.MaxPixels, "largest decoded image, in pixels"),
		maxBytes:  fs.Int("max-bytes", ops.DefaultLimits.MaxBytes, "largest encoded image, in bytes"),
		gpus:      addDeviceList(fs, "gpu", "run on this GPU (device ordinal) instead of the CPU; bench takes a list, 0,1: its instances on each"),
		gpuMem:    fs.Int64("gpu-mem", 0, "with --gpu: device memory cap for a batch, in bytes (0: a sixteenth of the GPU's memory, at least 1 GiB)"),
		hwShare:   fs.Float64("hw-share", -1, "with --gpu: share of JPEGs sent to the hardware JPEG engines (negative: the executor's default)"),
	}
}

// deviceList is a flag of GPU ordinals, comma-separated.
type deviceList []int

func addDeviceList(fs *flag.FlagSet, name, usage string) *deviceList {
	var d deviceList
	fs.Var(&d, name, usage)
	return &d
}

func (d *deviceList) String() string {
	if d == nil {
		return ""
	}
	s := make([]string, len(*d))
	for i, v := range *d {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (d *deviceList) Set(v string) error {
	var out deviceList
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a GPU ordinal", f)
		}
		if slices.Contains(out, n) {
			return fmt.Errorf("GPU %d named twice", n)
		}
		out = append(out, n)
	}
	*d = out
	return nil
}

// device is the one GPU of --gpu, or -1 for the CPU; more than one is an
// error for the commands that run one executor.
func (f execFlags) device() (int, error) {
	switch len(*f.gpus) {
	case 0:
		return -1, nil
	case 1:
		return (*f.gpus)[0], nil
	}
	return 0, fmt.Errorf("--gpu: one GPU, not %d", len(*f.gpus))
}

// open compiles the pipeline and makes its executor on GPU dev, or on the
// CPU when dev is negative.
func (f execFlags) open(dev int) (executor.Executor, *pipeline.Compiled, error) {
	if *f.pipeline == "" {
		return nil, nil, fmt.Errorf("--pipeline is required")
	}
	if *f.batch < 1 {
		return nil, nil, fmt.Errorf("--batch must be at least 1")
	}
	if *f.maxPixels < 1 || *f.maxBytes < 1 {
		return nil, nil, fmt.Errorf("--max-pixels and --max-bytes must be positive")
	}
	c, err := load(*f.pipeline)
	if err != nil {
		return nil, nil, err
	}
	if n := len(c.Inputs) - countTensors(c); n != 1 {
		return nil, nil, fmt.Errorf("%s has %d image inputs; the CLI feeds pipelines of one (besides boxes, which run takes from --boxes)", *f.pipeline, n)
	}
	kind := executor.KindCPU
	if dev >= 0 {
		kind = executor.KindGPU
	}
	e, err := executor.Open(kind, c, executor.Options{Workers: *f.workers, Limits: ops.WithPixels(ops.Limits{MaxBytes: *f.maxBytes}, *f.maxPixels),
		Device: dev, MemoryCap: *f.gpuMem, HWShare: *f.hwShare})
	if err != nil {
		return nil, nil, err
	}
	return e, c, nil
}

// countTensors is the number of boxes and count inputs of c.
func countTensors(c *pipeline.Compiled) int {
	n := 0
	for i := range c.Inputs {
		if c.Tensor(i) {
			n++
		}
	}
	return n
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	ef := addExecFlags(fs)
	outDir := fs.String("out", "", "directory for the .npy files (required): <stem>.<OUTPUT>.npy, or <file name>.<OUTPUT>.npy "+
		"for images whose stems collide (x.bmp and x.avif)")
	boxesFile := fs.String("boxes", "", "for a pipeline with a boxes input: the boxes of every image, a JSON list [[x1, y1, x2, y2], ...] "+
		"or a JSON object of such lists by image file name, or a .npy FP32 [N, 4]; fewer rows than the input's max are padded with NaN, "+
		"and a count input gets the number of rows given")
	pos, err := parse(fs, args, stderr)
	if err != nil {
		return err
	}
	if *outDir == "" {
		return fmt.Errorf("--out DIR is required")
	}
	if len(pos) == 0 {
		return fmt.Errorf("no images given")
	}
	names, err := outputNames(pos)
	if err != nil {
		return err
	}
	dev, err := ef.device()
	if err != nil {
		return err
	}
	e, prog, err := ef.open(dev)
	if err != nil {
		return err
	}
	defer e.Close()
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	res := executor.NewResult(prog)
	img := 0 // the image input
	for i := range prog.Inputs {
		if !prog.Tensor(i) {
			img = i
		}
	}
	boxes, err := loadBoxes(*boxesFile, prog)
	if err != nil {
		return err
	}
	decoded := prog.Decoded(img)
	failed := 0
	for start := 0; start < len(pos); start += *ef.batch {
		files := pos[start:min(start+*ef.batch, len(pos))]
		in := make([][][]byte, len(prog.Inputs))
		for i := range in {
			in[i] = make([][]byte, len(files))
		}
		imgs := in[img]
		var dims [][][]int // per input: the shapes of a decoded input's images
		readErrs := make([]error, len(files))
		if decoded {
			dims = make([][][]int, len(prog.Inputs))
			dims[img] = make([][]int, len(files))
		}
		for i, p := range files {
			// An unreadable file is reported like a bad image, and
			// the batch goes on without it (empty bytes fail decode).
			if imgs[i], err = os.ReadFile(p); err != nil {
				imgs[i] = nil
			}
			if decoded && err == nil {
				dims[img][i], imgs[i], readErrs[i] = readDecoded(imgs[i], prog.InputSpecs[img])
			}
			if boxes != nil {
				if err := boxes.fill(in, i, p); err != nil && readErrs[i] == nil {
					readErrs[i] = err
				}
			}
		}
		if err := executor.RunShaped(e, in, dims, res); err != nil {
			return err
		}
		for i, p := range files {
			if readErrs[i] != nil {
				failed++
				fmt.Fprintf(stderr, "sluice run: %s: %s\n", p, oneLine(readErrs[i].Error()))
				continue
			}
			if res.Errs[i] != nil {
				failed++
				fmt.Fprintf(stderr, "sluice run: %s: %s\n", p, oneLine(errText(res.Errs[i])))
				continue
			}
			for o, out := range res.Outputs {
				n := e.SampleBytes(o)
				name := filepath.Join(*outDir, names[start+i]+"."+out.Name+".npy")
				if err := writeNpy(name, out.Spec, out.Data[i*n:(i+1)*n]); err != nil {
					return err
				}
			}
		}
	}
	fmt.Fprintf(stdout, "%d of %d images written to %s\n", len(pos)-failed, len(pos), *outDir)
	if failed > 0 {
		return fmt.Errorf("%d image(s) failed", failed)
	}
	return nil
}

// errText drops the sample index, meaningless to a CLI user who sees the
// file name instead.
func errText(err error) string {
	if se, ok := err.(*executor.SampleError); ok {
		return se.Node + ": " + se.Err.Error()
	}
	return err.Error()
}

// readDecoded reads a .npy file as a decoded-image input of spec: UINT8
// [H, W, C], or [H, W] for a one-channel input, the layout
// numpy.asarray(PIL.Image.open(f)) gives. The executor checks C and the
// limits, as it does for a request's tensor.
func readDecoded(b []byte, spec ops.Spec) ([]int, []byte, error) {
	dt, shape, data, err := npy.Read(b)
	if err != nil {
		return nil, nil, err
	}
	if dt != ops.Uint8 {
		return nil, nil, fmt.Errorf("the pipeline's input is a decoded %v image, UINT8 [H, W, %d]; this .npy file holds %v", spec.Color, spec.Dims[2], dt)
	}
	if len(shape) == 2 && spec.Dims[2] == 1 {
		shape = append(shape, 1)
	}
	if len(shape) != 3 {
		return nil, nil, fmt.Errorf("the pipeline's input is a decoded %v image, UINT8 [H, W, %d]; this .npy file's shape is %v", spec.Color, spec.Dims[2], shape)
	}
	return shape, data, nil
}

func baseName(p string) string {
	b := filepath.Base(p)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

// outputNames is the name each image's outputs take, <name>.<OUTPUT>.npy:
// its stem, or, where another image has the same stem (x.bmp and x.avif,
// one picture in two formats), its whole file name, so that neither
// overwrites the other and the caller can still tell them apart. Only what
// still collides then (the same file name in two folders) is an error,
// before anything is written.
func outputNames(paths []string) ([]string, error) {
	names := make([]string, len(paths))
	stems := map[string]int{}
	for i, p := range paths {
		names[i] = baseName(p)
		stems[names[i]]++
	}
	owner := map[string]string{}
	for i, p := range paths {
		if stems[names[i]] > 1 {
			names[i] = filepath.Base(p)
		}
		if other, dup := owner[names[i]]; dup {
			return nil, fmt.Errorf("%s and %s would both write %s.*.npy", other, p, names[i])
		}
		owner[names[i]] = p
	}
	return names, nil
}

func writeNpy(name string, s ops.Spec, data []byte) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := npy.Write(w, s.DType, s.Dims, data); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
