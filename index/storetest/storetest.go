// Package storetest is a conformance suite for index.Store implementations. It checks only
// observable behaviour (what Replace, Delete, Search, Chunks, Stats and the back-fill calls
// return), so the embedded store and the Milvus store run the same suite and must agree.
//
// Scores are compared with a small tolerance (Tolerance); rankings exactly. The fixtures
// avoid ties except where a test says otherwise.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// Tolerance is the absolute difference allowed between an expected and a returned score.
const Tolerance = 1e-4

// Models used by the suite: a 4-dimensional cosine model and a 2-dimensional one that
// chunks may lack (for back-fill).
var (
	M4 = rag.ModelInfo{Name: "m4", Dim: 4, Metric: rag.Cosine}
	M2 = rag.ModelInfo{Name: "m2", Dim: 2, Metric: rag.Cosine}
)

// Opener returns a new, empty store holding models. It registers closing the store with
// t.Cleanup; the suite never calls Close.
type Opener func(t *testing.T, models []rag.ModelInfo) index.Store

// Run runs the suite, one subtest per behaviour, each on a fresh store from open.
func Run(t *testing.T, open func(t *testing.T, models []rag.ModelInfo) index.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"Empty", testEmpty},
		{"ReplaceAndRead", testReplaceAndRead},
		{"ReplaceAgain", testReplaceAgain},
		{"Delete", testDelete},
		{"InvalidReplace", testInvalidReplace},
		{"CancelledReplace", testCancelledReplace},
		{"BM25", testBM25},
		{"Dense", testDense},
		{"Hybrid", testHybrid},
		{"Filters", testFilters},
		{"Chunks", testChunks},
		{"BackFill", testBackFill},
		{"UnknownModel", testUnknownModel},
		{"ConcurrentSearch", testConcurrentSearch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open) })
	}
}

// Doc describes a fixture document: its chunks' texts, sections and vectors.
type Doc struct {
	ID, Source string
	Chunks     []Chunk
}

// Chunk is a fixture chunk. M4 and M2 may be nil (no vector for that model).
type Chunk struct {
	ID      string
	Text    string
	Section []string
	M4, M2  []float32
}

// avgdl is the fixed mean length used to encode fixture documents; the stores only ever
// see the resulting vectors, so any positive value gives a valid BM25 corpus.
const avgdl = 6

