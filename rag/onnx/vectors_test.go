package onnx_test

import (
	"math"
	"testing"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/onnx"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

// TestScoreVectorsMatchesScore checks that scoring stored vectors gives the probabilities
// that embedding the passages again gives. The "stored" vectors are embedded one passage
// per call, as index batches differ from rerank batches (padding changes the floats
// slightly), and normalised as the stores keep them.
func TestScoreVectorsMatchesScore(t *testing.T) {
	e := newEmbedder(t, pull.BGESmall, onnx.EmbedderConfig{CacheSize: -1})
	r := onnx.NewSimilarityReranker(e, onnx.SimilarityConfig{})
	var vr rag.VectorReranker = r
	if vr.VectorModel() != e.Info().Name {
		t.Fatalf("VectorModel %q, want %q", vr.VectorModel(), e.Info().Name)
	}
	var passages []string
	for _, p := range realPairs {
		passages = append(passages, p.relevant, p.irrelevant)
	}
	stored := make([][]float32, len(passages))
	for i, p := range passages {
		v, err := e.EmbedDocuments(t.Context(), []string{p})
		if err != nil {
			t.Fatal(err)
		}
		stored[i] = unit(v[0])
	}
	for _, p := range realPairs {
		want, err := r.Score(t.Context(), p.query, passages)
		if err != nil {
			t.Fatal(err)
		}
		qv, err := e.EmbedQuery(t.Context(), p.query)
		if err != nil {
			t.Fatal(err)
		}
		for name, q := range map[string][]float32{"query vector given": qv, "query embedded": nil} {
			got, err := r.ScoreVectors(t.Context(), p.query, q, stored)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d scores for %d passages", name, len(got), len(want))
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-4 {
					t.Errorf("%s: %.40q passage %d: vectors %.6f, text %.6f", name, p.query, i, got[i], want[i])
				}
			}
		}
	}
	if _, err := r.ScoreVectors(t.Context(), "q", nil, [][]float32{{1, 2, 3}}); err == nil {
		t.Error("a vector of the wrong dimension was scored")
	}
}

func unit(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / math.Sqrt(s))
	}
	return out
}
