package retrievalbench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/embedded"
	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
	"github.com/footnote-dev/footnote/rag/onnx"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

// fixture is an indexed corpus and the models that search it, shared by every test and
// benchmark of the process.
type fixture struct {
	store     *embedded.Store
	embedders []rag.Embedder
	reranker  rag.Reranker
	rerankBy  string // the reranker's model, for the report
	chunks    int
	docs      int
	ingestDur time.Duration
	dir       string
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
)

// corpus returns the shared fixture, building it on first use. The first build embeds
// every chunk with every installed model (minutes on two cores; run with -timeout 60m);
// later ones read the vectors from the cache (see cachedEmbed) and take seconds.
func corpus(tb testing.TB) *fixture {
	tb.Helper()
	papers := corpustest.Papers(tb)
	models := corpustest.Models(tb)
	fixOnce.Do(func() { fix, fixErr = build(papers, models) })
	if fixErr != nil {
		tb.Fatalf("build the corpus index: %v", fixErr)
	}
	return fix
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fix != nil {
		fix.store.Close()
		os.RemoveAll(fix.dir)
	}
	os.Exit(code)
}

func build(papers, models string) (*fixture, error) {
	ctx := context.Background()
	if err := onnx.InitModels(models); err != nil {
		return nil, err
	}
	f := &fixture{}
	// Every installed embedder, in a fixed order (bge first: it is the default model).
	for _, name := range []string{pull.BGESmall, pull.AllMiniLML6} {
		dir := pull.ModelDir(models, name)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		// No vector cache: every query and reranked passage is embedded afresh, so the
		// measurements are the cold, worst case rather than repeats of the same texts.
		e, err := onnx.NewEmbedder(onnx.EmbedderConfig{Dir: dir, CacheSize: -1})
		if err != nil {
			return nil, err
		}
		f.embedders = append(f.embedders, e)
	}
	if len(f.embedders) == 0 {
		return nil, fmt.Errorf("no embedding model in %s (run `footnote models pull`)", models)
	}
	// A cross-encoder when one is installed, else the similarity reranker the CLI falls
	// back to.
	entries, _ := os.ReadDir(models)
	for _, ent := range entries {
		m, err := pull.ReadManifest(filepath.Join(models, ent.Name()))
		if err != nil || m.Kind != pull.KindCrossEncoder {
			continue
		}
		r, err := onnx.NewReranker(onnx.RerankerConfig{Dir: filepath.Join(models, ent.Name())})
		if err != nil {
			return nil, err
		}
		f.reranker, f.rerankBy = r, m.Name
		break
	}
	if f.reranker == nil {
		f.reranker = onnx.NewSimilarityReranker(f.embedders[0].(*onnx.Embedder), onnx.SimilarityConfig{})
		f.rerankBy = "similarity:" + f.embedders[0].Info().Name
	}

	tmp, err := os.MkdirTemp("", "footnote-retrievalbench-")
	if err != nil {
		return nil, err
	}
	f.dir = tmp
	var infos []rag.ModelInfo
	for _, e := range f.embedders {
		infos = append(infos, e.Info())
	}
	f.store, err = embedded.Open(ctx, embedded.Config{Dir: tmp, Models: infos})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := f.ingest(ctx, papers); err != nil {
		return nil, err
	}
	f.ingestDur = time.Since(start)
	return f, nil
}

// ingest indexes every PDF with index.Indexer, as `footnote index` does, through
// embedders whose document vectors are cached on disk (see diskCached).
func (f *fixture) ingest(ctx context.Context, papers string) error {
	var cached []rag.Embedder
	for _, e := range f.embedders {
		dc, err := newDiskCached(e)
		if err != nil {
			return err
		}
		cached = append(cached, dc)
	}
	// Chunks are sized by the model's own token count, as `footnote index` sizes them, so
	// that the fixture holds the same chunks as a corpus the CLI indexed.
	cfg := index.Config{Store: f.store, Embedders: cached}
	if e, ok := f.embedders[0].(*onnx.Embedder); ok {
		cfg.CountTokens = e.CountTokens
	}
	ix, err := index.New(cfg)
	if err != nil {
		return err
	}
	sum, err := ix.Index(ctx, []string{papers}, index.Options{})
	if err != nil {
		return err
	}
	if sum.Failed || len(sum.Skipped) > 0 {
		return fmt.Errorf("indexing skipped files: %+v", sum.Skipped)
	}
	f.docs, f.chunks = sum.Indexed, sum.Chunks
	return nil
}