// Encode builds what an indexer would hand to Replace for d, with BM25 vectors from
// rag/bm25 (default parameters).
func Encode(d Doc) (rag.Document, []index.EncodedChunk) {
	doc := rag.Document{
		ID: d.ID, Source: d.Source, Name: strings.TrimSuffix(d.Source[strings.LastIndex(d.Source, "/")+1:], ".txt"),
		Kind: "text", Title: "Title of " + d.ID, Authors: []string{"A. Author", "B. Author"},
		Lines: 10 * len(d.Chunks), Hash: "hash-" + d.ID, Chunks: len(d.Chunks),
		IndexedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	var out []index.EncodedChunk
	for i, c := range d.Chunks {
		tf, n := bm25.Count(c.Text)
		ec := index.EncodedChunk{
			Chunk: rag.Chunk{
				ID: c.ID, DocID: d.ID, Index: i, Text: c.Text, Tokens: len(strings.Fields(c.Text)),
				LineStart: 10*i + 1, LineEnd: 10*i + 10, Section: c.Section,
				CharStart: 100 * i, CharEnd: 100*i + len(c.Text),
				Source: doc.Source, Name: doc.Name, Title: doc.Title,
			},
			Sparse: bm25.Params{}.Document(tf, n, avgdl),
			Terms:  n,
			Dense:  map[string][]float32{},
		}
		if c.M4 != nil {
			ec.Dense[M4.Name] = c.M4
		}
		if c.M2 != nil {
			ec.Dense[M2.Name] = c.M2
		}
		out = append(out, ec)
	}
	return doc, out
}

// encodeFor is Encode keeping only the vectors of models s holds.
func encodeFor(s index.Store, d Doc) (rag.Document, []index.EncodedChunk) {
	doc, chunks := Encode(d)
	for _, c := range chunks {
		for name := range c.Dense {
			if !slices.ContainsFunc(s.Models(), func(m rag.ModelInfo) bool { return m.Name == name }) {
				delete(c.Dense, name)
			}
		}
	}
	return doc, chunks
}

func replace(t *testing.T, s index.Store, d Doc) []index.EncodedChunk {
	t.Helper()
	doc, chunks := encodeFor(s, d)
	if err := s.Replace(t.Context(), doc, chunks); err != nil {
		t.Fatalf("Replace(%s): %v", d.ID, err)
	}
	return chunks
}

// wantStats computes the statistics of the given stored chunks.
func wantStats(docs int, chunks []index.EncodedChunk) index.Stats {
	st := index.Stats{Documents: docs, Chunks: len(chunks), DF: map[uint32]int{}}
	for _, c := range chunks {
		st.Terms += int64(c.Terms)
		for _, i := range c.Sparse.Indices {
			st.DF[i]++
		}
	}
	return st
}

func checkStats(t *testing.T, s index.Store, want index.Stats) {
	t.Helper()
	got, err := s.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
	// The cheap paths (health, placeholders, BM25 query encoding) must agree with Stats.
	if c, ok := s.(index.Counter); ok {
		counts, err := c.Counts(t.Context())
		if err != nil {
			t.Fatalf("Counts: %v", err)
		}
		w := want
		w.DF = nil
		if diff := cmp.Diff(w, counts, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Counts disagree with Stats (-want +got):\n%s", diff)
		}
	}
	if q, ok := s.(index.QueryStatser); ok {
		// Every stored term, one absent term and a duplicate.
		terms := []uint32{12345}
		for term := range want.DF {
			terms = append(terms, term, term)
		}
		n, df, err := q.QueryStats(t.Context(), terms)
		if err != nil {
			t.Fatalf("QueryStats: %v", err)
		}
		if n != want.Chunks {
			t.Errorf("QueryStats N = %d, want %d", n, want.Chunks)
		}
		wdf := maps.Clone(want.DF)
		delete(wdf, 12345)
		if _, ok := want.DF[12345]; ok {
			wdf[12345] = want.DF[12345]
		}
		if diff := cmp.Diff(wdf, df, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("QueryStats document frequencies (-want +got):\n%s", diff)
		}
	}
}

type idScore struct {
	ID    string
	Score float64
}

func flatten(hs []rag.Hit) []idScore {
	out := make([]idScore, len(hs))
	for i, h := range hs {
		out[i] = idScore{h.Chunk.ID, h.Score}
	}
	return out
}

var approx = cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= Tolerance })

func search(t *testing.T, s index.Store, req rag.SearchRequest) []rag.Hit {
	t.Helper()
	hs, err := s.Search(t.Context(), req)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	return hs
}

func checkHits(t *testing.T, got []rag.Hit, want []idScore) {
	t.Helper()
	if diff := cmp.Diff(want, flatten(got), approx, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("hits mismatch (-want +got):\n%s", diff)
	}
}

// bm25Query encodes text against the store's current statistics.
func bm25Query(t *testing.T, s index.Store, text string) *rag.SparseVector {
	t.Helper()
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	q := bm25.NewQueryEncoder(bm25.Params{}, st.Chunks, st.DF).EncodeQuery(text)
	return &q
}

// expectBM25 ranks chunks by q·vector (dropping zero scores), ties by chunk ID.
func expectBM25(q *rag.SparseVector, chunks []index.EncodedChunk, limit int) []idScore {
	var out []idScore
	for _, c := range chunks {
		if sc := q.Dot(c.Sparse); sc > 0 {
			out = append(out, idScore{c.ID, sc})
		}
	}
	sortScores(out)
	return out[:min(limit, len(out))]
}

