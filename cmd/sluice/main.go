// Command sluice validates, compiles, runs and benchmarks Sluice pipelines
// outside Triton.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `usage: sluice COMMAND [flags] ARGS

commands:
  validate PIPELINE                 check a pipeline and print its inferred shapes
  compile PIPELINE -o FILE          write the compact form (text or compact in)
  fmt PIPELINE                      print the canonical text form
  run --pipeline P --out DIR IMAGE...
                                    write <image>.<output>.npy for every output
  bench --pipeline P DIR...         measure images/s and batch latency
  ops [--markdown]                  list operators and their arguments
  infer --model M [--url ADDR] [--protocol grpc|http] IMAGE...
                                    send each image to a Triton server, print its outputs
  perf-data --corpus DIR -o FILE [--pad|--bytes] [SUBDIR...]
                                    write perf_analyzer input data (JSON) from the images

Run "sluice COMMAND -h" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, so that tests can call it. Any failure
// is one line on stderr and a non-zero status; a panic is reported the
// same way rather than as a trace.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "sluice: internal error: %v\n", p)
			code = 2
		}
	}()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmds := map[string]func([]string, io.Writer, io.Writer) error{
		"validate":  cmdValidate,
		"compile":   cmdCompile,
		"fmt":       cmdFmt,
		"run":       cmdRun,
		"bench":     cmdBench,
		"ops":       cmdOps,
		"infer":     cmdInfer,
		"perf-data": cmdPerfData,
	}
	f, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sluice: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err := f(args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sluice %s: %s\n", args[0], oneLine(err.Error()))
		return 1
	}
	return 0
}

// parse parses flags that may come before, between or after positional
// arguments ("compile p.pbtxt -o out"), and returns the positional ones.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	// Flag errors come back as one line like every other error; only -h
	// prints the flag list.
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stderr)
				fs.PrintDefaults()
			}
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func wantArgs(pos []string, n int, what string) error {
	if len(pos) != n {
		return fmt.Errorf("want %s, got %d argument(s)", what, len(pos))
	}
	return nil
}
