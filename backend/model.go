package backend

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"sync"

	"go.uber.org/zap"

	"github.com/sluice-dev/sluice/internal/excerpt"
	"github.com/sluice-dev/sluice/internal/reclaim"
	"github.com/sluice-dev/sluice/pipeline"
)

// ModelArgs is what cgo learns from Triton at TRITONBACKEND_ModelInitialize.
type ModelArgs struct {
	Name     string // the model's name; empty means the config's
	Version  int64
	RepoPath string // the model's folder; the version folder is RepoPath/Version
	Config   []byte // TRITONBACKEND_ModelConfig's JSON
	// AutoComplete says that Triton lets the backend fill in the config
	// (TRITONBACKEND_ModelAutoCompleteConfig).
	AutoComplete bool
	Logger       *zap.Logger // nil: discard
	// Now reads the clock of the statistics; cgo passes a CLOCK_MONOTONIC
	// reader (Triton's steady clock). nil: a monotonic clock of this
	// process, fine for tests only.
	Now func() uint64
}

// Model is a loaded Sluice model: its compiled pipeline and settings,
// shared by its instances. Its exported fields are read-only after
// LoadModel.
type Model struct {
	Name     string
	Version  int64
	Pipeline *pipeline.Compiled
	// PipelineFile is the path of the definition it was compiled from.
	PipelineFile string
	Params       Params
	MaxBatchSize int64
	// Inputs and Outputs are the config's tensors, in the pipeline's
	// order (after auto-complete).
	Inputs  []TensorConfig
	Outputs []TensorConfig
	// NewConfig is the auto-completed config JSON when auto-complete
	// changed anything, for TRITONBACKEND_ModelSetConfig; nil otherwise.
	NewConfig []byte

	log *zap.Logger
	now func() uint64

	mu        sync.Mutex
	closed    bool
	instances map[*Instance]struct{} // open instances, closed with the model
}

// LoadModel reads the pipeline from the model's version folder, auto-
// completes the config when allowed and validates it against the
// pipeline. Errors are *Error; a config or pipeline problem names the
// file, input, output or parameter concerned.
func LoadModel(a ModelArgs) (*Model, error) {
	m, err := loadModel(a)
	if err != nil {
		// What the refused load decoded (a large config's JSON) is
		// garbage now: hand it back to the OS rather than keep it until
		// Go's next collection and scavenge, minutes away on an idle
		// server.
		reclaim.Idle()
		return nil, capError(err)
	}
	return m, nil
}

// maxErrorBytes bounds a load error's message. Every part that quotes the
// config or the files is cut short already (internal/excerpt) and the
// problems listed are bounded; this catches what a future message forgets:
// the error goes back to the client and twice into the server's log.
const maxErrorBytes = 32 << 10

func capError(err error) error {
	var e *Error
	if errors.As(err, &e) && len(e.Msg) > maxErrorBytes {
		return &Error{Code: e.Code, Msg: excerpt.Cut(e.Msg, maxErrorBytes)}
	}
	return err
}

func loadModel(a ModelArgs) (*Model, error) {
	log := orNop(a.Logger)
	now := a.Now
	if now == nil {
		now = monotonicNow
	}
	doc, err := parseDoc(a.Config)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArg, Msg: err.Error()}
	}
	c, err := view(doc)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArg, Msg: err.Error()}
	}
	if err := checkCounts(c); err != nil {
		return nil, err
	}
	params, err := parseParams(c.params)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(a.RepoPath, strconv.FormatInt(a.Version, 10))
	prog, file, err := loadPipeline(dir, params.Pipeline)
	if err != nil {
		return nil, err
	}

	var newConfig []byte
	if a.AutoComplete {
		changed, err := autoComplete(doc, prog, params)
		if err != nil {
			return nil, &Error{Code: CodeInvalidArg, Msg: "model config: " + err.Error()}
		}
		if changed {
			if newConfig, err = marshalDoc(doc); err != nil {
				return nil, &Error{Code: CodeInternal, Msg: fmt.Sprintf("auto-complete: %v", err)}
			}
			if c, err = view(doc); err != nil {
				return nil, &Error{Code: CodeInternal, Msg: fmt.Sprintf("auto-complete: %v", err)}
			}
		}
	}
	if err := validate(c, prog, params); err != nil {
		return nil, err
	}

	m := &Model{
		Name:         a.Name,
		Version:      a.Version,
		Pipeline:     prog,
		PipelineFile: file,
		Params:       params,
		MaxBatchSize: c.maxBatchSize,
		NewConfig:    newConfig,
		log:          log,
		now:          now,
		instances:    map[*Instance]struct{}{},
	}
	if m.Name == "" {
		m.Name = c.name
	}
	for _, name := range prog.Inputs {
		m.Inputs = append(m.Inputs, c.inputs[findTensor(c.inputs, name)])
	}
	for _, o := range prog.Outputs {
		m.Outputs = append(m.Outputs, c.outputs[findTensor(c.outputs, o.Name)])
	}
	m.log = log.With(zap.String("model", m.Name), zap.Int64("version", m.Version))
	logModel(log, m, file)
	return m, nil
}

// MaxInputBytes is the most one request's input can hold: max_batch_size
// images of max_image_bytes, with BYTES' 4-byte lengths. Nothing larger
// can be a batch Sluice decodes, so a copy of it need not be made.
func (m *Model) MaxInputBytes() int64 {
	per := int64(m.Params.Limits.MaxBytes) + 4
	if m.MaxBatchSize > math.MaxInt64/per {
		return math.MaxInt64
	}
	return m.MaxBatchSize * per
}

// Close releases what the model owns: the instances still open (Triton
// finalizes them first, but a Go c-shared library is never unloaded, so
// nothing may be left running). Idempotent.
func (m *Model) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	open := make([]*Instance, 0, len(m.instances))
	for inst := range m.instances {
		open = append(open, inst)
	}
	m.mu.Unlock()
	for _, inst := range open {
		inst.Close()
	}
	m.log.Info("sluice model unloaded")
	// Everything the model held is garbage now, and so is what Triton
	// freed of it: return both to the OS within seconds (a full
	// collection, then malloc_trim), not at Go's next scavenge.
	reclaim.Idle()
}

// register records a new instance; it fails once the model is closed.
func (m *Model) register(inst *Instance) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.instances[inst] = struct{}{}
	return true
}

func (m *Model) forget(inst *Instance) {
	m.mu.Lock()
	delete(m.instances, inst)
	m.mu.Unlock()
}