func sortScores(s []idScore) {
	slices.SortFunc(s, func(a, b idScore) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// corpus is the fixture most tests share: three documents about different things.
var corpus = []Doc{
	{ID: "doc-attn", Source: "/papers/b-attention.txt", Chunks: []Chunk{
		{ID: "attn-0", Text: "The Transformer relies on self-attention instead of recurrence.", Section: []string{"1 Introduction"},
			M4: []float32{1, 0, 0, 0}, M2: []float32{1, 0}},
		{ID: "attn-1", Text: "Multi-head attention runs several attention heads in parallel; attention is cheap.", Section: []string{"3 Model Architecture", "3.2 Attention"},
			M4: []float32{1, 1, 0, 0}, M2: []float32{1, 1}},
		{ID: "attn-2", Text: "We train on WMT 2014 English-German with label smoothing.", Section: []string{"5 Training"},
			M4: []float32{0, 1, 0, 0}, M2: []float32{0, 1}},
	}},
	{ID: "doc-cnn", Source: "/papers/a-convolution.txt", Chunks: []Chunk{
		{ID: "cnn-0", Text: "Convolutional networks recognise images with shared filters.", Section: []string{"1 Introduction"},
			M4: []float32{0, 0, 1, 0}, M2: []float32{-1, 0}},
		{ID: "cnn-1", Text: "Pooling layers reduce resolution; attention over images is a later idea.", Section: []string{"3 Method"},
			M4: []float32{3, 0, 0, 4}, M2: []float32{-1, 1}},
	}},
	{ID: "doc-rl", Source: "/papers/c-reinforcement.txt", Chunks: []Chunk{
		{ID: "rl-0", Text: "Agents maximise expected reward with policy gradients.", Section: []string{"2 Background"},
			M4: []float32{-1, 0, 0, 0}, M2: []float32{0, -1}},
	}},
}

func loadCorpus(t *testing.T, s index.Store) []index.EncodedChunk {
	t.Helper()
	var all []index.EncodedChunk
	for _, d := range corpus {
		all = append(all, replace(t, s, d)...)
	}
	return all
}

func testEmpty(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	ctx := t.Context()
	docs, err := s.Documents(ctx)
	if err != nil || len(docs) != 0 {
		t.Errorf("Documents = %v, %v; want none, nil", docs, err)
	}
	checkStats(t, s, index.Stats{DF: map[uint32]int{}})
	q := bm25Query(t, s, "attention")
	for name, req := range map[string]rag.SearchRequest{
		"sparse": {Sparse: q},
		"dense":  {Dense: []rag.DenseQuery{{Model: M4.Name, Vector: []float32{1, 0, 0, 0}}}},
		"hybrid": {Sparse: q, Dense: []rag.DenseQuery{{Model: M4.Name, Vector: []float32{1, 0, 0, 0}}}},
	} {
		hs, err := s.Search(ctx, req)
		if err != nil || len(hs) != 0 {
			t.Errorf("%s search on empty store = %v, %v; want no hits, nil", name, hs, err)
		}
	}
	if _, err := s.Document(ctx, "nope"); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("Document(nope) error = %v, want ErrNotFound", err)
	}
	if _, err := s.Chunks(ctx, []string{"nope"}); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("Chunks(nope) error = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "nope"); err != nil {
		t.Errorf("Delete(nope) = %v, want nil", err)
	}
	if cs, err := s.MissingDense(ctx, M4.Name, 10); err != nil || len(cs) != 0 {
		t.Errorf("MissingDense on empty store = %v, %v; want none, nil", cs, err)
	}
	if got := s.Models(); !slices.ContainsFunc(got, func(m rag.ModelInfo) bool { return m == M4 }) {
		t.Errorf("Models() = %v, want it to hold %v", got, M4)
	}
}

// docOpts compares documents, allowing stores to keep IndexedAt at millisecond precision.
var docOpts = cmp.Options{
	cmp.Comparer(func(a, b time.Time) bool { return a.Sub(b).Abs() < time.Millisecond }),
	cmpopts.EquateEmpty(),
}

func testReplaceAndRead(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4, M2})
	ctx := t.Context()
	all := loadCorpus(t, s)

	var want []rag.Document
	for _, d := range corpus {
		doc, _ := Encode(d)
		want = append(want, doc)
		got, err := s.Document(ctx, d.ID)
		if err != nil {
			t.Fatalf("Document(%s): %v", d.ID, err)
		}
		if diff := cmp.Diff(doc, got, docOpts); diff != "" {
			t.Errorf("Document(%s) mismatch (-want +got):\n%s", d.ID, diff)
		}
	}
	slices.SortFunc(want, func(a, b rag.Document) int { return strings.Compare(a.Source, b.Source) })
	got, err := s.Documents(ctx)
	if err != nil {
		t.Fatalf("Documents: %v", err)
	}
	if diff := cmp.Diff(want, got, docOpts); diff != "" {
		t.Errorf("Documents (by source) mismatch (-want +got):\n%s", diff)
	}
	checkStats(t, s, wantStats(len(corpus), all))
}

