package rag_test

import (
	"context"
	"slices"
	"testing"

	"github.com/footnote-dev/footnote/rag"
)

// rvReranker scores text like rtReranker and a stored vector by its first component, and
// records what each path was given.
type rvReranker struct {
	rtReranker
	model    string
	vecCalls int
	queryVec []float32
	vectors  [][]float32
}

func (r *rvReranker) VectorModel() string { return r.model }

func (r *rvReranker) ScoreVectors(_ context.Context, _ string, q []float32, vs [][]float32) ([]float64, error) {
	r.vecCalls++
	r.queryVec, r.vectors = q, vs
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = float64(v[0])
	}
	return out, nil
}

// TestRetrieveRerankFromVectors: hits carrying the reranker model's vector are scored from
// it, with the query vector retrieval already computed; a hit without one is scored from
// its text; RerankText forces the text path for all.
func TestRetrieveRerankFromVectors(t *testing.T) {
	hits := rtHits(0.3, 0.9, 0.6)
	// Vectors say the opposite of the texts, so the test sees which path scored.
	hits[0].Vectors = map[string][]float32{"bge": {0.95}}
	hits[1].Vectors = map[string][]float32{"bge": {0.25}, "other": {0.99}}
	s := &rtSearcher{hits: hits}
	r := &rvReranker{model: "bge"}
	p := rtPipeline(t, rag.Config{Searcher: s, Embedders: []rag.Embedder{&rtEmbedder{name: "bge"}}, Sparse: rtSparseFn, Reranker: r, MaxGap: 1})
	got, err := p.Retrieve(t.Context(), rag.Question{Text: "what is attention"})
	if err != nil {
		t.Fatal(err)
	}
	if reqs := s.requests(); !reqs[0].WithVectors {
		t.Error("the search did not ask for stored vectors")
	}
	if r.vecCalls != 1 || len(r.vectors) != 2 || r.calls != 1 || !slices.Equal(r.passages, []string{hits[2].Chunk.Text}) {
		t.Fatalf("vector calls %d with %d vectors, text calls %d with %q: want one of each, c2 by text", r.vecCalls, len(r.vectors), r.calls, r.passages)
	}
	// The query vector is the one the search used (rtEmbedder: {len(name), len(text)}).
	if !slices.Equal(r.queryVec, []float32{3, float32(len("what is attention"))}) {
		t.Errorf("query vector %v, want the search's", r.queryVec)
	}
	if want := []string{"c0", "c2", "c1"}; !slices.Equal(ids(got.Candidates), want) {
		t.Errorf("order %v, want %v (c0 0.95 and c1 0.25 from vectors, c2 0.6 from text)", ids(got.Candidates), want)
	}

	// BM25 alone embeds no query: the reranker gets nil and embeds it itself.
	r2 := &rvReranker{model: "bge"}
	p = rtPipeline(t, rag.Config{Searcher: &rtSearcher{hits: hits}, Embedders: []rag.Embedder{&rtEmbedder{name: "bge"}}, Sparse: rtSparseFn, Reranker: r2})
	if _, err := p.Retrieve(t.Context(), rag.Question{Text: "what is attention", Method: "bm25"}); err != nil {
		t.Fatal(err)
	}
	if r2.vecCalls != 1 || r2.queryVec != nil {
		t.Errorf("bm25: vector calls %d with query vector %v, want one with nil", r2.vecCalls, r2.queryVec)
	}

	r3 := &rvReranker{model: "bge"}
	s3 := &rtSearcher{hits: hits}
	p = rtPipeline(t, rag.Config{Searcher: s3, Embedders: []rag.Embedder{&rtEmbedder{name: "bge"}}, Sparse: rtSparseFn, Reranker: r3, RerankText: true, MaxGap: 1})
	got, err = p.Retrieve(t.Context(), rag.Question{Text: "what is attention"})
	if err != nil {
		t.Fatal(err)
	}
	if r3.vecCalls != 0 || r3.calls != 1 || len(r3.passages) != 3 || s3.requests()[0].WithVectors {
		t.Errorf("RerankText: vector calls %d, text calls %d over %d passages, WithVectors %v", r3.vecCalls, r3.calls, len(r3.passages), s3.requests()[0].WithVectors)
	}
	if want := []string{"c1", "c2", "c0"}; !slices.Equal(ids(got.Candidates), want) {
		t.Errorf("RerankText order %v, want %v", ids(got.Candidates), want)
	}
}

// A plain cross-encoder never gets stored vectors asked for.
func TestRetrieveCrossEncoderNoVectors(t *testing.T) {
	s := &rtSearcher{hits: rtHits(0.9)}
	p := rtPipeline(t, rag.Config{Searcher: s, Sparse: rtSparseFn, Reranker: &rtReranker{}})
	if _, err := p.Retrieve(t.Context(), rag.Question{Text: "attention"}); err != nil {
		t.Fatal(err)
	}
	if s.requests()[0].WithVectors {
		t.Error("stored vectors asked for a reranker that cannot read them")
	}
}

// The fused prior corrects a similarity scorer's order; a cross-encoder's is kept.
func TestFusedWeightOnlyForSimilarity(t *testing.T) {
	hits := rtHits(0.5, 0.6)              // probabilities from the texts: c1 is the reranker's favourite
	hits[0].Score, hits[1].Score = 1, 0.1 // c0 is retrieval's favourite by far
	for _, tc := range []struct {
		name string
		r    rag.Reranker
		want []string
	}{
		{"cross-encoder", &rtReranker{}, []string{"c1", "c0"}},
		// No vectors on the hits, so rvReranker scores the texts too; with weight 0.9
		// c0 = 0.1·0.5 + 0.9·0.6·1 = 0.59 and c1 = 0.1·0.6 + 0.9·0.6·0.1 = 0.114.
		{"similarity", &rvReranker{model: "none"}, []string{"c0", "c1"}},
	} {
		p := rtPipeline(t, rag.Config{Searcher: &rtSearcher{hits: hits}, Sparse: rtSparseFn, Reranker: tc.r, FusedWeight: 0.9, MaxGap: 1})
		got, err := p.Retrieve(t.Context(), rag.Question{Text: "attention"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got.Candidates), tc.want) {
			t.Errorf("%s: order %v, want %v", tc.name, ids(got.Candidates), tc.want)
		}
	}
}
