package milvus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/milvus-io/milvus-sdk-go/v2/client"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/milvus/milvustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

var (
	_ index.Store  = (*Store)(nil)
	_ rag.Searcher = (*Store)(nil)
)

func TestCollectionName(t *testing.T) {
	tests := []struct{ corpus, want string }{
		{"", "footnote_default"},
		{"papers", "footnote_papers"},
		{"papers_2024", "footnote_papers_2024"},
		{"Papers", "footnote_papers"},        // corpus names are case-insensitive
		{"my-papers", "footnote_my_papers_"}, // changed: hash appended
	}
	for _, tt := range tests {
		t.Run(tt.corpus, func(t *testing.T) {
			got := CollectionName(tt.corpus)
			if strings.HasSuffix(tt.want, "_") {
				if !regexp.MustCompile("^" + tt.want + "[0-9a-f]{8}$").MatchString(got) {
					t.Errorf("CollectionName(%q) = %q, want %s<hash>", tt.corpus, got, tt.want)
				}
			} else if got != tt.want {
				t.Errorf("CollectionName(%q) = %q, want %q", tt.corpus, got, tt.want)
			}
			if !fieldName.MatchString(got) {
				t.Errorf("CollectionName(%q) = %q is not a valid Milvus name", tt.corpus, got)
			}
		})
	}
	if CollectionName("a-b") == CollectionName("a_b") {
		t.Errorf("a-b and a_b share collection %s", CollectionName("a_b"))
	}
	if long := CollectionName(strings.Repeat("x", 300)); len(long)+len("_docs") > 255 {
		t.Errorf("long corpus name gives %d bytes", len(long))
	}
}

