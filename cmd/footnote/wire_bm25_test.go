package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/embedded"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// TestSparseSourcePerQuery checks that encoding a question with the statistics of its own
// terms (the question path) gives exactly the vector the full statistics give.
func TestSparseSourcePerQuery(t *testing.T) {
	ctx := t.Context()
	st, err := embedded.Open(ctx, embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	texts := []string{"Attention is all you need for translation.", "Retrieval augmented generation over Wikipedia.",
		"Attention heads in retrieval models.", "Masked language modelling pre-training."}
	var chunks []index.EncodedChunk
	for i, text := range texts {
		tf, n := bm25.Count(text)
		chunks = append(chunks, index.EncodedChunk{Chunk: rag.Chunk{ID: string(rune('a' + i)), Text: text},
			Sparse: bm25.Params{}.Document(tf, n, 6), Terms: n})
	}
	if err := st.Replace(ctx, rag.Document{ID: "d"}, chunks); err != nil {
		t.Fatal(err)
	}
	full, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src := sparseSource(st, bm25.Params{}, slog.New(slog.DiscardHandler))
	enc, err := src(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := enc.(termEncoder); !ok {
		t.Fatalf("the embedded store answers per-query statistics, but sparseSource gave %T", enc)
	}
	for _, q := range []string{"attention retrieval", "unknown words only", "the of and", "attention attention translation"} {
		want := bm25.NewQueryEncoder(bm25.Params{}, full.Chunks, full.DF).EncodeQuery(q)
		if diff := cmp.Diff(want, enc.EncodeQuery(q), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%q (-full statistics +per query):\n%s", q, diff)
		}
	}
}

type failingStats struct{ index.QueryStatser }

func (failingStats) QueryStats(context.Context, []uint32) (int, map[uint32]int, error) {
	return 0, nil, errors.New("milvus down")
}

// TestTermEncoderFailure: without statistics a question is encoded as no BM25 query, not
// with made-up document frequencies.
func TestTermEncoderFailure(t *testing.T) {
	e := termEncoder{ctx: t.Context(), st: failingStats{}, log: slog.New(slog.DiscardHandler)}
	if v := e.EncodeQuery("attention retrieval"); len(v.Indices) != 0 {
		t.Errorf("encoded %v without statistics", v)
	}
}
