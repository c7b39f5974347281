package milvus

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/embedded"
	"github.com/footnote-dev/footnote/index/milvus/milvustest"
	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// tee stores every write in two stores; reads come from the first.
type tee struct {
	index.Store
	other index.Store
}

func (t tee) Replace(ctx context.Context, doc rag.Document, chunks []index.EncodedChunk) error {
	if err := t.Store.Replace(ctx, doc, chunks); err != nil {
		return err
	}
	return t.other.Replace(ctx, doc, chunks)
}

func (t tee) Delete(ctx context.Context, id string) error {
	if err := t.Store.Delete(ctx, id); err != nil {
		return err
	}
	return t.other.Delete(ctx, id)
}

// hashEmbedder is a deterministic stand-in for a dense model (fakeVec), so that parity
// covers dense and hybrid search without the ONNX models.
type hashEmbedder struct{}

var hashModel = rag.ModelInfo{Name: "hash_32", Dim: 32, Metric: rag.Cosine}

func (hashEmbedder) Info() rag.ModelInfo { return hashModel }

func (hashEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeVec(t, hashModel.Dim)
	}
	return out, ctx.Err()
}

func (hashEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	return fakeVec(text, hashModel.Dim), ctx.Err()
}

// TestParity indexes the real corpus once into the embedded store and Milvus and checks
// that both hold the same statistics and documents and, for every evaluation question,
// return the same top-5 chunks (up to the order of exact ties) for BM25, dense and hybrid
// (RRF) search. The Milvus collection uses a FLAT (exact) dense index here; with HNSW,
// dense rankings agree only approximately.
func TestParity(t *testing.T) {
	addr := milvustest.Addr(t)
	papers := corpustest.Papers(t)
	questions := readQuestions(t, corpustest.Questions(t))
	ctx := t.Context()

	emb, err := embedded.Open(ctx, embedded.Config{Dir: t.TempDir(), Corpus: "parity", Models: []rag.ModelInfo{hashModel}})
	if err != nil {
		t.Fatalf("embedded.Open: %v", err)
	}
	t.Cleanup(func() { emb.Close() })
	// FLAT: exact dense search, so rankings can be compared exactly (HNSW is approximate).
	mv, err := Open(ctx, Config{Addr: addr, Corpus: milvustest.Corpus(t), Models: []rag.ModelInfo{hashModel}, DenseIndex: "FLAT", Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { dropAndClose(t, mv) })

	ix, err := index.New(index.Config{Store: tee{emb, mv}, Embedders: []rag.Embedder{hashEmbedder{}}})
	if err != nil {
		t.Fatalf("index.New: %v", err)
	}
	start := time.Now()
	sum, err := ix.Index(ctx, []string{papers}, index.Options{})
	if err != nil {
		t.Fatalf("Index: %v", err)
	}
	if err := mv.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	t.Logf("indexed %d documents, %d chunks into both stores in %s", sum.Indexed, sum.Chunks, time.Since(start).Round(time.Millisecond))
	if sum.Indexed == 0 {
		t.Fatalf("nothing indexed from %s: %+v", papers, sum)
	}

	want, err := emb.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mv.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("statistics differ (-embedded +milvus):\n%s", diff)
	}
	wantDocs, _ := emb.Documents(ctx)
	gotDocs, err := mv.Documents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantDocs, gotDocs, cmpopts.EquateApproxTime(time.Millisecond), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("documents differ (-embedded +milvus):\n%s", diff)
	}

	enc := bm25.NewQueryEncoder(bm25.Params{}, want.Chunks, want.DF)
	for _, q := range questions {
		t.Run(q.ID, func(t *testing.T) {
			sv := enc.EncodeQuery(q.Question)
			req := rag.SearchRequest{Sparse: &sv, Limit: 5}
			a, err := emb.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := mv.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !sameRanking(a, b) {
				t.Errorf("BM25 top 5 for %q differ:\nembedded %v\nmilvus   %v", q.Question, scored(a), scored(b))
			}
			dq := []rag.DenseQuery{{Model: hashModel.Name, Vector: fakeVec(q.Question, hashModel.Dim)}}
			empty := rag.SparseVector{}
			for name, req := range map[string]rag.SearchRequest{
				"dense":    {Dense: dq, Limit: 5},
				"hybrid":   {Dense: dq, Sparse: &sv, Limit: 5, Fusion: rag.Fusion{Method: "rrf", K: 60}},
				"weighted": {Dense: dq, Sparse: &sv, Limit: 5, Fusion: rag.Fusion{Method: "weighted", Weights: []float64{0.4, 0.6}}},
				"no terms": {Dense: dq, Sparse: &empty, Limit: 5}, // a query of stopwords only
			} {
				a, err := emb.Search(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				b, err := mv.Search(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if !sameRanking(a, b) {
					t.Errorf("%s top 5 for %q differ:\nembedded %v\nmilvus   %v", name, q.Question, scored(a), scored(b))
				}
			}
		})
	}
}

// sameRanking compares two rankings by chunk, allowing chunks with equal scores (within
// 1e-4, the float32 rounding of Milvus' scores) to swap places.
func sameRanking(a, b []rag.Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i].Score-b[i].Score) > 1e-4 {
			return false
		}
		if a[i].Chunk.ID == b[i].Chunk.ID {
			continue
		}
		// A swap inside a tie: b[i] must appear in a at a tied score.
		found := false
		for j := range a {
			if a[j].Chunk.ID == b[i].Chunk.ID && math.Abs(a[j].Score-b[i].Score) <= 1e-4 {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

type scoredID struct {
	ID    string
	Score float64
}

func scored(hs []rag.Hit) []scoredID {
	out := make([]scoredID, len(hs))
	for i, h := range hs {
		out[i] = scoredID{h.Chunk.ID, math.Round(h.Score*1e4) / 1e4}
	}
	return out
}

type question struct {
	ID       string `json:"id"`
	Question string `json:"question"`
}

func readQuestions(t *testing.T, path string) []question {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []question
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var q question
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		t.Fatalf("no questions in %s", path)
	}
	return out
}
