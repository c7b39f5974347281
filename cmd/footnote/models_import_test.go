package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag/onnx"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

// TestModelsImportXLMR imports an XLM-RoBERTa style cross-encoder (a hand-made ONNX graph
// and a SentencePiece Unigram tokenizer.json, see rag/onnx/testdata/make_xlmr_cross.py)
// through the CLI, checks that the wiring picks it as the reranker, and that it reranks.
func TestModelsImportXLMR(t *testing.T) {
	real := corpustest.Models(t)
	dir := t.TempDir()
	// The runtime comes from the installed models; the cross-encoder is the imported one.
	if err := os.Symlink(filepath.Join(real, pull.Runtime), filepath.Join(dir, pull.Runtime)); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FOOTNOTE_MODELS_DIR": dir}
	model := filepath.Join("..", "..", "rag", "onnx", "testdata", "tiny_xlmr_cross.onnx")
	tok := filepath.Join("..", "..", "rag", "onnx", "hftok", "testdata", "unigram.json")

	// A tokenizer footnote cannot read is refused before anything is installed.
	bad := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(bad, []byte(`{"model": {"type": "WordLevel"}}`), 0o644)
	code, _, errOut := run(t, env, "models", "import", "--model", model, "--tokenizer", bad)
	if code == 0 || !strings.Contains(errOut, "WordLevel") {
		t.Errorf("import of an unreadable tokenizer: exit %d, stderr %q", code, errOut)
	}
	if name := crossEncoderName(dir); name != "" {
		t.Fatalf("a refused import installed %s", name)
	}

	code, out, errOut := run(t, env, "models", "import", "--model", model, "--tokenizer", tok, "--max-length", "64")
	if code != 0 || !strings.Contains(out, "installed cross_encoder (cross-encoder)") {
		t.Fatalf("import: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	name := crossEncoderName(dir)
	if name != pull.CrossEncoder {
		t.Fatalf("crossEncoderName = %q, want %q", name, pull.CrossEncoder)
	}
	if err := onnx.InitModels(real); err != nil { // one runtime per process: the path every test uses
		t.Fatal(err)
	}
	r, err := onnx.NewReranker(onnx.RerankerConfig{Dir: pull.ModelDir(dir, name), VerifyChecksums: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	scores, err := r.Score(t.Context(), "what is attention?", []string{"convolutions are local", "multi-head attention and self attention"})
	if err != nil {
		t.Fatal(err)
	}
	if !(scores[1] > scores[0]) {
		t.Errorf("scores %v: the passage about attention should rank first", scores)
	}
}

// TestModelsImportEmbedder imports the same hand-made graph as an embedder of dimension 1
// (its [batch, 1] output is taken as already pooled) with the Unigram tokenizer: an
// embedder of another tokenizer family than BERT's installs and runs.
func TestModelsImportEmbedder(t *testing.T) {
	real := corpustest.Models(t)
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(real, pull.Runtime), filepath.Join(dir, pull.Runtime)); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FOOTNOTE_MODELS_DIR": dir}
	model := filepath.Join("..", "..", "rag", "onnx", "testdata", "tiny_xlmr_cross.onnx")
	tok := filepath.Join("..", "..", "rag", "onnx", "hftok", "testdata", "unigram.json")
	code, _, errOut := run(t, env, "models", "import", "--kind", "embedder", "--name", "xlmr_emb", "--model", model, "--tokenizer", tok)
	if code == 0 || !strings.Contains(errOut, "Dim") {
		t.Errorf("embedder without --dim: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut := run(t, env, "models", "import", "--kind", "embedder", "--name", "xlmr_emb", "--dim", "1", "--pooling", "cls",
		"--normalize=false", "--model", model, "--tokenizer", tok)
	if code != 0 || !strings.Contains(out, "installed xlmr_emb (embedder)") {
		t.Fatalf("import: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if err := onnx.InitModels(real); err != nil { // one runtime per process: the path every test uses
		t.Fatal(err)
	}
	e, err := onnx.NewEmbedder(onnx.EmbedderConfig{Dir: pull.ModelDir(dir, "xlmr_emb")})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The graph counts "▁attention" pieces (and would add 100 per attended <pad>).
	got, err := e.EmbedDocuments(t.Context(), []string{"attention and attention", "nothing here at all, nothing"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0][0] != 2 || got[1][0] != 0 {
		t.Errorf("vectors %v, want [[2] [0]]", got)
	}
}