func testReplaceAgain(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	ctx := t.Context()
	all := loadCorpus(t, s)

	// A new version of doc-attn with one chunk under a new id.
	v2 := Doc{ID: "doc-attn", Source: "/papers/b-attention.txt", Chunks: []Chunk{
		{ID: "attn2-0", Text: "Attention, revised: sparse attention patterns scale better.", Section: []string{"1 Introduction"}, M4: []float32{0, 0, 0, 1}},
	}}
	newChunks := replace(t, s, v2)
	var kept []index.EncodedChunk
	for _, c := range all {
		if c.DocID != "doc-attn" {
			kept = append(kept, c)
		}
	}
	kept = append(kept, newChunks...)
	checkStats(t, s, wantStats(len(corpus), kept))

	doc, err := s.Document(ctx, "doc-attn")
	if err != nil || doc.Chunks != 1 {
		t.Errorf("Document(doc-attn) = %d chunks, %v; want 1, nil", doc.Chunks, err)
	}
	for _, id := range []string{"attn-0", "attn-1", "attn-2"} {
		if _, err := s.Chunks(ctx, []string{id}); !errors.Is(err, rag.ErrNotFound) {
			t.Errorf("Chunks(%s) after replace: error %v, want ErrNotFound", id, err)
		}
	}
	q := bm25Query(t, s, "attention")
	checkHits(t, search(t, s, rag.SearchRequest{Sparse: q, Limit: 10}), expectBM25(q, kept, 10))
	hs := search(t, s, rag.SearchRequest{Dense: []rag.DenseQuery{{Model: M4.Name, Vector: []float32{1, 0, 0, 0}}}, Limit: 10})
	for _, h := range hs {
		if h.Chunk.DocID == "doc-attn" && h.Chunk.ID != "attn2-0" {
			t.Errorf("dense search returned replaced chunk %s", h.Chunk.ID)
		}
	}
	if len(hs) != len(kept) {
		t.Errorf("dense search returned %d hits, want %d (every stored chunk)", len(hs), len(kept))
	}

	// Replacing with identical content is idempotent.
	replace(t, s, v2)
	checkStats(t, s, wantStats(len(corpus), kept))
}

func testDelete(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	ctx := t.Context()
	all := loadCorpus(t, s)
	if err := s.Delete(ctx, "doc-cnn"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	var kept []index.EncodedChunk
	for _, c := range all {
		if c.DocID != "doc-cnn" {
			kept = append(kept, c)
		}
	}
	checkStats(t, s, wantStats(len(corpus)-1, kept))
	if _, err := s.Document(ctx, "doc-cnn"); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("Document after Delete: error %v, want ErrNotFound", err)
	}
	if _, err := s.Chunks(ctx, []string{"cnn-1"}); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("Chunks after Delete: error %v, want ErrNotFound", err)
	}
	q := bm25Query(t, s, "images attention")
	checkHits(t, search(t, s, rag.SearchRequest{Sparse: q}), expectBM25(q, kept, 20))
	docs, err := s.Documents(ctx)
	if err != nil || len(docs) != 2 {
		t.Errorf("Documents after Delete = %d, %v; want 2, nil", len(docs), err)
	}
	if err := s.Delete(ctx, "doc-cnn"); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
	for _, d := range []string{"doc-attn", "doc-rl"} {
		if err := s.Delete(ctx, d); err != nil {
			t.Fatalf("Delete(%s): %v", d, err)
		}
	}
	checkStats(t, s, index.Stats{DF: map[uint32]int{}})
	if hs := search(t, s, rag.SearchRequest{Sparse: q}); len(hs) != 0 {
		t.Errorf("search after deleting everything = %v, want none", flatten(hs))
	}
}

