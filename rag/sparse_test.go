package rag

import (
	"context"
	"testing"
)

// A question builds its BM25 encoder once, whatever asks for it (the search and the
// gate), and within the question's context, not a shorter one.
func TestSparseOncePerQuestion(t *testing.T) {
	built := 0
	var builtIn context.Context
	corpus := []Chunk{gateAdam, gateFill}
	p, err := New(Config{
		Searcher: gateSearcher{corpus},
		Sparse: func(ctx context.Context) (SparseEncoder, error) {
			built++
			builtIn = ctx
			return newIDFEncoder(corpus), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ask(t.Context(), Question{Text: "Which optimizer did the LLaMA authors use?"}, nil); err != nil {
		t.Fatal(err)
	}
	if built != 1 {
		t.Errorf("the encoder was built %d times for one question, want 1", built)
	}
	if builtIn.Err() != nil {
		t.Errorf("the encoder was built in a context that has ended: %v", builtIn.Err())
	}
}
