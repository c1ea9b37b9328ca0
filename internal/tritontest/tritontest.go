// Package tritontest starts a real tritonserver (scripts/triton.sh) for Go
// tests, once per test binary. It needs .venv-triton (make triton) and
// build/backends/sluice/libtriton_sluice.so (make backend); when either is
// missing the tests skip with a message, unless SLUICE_TRITON_TESTS=1
// (make test-client), which makes that a failure. SLUICE_TRITON_TESTS=0
// always skips. TRITON_VENV and SLUICE_BACKEND_DIR override the paths.
package tritontest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Options say what the server serves.
type Options struct {
	// Repo builds the model repository in dir, or is nil to serve the
	// repository's model_repository/.
	Repo func(root, dir string) error
	// Explicit starts it in explicit model-control mode, loading Load.
	Explicit bool
	Load     []string
}

// Server is a running tritonserver.
type Server struct {
	Root     string // the repository's root
	HTTPAddr string
	GRPCAddr string
	Log      string

	opt     Options
	once    sync.Once
	skip    string
	err     error
	workDir string
}

// New describes a server to start on first use. root is the repository's
// root (the folder holding scripts/triton.sh).
func New(root string, opt Options) *Server {
	return &Server{Root: root, opt: opt}
}

// Need starts the server on the first call and returns it, or skips or
// fails t when it cannot run.
func (s *Server) Need(t testing.TB) *Server {
	t.Helper()
	s.once.Do(s.start)
	if s.skip != "" {
		t.Skip(s.skip)
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func (s *Server) start() {
	mode := os.Getenv("SLUICE_TRITON_TESTS")
	if mode == "0" {
		s.skip = "SLUICE_TRITON_TESTS=0"
		return
	}
	venv := filepath.Join(s.Root, ".venv-triton")
	if v := os.Getenv("TRITON_VENV"); v != "" {
		venv = v
	}
	backends := filepath.Join(s.Root, "build", "backends")
	if v := os.Getenv("SLUICE_BACKEND_DIR"); v != "" {
		backends = v
	}
	var missing []string
	if !exists(filepath.Join(venv, "bin", "python")) {
		missing = append(missing, venv+" (make triton)")
	}
	if lib := filepath.Join(backends, "sluice", "libtriton_sluice.so"); !exists(lib) {
		missing = append(missing, lib+" (make backend)")
	}
	if len(missing) > 0 {
		msg := "real-Triton tests need " + strings.Join(missing, " and ")
		if mode == "1" {
			s.err = errors.New(msg + " (SLUICE_TRITON_TESTS=1)")
		} else {
			s.skip = msg + "; make test-client builds them and runs these tests"
		}
		return
	}
	wd, err := os.MkdirTemp("", "sluice-triton-test-")
	if err != nil {
		s.err = err
		return
	}
	s.workDir = wd
	repo := filepath.Join(s.Root, "model_repository")
	if s.opt.Repo != nil {
		repo = filepath.Join(wd, "models")
		if s.err = s.opt.Repo(s.Root, repo); s.err != nil {
			return
		}
	}
	// Free loopback ports, so that it runs next to `make run`.
	args := []string{"--venv", venv, "--model-repo", repo, "--backend-dir", backends,
		"--work-dir", s.serverDir(), "--timeout", "180"}
	if s.opt.Explicit {
		args = append(args, "--explicit")
		for _, m := range s.opt.Load {
			args = append(args, "--load-model", m)
		}
	}
	cmd := exec.Command(s.script(), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	s.watchdog()
	out, err := cmd.Output()
	if err != nil {
		s.err = fmt.Errorf("scripts/triton.sh: %v\n%s", err, stderr.String())
		return
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	if env["TRITON_HTTP_PORT"] == "" || env["TRITON_GRPC_PORT"] == "" {
		s.err = fmt.Errorf("scripts/triton.sh printed no ports: %s", out)
		return
	}
	s.HTTPAddr = env["TRITON_HOST"] + ":" + env["TRITON_HTTP_PORT"]
	s.GRPCAddr = env["TRITON_HOST"] + ":" + env["TRITON_GRPC_PORT"]
	s.Log = env["TRITON_LOG"]
}

func (s *Server) script() string    { return filepath.Join(s.Root, "scripts", "triton.sh") }
func (s *Server) serverDir() string { return filepath.Join(s.workDir, "server") }

// watchdog stops the server if the test process dies without calling
// Stop (a panic, -timeout): triton.sh starts it in a session of its own,
// so nothing else would.
func (s *Server) watchdog() {
	script := `while kill -0 "$1" 2>/dev/null; do sleep 1; done
if [ -d "$3" ]; then "$2" --stop --work-dir "$3/server" >/dev/null 2>&1; rm -rf "$3"; fi`
	cmd := exec.Command("sh", "-c", script, "watchdog", strconv.Itoa(os.Getpid()), s.script(), s.workDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err == nil {
		go cmd.Wait()
	}
}

// Stop stops the server, if it was started; TestMain calls it.
func (s *Server) Stop() {
	if s.workDir == "" {
		return
	}
	exec.Command(s.script(), "--stop", "--work-dir", s.serverDir()).Run()
	os.RemoveAll(s.workDir)
}
