// Package onnx runs footnote's local models with ONNX Runtime: a dense Embedder (BERT-style
// bi-encoders such as bge-small-en-v1.5, with CLS or mean pooling) and a cross-encoder
// Reranker. It is the only package that imports github.com/yalue/onnxruntime_go.
//
// Models are installed by package pull (`footnote models pull`); each model folder holds
// model.onnx, tokenizer.json and a manifest.json that says how to pool, normalise,
// truncate and prefix queries. Call Init (or InitModels) once per process before creating
// an Embedder or Reranker.
package onnx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

var (
	initMu   sync.Mutex
	initPath string
)

// ErrNotInitialized reports that Init has not been called.
var ErrNotInitialized = errors.New("onnx: runtime not initialised (call onnx.Init)")

// Init loads the ONNX Runtime shared library at libPath and creates the process-wide
// environment. Calling it again with the same path is a no-op; with another path it is an
// error, because a process can hold only one runtime. A missing library is an error
// wrapping rag.ErrModelMissing that names the file and `footnote models pull`.
func Init(libPath string) error {
	if abs, err := filepath.Abs(libPath); err == nil {
		libPath = abs
	}
	if _, err := os.Stat(libPath); err != nil {
		return &pull.FileError{Path: libPath, Reason: "missing", Err: err}
	}
	initMu.Lock()
	defer initMu.Unlock()
	if ort.IsInitialized() {
		if libPath != initPath {
			return fmt.Errorf("onnx: runtime already initialised from %s", initPath)
		}
		return nil
	}
	ort.SetSharedLibraryPath(libPath)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		return fmt.Errorf("onnx: initialise runtime %s: %w", libPath, errors.New(err.Error()))
	}
	initPath = libPath
	return nil
}

// InitModels is Init with the library installed under a models folder by pull, after
// checking it against its manifest (so a truncated download is reported by name rather
// than as a dynamic-loader error).
func InitModels(modelsDir string) error {
	if _, err := pull.Check(filepath.Join(modelsDir, pull.Runtime), false); err != nil {
		return err
	}
	return Init(pull.LibraryPath(modelsDir))
}

// Version reports the loaded ONNX Runtime version, or "" before Init.
func Version() string {
	if !ort.IsInitialized() {
		return ""
	}
	return ort.GetVersion()
}

// session is a pool of ONNX Runtime sessions of one model. ORT sessions are safe for
// concurrent Run calls, but one Run uses the session's intra-op threads, so a pool lets
// several requests proceed side by side when they are given one thread each.
type session struct {
	pool    chan *ort.DynamicAdvancedSession
	all     []*ort.DynamicAdvancedSession
	inputs  []string // in the order the model declares them
	output  string
	closeMu sync.Mutex
	closed  bool
}

// openSession loads modelPath n times with threads intra-op threads each. inputs and
// output come from the manifest; when either is empty they are read from the model (a
// second load). want names the inputs the caller can supply.
func openSession(modelPath string, inputs []string, output string, n, threads int, want []string) (*session, error) {
	if !ort.IsInitialized() {
		return nil, ErrNotInitialized
	}
	if n <= 0 {
		n = 1
	}
	if threads <= 0 {
		threads = max(1, runtime.NumCPU()/n)
	}
	if len(inputs) == 0 || output == "" {
		ins, outs, err := ort.GetInputOutputInfo(modelPath)
		if err != nil {
			return nil, fmt.Errorf("read model %s: %w", modelPath, errors.New(err.Error()))
		}
		if len(inputs) == 0 {
			for _, in := range ins {
				inputs = append(inputs, in.Name)
			}
		}
		if output == "" {
			if len(outs) == 0 {
				return nil, fmt.Errorf("model %s has no outputs", modelPath)
			}
			output = outs[0].Name
		}
	}
	for _, in := range inputs {
		if !slices.Contains(want, in) {
			return nil, fmt.Errorf("model %s has unsupported input %q", modelPath, in)
		}
	}
	s := &session{pool: make(chan *ort.DynamicAdvancedSession, n), inputs: inputs, output: output}

	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("session options: %w", err)
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(threads); err != nil {
		return nil, err
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		return nil, err
	}
	// Every graph rewrite ONNX Runtime has, as Python's onnxruntime applies by default (the
	// int8 graphs gain most from the extended fusions); said explicitly so footnote does not
	// depend on the C API's default.
	if err := opts.SetGraphOptimizationLevel(ort.GraphOptimizationLevelEnableAll); err != nil {
		return nil, fmt.Errorf("session options: %w", errors.New(err.Error()))
	}
	// Idle intra-op threads sleep instead of spinning: with two cores shared by other work
	// (the HTTP server, the store, parallel test binaries) spinning made a query 2-3x slower
	// and document batches 1.5-3x slower in BenchmarkEmbedQuery/EmbedDocuments.
	if err := opts.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
		return nil, fmt.Errorf("session options: %w", errors.New(err.Error()))
	}
	for range n {
		ds, err := ort.NewDynamicAdvancedSession(modelPath, s.inputs, []string{output}, opts)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("load model %s: %w", modelPath, errors.New(err.Error()))
		}
		s.all = append(s.all, ds)
		s.pool <- ds
	}
	return s, nil
}

