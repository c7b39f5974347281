package onnx_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/onnx"
	"github.com/footnote-dev/footnote/rag/onnx/hftok"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

// models returns the installed models folder with the runtime initialised, or skips
// (fails under CI) when the models are not installed.
func models(tb testing.TB) string {
	tb.Helper()
	dir := corpustest.Models(tb)
	if err := onnx.InitModels(dir); err != nil {
		tb.Fatal(err)
	}
	return dir
}

func newEmbedder(tb testing.TB, name string, cfg onnx.EmbedderConfig) *onnx.Embedder {
	tb.Helper()
	cfg.Dir = pull.ModelDir(models(tb), name)
	// Default models must be there under CI; optional ones are tested when installed.
	if _, err := os.Stat(cfg.Dir); err != nil && (!corpustest.CI() || !slices.Contains(pull.DefaultNames, name)) {
		tb.Skipf("skipping: model %s not installed (footnote models pull --only %s)", name, name)
	}
	e, err := onnx.NewEmbedder(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

type vectorCase struct {
	Text   string    `json:"text"`
	Vector []float32 `json:"vector"`
}

type embeddingRef struct {
	Embeddings map[string]struct {
		Documents []vectorCase `json:"documents"`
		Queries   []vectorCase `json:"queries"`
	} `json:"embeddings"`
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// TestEmbedderMatchesReference compares with vectors from onnxruntime's Python API and
// Hugging Face tokenizers, pooled in numpy one text at a time (testdata/make_fixtures.py);
// here texts are batched and padded, so this also checks that padding is masked out.
func TestEmbedderMatchesReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref embeddingRef
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for name, cases := range ref.Embeddings {
		t.Run(name, func(t *testing.T) {
			// One run for all texts, so short ones are padded to the longest.
			e := newEmbedder(t, name, onnx.EmbedderConfig{BatchTokens: 1 << 20})
			if got := e.Info(); got.Name != name || got.Dim != 384 || got.Metric != rag.Cosine {
				t.Errorf("Info() = %+v", got)
			}
			texts := make([]string, len(cases.Documents))
			for i, c := range cases.Documents {
				texts[i] = c.Text
			}
			vecs, err := e.EmbedDocuments(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if len(vecs) != len(texts) {
				t.Fatalf("got %d vectors, want %d", len(vecs), len(texts))
			}
			for i, c := range cases.Documents {
				if len(vecs[i]) != len(c.Vector) {
					t.Fatalf("dim %d, want %d", len(vecs[i]), len(c.Vector))
				}
				t.Logf("document %d cosine %.6f", i, cosine(vecs[i], c.Vector))
				if cos := cosine(vecs[i], c.Vector); cos < 0.99 {
					t.Errorf("document %d (%.40q): cosine to reference %.5f < 0.99", i, c.Text, cos)
				}
				var norm float64
				for _, x := range vecs[i] {
					norm += float64(x) * float64(x)
				}
				if math.Abs(norm-1) > 1e-4 {
					t.Errorf("document %d: |v|² = %f, want 1", i, norm)
				}
			}
			for _, c := range cases.Queries {
				v, err := e.EmbedQuery(t.Context(), c.Text)
				if err != nil {
					t.Fatal(err)
				}
				if cos := cosine(v, c.Vector); cos < 0.99 {
					t.Errorf("query %q: cosine to reference %.5f < 0.99", c.Text, cos)
				}
			}
		})
	}
}

func TestEmbedderRanksRelevantHigher(t *testing.T) {
	e := newEmbedder(t, pull.BGESmall, onnx.EmbedderConfig{})
	q, err := e.EmbedQuery(t.Context(), "What are the two sub-layers of a Transformer encoder layer?")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := e.EmbedDocuments(t.Context(), []string{
		"Each layer has two sub-layers. The first is a multi-head self-attention mechanism, and the second is a simple, position-wise fully connected feed-forward network.",
		"Photosynthesis converts light energy into chemical energy stored in glucose.",
	})
	if err != nil {
		t.Fatal(err)
	}
	if rel, irr := cosine(q, docs[0]), cosine(q, docs[1]); rel <= irr {
		t.Errorf("relevant cosine %.3f <= irrelevant %.3f", rel, irr)
	}
}

func TestEmbedderEdgeCases(t *testing.T) {
	e := newEmbedder(t, pull.BGESmall, onnx.EmbedderConfig{MaxLength: 32, BatchSize: 2})
	if e.MaxLength() != 32 {
		t.Errorf("MaxLength() = %d, want 32", e.MaxLength())
	}
	vecs, err := e.EmbedDocuments(t.Context(), nil)
	if err != nil || len(vecs) != 0 {
		t.Errorf("EmbedDocuments(nil) = %d vectors, %v", len(vecs), err)
	}
	long := strings.Repeat("attention is all you need ", 100)
	vecs, err = e.EmbedDocuments(t.Context(), []string{"", long, "x"})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		if len(v) != 384 {
			t.Errorf("vector %d has dim %d", i, len(v))
		}
	}
	// Truncation: anything past 32 tokens cannot change the vector.
	more, err := e.EmbedDocuments(t.Context(), []string{long + " photosynthesis chlorophyll"})
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(vecs[1], more[0]); c < 0.99999 {
		t.Errorf("text past max length changed the vector: cosine %.6f", c)
	}
	if got, want := e.CountTokens("Attention is all you need."), 6; got != want {
		t.Errorf("CountTokens = %d, want %d", got, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.EmbedDocuments(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v, want context.Canceled", err)
	}
}

// TestEmbedderCancel checks that cancelling stops a running ONNX batch promptly instead of
// finishing the whole input (which takes tens of seconds here).
func TestEmbedderCancel(t *testing.T) {
	e := newEmbedder(t, pull.BGESmall, onnx.EmbedderConfig{BatchSize: 32, BatchTokens: 1 << 20})
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = strings.Repeat("attention layers ", 300)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.EmbedDocuments(ctx, texts)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cancellation took %s", took)
	}
	// The embedder still works afterwards.
	if _, err := e.EmbedQuery(t.Context(), "still alive"); err != nil {
		t.Errorf("after cancel: %v", err)
	}
}

func TestEmbedderConcurrent(t *testing.T) {
	e := newEmbedder(t, pull.BGESmall, onnx.EmbedderConfig{Sessions: 2, Threads: 1, CacheSize: -1})
	want, err := e.EmbedQuery(t.Context(), "multi-head attention")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			got, err := e.EmbedQuery(t.Context(), "multi-head attention")
			if err != nil {
				errs <- err
				return
			}
			if c := cosine(got, want); c < 0.99999 {
				errs <- errors.New("concurrent result differs")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEmbedderCache(t *testing.T) {
	e := newEmbedder(t, pull.BGESmall, onnx.EmbedderConfig{CacheSize: 2})
	first, err := e.EmbedQuery(t.Context(), "positional encoding")
	if err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), first...)
	first[0] = 42 // the caller owns what it gets
	again, err := e.EmbedQuery(t.Context(), "positional encoding")
	if err != nil {
		t.Fatal(err)
	}
	if hits, total := e.CacheStats(); hits != 1 || total != 2 {
		t.Errorf("CacheStats() = %d hits of %d, want 1 of 2", hits, total)
	}
	if c := cosine(again, want); c < 0.999999 {
		t.Errorf("cached vector differs: cosine %.6f", c)
	}
	// The query instruction is part of the key: the same words as a document miss.
	if _, err := e.EmbedDocuments(t.Context(), []string{"positional encoding", "a", "b"}); err != nil {
		t.Fatal(err)
	}
	if hits, _ := e.CacheStats(); hits != 1 {
		t.Errorf("document hit a query entry: %d hits", hits)
	}
	// Capacity 2: the query entry was evicted.
	if _, err := e.EmbedQuery(t.Context(), "positional encoding"); err != nil {
		t.Fatal(err)
	}
	if hits, total := e.CacheStats(); hits != 1 || total != 6 {
		t.Errorf("after eviction: %d hits of %d, want 1 of 6", hits, total)
	}
}

func TestClosedEmbedder(t *testing.T) {
	dir := models(t)
	e, err := onnx.NewEmbedder(onnx.EmbedderConfig{Dir: pull.ModelDir(dir, pull.BGESmall)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := e.EmbedQuery(t.Context(), "x"); err == nil {
		t.Error("EmbedQuery after Close succeeded")
	}
}

// writeModel creates a model folder with the given files and a manifest pinning them.
func writeModel(t *testing.T, kind string, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	m := pull.Manifest{Name: "test_model", Kind: kind, Dim: 384, Pooling: pull.PoolCLS, MaxLength: 512, Files: map[string]pull.FileSum{}}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		m.Files[name] = pull.FileSum{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b))}
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, pull.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// These need neither the runtime nor the models: files are checked before loading.
func TestMissingOrCorruptFiles(t *testing.T) {
	files := map[string][]byte{pull.ModelFile: []byte("not really onnx"), pull.TokenizerFile: []byte(`{"model":{}}`)}
	tests := []struct {
		name     string
		breakDir func(dir string) error
		verify   bool
		wantFile string
	}{
		{"no manifest", func(dir string) error { return os.Remove(filepath.Join(dir, pull.ManifestFile)) }, false, pull.ManifestFile},
		{"no model", func(dir string) error { return os.Remove(filepath.Join(dir, pull.ModelFile)) }, false, pull.ModelFile},
		{"truncated tokenizer", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, pull.TokenizerFile), []byte(`{}`), 0o644)
		}, false, pull.TokenizerFile},
		{"same size, other bytes", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, pull.ModelFile), []byte("NOT REALLY ONNX"), 0o644)
		}, true, pull.ModelFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeModel(t, pull.KindEmbedder, files)
			if err := tt.breakDir(dir); err != nil {
				t.Fatal(err)
			}
			_, err := onnx.NewEmbedder(onnx.EmbedderConfig{Dir: dir, VerifyChecksums: tt.verify})
			if err == nil {
				t.Fatal("NewEmbedder succeeded")
			}
			if !errors.Is(err, rag.ErrModelMissing) {
				t.Errorf("error %v does not wrap rag.ErrModelMissing", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, filepath.Join(dir, tt.wantFile)) || !strings.Contains(msg, "footnote models pull") {
				t.Errorf("error %q should name %s and `footnote models pull`", msg, tt.wantFile)
			}
			_, err = onnx.NewReranker(onnx.RerankerConfig{Dir: dir, VerifyChecksums: tt.verify})
			if !errors.Is(err, rag.ErrModelMissing) {
				t.Errorf("NewReranker error %v does not wrap rag.ErrModelMissing", err)
			}
		})
	}
}