func TestFilterExpr(t *testing.T) {
	tests := []struct {
		name string
		f    rag.Filter
		want string
	}{
		{"none", rag.Filter{}, ""},
		{"docs", rag.Filter{DocIDs: []string{"a", `b"c`}}, `doc_id in ["a", "b\"c"]`},
		{"section", rag.Filter{SectionPrefix: "3 Model_Arch 100%"}, `section0 like "3 Model\\_Arch 100\\%%"`},
		{"both", rag.Filter{DocIDs: []string{"a"}, SectionPrefix: "Intro"}, `doc_id in ["a"] and section0 like "Intro%"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := filterExpr(tt.f); got != tt.want {
				t.Errorf("filterExpr = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestModelDiff(t *testing.T) {
	a := rag.ModelInfo{Name: "a", Dim: 4, Metric: rag.Cosine}
	b := rag.ModelInfo{Name: "b", Dim: 8, Metric: rag.IP}
	tests := []struct {
		name         string
		stored, want []rag.ModelInfo
		diff         string
	}{
		{"same", []rag.ModelInfo{a, b}, []rag.ModelInfo{b, a}, ""},
		{"added", []rag.ModelInfo{a}, []rag.ModelInfo{a, b}, "added b"},
		{"removed", []rag.ModelInfo{a, b}, []rag.ModelInfo{a}, "removed b"},
		{"dim", []rag.ModelInfo{a}, []rag.ModelInfo{{Name: "a", Dim: 5, Metric: rag.Cosine}}, "a has dimension 4, configured 5"},
		{"metric", []rag.ModelInfo{a}, []rag.ModelInfo{{Name: "a", Dim: 4, Metric: rag.L2}}, "a has metric COSINE, configured L2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := modelDiff(tt.stored, tt.want, true); got != tt.diff {
				t.Errorf("modelDiff = %q, want %q", got, tt.diff)
			}
		})
	}
}

func TestOpenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := Open(t.Context(), Config{Addr: "127.0.0.1:1", Timeout: time.Second})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error %q does not name the address", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open took %s to fail", d)
	}
}

func TestOpenRejectsBadModels(t *testing.T) {
	tests := []struct {
		name  string
		model rag.ModelInfo
	}{
		{"bad name", rag.ModelInfo{Name: "bge-small", Dim: 4}},
		{"reserved", rag.ModelInfo{Name: "text", Dim: 4}},
		{"no dim", rag.ModelInfo{Name: "m", Dim: 0}},
		{"metric", rag.ModelInfo{Name: "m", Dim: 4, Metric: "HAMMING"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Open(t.Context(), Config{Addr: "127.0.0.1:1", Models: []rag.ModelInfo{tt.model}}); err == nil || errors.Is(err, ErrUnavailable) {
				t.Errorf("Open with %+v: %v, want a configuration error", tt.model, err)
			}
		})
	}
}

// --- integration tests (FOOTNOTE_MILVUS_TEST_ADDR) ---

var testModels = []rag.ModelInfo{
	{Name: "dense_a", Dim: 8, Metric: rag.Cosine},
	{Name: "dense_b", Dim: 4, Metric: rag.L2},
}

func open(t *testing.T, addr, corpus string, models []rag.ModelInfo) *Store {
	t.Helper()
	return openBatch(t, addr, corpus, models, 0)
}

// openBatch opens with the given Config.StatsBatch (zero: the default).
func openBatch(t *testing.T, addr, corpus string, models []rag.ModelInfo, statsBatch int) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{Addr: addr, Corpus: corpus, Models: models, Timeout: 20 * time.Second, StatsBatch: statsBatch})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { dropAndClose(t, s) })
	return s
}

func dropAndClose(t *testing.T, s *Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Drop(ctx); err != nil {
		t.Logf("drop %s: %v", s.coll, err)
	}
	s.Close()
}

// fakeVec is a deterministic pseudo-embedding: texts sharing words get similar vectors.
func fakeVec(text string, dim int) []float32 {
	v := make([]float32, dim)
	for _, w := range bm25.Analyze(text) {
		h := bm25.Hash(w)
		v[int(h)%dim] += 1
		v[int(h>>8)%dim] += 0.5
	}
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	if n == 0 {
		v[0] = 1
		return v
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}

type testDoc struct {
	doc    rag.Document
	chunks []index.EncodedChunk
}

// makeDoc encodes texts as one document's chunks (BM25 with avgdl 10, fake dense vectors).
func makeDoc(id, version string, models []rag.ModelInfo, sections [][]string, texts ...string) testDoc {
	d := rag.Document{ID: id, Source: "/corpus/" + id + ".pdf", Name: id, Kind: "pdf", Title: "Title of " + id,
		Hash: id + "-" + version, Pages: len(texts), IndexedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var out []index.EncodedChunk
	for i, text := range texts {
		tf, n := bm25.Count(text)
		c := index.EncodedChunk{
			Chunk: rag.Chunk{ID: fmt.Sprintf("%s-%s-%d", id, version, i), DocID: id, Index: i, Text: text, Tokens: n + 1,
				PageStart: i + 1, PageEnd: i + 1, CharStart: i * 100, CharEnd: i*100 + len(text),
				Source: d.Source, Name: d.Name, Title: d.Title},
			Sparse: bm25.Params{}.Document(tf, n, 10),
			Terms:  n,
			Dense:  map[string][]float32{},
		}
		if sections != nil {
			c.Section = sections[i]
		}
		for _, m := range models {
			c.Dense[m.Name] = fakeVec(text, m.Dim)
		}
		out = append(out, c)
	}
	d.Chunks = len(out)
	return testDoc{d, out}
}

func replace(t *testing.T, s index.Store, d testDoc) {
	t.Helper()
	if err := s.Replace(t.Context(), d.doc, d.chunks); err != nil {
		t.Fatalf("Replace %s: %v", d.doc.ID, err)
	}
}

// wantStats computes the statistics of docs the way the store must.
func wantStats(docs ...testDoc) index.Stats {
	st := index.Stats{DF: map[uint32]int{}}
	for _, d := range docs {
		st.Documents++
		for _, c := range d.chunks {
			st.Chunks++
			st.Terms += int64(c.Terms)
			for _, t := range termSet(c.Sparse) {
				st.DF[t]++
			}
		}
	}
	return st
}

func ids(hits []rag.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Chunk.ID
	}
	return out
}

// bruteBM25 ranks chunks by the inner product with q, as Milvus' exact sparse search must.
func bruteBM25(q rag.SparseVector, docs ...testDoc) []rag.Hit {
	var hits []rag.Hit
	for _, d := range docs {
		for _, c := range d.chunks {
			if s := q.Dot(c.Sparse); s > 0 {
				hits = append(hits, rag.Hit{Chunk: c.Chunk, Score: s})
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	return hits
}

var corpusTexts = [][]string{
	{
		"The Transformer uses multi-head self-attention and a position-wise feed-forward network in each encoder layer.",
		"Positional encodings use sine and cosine functions of different frequencies.",
		"We train on the WMT 2014 English-German dataset with byte-pair encoding.",
	},
	{
		"Retrieval-augmented generation combines a dense passage retriever with a BART generator.",
		"The retriever uses maximum inner product search over a Wikipedia index.",
	},
	{
		"BERT is pre-trained with masked language modelling and next sentence prediction.",
		"Fine-tuning BERT on GLUE tasks sets a new state of the art.",
		"Attention heads in BERT learn syntactic relations.",
		"The encoder layer stacks self-attention and feed-forward sub-layers.",
	},
}

var corpusSections = [][][]string{
	{{"3 Model Architecture", "3.1 Encoder"}, {"3 Model Architecture", "3.5 Positional Encoding"}, {"5 Training"}},
	{{"2 Methods"}, {"2 Methods", "2.2 Retriever"}},
	{{"3 BERT", "3.1 Pre-training"}, {"4 Experiments"}, {"5 Analysis"}, {"3 BERT"}},
}

func TestStoreCycle(t *testing.T) {
	addr := milvustest.Addr(t)
	ctx := t.Context()
	s := open(t, addr, milvustest.Corpus(t), testModels)

	// An empty index gives no hits and no error.
	q := bm25.NewQueryEncoder(bm25.Params{}, 1, nil).EncodeQuery("encoder layer")
	if hits, err := s.Search(ctx, rag.SearchRequest{Sparse: &q, Limit: 5}); err != nil || len(hits) != 0 {
		t.Fatalf("Search on an empty index = %v, %v; want no hits, no error", hits, err)
	}

	docs := []testDoc{
		makeDoc("vaswani", "v1", testModels, corpusSections[0], corpusTexts[0]...),
		makeDoc("lewis", "v1", testModels, corpusSections[1], corpusTexts[1]...),
		makeDoc("devlin", "v1", testModels, corpusSections[2], corpusTexts[2]...),
	}
	for _, d := range docs {
		replace(t, s, d)
	}
	checkStats(t, s, wantStats(docs...))

	gotDocs, err := s.Documents(ctx)
	if err != nil {
		t.Fatalf("Documents: %v", err)
	}
	wantDocs := []rag.Document{docs[2].doc, docs[1].doc, docs[0].doc} // by source
	if diff := cmp.Diff(wantDocs, gotDocs, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("Documents (-want +got):\n%s", diff)
	}
	if d, err := s.Document(ctx, "lewis"); err != nil || d.Title != "Title of lewis" {
		t.Errorf("Document(lewis) = %+v, %v", d, err)
	}
	if _, err := s.Document(ctx, "nope"); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("Document(nope) error = %v, want ErrNotFound", err)
	}

	// BM25 alone ranks exactly as a brute-force inner product.
	st, _ := s.Stats(ctx)
	var someTerms []uint32
	for t := range st.DF {
		if len(someTerms) < 5 {
			someTerms = append(someTerms, t)
		}
	}
	someTerms = append(someTerms, 4242) // in no chunk (unless a hash collides)
	df, err := s.DocFreq(ctx, someTerms)
	if err != nil {
		t.Fatalf("DocFreq: %v", err)
	}
	for _, term := range someTerms {
		if df[term] != st.DF[term] {
			t.Errorf("DocFreq(%d) = %d, Stats says %d", term, df[term], st.DF[term])
		}
	}
	enc := bm25.NewQueryEncoder(bm25.Params{}, st.Chunks, st.DF)
	for _, question := range []string{"encoder layer self-attention", "retriever index", "BERT fine-tuning GLUE", "zebra"} {
		q := enc.EncodeQuery(question)
		hits, err := s.Search(ctx, rag.SearchRequest{Sparse: &q, Limit: 5})
		if err != nil {
			t.Fatalf("Search(%q): %v", question, err)
		}
		want := bruteBM25(q, docs...)
		if len(want) > 5 {
			want = want[:5]
		}
		if diff := cmp.Diff(ids(want), ids(hits)); diff != "" {
			t.Errorf("BM25 %q ranking (-want +got):\n%s", question, diff)
		}
		for i := range min(len(want), len(hits)) {
			if math.Abs(want[i].Score-hits[i].Score) > 1e-4 {
				t.Errorf("BM25 %q hit %d score %v, want %v", question, i, hits[i].Score, want[i].Score)
			}
		}
		for _, h := range hits {
			if h.Chunk.Text == "" || h.Chunk.Source == "" || h.Chunk.Title == "" || h.Chunk.PageStart == 0 {
				t.Errorf("hit %s lacks metadata: %+v", h.Chunk.ID, h.Chunk)
			}
		}
	}

	// A hit carries the whole chunk.
	q = enc.EncodeQuery("positional encodings sine cosine")
	hits, err := s.Search(ctx, rag.SearchRequest{Sparse: &q, Limit: 1})
	if err != nil || len(hits) != 1 {
		t.Fatalf("Search = %v, %v", hits, err)
	}
	if diff := cmp.Diff(docs[0].chunks[1].Chunk, hits[0].Chunk); diff != "" {
		t.Errorf("hit chunk (-want +got):\n%s", diff)
	}

	// Dense alone: the query's own text is its nearest neighbour (cosine and L2).
	for _, m := range testModels {
		text := corpusTexts[1][1]
		hits, err := s.Search(ctx, rag.SearchRequest{Dense: []rag.DenseQuery{{Model: m.Name, Vector: fakeVec(text, m.Dim)}}, Limit: 3})
		if err != nil {
			t.Fatalf("dense search %s: %v", m.Name, err)
		}
		if len(hits) == 0 || hits[0].Chunk.ID != docs[1].chunks[1].ID {
			t.Errorf("dense %s top hit = %v, want %s", m.Name, ids(hits), docs[1].chunks[1].ID)
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("dense %s hits not best first: %v", m.Name, hits)
			}
		}
	}

	// Hybrid: Milvus' RRF equals RRF over the single-retriever rankings.
	question := "self-attention encoder feed-forward"
	q = enc.EncodeQuery(question)
	dq := []rag.DenseQuery{{Model: "dense_a", Vector: fakeVec(question, 8)}, {Model: "dense_b", Vector: fakeVec(question, 4)}}
	var lists [][]rag.Hit
	for _, d := range dq {
		h, err := s.Search(ctx, rag.SearchRequest{Dense: []rag.DenseQuery{d}, Limit: 9})
		if err != nil {
			t.Fatal(err)
		}
		lists = append(lists, h)
	}
	h, err := s.Search(ctx, rag.SearchRequest{Sparse: &q, Limit: 9})
	if err != nil {
		t.Fatal(err)
	}
	lists = append(lists, h)
	hybrid, err := s.Search(ctx, rag.SearchRequest{Dense: dq, Sparse: &q, Limit: 9, Fusion: rag.Fusion{Method: "rrf", K: 60}})
	if err != nil {
		t.Fatalf("hybrid search: %v", err)
	}
	want := rrf(60, lists...)
	if len(hybrid) != len(want) {
		t.Fatalf("hybrid returned %d hits, want %d", len(hybrid), len(want))
	}
	for i := range want {
		if math.Abs(want[i].Score-hybrid[i].Score) > 1e-6 {
			t.Errorf("hybrid hit %d: %s %.6f, want %s %.6f", i, hybrid[i].Chunk.ID, hybrid[i].Score, want[i].Chunk.ID, want[i].Score)
		}
	}
	// Weighted fusion runs too (Milvus normalises scores its own way).
	if hw, err := s.Search(ctx, rag.SearchRequest{Dense: dq, Sparse: &q, Limit: 4,
		Fusion: rag.Fusion{Method: "weighted", Weights: []float64{0.3, 0.2, 0.5}}}); err != nil || len(hw) != 4 {
		t.Errorf("weighted hybrid = %d hits, %v; want 4", len(hw), err)
	}

	// Filters.
	q = enc.EncodeQuery("encoder layer self-attention feed-forward")
	hits, err = s.Search(ctx, rag.SearchRequest{Sparse: &q, Limit: 10, Filter: rag.Filter{DocIDs: []string{"devlin"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 {
		t.Errorf("doc filter: no hits")
	}
	for _, h := range hits {
		if h.Chunk.DocID != "devlin" {
			t.Errorf("doc filter let %s through", h.Chunk.ID)
		}
	}
	hits, err = s.Search(ctx, rag.SearchRequest{Sparse: &q, Dense: dq[:1], Limit: 10, Filter: rag.Filter{SectionPrefix: "3 Model"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{docs[0].chunks[0].ID, docs[0].chunks[1].ID}, sortedIDs(hits)); diff != "" {
		t.Errorf("section filter hits (-want +got):\n%s", diff)
	}

	// Unknown model.
	if _, err := s.Search(ctx, rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "nope", Vector: []float32{1}}}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("search of an unknown model: %v", err)
	}

	// Chunks by id, in the order asked.
	askIDs := []string{docs[2].chunks[3].ID, docs[0].chunks[0].ID, docs[2].chunks[0].ID}
	chunks, err := s.Chunks(ctx, askIDs)
	if err != nil {
		t.Fatalf("Chunks: %v", err)
	}
	wantChunks := []rag.Chunk{docs[2].chunks[3].Chunk, docs[0].chunks[0].Chunk, docs[2].chunks[0].Chunk}
	if diff := cmp.Diff(wantChunks, chunks); diff != "" {
		t.Errorf("Chunks (-want +got):\n%s", diff)
	}
	if _, err := s.Chunks(ctx, []string{docs[0].chunks[0].ID, "missing"}); !errors.Is(err, rag.ErrNotFound) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Chunks with an unknown id: %v, want ErrNotFound naming it", err)
	}

	// Re-index a changed document: the old version disappears everywhere.
	v2 := makeDoc("vaswani", "v2", testModels, nil,
		"The Transformer replaces recurrence with attention entirely.",
		"Label smoothing and dropout regularise training.")
	replace(t, s, v2)
	docs[0] = v2
	checkStats(t, s, wantStats(docs...))
	if _, err := s.Chunks(ctx, []string{docs[1].chunks[0].ID, "vaswani-v1-0"}); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("old chunk still readable: %v", err)
	}
	q = enc.EncodeQuery("positional encodings sine cosine")
	hits, err = s.Search(ctx, rag.SearchRequest{Sparse: &q, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if strings.HasPrefix(h.Chunk.ID, "vaswani-v1") {
			t.Errorf("search returned old chunk %s", h.Chunk.ID)
		}
	}
	if n := countRows(t, s, `doc_id == "vaswani"`); n != 2 {
		t.Errorf("%d rows of vaswani stored, want 2 (old ones deleted)", n)
	}

	// Delete.
	if err := s.Delete(ctx, "lewis"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.Delete(ctx, "never-indexed"); err != nil {
		t.Errorf("Delete of an unknown id: %v", err)
	}
	docs = []testDoc{docs[0], docs[2]}
	checkStats(t, s, wantStats(docs...))
	if _, err := s.Document(ctx, "lewis"); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("deleted document still there: %v", err)
	}
	q = enc.EncodeQuery("retriever Wikipedia index")
	hits, err = s.Search(ctx, rag.SearchRequest{Sparse: &q, Dense: dq, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Chunk.DocID == "lewis" {
			t.Errorf("search returned deleted chunk %s", h.Chunk.ID)
		}
	}

	// Re-index the deleted document.
	lewis := makeDoc("lewis", "v1", testModels, corpusSections[1], corpusTexts[1]...)
	replace(t, s, lewis)
	docs = append(docs, lewis)
	checkStats(t, s, wantStats(docs...))
	hits, err = s.Search(ctx, rag.SearchRequest{Sparse: &q, Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Chunk.DocID != "lewis" {
		t.Errorf("search after re-index = %v, %v; want a lewis chunk", hits, err)
	}

	// Reopening with another model set is refused with the fix named.
	_, err = Open(ctx, Config{Addr: addr, Corpus: s.coll[len("footnote_"):], Models: testModels[:1]})
	if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), "removed dense_b") || !strings.Contains(err.Error(), "--rebuild") {
		t.Errorf("Open with fewer models: %v", err)
	}
	// The same set opens and sees the data.
	s2, err := Open(ctx, Config{Addr: addr, Corpus: s.coll[len("footnote_"):], Models: []rag.ModelInfo{testModels[1], testModels[0]}})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	checkStats(t, s2, wantStats(docs...))
	if err := s2.Close(); err != nil {
		t.Errorf("Close of a store that did not write: %v", err)
	}
}

func sortedIDs(hits []rag.Hit) []string {
	out := ids(hits)
	slices.Sort(out)
	return out
}

func rrf(k int, lists ...[]rag.Hit) []rag.Hit {
	score := map[string]float64{}
	chunk := map[string]rag.Chunk{}
	for _, l := range lists {
		for r, h := range l {
			score[h.Chunk.ID] += 1 / float64(k+r+1)
			chunk[h.Chunk.ID] = h.Chunk
		}
	}
	var out []rag.Hit
	for id, s := range score {
		out = append(out, rag.Hit{Chunk: chunk[id], Score: s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Chunk.ID < out[j].Chunk.ID
	})
	if len(out) > 9 {
		out = out[:9]
	}
	return out
}

func checkStats(t *testing.T, s index.Store, want index.Stats) {
	t.Helper()
	got, err := s.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}

func countRows(t *testing.T, s *Store, expr string) int {
	t.Helper()
	n := 0
	if err := s.each(t.Context(), s.coll, expr, []string{fChunkID}, 100, func(rs client.ResultSet) error {
		n += rs.Len()
		return nil
	}); err != nil {
		t.Fatalf("count %s: %v", expr, err)
	}
	return n
}

// TestChunkWithoutTerms stores a chunk whose BM25 vector is empty (Milvus Lite rejects
// empty sparse rows; see emptyMark): it is stored, counts in no document frequency and is
// found by dense search only.
func TestChunkWithoutTerms(t *testing.T) {
	s := open(t, milvustest.Addr(t), milvustest.Corpus(t), testModels)
	ctx := t.Context()
	d := makeDoc("punct", "v1", testModels, nil, "!!! --- ???", "real words here")
	if len(d.chunks[0].Sparse.Indices) != 0 {
		t.Fatalf("fixture drifted: %+v", d.chunks[0].Sparse)
	}
	replace(t, s, d)
	checkStats(t, s, wantStats(d))
	got, err := s.Chunks(ctx, []string{d.chunks[0].ID})
	if err != nil || len(got) != 1 || got[0].Text != "!!! --- ???" {
		t.Fatalf("Chunks = %v, %v", got, err)
	}
	q := rag.SparseVector{Indices: []uint32{emptyMark}, Values: []float32{1}}
	if hits, err := s.Search(ctx, rag.SearchRequest{Sparse: &q}); err != nil || len(hits) != 0 {
		t.Errorf("a query for the marker index = %v, %v; want no hits", ids(hits), err)
	}
	hits, err := s.Search(ctx, rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "dense_a", Vector: fakeVec("!!! --- ???", 8)}}, Limit: 2})
	if err != nil || len(hits) != 2 {
		t.Errorf("dense search = %v, %v; want both chunks", ids(hits), err)
	}
	// Replacing and deleting it keeps the statistics exact.
	if err := s.Delete(ctx, "punct"); err != nil {
		t.Fatal(err)
	}
	checkStats(t, s, index.Stats{DF: map[uint32]int{}})
}

// TestRepair interrupts a Replace after its first writes and checks that the next write
// repairs statistics and removes the invisible chunks.
func TestRepair(t *testing.T) {
	addr := milvustest.Addr(t)
	ctx := t.Context()
	s := open(t, addr, milvustest.Corpus(t), testModels)
	a := makeDoc("a", "v1", testModels, nil, corpusTexts[0]...)
	b := makeDoc("b", "v1", testModels, nil, corpusTexts[1]...)
	replace(t, s, a)
	// The crashing write below is another process': this one's batch was written.
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// A Replace of a to v2 that died after writing its chunks (steps 1–2).
	a2 := makeDoc("a", "v2", testModels, nil, "Completely different words about zebras.")
	rec, _, err := s.record(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	rec.pending = true
	if err := s.putRecords(ctx, []docRecord{rec}); err != nil {
		t.Fatal(err)
	}
	cols, err := s.chunkColumns(a2.doc, "interrupted", a2.chunks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Upsert(ctx, s.coll, "", cols...); err != nil {
		t.Fatal(err)
	}
	// Readers still see exactly version 1.
	checkStats(t, s, wantStats(a))
	q := bm25.NewQueryEncoder(bm25.Params{}, 3, nil).EncodeQuery("zebras")
	if hits, err := s.Search(ctx, rag.SearchRequest{Sparse: &q}); err != nil || len(hits) != 0 {
		t.Errorf("half-written version visible: %v, %v", ids(hits), err)
	}
	// Corrupt the statistics the way a crash between steps 3 and 4 would.
	if err := s.applyDF(ctx, map[uint32]int{12345: 3}); err != nil {
		t.Fatal(err)
	}

	// The next write repairs.
	replace(t, s, b)
	checkStats(t, s, wantStats(a, b))
	if n := countRows(t, s, `doc_id == "a"`); n != len(a.chunks) {
		t.Errorf("%d rows of a stored after repair, want %d", n, len(a.chunks))
	}
}

// TestBatchedStatistics checks what batching the statistics (Config.StatsBatch) must
// keep: another Store sees the statistics from before the batch (never a half), the
// writer reads its own writes, a batch merges a document written twice and a deletion,
// and a writer that dies with a batch unwritten leaves pending records that the next
// writer repairs.
func TestBatchedStatistics(t *testing.T) {
	addr := milvustest.Addr(t)
	ctx := t.Context()
	corpus := milvustest.Corpus(t)
	w := openBatch(t, addr, corpus, testModels, 4)
	r := open(t, addr, corpus, testModels)
	a := makeDoc("a", "v1", testModels, nil, corpusTexts[0]...)
	a2 := makeDoc("a", "v2", testModels, nil, corpusTexts[2]...)
	b := makeDoc("b", "v1", testModels, nil, corpusTexts[1]...)
	c := makeDoc("c", "v1", testModels, nil, "Zebras graze on the savanna in large herds.", "Their stripes confuse biting flies.")
	replace(t, w, a)
	replace(t, w, b)
	replace(t, w, a2)
	// Three writes of four: nothing of the batch is written yet.
	if got, err := r.Counts(ctx); err != nil || got.Documents != 0 || got.Chunks != 0 {
		t.Errorf("another Store sees %+v, %v before the batch is written; want the empty corpus", got, err)
	}
	terms := slices.Collect(maps.Keys(wantStats(a).DF))
	if n, df, err := r.QueryStats(ctx, terms); err != nil || n != 0 || len(df) != 0 {
		t.Errorf("another Store's QueryStats = %d, %v, %v before the batch is written; want nothing", n, df, err)
	}
	checkStats(t, w, wantStats(a2, b)) // the writer writes its batch before reading
	checkStats(t, r, wantStats(a2, b))

	// A full batch (four writes, a deletion among them) is written by itself.
	replace(t, w, c)
	if err := w.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	replace(t, w, a)
	replace(t, w, b)
	want := wantStats(c, a, b)
	if got, err := r.Counts(ctx); err != nil || got.Documents != want.Documents || got.Chunks != want.Chunks || got.Terms != want.Terms {
		t.Errorf("another Store's Counts = %+v, %v after a full batch; want %d documents, %d chunks, %d terms", got, err, want.Documents, want.Chunks, want.Terms)
	}
	if n, df, err := r.QueryStats(ctx, terms); err != nil || n != want.Chunks || len(df) != len(terms) {
		t.Errorf("another Store's QueryStats = %d, %d terms, %v; want %d, %d terms", n, len(df), err, want.Chunks, len(terms))
	}
	// A deletion batched, then written by Flush.
	if err := w.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkStats(t, r, wantStats(c, a))

	// A writer that dies with its batch unwritten: the next writer repairs.
	replace(t, w, b)
	w.batch = statsDelta{} // what a crash loses
	w.unapplied.Store(false)
	w2 := open(t, addr, corpus, testModels)
	replace(t, w2, a2)
	checkStats(t, w2, wantStats(c, a2, b))
	checkStats(t, r, wantStats(c, a2, b))
}

// TestReconnect restarts Milvus between two searches: the store reconnects and reloads the
// collection without being reopened.
func TestReconnect(t *testing.T) {
	srv := milvustest.Start(t)
	ctx := t.Context()
	s := open(t, srv.Addr(), "reconnect", testModels)
	d := makeDoc("a", "v1", testModels, nil, corpusTexts[0]...)
	replace(t, s, d)
	q := bm25.NewQueryEncoder(bm25.Params{}, 3, nil).EncodeQuery("positional encodings")
	req := rag.SearchRequest{Sparse: &q, Dense: []rag.DenseQuery{{Model: "dense_a", Vector: fakeVec("positional encodings", 8)}}, Limit: 3}
	before, err := s.Search(ctx, req)
	if err != nil {
		t.Fatalf("search before restart: %v", err)
	}

	// A second handle with a short per-call limit shows the error a caller gets while
	// Milvus is down.
	short, err := Open(ctx, Config{Addr: srv.Addr(), Corpus: "reconnect", Models: testModels, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer short.Close()

	srv.Stop()
	start := time.Now()
	_, err = short.Search(ctx, req)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), srv.Addr()) {
		t.Errorf("search with Milvus stopped: %v, want ErrUnavailable naming %s", err, srv.Addr())
	}
	t.Logf("search with Milvus stopped failed after %s: %v", time.Since(start).Round(time.Millisecond), err)

	srv.Restart()
	after, err := s.Search(ctx, req)
	if err != nil {
		t.Fatalf("search after restart: %v", err)
	}
	if diff := cmp.Diff(ids(before), ids(after)); diff != "" {
		t.Errorf("hits after restart (-before +after):\n%s", diff)
	}
	// Writes work again too.
	replace(t, s, makeDoc("b", "v1", testModels, nil, corpusTexts[1]...))
}

// TestDenseIndexes builds each supported dense index and searches it.
func TestDenseIndexes(t *testing.T) {
	addr := milvustest.Addr(t)
	for _, kind := range []string{"HNSW", "FLAT", "AUTOINDEX"} {
		t.Run(kind, func(t *testing.T) {
			s, err := Open(t.Context(), Config{Addr: addr, Corpus: milvustest.Corpus(t), Models: testModels, DenseIndex: kind})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { dropAndClose(t, s) })
			// Milvus Lite 2.5 builds FLAT only; Open must then have noticed and said so.
			if got := string(s.fieldIndex["dense_a"]); got != kind && !(got == "FLAT" && s.flatFallback) {
				t.Errorf("dense_a index = %q (fallback %v), want %q", got, s.flatFallback, kind)
			} else if got != kind {
				t.Logf("%s requested, this engine built %s", kind, got)
			}
			d := makeDoc("d", "v1", testModels, nil, corpusTexts[2]...)
			replace(t, s, d)
			hits, err := s.Search(t.Context(), rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "dense_a", Vector: fakeVec(corpusTexts[2][1], 8)}}, Limit: 1})
			if err != nil || len(hits) != 1 || hits[0].Chunk.ID != d.chunks[1].ID {
				t.Errorf("search = %v, %v; want %s", ids(hits), err, d.chunks[1].ID)
			}
		})
	}
	if _, err := Open(t.Context(), Config{Addr: addr, DenseIndex: "IVF_PQ"}); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("Open with an unsupported index: %v", err)
	}
}

// TestLegacyCollectionWithoutPageBreaks: a chunk collection from before page breaks opens,
// takes writes and answers searches (without page breaks) rather than demanding a rebuild.
func TestLegacyCollectionWithoutPageBreaks(t *testing.T) {
	addr := milvustest.Addr(t)
	corpus := milvustest.Corpus(t)
	legacyChunkSchema = true
	old, err := Open(t.Context(), Config{Addr: addr, Corpus: corpus, Models: testModels, Timeout: 20 * time.Second})
	legacyChunkSchema = false
	if err != nil {
		t.Fatalf("Open (legacy schema): %v", err)
	}
	old.Close()
	s := open(t, addr, corpus, testModels)
	if s.pageBreaks {
		t.Fatal("a collection without the page_breaks field was opened as having it")
	}
	d := makeDoc("a", "v1", testModels, nil, corpusTexts[0]...)
	d.chunks[0].PageBreaks = []int{5}
	replace(t, s, d)
	got, err := s.Chunks(t.Context(), []string{d.chunks[0].ID})
	if err != nil || len(got) != 1 || got[0].Text != d.chunks[0].Text || got[0].PageBreaks != nil {
		t.Errorf("Chunks on a legacy collection = %+v, %v; want the chunk without page breaks", got, err)
	}
	hits, err := s.Search(t.Context(), rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "dense_a", Vector: fakeVec(corpusTexts[0][0], 8)}}, Limit: 1, WithVectors: true})
	if err != nil || len(hits) != 1 || len(hits[0].Vectors["dense_a"]) != 8 {
		t.Errorf("search with vectors on a legacy collection = %v, %v", hits, err)
	}
}

// TestTotalsOfOlderCollections: a collection without corpus totals (written before they
// were kept) is counted from its records, and Repair records the totals.
func TestTotalsOfOlderCollections(t *testing.T) {
	s := open(t, milvustest.Addr(t), milvustest.Corpus(t), testModels)
	docs := []testDoc{makeDoc("a", "v1", testModels, nil, corpusTexts[0]...), makeDoc("b", "v1", testModels, nil, corpusTexts[1]...)}
	for _, d := range docs {
		replace(t, s, d)
	}
	want := wantStats(docs...)
	want.DF = nil
	if err := s.deleteDF(t.Context(), []int64{totDocs, totChunks, totTerms}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := s.readTotals(t.Context(), nil); err != nil || ok {
		t.Fatalf("totals still there after deleting them: %v", err)
	}
	got, err := s.Counts(t.Context())
	if err != nil {
		t.Fatalf("Counts without totals: %v", err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Counts without totals (-want +got):\n%s", diff)
	}
	// A write keeps working (it leaves absent totals absent)…
	replace(t, s, makeDoc("a", "v2", testModels, nil, corpusTexts[2]...))
	// …and Repair records them.
	if err := s.Repair(t.Context()); err != nil {
		t.Fatal(err)
	}
	tot, _, ok, err := s.readTotals(t.Context(), nil)
	if err != nil || !ok {
		t.Fatalf("no totals after Repair: %v", err)
	}
	want = wantStats(makeDoc("a", "v2", testModels, nil, corpusTexts[2]...), docs[1])
	if tot.docs != want.Documents || tot.chunks != want.Chunks || tot.terms != want.Terms {
		t.Errorf("totals after Repair = %+v, want %d documents, %d chunks, %d terms", tot, want.Documents, want.Chunks, want.Terms)
	}
}