// plan groups sequence indices into runs: sorted by length (stable), packed while a run
// has at most maxRows rows and rows × its longest length stays within maxTokens; a
// sequence longer than maxTokens runs alone. Indices in skip are left out.
func plan(lens []int, maxRows, maxTokens int, skip func(i int) bool) [][]int {
	order := make([]int, 0, len(lens))
	for i := range lens {
		if skip == nil || !skip(i) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(lens[a], lens[b]) })
	var runs [][]int
	for start := 0; start < len(order); {
		end := start + 1
		for end < len(order) && end-start < maxRows && (end-start+1)*lens[order[end]] <= maxTokens {
			end++
		}
		runs = append(runs, order[start:end])
		start = end
	}
	return runs
}

// batch is one padded input batch, row-major [rows, cols].
type batch struct {
	rows, cols int
	ids        []int64
	mask       []int64
	types      []int64
}

func newBatch(seqs [][]int32, types [][]int32, pad int32) batch {
	cols := 0
	for _, s := range seqs {
		cols = max(cols, len(s))
	}
	b := batch{rows: len(seqs), cols: cols}
	b.ids = make([]int64, b.rows*cols)
	b.mask = make([]int64, b.rows*cols)
	b.types = make([]int64, b.rows*cols)
	for i, s := range seqs {
		row := i * cols
		for j := range cols {
			if j < len(s) {
				b.ids[row+j] = int64(s[j])
				b.mask[row+j] = 1
				if types != nil {
					b.types[row+j] = int64(types[i][j])
				}
			} else {
				b.ids[row+j] = int64(pad)
			}
		}
	}
	return b
}

// run executes one batch and hands the output tensor's data and shape to use, which must
// not keep the slice. A cancelled ctx stops a waiting run, and terminates a running one
// (ONNX Runtime checks the flag between kernels), returning ctx.Err().
func (s *session) run(ctx context.Context, b batch, use func(data []float32, shape []int64) error) error {
	var ds *ort.DynamicAdvancedSession
	select {
	case d, ok := <-s.pool:
		if !ok {
			return errors.New("onnx: model closed")
		}
		ds = d
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { s.pool <- ds }()

	shape := ort.NewShape(int64(b.rows), int64(b.cols))
	inputs := make([]ort.Value, 0, len(s.inputs))
	defer func() {
		for _, v := range inputs {
			v.Destroy()
		}
	}()
	for _, name := range s.inputs {
		var data []int64
		switch name {
		case "input_ids":
			data = b.ids
		case "attention_mask":
			data = b.mask
		case "token_type_ids":
			data = b.types
		}
		t, err := ort.NewTensor(shape, data)
		if err != nil {
			return fmt.Errorf("input %s: %w", name, errors.New(err.Error()))
		}
		inputs = append(inputs, t)
	}

	ro, err := ort.NewRunOptions()
	if err != nil {
		return fmt.Errorf("run options: %w", errors.New(err.Error()))
	}
	var mu sync.Mutex
	done := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			ro.Terminate()
		}
	})
	outputs := []ort.Value{nil}
	runErr := ds.RunWithOptions(inputs, outputs, ro)
	stop()
	mu.Lock()
	done = true
	ro.Destroy()
	mu.Unlock()
	if runErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("onnx run: %w", errors.New(runErr.Error()))
	}
	defer outputs[0].Destroy()
	t, ok := outputs[0].(*ort.Tensor[float32])
	if !ok {
		return fmt.Errorf("output %s is %T, want a float32 tensor", s.output, outputs[0])
	}
	return use(t.GetData(), []int64(t.GetShape()))
}

// Close waits for running batches and frees the sessions.
func (s *session) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for range s.all {
		ds := <-s.pool
		if err := ds.Destroy(); err != nil {
			errs = append(errs, err)
		}
	}
	close(s.pool)
	return errors.Join(errs...)
}