func TestInitMissingLibrary(t *testing.T) {
	err := onnx.InitModels(t.TempDir())
	if !errors.Is(err, rag.ErrModelMissing) || !strings.Contains(err.Error(), filepath.Join(pull.Runtime, pull.ManifestFile)) ||
		!strings.Contains(err.Error(), "footnote models pull") {
		t.Errorf("InitModels with nothing installed: %v", err)
	}
	err = onnx.Init(filepath.Join(t.TempDir(), pull.RuntimeLibrary))
	if !errors.Is(err, rag.ErrModelMissing) || !strings.Contains(err.Error(), pull.RuntimeLibrary) ||
		!strings.Contains(err.Error(), "footnote models pull") {
		t.Errorf("Init with no library: %v", err)
	}
}

// TestCrossEncoderPlumbing runs the reranker on testdata/tiny_cross.onnx, whose logit is
// 0.1 × (attended segment-B tokens − attended segment-A tokens): the exact score checks
// token types, the attention mask over padding, truncation and the sigmoid.
func TestCrossEncoderPlumbing(t *testing.T) {
	dir := models(t)
	tokPath := filepath.Join(dir, pull.BGESmall, pull.TokenizerFile)
	// Installed the way an operator adds a cross-encoder of their own.
	mdir := t.TempDir()
	if _, err := pull.Import(pull.ImportOptions{
		Dir: mdir, Name: pull.CrossEncoder, Kind: pull.KindCrossEncoder,
		Model: filepath.Join("testdata", "tiny_cross.onnx"), Tokenizer: tokPath,
	}); err != nil {
		t.Fatal(err)
	}
	tok, err := hftok.Load(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	const maxLen = 24
	r, err := onnx.NewReranker(onnx.RerankerConfig{Dir: pull.ModelDir(mdir, pull.CrossEncoder), MaxLength: maxLen, BatchSize: 3, BatchTokens: 60, VerifyChecksums: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	query := "What are the sub-layers?"
	passages := []string{
		"Two.",
		"Multi-head self-attention and a position-wise feed-forward network.",
		strings.Repeat("a very long passage that must be truncated ", 10),
		"",
		"Café naïve",
	}
	got, err := r.Score(t.Context(), query, passages)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(passages) {
		t.Fatalf("got %d scores, want %d", len(got), len(passages))
	}
	for i, p := range passages {
		ids, types := tok.EncodePair(query, p, maxLen)
		var a, b int
		for _, ty := range types {
			if ty == 0 {
				a++
			} else {
				b++
			}
		}
		if len(ids) > maxLen {
			t.Fatalf("pair %d has %d tokens > %d", i, len(ids), maxLen)
		}
		want := 1 / (1 + math.Exp(-0.1*float64(b-a)))
		if math.Abs(got[i]-want) > 1e-6 {
			t.Errorf("passage %d: score %.6f, want %.6f (segments %d/%d)", i, got[i], want, a, b)
		}
	}
}

// realPairs are questions about the corpus with a passage that answers them and one that
// does not.
var realPairs = []struct{ query, relevant, irrelevant string }{
	{
		"What are the two sub-layers of a Transformer encoder layer?",
		"The encoder is composed of a stack of N = 6 identical layers. Each layer has two sub-layers. The first is a multi-head self-attention mechanism, and the second is a simple, position-wise fully connected feed-forward network.",
		"We trained our models on the WMT 2014 English-German dataset consisting of about 4.5 million sentence pairs, using byte-pair encoding.",
	},
	{
		"What masking strategy does BERT use during pre-training?",
		"We mask 15% of all WordPiece tokens in each sequence at random. The training data generator replaces the chosen token with the [MASK] token 80% of the time, a random token 10% of the time, and the unchanged token 10% of the time.",
		"Photosynthesis converts light energy into chemical energy stored in glucose molecules inside chloroplasts.",
	},
	{
		"How does retrieval-augmented generation combine a retriever with a generator?",
		"RAG models combine a pre-trained parametric memory, a seq2seq generator, with a non-parametric memory, a dense vector index of Wikipedia accessed with a pre-trained neural retriever.",
		"The learning rate was varied over the course of training with a warmup of 4000 steps followed by inverse square root decay.",
	},
}

func TestSimilarityReranker(t *testing.T) {
	e := newEmbedder(t, pull.BGESmall, onnx.EmbedderConfig{})
	r := onnx.NewSimilarityReranker(e, onnx.SimilarityConfig{})
	for _, p := range realPairs {
		got, err := r.Score(t.Context(), p.query, []string{p.irrelevant, p.relevant})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range got {
			if s < 0 || s > 1 || math.IsNaN(s) {
				t.Errorf("%q: score %f outside [0, 1]", p.query, s)
			}
		}
		t.Logf("%.50q: relevant %.3f irrelevant %.3f", p.query, got[1], got[0])
		if got[1] <= got[0] {
			t.Errorf("%q: relevant %.3f <= irrelevant %.3f", p.query, got[1], got[0])
		}
		// The pipeline drops candidates below 0.2 by default.
		if got[1] < 0.2 || got[0] > 0.2 {
			t.Errorf("%q: calibration: relevant %.3f should be ≥ 0.2, irrelevant %.3f < 0.2", p.query, got[1], got[0])
		}
	}
	// Questions the corpus cannot answer must fall under the cut against research text.
	var passages []string
	for _, p := range realPairs {
		passages = append(passages, p.relevant, p.irrelevant)
	}
	for _, q := range []string{"What is the capital of Mars?", "Who won the 2018 FIFA World Cup?", "How do I bake sourdough bread with a stiff levain?"} {
		got, err := r.Score(t.Context(), q, passages)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range got {
			if s >= 0.2 {
				t.Errorf("unanswerable %q: passage %d scores %.3f ≥ 0.2", q, i, s)
			}
		}
	}
}

// TestCrossEncoderRealPairs runs when an operator has installed a real cross-encoder
// (pull.Import into <models>/cross_encoder); no registry offers one, so it is optional even
// under CI.
func TestCrossEncoderRealPairs(t *testing.T) {
	dir := pull.ModelDir(models(t), pull.CrossEncoder)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("skipping: no cross-encoder installed at %s (see MODELS.md)", dir)
	}
	r, err := onnx.NewReranker(onnx.RerankerConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, p := range realPairs {
		got, err := r.Score(t.Context(), p.query, []string{p.irrelevant, p.relevant})
		if err != nil {
			t.Fatal(err)
		}
		if got[1] <= got[0] || got[0] < 0 || got[1] > 1 {
			t.Errorf("%q: relevant %.3f, irrelevant %.3f", p.query, got[1], got[0])
		}
	}
}

// TestEmbedderPooledOutput loads testdata/tiny_cross.onnx as an embedder of dimension 1: its
// [batch, 1] output is taken as already pooled, and with every token type 0 its value is
// −0.1 × the number of attended tokens, which checks the mask over padding on this path.
func TestEmbedderPooledOutput(t *testing.T) {
	dir := models(t)
	tokPath := filepath.Join(dir, pull.BGESmall, pull.TokenizerFile)
	mdir := t.TempDir()
	if _, err := pull.Import(pull.ImportOptions{
		Dir: mdir, Name: "tiny", Kind: pull.KindEmbedder, Dim: 1, Pooling: pull.PoolCLS,
		Model: filepath.Join("testdata", "tiny_cross.onnx"), Tokenizer: tokPath,
	}); err != nil {
		t.Fatal(err)
	}
	e, err := onnx.NewEmbedder(onnx.EmbedderConfig{Dir: pull.ModelDir(mdir, "tiny"), BatchTokens: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	texts := []string{"a b", "a considerably longer text, with punctuation!", ""}
	got, err := e.EmbedDocuments(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		want := -0.1 * float64(len(e.Tokenizer().Encode(text, 512)))
		if len(got[i]) != 1 || math.Abs(float64(got[i][0])-want) > 1e-5 {
			t.Errorf("%q: got %v, want [%.2f]", text, got[i], want)
		}
	}
}

// TestXLMRCrossEncoderImport imports an XLM-RoBERTa style cross-encoder — a Unigram
// tokenizer.json and testdata/tiny_xlmr_cross.onnx, which has no token_type_ids input and
// whose logit is the number of attended "▁attention" pieces plus 100 per attended <pad> — and
// checks that it reranks: exact scores test the <s> A </s></s> B </s> layout, padding with
// XLM-R's pad id 1 under the mask, and truncation.
func TestXLMRCrossEncoderImport(t *testing.T) {
	models(t)
	tokPath := filepath.Join("hftok", "testdata", "unigram.json")
	mdir := t.TempDir()
	if _, err := pull.Import(pull.ImportOptions{
		Dir: mdir, Name: "xlmr_cross", Kind: pull.KindCrossEncoder, MaxLength: 40,
		Model: filepath.Join("testdata", "tiny_xlmr_cross.onnx"), Tokenizer: tokPath,
	}); err != nil {
		t.Fatal(err)
	}
	r, err := onnx.NewReranker(onnx.RerankerConfig{Dir: pull.ModelDir(mdir, "xlmr_cross"), BatchTokens: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tok, err := hftok.Load(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Pad() != 1 {
		t.Fatalf("pad id %d, want XLM-R's 1", tok.Pad())
	}
	attention, ok := tok.ID("▁attention")
	if !ok {
		t.Fatal("no ▁attention piece")
	}
	query := "What is attention?"
	passages := []string{
		"Recurrent networks process tokens one at a time.",
		"Multi-head attention lets the model attend to several positions; attention is cheap.",
		"Self attention",
		strings.Repeat("Convolutions are local. ", 20) + "attention at the very end is cut off",
	}
	got, err := r.Score(t.Context(), query, passages)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range passages {
		ids, _ := tok.EncodePair(query, p, 40)
		if ids[0] != 0 || ids[len(ids)-1] != 2 {
			t.Fatalf("pair %d not laid out as <s> … </s>: %v", i, ids)
		}
		n := 0
		for _, id := range ids {
			if id == attention {
				n++
			}
		}
		want := 1 / (1 + math.Exp(-float64(n)))
		if math.Abs(got[i]-want) > 1e-6 {
			t.Errorf("passage %d: score %.6f, want %.6f (%d attention pieces)", i, got[i], want, n)
		}
	}
	if !(got[1] > got[2] && got[2] > got[0] && got[0] == got[3]) {
		t.Errorf("ranking %v: want the passage saying attention twice first, the truncated one level with none", got)
	}
}
