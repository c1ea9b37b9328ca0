package backend

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-dev/sluice/internal/excerpt"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// The pipeline files looked for in the version folder when no parameter
// names one. A folder may hold both, the compact one compiled from the
// text one; then they must define the same pipeline, so that a copied
// model whose text was edited but not recompiled is refused rather than
// served with the old pipeline.
const (
	CompactFile = "model.sluice"
	TextFile    = "pipeline.pbtxt"
)

// loadPipeline finds, reads and compiles the model's pipeline in its
// version folder. name is the pipeline parameter, empty for the default
// files. It returns the compiled pipeline and the file's path.
//
// The file is opened through an os.Root on the version folder, so that
// neither the parameter nor a symbolic link can reach outside it: a model
// config may come from a client over Triton's model-load API, and the
// server must not read arbitrary files on its behalf.
func loadPipeline(versionDir, name string) (*pipeline.Compiled, string, error) {
	root, err := os.OpenRoot(versionDir)
	if err != nil {
		return nil, "", &Error{Code: CodeNotFound, Msg: fmt.Sprintf("model version folder: %v", err)}
	}
	defer root.Close()

	var def *pipelinepb.Pipeline
	var path string
	switch {
	case name == "":
		def, path, err = parseDefault(root, versionDir)
	case len(name) > maxFileName:
		return nil, "", &Error{Code: CodeInvalidArg, Msg: fmt.Sprintf(
			"parameter %q: %s is %d bytes, over the limit of %d for a file name", ParamPipeline, excerpt.Quote(name), len(name), maxFileName)}
	case !filepath.IsLocal(name):
		return nil, "", &Error{Code: CodeInvalidArg, Msg: fmt.Sprintf(
			"parameter %q: %s must name a file inside the version folder %s, without an absolute path or '..'",
			ParamPipeline, excerpt.Quote(name), versionDir)}
	default:
		def, path, err = parseFile(root, versionDir, name)
	}
	if err != nil {
		return nil, path, err
	}
	prog, err := pipeline.Compile(def, path)
	if err != nil {
		return nil, path, &Error{Code: CodeInvalidArg, Msg: err.Error()}
	}
	return prog, path, nil
}

// parseDefault parses model.sluice or pipeline.pbtxt, whichever is there;
// when both are, the compact one, after checking that both parse to the
// same definition (comments and layout of the text do not count).
func parseDefault(root *os.Root, dir string) (*pipelinepb.Pipeline, string, error) {
	var found []string
	for _, name := range []string{CompactFile, TextFile} {
		// Anything there but unreadable (a link out of the folder, no
		// permission) is taken, for readFile to report.
		if _, err := root.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			found = append(found, name)
		}
	}
	switch len(found) {
	case 0:
		return nil, "", &Error{Code: CodeNotFound, Msg: fmt.Sprintf(
			"no pipeline in %s: add %s (from `sluice compile`) or %s, or name the file with parameters { key: %q value { string_value: \"FILE\" } }",
			dir, CompactFile, TextFile, ParamPipeline)}
	case 1:
		return parseFile(root, dir, found[0])
	}
	compact, path, err := parseFile(root, dir, CompactFile)
	if err != nil {
		return nil, path, err
	}
	text, textPath, err := parseFile(root, dir, TextFile)
	if err != nil {
		return nil, textPath, err
	}
	if !proto.Equal(compact, text) {
		return nil, path, &Error{Code: CodeInvalidArg, Msg: fmt.Sprintf(
			"%s and %s define different pipelines: after editing %s, recompile it (sluice compile %s -o %s), or remove the file not meant, or name one with parameters { key: %q value { string_value: \"FILE\" } }",
			path, textPath, TextFile, textPath, path, ParamPipeline)}
	}
	return compact, path, nil
}

// parseFile reads and parses the definition name in the version folder.
func parseFile(root *os.Root, dir, name string) (*pipelinepb.Pipeline, string, error) {
	path := filepath.Join(dir, name)
	data, err := readFile(root, name, path)
	if err != nil {
		return nil, path, err
	}
	def, err := pipeline.Parse(data, path)
	if err != nil {
		return nil, path, &Error{Code: CodeInvalidArg, Msg: err.Error()}
	}
	return def, path, nil
}

// maxFileName bounds the pipeline parameter: PATH_MAX is 4096, and real
// names are a few bytes; the path goes into every error about the file.
const maxFileName = 1024

// readFile reads a definition, bounded by pipeline.MaxSize so that a
// misnamed weight file is refused before it is read whole.
//
// Only a regular file is read (a link is followed to one): opening a FIFO
// blocks until a writer comes, which would hang the load, and a device or
// socket is no definition either. The file is checked before it is opened,
// opened with O_NONBLOCK so that one swapped for a FIFO in between does
// not block the open, and checked again once open.
func readFile(root *os.Root, name, path string) ([]byte, error) {
	fi, err := root.Stat(name)
	if err != nil {
		return nil, openError(path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode())
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, &Error{Code: CodeInternal, Msg: fmt.Sprintf("pipeline file %s: %v", path, unwrapPath(err))}
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode())
	}
	data, err := io.ReadAll(io.LimitReader(f, pipeline.MaxSize+1))
	if err != nil {
		return nil, &Error{Code: CodeInternal, Msg: fmt.Sprintf("pipeline file %s: %v", path, unwrapPath(err))}
	}
	if len(data) > pipeline.MaxSize {
		return nil, &Error{Code: CodeInvalidArg, Msg: fmt.Sprintf("pipeline file %s: larger than %d bytes: not a pipeline definition", path, pipeline.MaxSize)}
	}
	return data, nil
}

// openError reports a pipeline file that cannot be looked at or opened.
func openError(path string, err error) error {
	code := CodeInvalidArg
	if errors.Is(err, fs.ErrNotExist) {
		code = CodeNotFound
	}
	return &Error{Code: code, Msg: fmt.Sprintf("pipeline file %s: %v", path, unwrapPath(err))}
}

// notRegular reports a pipeline file that is not a regular file, saying
// what it is.
func notRegular(path string, m fs.FileMode) error {
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a folder"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	}
	return &Error{Code: CodeInvalidArg, Msg: fmt.Sprintf("pipeline file %s is %s, not a regular file: a pipeline definition is read from a regular file only", path, what)}
}

// unwrapPath drops the *fs.PathError wrapper, whose path is relative to the
// root, so that messages name the file once, in full.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