func testInvalidReplace(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	ctx := t.Context()
	all := loadCorpus(t, s)
	doc, chunks := Encode(Doc{ID: "doc-attn", Source: "/papers/b-attention.txt", Chunks: []Chunk{
		{ID: "bad-0", Text: "wrong dimension", M4: []float32{1, 2, 3}},
	}})
	if err := s.Replace(ctx, doc, chunks); err == nil {
		t.Errorf("Replace with a 3-dimensional vector for a 4-dimensional model succeeded")
	}
	doc, chunks = Encode(Doc{ID: "doc-attn", Source: "/papers/b-attention.txt", Chunks: []Chunk{
		{ID: "bad-1", Text: "unknown model", M4: []float32{1, 0, 0, 0}},
	}})
	chunks[0].Dense["nope"] = []float32{1}
	if err := s.Replace(ctx, doc, chunks); err == nil {
		t.Errorf("Replace with a vector for an unknown model succeeded")
	}
	checkStats(t, s, wantStats(len(corpus), all))
	if _, err := s.Chunks(ctx, []string{"attn-0", "attn-1", "attn-2"}); err != nil {
		t.Errorf("old version lost after a refused Replace: %v", err)
	}
}

func testCancelledReplace(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	all := loadCorpus(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	doc, chunks := Encode(Doc{ID: "doc-attn", Source: "/papers/b-attention.txt", Chunks: []Chunk{
		{ID: "new-0", Text: "a new version that must not land", M4: []float32{0, 0, 0, 1}},
	}})
	if err := s.Replace(ctx, doc, chunks); err == nil {
		t.Fatalf("Replace with a cancelled context succeeded")
	}
	checkStats(t, s, wantStats(len(corpus), all))
	got, err := s.Chunks(t.Context(), []string{"attn-0", "attn-1", "attn-2"})
	if err != nil || len(got) != 3 {
		t.Errorf("old version after cancelled Replace: %d chunks, %v", len(got), err)
	}
	if _, err := s.Chunks(t.Context(), []string{"new-0"}); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("chunk of cancelled Replace: error %v, want ErrNotFound", err)
	}
}

// testBM25 checks the BM25 ranking. By hand: "attention" occurs 3× in attn-1, once in
// attn-0 (6 analysed terms) and once in cnn-1 (8 terms), and nowhere else; with one IDF
// the three-fold chunk wins and the shorter single-mention chunk beats the longer one.
func testBM25(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	all := loadCorpus(t, s)
	q := bm25Query(t, s, "attention")
	got := search(t, s, rag.SearchRequest{Sparse: q, Limit: 10})
	want := expectBM25(q, all, 10)
	checkHits(t, got, want)
	ids := make([]string, len(got))
	for i, h := range got {
		ids[i] = h.Chunk.ID
	}
	if diff := cmp.Diff([]string{"attn-1", "attn-0", "cnn-1"}, ids); diff != "" {
		t.Errorf("BM25 ranking for %q (-want +got):\n%s", "attention", diff)
	}

	// Limit, and a query mixing a rare and a common term.
	q = bm25Query(t, s, "attention images reward")
	checkHits(t, search(t, s, rag.SearchRequest{Sparse: q, Limit: 2}), expectBM25(q, all, 2))
	checkHits(t, search(t, s, rag.SearchRequest{Sparse: q}), expectBM25(q, all, 20))

	// No shared term: no hits.
	q = bm25Query(t, s, "quantum chromodynamics")
	if hs := search(t, s, rag.SearchRequest{Sparse: q}); len(hs) != 0 {
		t.Errorf("BM25 hits for unrelated query = %v, want none", flatten(hs))
	}
}

// testDense checks cosine scores. Query (1,0,0,0): attn-0 (1,0,0,0) → 1; attn-1 (1,1,0,0)
// → 1/√2; cnn-1 (3,0,0,4) → 3/5 (vectors need not be normalised); attn-2 and cnn-0 → 0
// (tie, by id); rl-0 (−1,0,0,0) → −1.
func testDense(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	loadCorpus(t, s)
	dq := []rag.DenseQuery{{Model: M4.Name, Vector: []float32{2, 0, 0, 0}}}
	checkHits(t, search(t, s, rag.SearchRequest{Dense: dq, Limit: 3}), []idScore{
		{"attn-0", 1}, {"attn-1", 1 / math.Sqrt2}, {"cnn-1", 0.6},
	})
	got := search(t, s, rag.SearchRequest{Dense: dq, Limit: 10})
	if len(got) != 6 {
		t.Fatalf("dense search returned %d hits, want all 6", len(got))
	}
	checkHits(t, got[:3], []idScore{{"attn-0", 1}, {"attn-1", 1 / math.Sqrt2}, {"cnn-1", 0.6}})
	checkHits(t, got[5:], []idScore{{"rl-0", -1}})
	for _, h := range got[3:5] {
		if math.Abs(h.Score) > Tolerance || (h.Chunk.ID != "attn-2" && h.Chunk.ID != "cnn-0") {
			t.Errorf("hit %s score %v, want attn-2 or cnn-0 at 0", h.Chunk.ID, h.Score)
		}
	}
	// Hits carry the whole chunk.
	if c := got[0].Chunk; c.Text != corpus[0].Chunks[0].Text || c.DocID != "doc-attn" || c.Title != "Title of doc-attn" ||
		!slices.Equal(c.Section, []string{"1 Introduction"}) {
		t.Errorf("hit chunk = %+v, want attn-0 in full", c)
	}
}

