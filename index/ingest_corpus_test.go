package index_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/embedded"
	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// hashEmbedder is a deterministic stand-in model: a vector of letter frequencies.
type hashEmbedder struct{}

func (hashEmbedder) Info() rag.ModelInfo {
	return rag.ModelInfo{Name: "letters", Dim: 26, Metric: rag.Cosine}
}
func (hashEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = letters(t)
	}
	return out, ctx.Err()
}
func (hashEmbedder) EmbedQuery(_ context.Context, t string) ([]float32, error) {
	return letters(t), nil
}

func letters(s string) []float32 {
	v := make([]float32, 26)
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' {
			v[r-'a']++
		}
	}
	v[0]++ // never the zero vector
	return v
}

func openEmbedded(t *testing.T, dir string, models ...rag.ModelInfo) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(t.Context(), embedded.Config{Dir: dir, Models: models})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestEmbeddedStore indexes the corpus into the real SQLite store, searches it with BM25,
// re-indexes without changes and back-fills a model added later.
func TestEmbeddedStore(t *testing.T) {
	papers := corpustest.Papers(t)
	dir := t.TempDir()
	files := []string{"1706.03762.pdf", "1810.04805.pdf", "2005.11401.pdf"}
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(papers, f))
	}
	store := openEmbedded(t, dir)
	ix, err := index.New(index.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := ix.Index(t.Context(), paths, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Indexed != 3 || sum.Failed || sum.Pages != 15+16+19 {
		t.Fatalf("summary %+v", sum)
	}
	st, err := store.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Documents != 3 || st.Chunks != sum.Chunks {
		t.Errorf("stats %+v, summary %+v", st, sum)
	}

	q := bm25.NewQueryEncoder(bm25.Params{}, st.Chunks, st.DF).EncodeQuery("encoder composed of a stack of identical layers with two sub-layers")
	hits, err := store.Search(t.Context(), rag.SearchRequest{Sparse: &q, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Chunk.Name != "1706.03762" || hits[0].Chunk.PageStart != 3 {
		t.Errorf("top hit %+v", hits)
	} else if got := hits[0].Chunk.Section; len(got) < 2 || got[1] != "3.1 Encoder and Decoder Stacks" {
		t.Errorf("top hit section %q", got)
	}

	again, err := ix.Index(t.Context(), paths, index.Options{})
	if err != nil || again.Unchanged != 3 || again.Indexed != 0 {
		t.Errorf("re-index: %+v, %v", again, err)
	}

	// A model added later is back-filled without re-parsing.
	store.Close()
	store = openEmbedded(t, dir, hashEmbedder{}.Info())
	ix, err = index.New(index.Config{Store: store, Embedders: []rag.Embedder{hashEmbedder{}}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := ix.Backfill(t.Context(), "letters")
	if err != nil {
		t.Fatal(err)
	}
	if n != st.Chunks {
		t.Errorf("backfilled %d of %d chunks", n, st.Chunks)
	}
}

// BenchmarkIngest parses, chunks and BM25-encodes the whole corpus (no embeddings) into a
// store that discards writes, reporting pages and chunks per second.
func BenchmarkIngest(b *testing.B) {
	papers := corpustest.Papers(b)
	if _, err := os.Stat(papers); err != nil {
		b.Skip(err)
	}
	var pages, chunks int
	for b.Loop() {
		store := &nullStore{}
		ix, err := index.New(index.Config{Store: store})
		if err != nil {
			b.Fatal(err)
		}
		sum, err := ix.Index(b.Context(), []string{papers}, index.Options{})
		if err != nil || sum.Failed {
			b.Fatalf("%+v %v", sum, err)
		}
		pages += sum.Pages
		chunks += sum.Chunks
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(pages)/secs, "pages/s")
	b.ReportMetric(float64(chunks)/secs, "chunks/s")
}

// nullStore accepts writes and keeps only totals.
type nullStore struct {
	chunks int
	terms  int64
}

func (s *nullStore) Search(context.Context, rag.SearchRequest) ([]rag.Hit, error) { return nil, nil }
func (s *nullStore) Chunks(context.Context, []string) ([]rag.Chunk, error)        { return nil, nil }
func (s *nullStore) Models() []rag.ModelInfo                                      { return nil }
func (s *nullStore) Document(context.Context, string) (rag.Document, error) {
	return rag.Document{}, rag.ErrNotFound
}
func (s *nullStore) Documents(context.Context) ([]rag.Document, error) { return nil, nil }
func (s *nullStore) Replace(_ context.Context, _ rag.Document, cs []index.EncodedChunk) error {
	s.chunks += len(cs)
	for _, c := range cs {
		s.terms += int64(c.Terms)
	}
	return nil
}
func (s *nullStore) Delete(context.Context, string) error { return nil }
func (s *nullStore) Stats(context.Context) (index.Stats, error) {
	return index.Stats{Chunks: s.chunks, Terms: s.terms}, nil
}
func (s *nullStore) MissingDense(context.Context, string, int) ([]rag.Chunk, error) {
	return nil, nil
}
func (s *nullStore) PutDense(context.Context, string, []string, [][]float32) error { return nil }
func (s *nullStore) Close() error                                                  { return nil }
