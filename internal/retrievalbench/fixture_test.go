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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/chunk"
	"github.com/footnote-dev/footnote/index/embedded"
	"github.com/footnote-dev/footnote/index/pdf"
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
		e, err := onnx.NewEmbedder(onnx.EmbedderConfig{Dir: dir})
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

type parsed struct {
	doc    rag.Document
	chunks []rag.Chunk
	tf     []rag.SparseVector
	terms  []int
}

// ingest parses, chunks and encodes every PDF the way the index command does, in two passes
// because BM25 document weights need the corpus' mean chunk length.
func (f *fixture) ingest(ctx context.Context, papers string) error {
	paths, err := filepath.Glob(filepath.Join(papers, "*.pdf"))
	if err != nil {
		return err
	}
	slices.Sort(paths)
	var docs []parsed
	var totalTerms, totalChunks int
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		d, err := pdf.Parse(ctx, data, pdf.Options{})
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		sum := sha256.Sum256(data)
		hash := hex.EncodeToString(sum[:])
		name := strings.TrimSuffix(filepath.Base(path), ".pdf")
		docID := hash[:16]
		cs := chunk.Split(d, chunk.Meta{DocID: docID, Hash: hash, Source: path, Name: name, Title: d.Title}, chunk.Options{})
		p := parsed{doc: rag.Document{ID: docID, Source: path, Name: name, Kind: chunk.KindPDF, Title: d.Title,
			Authors: d.Authors, Pages: d.Pages, Hash: hash, Chunks: len(cs), IndexedAt: time.Now()}, chunks: cs}
		for _, c := range cs {
			tf, n := bm25.Count(c.Text)
			p.tf = append(p.tf, tf)
			p.terms = append(p.terms, n)
			totalTerms += n
		}
		totalChunks += len(cs)
		docs = append(docs, p)
	}
	avgdl := float64(totalTerms) / float64(max(totalChunks, 1))

	// Embedding the corpus takes minutes on two cores, so vectors are cached on disk by
	// model file and chunk text: a run re-embeds only chunks the chunker changed.
	vectors := make([]map[string][]float32, len(f.embedders))
	for mi, e := range f.embedders {
		var texts []string
		for _, p := range docs {
			for _, c := range p.chunks {
				texts = append(texts, c.Text)
			}
		}
		v, err := cachedEmbed(ctx, e, texts)
		if err != nil {
			return err
		}
		vectors[mi] = v
	}
	for _, p := range docs {
		enc := make([]index.EncodedChunk, len(p.chunks))
		for i, c := range p.chunks {
			enc[i] = index.EncodedChunk{Chunk: c, Sparse: bm25.Params{}.Document(p.tf[i], p.terms[i], avgdl),
				Terms: p.terms[i], Dense: map[string][]float32{}}
			for mi, e := range f.embedders {
				enc[i].Dense[e.Info().Name] = vectors[mi][textKey(c.Text)]
			}
		}
		if err := f.store.Replace(ctx, p.doc, enc); err != nil {
			return err
		}
		f.docs++
		f.chunks += len(p.chunks)
	}
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

// cachedEmbed returns the vectors of texts by textKey, embedding those the cache for this
// model file lacks and saving the cache again. A cache that cannot be read is rebuilt.
func cachedEmbed(ctx context.Context, e rag.Embedder, texts []string) (map[string][]float32, error) {
	id := e.Info().Name
	if oe, ok := e.(*onnx.Embedder); ok {
		id += "-" + oe.Manifest().Files[pull.ModelFile].SHA256[:16]
	}
	path := filepath.Join(cacheDir(), "vectors", id+".gob")
	cache := map[string][]float32{}
	if b, err := os.ReadFile(path); err == nil {
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&cache); err != nil {
			cache = map[string][]float32{}
		}
	}
	var missing []string
	seen := map[string]bool{}
	for _, t := range texts {
		k := textKey(t)
		if _, ok := cache[k]; !ok && !seen[k] {
			missing = append(missing, t)
			seen[k] = true
		}
	}
	if len(missing) == 0 {
		return cache, nil
	}
	// Embed in slices and save after each, so an interrupted first build keeps its work.
	const step = 128
	for start := 0; start < len(missing); start += step {
		part := missing[start:min(start+step, len(missing))]
		vs, err := e.EmbedDocuments(ctx, part)
		if err != nil {
			return nil, fmt.Errorf("embed with %s: %w", e.Info().Name, err)
		}
		for i, v := range vs {
			cache[textKey(part[i])] = v
		}
		if err := saveCache(path, cache); err != nil {
			return nil, err
		}
	}
	return cache, nil
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