// testHybrid checks RRF (k = 60) over a dense and a BM25 retriever, each limited to 3:
//
//	dense (1,0,0,0):  attn-0, attn-1, cnn-1
//	BM25 "images":    cnn-0 (shorter), cnn-1
//
// attn-0 = 1/61, attn-1 = 1/62, cnn-1 = 1/63 + 1/62, cnn-0 = 1/61
// → cnn-1 (0.032002), then attn-0 and cnn-0 tie at 1/61 (by id), then attn-1.
func testHybrid(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	all := loadCorpus(t, s)
	q := bm25Query(t, s, "images")
	if sp := expectBM25(q, all, 3); len(sp) != 2 || sp[0].ID != "cnn-0" || sp[1].ID != "cnn-1" {
		t.Fatalf("fixture drifted: BM25 ranking for images = %v", sp)
	}
	req := rag.SearchRequest{
		Dense:  []rag.DenseQuery{{Model: M4.Name, Vector: []float32{1, 0, 0, 0}}},
		Sparse: q,
		Limit:  3,
		Fusion: rag.Fusion{Method: "rrf", K: 60},
	}
	checkHits(t, search(t, s, req), []idScore{
		{"cnn-1", 1.0/63 + 1.0/62},
		{"attn-0", 1.0 / 61},
		{"cnn-0", 1.0 / 61},
	})
	req.Limit = 10
	req.Fusion = rag.Fusion{} // zero means RRF, k = 60
	got := search(t, s, req)
	if len(got) != 6 {
		t.Errorf("hybrid with limit 10 returned %d hits, want 6 (the union)", len(got))
	}
}

func testFilters(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	all := loadCorpus(t, s)
	only := func(keep func(index.EncodedChunk) bool) []index.EncodedChunk {
		var out []index.EncodedChunk
		for _, c := range all {
			if keep(c) {
				out = append(out, c)
			}
		}
		return out
	}
	q := bm25Query(t, s, "attention images introduction reward")
	tests := []struct {
		name   string
		filter rag.Filter
		keep   func(index.EncodedChunk) bool
	}{
		{"doc ids", rag.Filter{DocIDs: []string{"doc-cnn", "doc-rl"}},
			func(c index.EncodedChunk) bool { return c.DocID != "doc-attn" }},
		{"section prefix", rag.Filter{SectionPrefix: "3 "},
			func(c index.EncodedChunk) bool { return len(c.Section) > 0 && strings.HasPrefix(c.Section[0], "3 ") }},
		{"both", rag.Filter{DocIDs: []string{"doc-attn"}, SectionPrefix: "1 Intro"},
			func(c index.EncodedChunk) bool { return c.ID == "attn-0" }},
		{"nothing matches", rag.Filter{DocIDs: []string{"nope"}},
			func(index.EncodedChunk) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept := only(tt.keep)
			checkHits(t, search(t, s, rag.SearchRequest{Sparse: q, Filter: tt.filter}), expectBM25(q, kept, 20))
			hs := search(t, s, rag.SearchRequest{Dense: []rag.DenseQuery{{Model: M4.Name, Vector: []float32{1, 1, 1, 1}}}, Filter: tt.filter})
			var ids []string
			for _, h := range hs {
				ids = append(ids, h.Chunk.ID)
			}
			var want []string
			for _, c := range kept {
				want = append(want, c.ID)
			}
			if diff := cmp.Diff(want, ids, cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("dense hits with filter (-want +got):\n%s", diff)
			}
		})
	}
}

