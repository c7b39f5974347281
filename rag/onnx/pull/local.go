package pull

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/footnote-dev/footnote/rag/onnx/hftok"
)

// CrossEncoder is the default folder name of a cross-encoder installed with Import (any
// cross-encoder exported to ONNX with its tokenizer.json). It sorts before MSMarcoMiniLM,
// so an operator's own model is preferred to the one Run fetches from the hub.
const CrossEncoder = "cross_encoder"

// ImportOptions describes local model files to install with Import.
type ImportOptions struct {
	Dir       string // models folder; required
	Name      string // field-safe folder name, e.g. "cross_encoder" or "e5_small_v2"; required
	Kind      string // KindEmbedder or KindCrossEncoder; required
	Model     string // path of the .onnx file; required
	Tokenizer string // path of its Hugging Face tokenizer.json (WordPiece, Unigram or BPE); required
	// Settings for the manifest (Dim and Pooling are required for embedders).
	Dim          int
	Pooling      string
	Normalize    bool
	MaxLength    int // zero means 512
	QueryPrefix  string
	Output       string   // ONNX output to read; empty means the model's first output
	Inputs       []string // the model's inputs in order; empty means read them at load
	Layers       int      // architecture, for benchmark FLOP estimates; optional
	Hidden       int
	Intermediate int
	Source       Source // provenance recorded in the manifest; Registry defaults to "local"
}

var fieldSafe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Import copies local model files into Dir/Name, records their sums in a manifest and
// swaps the folder in atomically, replacing any previous copy.
func Import(opts ImportOptions) (*Manifest, error) {
	if opts.Dir == "" || opts.Model == "" || opts.Tokenizer == "" {
		return nil, errors.New("pull: ImportOptions.Dir, Model and Tokenizer are required")
	}
	if !fieldSafe.MatchString(opts.Name) {
		return nil, fmt.Errorf("model name %q must match %s", opts.Name, fieldSafe)
	}
	switch opts.Kind {
	case KindCrossEncoder:
	case KindEmbedder:
		if opts.Dim <= 0 || (opts.Pooling != PoolCLS && opts.Pooling != PoolMean) {
			return nil, fmt.Errorf("embedder %s needs Dim and Pooling (%q or %q)", opts.Name, PoolCLS, PoolMean)
		}
	default:
		return nil, fmt.Errorf("kind %q is not %q or %q", opts.Kind, KindEmbedder, KindCrossEncoder)
	}
	if opts.MaxLength == 0 {
		opts.MaxLength = 512
	}
	// A tokenizer footnote cannot read would only fail later, when the server loads it.
	if _, err := hftok.Load(opts.Tokenizer); err != nil {
		return nil, err
	}
	if opts.Source.Registry == "" {
		opts.Source.Registry = "local"
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(opts.Dir, ".import-"+opts.Name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	stage := filepath.Join(tmp, opts.Name)
	if err := os.Mkdir(stage, 0o755); err != nil {
		return nil, err
	}
	m := Manifest{
		Name: opts.Name, Kind: opts.Kind, Dim: opts.Dim, Pooling: opts.Pooling, Normalize: opts.Normalize,
		MaxLength: opts.MaxLength, QueryPrefix: opts.QueryPrefix, Output: opts.Output, Inputs: opts.Inputs,
		Layers: opts.Layers, Hidden: opts.Hidden, Intermediate: opts.Intermediate,
		Files: map[string]FileSum{}, Source: opts.Source,
	}
	for to, from := range map[string]string{ModelFile: opts.Model, TokenizerFile: opts.Tokenizer} {
		sum, err := copyFile(from, filepath.Join(stage, to))
		if err != nil {
			return nil, err
		}
		m.Files[to] = sum
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(stage, ManifestFile), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := swapIn(opts.Dir, opts.Name, stage, tmp); err != nil {
		return nil, err
	}
	return &m, nil
}

func copyFile(from, to string) (FileSum, error) {
	in, err := os.Open(from)
	if err != nil {
		return FileSum{}, err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return FileSum{}, err
	}
	defer out.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if err != nil {
		return FileSum{}, fmt.Errorf("copy %s: %w", from, err)
	}
	if err := out.Close(); err != nil {
		return FileSum{}, err
	}
	return FileSum{SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}
