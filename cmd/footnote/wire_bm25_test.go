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

// statsStore is an embedded store holding one document whose chunks are the texts, with
// their BM25 statistics.
func statsStore(t *testing.T, texts ...string) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(t.Context(), embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var chunks []index.EncodedChunk
	for i, text := range texts {
		tf, n := bm25.Count(text)
		chunks = append(chunks, index.EncodedChunk{Chunk: rag.Chunk{ID: string(rune('a' + i)), Text: text},
			Sparse: bm25.Params{}.Document(tf, n, 6), Terms: n})
	}
	if err := st.Replace(t.Context(), rag.Document{ID: "d"}, chunks); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSparseSourcePerQuery checks that encoding a question with the statistics of its own
// terms (the question path) gives exactly the vector the full statistics give.
func TestSparseSourcePerQuery(t *testing.T) {
	ctx := t.Context()
	st := statsStore(t, "Attention is all you need for translation.", "Retrieval augmented generation over Wikipedia.",
		"Attention heads in retrieval models.", "Masked language modelling pre-training.")
	full, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src := sparseSource(st, bm25.Params{}, slog.New(slog.DiscardHandler))
	enc, err := src(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := enc.(*termEncoder); !ok {
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
	e := &termEncoder{ctx: t.Context(), st: failingStats{}, log: slog.New(slog.DiscardHandler)}
	if v := e.EncodeQuery("attention retrieval"); len(v.Indices) != 0 {
		t.Errorf("encoded %v without statistics", v)
	}
}

type countingStats struct {
	index.QueryStatser
	calls int
}

func (c *countingStats) QueryStats(ctx context.Context, terms []uint32) (int, map[uint32]int, error) {
	c.calls++
	return c.QueryStatser.QueryStats(ctx, terms)
}

// TestTermEncoderReadsEachTermOnce: the evidence gate asks for the question's words one by
// one after the question; those are answered from what the question read (on Milvus each
// read is a round trip).
func TestTermEncoderReadsEachTermOnce(t *testing.T) {
	ctx := t.Context()
	st := statsStore(t, "Attention is all you need for translation.")
	cs := &countingStats{QueryStatser: st}
	e := &termEncoder{ctx: ctx, st: cs, log: slog.New(slog.DiscardHandler)}
	e.EncodeQuery("attention for translation")
	for _, w := range []string{"attention", "translation", "attention"} {
		if v := e.EncodeQuery(w); len(v.Indices) != 1 {
			t.Errorf("%q encoded as %v", w, v)
		}
	}
	if cs.calls != 1 {
		t.Errorf("%d statistics reads for one question and its words, want 1", cs.calls)
	}
	e.EncodeQuery("unseen")
	if cs.calls != 2 {
		t.Errorf("a word the question did not hold must be read: %d reads, want 2", cs.calls)
	}
}