func testChunks(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	ctx := t.Context()
	all := loadCorpus(t, s)
	byID := map[string]rag.Chunk{}
	for _, c := range all {
		byID[c.ID] = c.Chunk
	}
	ids := []string{"rl-0", "attn-1", "cnn-0", "attn-1"}
	got, err := s.Chunks(ctx, ids)
	if err != nil {
		t.Fatalf("Chunks: %v", err)
	}
	var want []rag.Chunk
	for _, id := range ids {
		want = append(want, byID[id])
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Chunks mismatch (-want +got):\n%s", diff)
	}
	if _, err := s.Chunks(ctx, []string{"attn-0", "missing"}); !errors.Is(err, rag.ErrNotFound) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Chunks with an unknown id: error %v, want ErrNotFound naming it", err)
	}
	if got, err := s.Chunks(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("Chunks(nil) = %v, %v; want none, nil", got, err)
	}
}

// testBackFill stores chunks lacking M2 vectors, lists them, back-fills them and searches.
func testBackFill(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4, M2})
	ctx := t.Context()
	d := Doc{ID: "doc-bf", Source: "/papers/backfill.txt", Chunks: []Chunk{
		{ID: "bf-0", Text: "first", M4: []float32{1, 0, 0, 0}, M2: []float32{1, 0}},
		{ID: "bf-1", Text: "second", M4: []float32{0, 1, 0, 0}},
		{ID: "bf-2", Text: "third", M4: []float32{0, 0, 1, 0}},
	}}
	replace(t, s, d)
	missing := func(limit int) []string {
		t.Helper()
		cs, err := s.MissingDense(ctx, M2.Name, limit)
		if err != nil {
			t.Fatalf("MissingDense: %v", err)
		}
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID)
			if c.Text == "" || c.DocID != "doc-bf" {
				t.Errorf("MissingDense chunk %s lacks text or doc id: %+v", c.ID, c)
			}
		}
		slices.Sort(ids)
		return ids
	}
	if diff := cmp.Diff([]string{"bf-1", "bf-2"}, missing(0)); diff != "" {
		t.Errorf("MissingDense (-want +got):\n%s", diff)
	}
	if got := missing(1); len(got) != 1 {
		t.Errorf("MissingDense(limit 1) = %v, want one chunk", got)
	}
	if cs, err := s.MissingDense(ctx, M4.Name, 0); err != nil || len(cs) != 0 {
		t.Errorf("MissingDense(m4) = %d chunks, %v; want none", len(cs), err)
	}
	if err := s.PutDense(ctx, M2.Name, []string{"bf-1", "nope"}, [][]float32{{0, 1}, {1, 1}}); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("PutDense with an unknown chunk: error %v, want ErrNotFound", err)
	}
	if err := s.PutDense(ctx, M2.Name, []string{"bf-1", "bf-2"}, [][]float32{{0, 1}, {-3, -3}}); err != nil {
		t.Fatalf("PutDense: %v", err)
	}
	if got := missing(0); len(got) != 0 {
		t.Errorf("MissingDense after PutDense = %v, want none", got)
	}
	checkHits(t, search(t, s, rag.SearchRequest{Dense: []rag.DenseQuery{{Model: M2.Name, Vector: []float32{1, 1}}}}), []idScore{
		{"bf-0", 1 / math.Sqrt2}, {"bf-1", 1 / math.Sqrt2}, {"bf-2", -1},
	})
	if _, err := s.MissingDense(ctx, "nope", 0); err == nil {
		t.Errorf("MissingDense for an unknown model succeeded")
	}
}

func testUnknownModel(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	loadCorpus(t, s)
	_, err := s.Search(t.Context(), rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "ghost_model", Vector: []float32{1, 0, 0, 0}}}})
	if err == nil || !strings.Contains(err.Error(), "ghost_model") {
		t.Errorf("search with an unknown model: error %v, want one naming ghost_model", err)
	}
}

