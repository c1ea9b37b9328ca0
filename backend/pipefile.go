package backend

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sluice-dev/sluice/pipeline"
)

// The pipeline files looked for in the version folder, in this order,
// when no parameter names one. The compact form comes first: it is what
// `sluice compile` produces for deployment, and a text file left next to
// it is more likely its source than a newer edit.
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

	if name == "" {
		name, err = defaultPipelineFile(root, versionDir)
		if err != nil {
			return nil, "", err
		}
	} else if !filepath.IsLocal(name) {
		return nil, "", &Error{Code: CodeInvalidArg, Msg: fmt.Sprintf(
			"parameter %q: %q must name a file inside the version folder %s, without an absolute path or '..'",
			ParamPipeline, name, versionDir)}
	}
	path := filepath.Join(versionDir, name)
	data, err := readFile(root, name, path)
	if err != nil {
		return nil, path, err
	}
	def, err := pipeline.Parse(data, path)
	if err != nil {
		return nil, path, &Error{Code: CodeInvalidArg, Msg: err.Error()}
	}
	prog, err := pipeline.Compile(def, path)
	if err != nil {
		return nil, path, &Error{Code: CodeInvalidArg, Msg: err.Error()}
	}
	return prog, path, nil
}

func defaultPipelineFile(root *os.Root, dir string) (string, error) {
	for _, name := range []string{CompactFile, TextFile} {
		// Anything there but unreadable (a link out of the folder, no
		// permission) is taken, for readFile to report.
		if _, err := root.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			return name, nil
		}
	}
	return "", &Error{Code: CodeNotFound, Msg: fmt.Sprintf(
		"no pipeline in %s: add %s (from `sluice compile`) or %s, or name the file with parameters { key: %q value { string_value: \"FILE\" } }",
		dir, CompactFile, TextFile, ParamPipeline)}
}

// readFile reads a definition, bounded by pipeline.MaxSize so that a
// misnamed weight file is refused before it is read whole.
func readFile(root *os.Root, name, path string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		code := CodeInvalidArg
		if errors.Is(err, fs.ErrNotExist) {
			code = CodeNotFound
		}
		return nil, &Error{Code: code, Msg: fmt.Sprintf("pipeline file %s: %v", path, unwrapPath(err))}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{Code: CodeInternal, Msg: fmt.Sprintf("pipeline file %s: %v", path, unwrapPath(err))}
	}
	if fi.IsDir() {
		return nil, &Error{Code: CodeInvalidArg, Msg: fmt.Sprintf("pipeline file %s is a folder", path)}
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

// unwrapPath drops the *fs.PathError wrapper, whose path is relative to the
// root, so that messages name the file once, in full.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