// cacheDir is $FOOTNOTE_TEST_CACHE, else footnote-test in the user's cache folder.
func cacheDir() string {
	if d := os.Getenv("FOOTNOTE_TEST_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "footnote-test")
	}
	return filepath.Join(os.TempDir(), "footnote-test")
}

func textKey(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:16])
}

// diskCached is an embedder whose EmbedDocuments reads vectors from a cache file per model
// file, keyed by text, and embeds only the texts it lacks. Embedding the corpus takes
// minutes on two cores; with the cache a run re-embeds only chunks the chunker changed.
type diskCached struct {
	rag.Embedder
	path  string
	mu    sync.Mutex
	cache map[string][]float32
}

func newDiskCached(e rag.Embedder) (*diskCached, error) {
	id := e.Info().Name
	if oe, ok := e.(*onnx.Embedder); ok {
		id += "-" + oe.Manifest().Files[pull.ModelFile].SHA256[:16]
	}
	d := &diskCached{Embedder: e, path: filepath.Join(cacheDir(), "vectors", id+".gob"), cache: map[string][]float32{}}
	if b, err := os.ReadFile(d.path); err == nil {
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&d.cache); err != nil {
			d.cache = map[string][]float32{} // unreadable: rebuild it
		}
	}
	return d, nil
}

func (d *diskCached) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var missing []string
	for _, t := range texts {
		if _, ok := d.cache[textKey(t)]; !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		vs, err := d.Embedder.EmbedDocuments(ctx, missing)
		if err != nil {
			return nil, err
		}
		for i, v := range vs {
			d.cache[textKey(missing[i])] = v
		}
		// Saved after every batch, so an interrupted first build keeps its work.
		if err := saveCache(d.path, d.cache); err != nil {
			return nil, err
		}
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = d.cache[textKey(t)]
	}
	return out, nil
}

func saveCache(path string, cache map[string][]float32) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(cache); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// pipeline returns a Pipeline over the fixture; reranked chooses the cross-encoder stage.
func (f *fixture) pipeline(tb testing.TB, reranked bool) *rag.Pipeline {
	tb.Helper()
	cfg := rag.Config{
		Searcher:  f.store,
		Embedders: f.embedders,
		Sparse: func(ctx context.Context) (rag.SparseEncoder, error) {
			st, err := f.store.Stats(ctx)
			if err != nil {
				return nil, err
			}
			return bm25.NewQueryEncoder(bm25.Params{}, st.Chunks, st.DF), nil
		},
	}
	if reranked {
		cfg.Reranker = f.reranker
	}
	p, err := rag.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// defaultPipeline returns the pipeline `footnote serve` builds with its default settings
// (cmd/footnote Defaults: bge-small, hybrid with weighted fusion, 20 candidates per retriever,
// rerank top 10, top 5, score cut 0.2 with drop-off 0.35, document prior 0.8, fused prior 0.7,
// extractive answers). Keep it in
// step with Defaults: the floors of TestDevSetFloors hold the default configuration.
func (f *fixture) defaultPipeline(tb testing.TB) *rag.Pipeline {
	tb.Helper()
	cfg := f.defaultConfig()
	tuneOverrides(tb, &cfg)
	p, err := rag.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// defaultConfig is the configuration of defaultPipeline.
func (f *fixture) defaultConfig() rag.Config {
	cfg := rag.Config{
		Searcher: f.store,
		// Only the local model (bge-small): the CLI uses no other embedder unless
		// FOOTNOTE_EMBEDDERS names one, even when more models are installed.
		Embedders: f.embedders[:1],
		Sparse: func(ctx context.Context) (rag.SparseEncoder, error) {
			st, err := f.store.Stats(ctx)
			if err != nil {
				return nil, err
			}
			return bm25.NewQueryEncoder(bm25.Params{K1: 1.5, B: 0.75}, st.Chunks, st.DF), nil
		},
		Reranker:    f.reranker,
		Documents:   f.store.Documents,
		Candidates:  20,
		RerankTop:   10,
		TopK:        5,
		MinScore:    0.2,
		MaxGap:      0.35,
		Fusion:      rag.Fusion{Method: "weighted", K: 60},
		DocWeight:   0.8,
		FusedWeight: 0.7,
	}
	if e, ok := f.embedders[0].(*onnx.Embedder); ok {
		cfg.CountTokens = e.CountTokens
	}
	return cfg
}