// testConcurrentSearch searches from several goroutines while documents are replaced;
// every search must succeed and return only chunks of a complete version.
func testConcurrentSearch(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4})
	loadCorpus(t, s)
	ctx := t.Context()
	q := bm25Query(t, s, "attention images reward")
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 4 {
		wg.Go(func() {
			for range 10 {
				hs, err := s.Search(ctx, rag.SearchRequest{Sparse: q, Dense: []rag.DenseQuery{{Model: M4.Name, Vector: []float32{1, 0, 1, 0}}}})
				if err != nil {
					errs <- fmt.Errorf("searcher %d: %w", g, err)
					return
				}
				for _, h := range hs {
					if h.Chunk.Text == "" {
						errs <- fmt.Errorf("searcher %d: hit %s without text", g, h.Chunk.ID)
						return
					}
				}
			}
		})
	}
	for i := range 5 {
		d := corpus[1]
		d.Chunks = slices.Clone(d.Chunks)
		for j := range d.Chunks {
			d.Chunks[j].ID = fmt.Sprintf("cnn-v%d-%d", i, j)
		}
		doc, chunks := encodeFor(s, d)
		if err := s.Replace(ctx, doc, chunks); err != nil {
			errs <- err
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := s.Document(ctx, "doc-cnn")
	if err != nil || got.Chunks != 2 {
		t.Errorf("Document(doc-cnn) after replaces = %d chunks, %v", got.Chunks, err)
	}
}

// VectorsAndPageBreaks checks the stored-vector and page-break contracts: a search with
// WithVectors returns each hit's stored dense vectors (only for models the chunk has), one
// without returns none, and rag.Chunk.PageBreaks round-trips through Replace, Search and
// Chunks. It is separate from Run until every store implements both.
func VectorsAndPageBreaks(t *testing.T, open Opener) {
	s := open(t, []rag.ModelInfo{M4, M2})
	d := Doc{ID: "doc-pages", Source: "/corpus/pages.txt", Chunks: []Chunk{
		{ID: "p-0", Text: "Attention spans pages three and four of the paper.", M4: []float32{1, 0, 0, 0}, M2: []float32{0.5, 0.5}},
		{ID: "p-1", Text: "Attention without a second model vector.", M4: []float32{0.6, 0.8, 0, 0}},
		{ID: "p-2", Text: "Attention on one page only.", M4: []float32{0, 1, 0, 0}, M2: []float32{1, 0}},
	}}
	doc, chunks := encodeFor(s, d)
	chunks[0].PageStart, chunks[0].PageEnd, chunks[0].PageBreaks = 3, 5, []int{10, 30}
	chunks[1].PageStart, chunks[1].PageEnd = 5, 5
	if err := s.Replace(t.Context(), doc, chunks); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	want := map[string]index.EncodedChunk{}
	for _, c := range chunks {
		want[c.ID] = c
	}
	checkChunk := func(where string, c rag.Chunk) {
		t.Helper()
		if w := want[c.ID]; !slices.Equal(c.PageBreaks, w.PageBreaks) || c.PageStart != w.PageStart || c.PageEnd != w.PageEnd {
			t.Errorf("%s: chunk %s pages %d-%d breaks %v, want %d-%d breaks %v", where, c.ID, c.PageStart, c.PageEnd, c.PageBreaks,
				w.PageStart, w.PageEnd, w.PageBreaks)
		}
	}
	got, err := s.Chunks(t.Context(), []string{"p-0", "p-1", "p-2"})
	if err != nil {
		t.Fatalf("Chunks: %v", err)
	}
	for _, c := range got {
		checkChunk("Chunks", c)
	}
	q := bm25Query(t, s, "attention")
	dq := []rag.DenseQuery{{Model: M4.Name, Vector: []float32{1, 0, 0, 0}}}
	for name, req := range map[string]rag.SearchRequest{
		"bm25":   {Sparse: q, Limit: 3},
		"dense":  {Dense: dq, Limit: 3},
		"hybrid": {Sparse: q, Dense: dq, Limit: 3, Fusion: rag.Fusion{Method: "rrf"}},
	} {
		plain := search(t, s, req)
		for _, h := range plain {
			if h.Vectors != nil {
				t.Errorf("%s without WithVectors: hit %s carries vectors", name, h.Chunk.ID)
			}
		}
		req.WithVectors = true
		hits := search(t, s, req)
		if len(hits) != 3 {
			t.Fatalf("%s: %d hits, want 3", name, len(hits))
		}
		for _, h := range hits {
			checkChunk(name, h.Chunk)
			w := want[h.Chunk.ID]
			if diff := cmp.Diff(w.Dense, h.Vectors, cmp.Comparer(func(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-6 }),
				cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s WithVectors: hit %s vectors (-stored +got):\n%s", name, h.Chunk.ID, diff)
			}
		}
	}
}
