package rag_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/rag"
)

// The fakes of this file carry an "rt" prefix so they cannot collide with other test
// files of package rag_test.

// rtSearcher records every request and answers with hits or err.
type rtSearcher struct {
	mu   sync.Mutex
	reqs []rag.SearchRequest
	hits []rag.Hit
	err  error
	// search, when set, replaces the canned answer.
	search func(ctx context.Context, req rag.SearchRequest) ([]rag.Hit, error)
}

func (s *rtSearcher) Search(ctx context.Context, req rag.SearchRequest) ([]rag.Hit, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if s.search != nil {
		return s.search(ctx, req)
	}
	if s.err != nil {
		return nil, s.err
	}
	return s.hits[:min(len(s.hits), req.Limit)], nil
}

func (s *rtSearcher) Chunks(context.Context, []string) ([]rag.Chunk, error) {
	return nil, rag.ErrNotFound
}

func (s *rtSearcher) requests() []rag.SearchRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]rag.SearchRequest(nil), s.reqs...)
}

// rtEmbedder returns a vector derived from its name so requests show which model embedded.
type rtEmbedder struct {
	name  string
	err   error
	delay time.Duration
	calls int
	mu    sync.Mutex
}

func (e *rtEmbedder) Info() rag.ModelInfo {
	return rag.ModelInfo{Name: e.name, Dim: 2, Metric: rag.Cosine}
}

func (e *rtEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, err := e.EmbedQuery(ctx, t)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (e *rtEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	if e.delay > 0 {
		select {
		case <-time.After(e.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if e.err != nil {
		return nil, e.err
	}
	return []float32{float32(len(e.name)), float32(len(text))}, nil
}

// rtSparse encodes every word as its length, enough to see the vector reach the store.
type rtSparse struct{}

func (rtSparse) EncodeQuery(text string) rag.SparseVector {
	var v rag.SparseVector
	for i, w := range strings.Fields(text) {
		if w == "the" {
			continue
		}
		v.Indices = append(v.Indices, uint32(i))
		v.Values = append(v.Values, float32(len(w)))
	}
	return v
}

// rtReranker scores a passage by the probability its chunk text declares ("p=0.93 …"),
// so each test states its evidence in the chunks themselves.
type rtReranker struct {
	calls    int
	passages []string
	err      error
}

func (r *rtReranker) Score(_ context.Context, _ string, passages []string) ([]float64, error) {
	r.calls++
	r.passages = passages
	if r.err != nil {
		return nil, r.err
	}
	out := make([]float64, len(passages))
	for i, p := range passages {
		i0 := strings.Index(p, "p=")
		if _, err := fmt.Sscanf(p[i0:], "p=%g", &out[i]); err != nil {
			return nil, fmt.Errorf("passage %q has no p=: %v", p, err)
		}
	}
	return out, nil
}

// rtHits makes fused hits, best first, whose texts carry the given rerank probabilities.
func rtHits(probs ...float64) []rag.Hit {
	hits := make([]rag.Hit, len(probs))
	for i, p := range probs {
		hits[i] = rag.Hit{
			Chunk: rag.Chunk{ID: fmt.Sprintf("c%d", i), Name: "1706.03762", Text: fmt.Sprintf("p=%g passage %d", p, i)},
			Score: 1 / float64(61+i),
		}
	}
	return hits
}

func rtSparseFn(context.Context) (rag.SparseEncoder, error) { return rtSparse{}, nil }

func rtPipeline(t *testing.T, cfg rag.Config) *rag.Pipeline {
	t.Helper()
	p, err := rag.New(cfg)
	if err != nil {
		t.Fatalf("rag.New: %v", err)
	}
	return p
}

func ids(ss []rag.Scored) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.Chunk.ID)
	}
	return out
}

func TestRetrieveMethodSelection(t *testing.T) {
	tests := []struct {
		method     string
		wantMethod string
		wantDense  []string
		wantSparse bool
	}{
		{"", "hybrid", []string{"bge_small_en_v1_5", "minilm"}, true},
		{"hybrid", "hybrid", []string{"bge_small_en_v1_5", "minilm"}, true},
		{"HYBRID", "hybrid", []string{"bge_small_en_v1_5", "minilm"}, true},
		{"bm25", "bm25", nil, true},
		{"dense", "dense:bge_small_en_v1_5", []string{"bge_small_en_v1_5"}, false},
		{"dense:minilm", "dense:minilm", []string{"minilm"}, false},
		{"dense:BAAI/bge-small-en-v1.5", "dense:bge_small_en_v1_5", []string{"bge_small_en_v1_5"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			s := &rtSearcher{hits: rtHits(0.9)}
			bge, mini := &rtEmbedder{name: "bge_small_en_v1_5"}, &rtEmbedder{name: "minilm"}
			p := rtPipeline(t, rag.Config{Searcher: s, Embedders: []rag.Embedder{bge, mini}, Sparse: rtSparseFn})
			r, err := p.Retrieve(t.Context(), rag.Question{Text: "multi head attention", Method: tt.method})
			if err != nil {
				t.Fatalf("Retrieve: %v", err)
			}
			if r.Method != tt.wantMethod {
				t.Errorf("Method = %q, want %q", r.Method, tt.wantMethod)
			}
			reqs := s.requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d searches, want 1", len(reqs))
			}
			var dense []string
			for _, d := range reqs[0].Dense {
				dense = append(dense, d.Model)
				// The fake vector's first component is the length of the model that made it.
				if int(d.Vector[0]) != len(d.Model) {
					t.Errorf("dense %s carries a vector of another model: %v", d.Model, d.Vector)
				}
			}
			if diff := cmp.Diff(tt.wantDense, dense); diff != "" {
				t.Errorf("dense retrievers (-want +got):\n%s", diff)
			}
			if got := reqs[0].Sparse != nil; got != tt.wantSparse {
				t.Errorf("sparse retriever = %v, want %v", got, tt.wantSparse)
			}
			// Models the method does not use are not asked to embed.
			wantCalls := map[string]int{}
			for _, d := range tt.wantDense {
				wantCalls[d] = 1
			}
			if bge.calls != wantCalls[bge.name] || mini.calls != wantCalls[mini.name] {
				t.Errorf("embed calls bge=%d minilm=%d, want %v", bge.calls, mini.calls, wantCalls)
			}
		})
	}
}

// TestRetrieveDefaultMethod: Config.Method (FOOTNOTE_METHOD) is the method of a question
// that names none, a question's own method still wins, and a default the pipeline cannot
// run is refused when the pipeline is built rather than on every question.
func TestRetrieveDefaultMethod(t *testing.T) {
	bge := &rtEmbedder{name: "bge_small_en_v1_5"}
	for _, tt := range []struct{ def, asked, want string }{
		{"bm25", "", "bm25"},
		{"BM25", "", "bm25"},
		{"dense", "", "dense:bge_small_en_v1_5"},
		{"bm25", "hybrid", "hybrid"},
		{"hybrid", "", "hybrid"},
	} {
		s := &rtSearcher{hits: rtHits(0.9)}
		p := rtPipeline(t, rag.Config{Searcher: s, Embedders: []rag.Embedder{bge}, Sparse: rtSparseFn, Method: tt.def})
		r, err := p.Retrieve(t.Context(), rag.Question{Text: "multi head attention", Method: tt.asked})
		if err != nil {
			t.Fatalf("default %q, asked %q: %v", tt.def, tt.asked, err)
		}
		if r.Method != tt.want {
			t.Errorf("default %q, asked %q: method %q, want %q", tt.def, tt.asked, r.Method, tt.want)
		}
	}
	for _, tt := range []struct {
		cfg  rag.Config
		want error
	}{
		{rag.Config{Searcher: &rtSearcher{}, Sparse: rtSparseFn, Method: "dense"}, rag.ErrModelMissing},
		{rag.Config{Searcher: &rtSearcher{}, Embedders: []rag.Embedder{bge}, Method: "bm25"}, rag.ErrUnknownMethod},
		{rag.Config{Searcher: &rtSearcher{}, Sparse: rtSparseFn, Method: "sparse"}, rag.ErrUnknownMethod},
	} {
		if _, err := rag.New(tt.cfg); !errors.Is(err, tt.want) {
			t.Errorf("New with default method %q: %v, want %v", tt.cfg.Method, err, tt.want)
		}
	}
}

func TestRetrieveSearchRequest(t *testing.T) {
	s := &rtSearcher{hits: rtHits(0.9)}
	p := rtPipeline(t, rag.Config{
		Searcher:   s,
		Embedders:  []rag.Embedder{&rtEmbedder{name: "a"}, &rtEmbedder{name: "bb"}},
		Sparse:     rtSparseFn,
		Candidates: 30,
		Fusion:     rag.Fusion{Method: "weighted", Weights: []float64{0.5, 0.2, 0.3}},
	})
	filter := rag.Filter{DocIDs: []string{"d1"}, SectionPrefix: "3 Model Architecture"}
	if _, err := p.Retrieve(t.Context(), rag.Question{Text: "the encoder stack", Filter: filter}); err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	want := rag.SearchRequest{
		Dense: []rag.DenseQuery{
			{Model: "a", Vector: []float32{1, 17}},
			{Model: "bb", Vector: []float32{2, 17}},
		},
		Sparse: &rag.SparseVector{Indices: []uint32{1, 2}, Values: []float32{7, 5}},
		Limit:  30,
		Fusion: rag.Fusion{Method: "weighted", K: 60, Weights: []float64{0.5, 0.2, 0.3}},
		Filter: filter,
	}
	if diff := cmp.Diff([]rag.SearchRequest{want}, s.requests()); diff != "" {
		t.Errorf("search request (-want +got):\n%s", diff)
	}

	// A single-model method takes that model's weight only.
	s.reqs = nil
	if _, err := p.Retrieve(t.Context(), rag.Question{Text: "encoder", Method: "dense:bb"}); err != nil {
		t.Fatalf("Retrieve dense:bb: %v", err)
	}
	if got := s.requests()[0].Fusion.Weights; !cmp.Equal(got, []float64{0.2}) {
		t.Errorf("dense:bb weights = %v, want [0.2]", got)
	}
}

func TestRetrieveDefaultsToRRF(t *testing.T) {
	s := &rtSearcher{hits: rtHits(0.9)}
	p := rtPipeline(t, rag.Config{Searcher: s, Embedders: []rag.Embedder{&rtEmbedder{name: "a"}}, Sparse: rtSparseFn})
	if _, err := p.Retrieve(t.Context(), rag.Question{Text: "attention"}); err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	got := s.requests()[0]
	if got.Fusion.Method != "rrf" || got.Fusion.K != 60 || got.Limit != 20 {
		t.Errorf("fusion %+v limit %d, want rrf k=60 limit 20", got.Fusion, got.Limit)
	}
}

func TestRetrieveWeightMismatch(t *testing.T) {
	p := rtPipeline(t, rag.Config{
		Searcher: &rtSearcher{hits: rtHits(0.9)}, Embedders: []rag.Embedder{&rtEmbedder{name: "a"}},
		Sparse: rtSparseFn, Fusion: rag.Fusion{Method: "weighted", Weights: []float64{1}},
	})
	_, err := p.Retrieve(t.Context(), rag.Question{Text: "attention"})
	if err == nil || !strings.Contains(err.Error(), "needs 2 weights") {
		t.Errorf("err = %v, want a weight count error", err)
	}
}

func TestRetrieveCut(t *testing.T) {
	tests := []struct {
		name     string
		probs    []float64 // rerank probability of each fused hit, in fused order
		topK     int
		wantHits []string
		wantCand []string
		noEvid   bool
	}{
		{
			name:     "strong evidence keeps several",
			probs:    []float64{0.62, 0.97, 0.91, 0.85, 0.05, 0.01},
			wantHits: []string{"c1", "c2", "c3", "c0"},
			wantCand: []string{"c1", "c2", "c3", "c0", "c4", "c5"},
		},
		{
			name:     "drop-off stops early",
			probs:    []float64{0.97, 0.91, 0.50, 0.45},
			wantHits: []string{"c0", "c1"},
			wantCand: []string{"c0", "c1", "c2", "c3"},
		},
		{
			name:     "one strong passage",
			probs:    []float64{0.3, 0.95, 0.25},
			wantHits: []string{"c1"},
			wantCand: []string{"c1", "c0", "c2"},
		},
		{
			name:     "top k bounds",
			probs:    []float64{0.99, 0.98, 0.97, 0.96},
			topK:     2,
			wantHits: []string{"c0", "c1"},
			wantCand: []string{"c0", "c1", "c2", "c3"},
		},
		{
			name:     "off-topic keeps none",
			probs:    []float64{0.02, 0.11, 0.004},
			wantHits: []string{},
			wantCand: []string{"c1", "c0", "c2"},
			noEvid:   true,
		},
		{
			name:     "ties keep fused order",
			probs:    []float64{0.5, 0.8, 0.5, 0.8},
			wantHits: []string{"c1", "c3", "c0", "c2"},
			wantCand: []string{"c1", "c3", "c0", "c2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr := &rtReranker{}
			p := rtPipeline(t, rag.Config{Searcher: &rtSearcher{hits: rtHits(tt.probs...)}, Sparse: rtSparseFn, Reranker: rr})
			r, err := p.Retrieve(t.Context(), rag.Question{Text: "positional encoding", TopK: tt.topK})
			if got := errors.Is(err, rag.ErrNoEvidence); got != tt.noEvid {
				t.Fatalf("err = %v, want ErrNoEvidence %v", err, tt.noEvid)
			}
			if !tt.noEvid && err != nil {
				t.Fatalf("Retrieve: %v", err)
			}
			if diff := cmp.Diff(tt.wantHits, ids(r.Hits)); diff != "" {
				t.Errorf("hits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCand, ids(r.Candidates)); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
			if rr.calls != 1 {
				t.Errorf("reranker called %d times, want one batched call", rr.calls)
			}
			if !r.Reranked {
				t.Error("Reranked = false, want true")
			}
			for _, h := range r.Hits {
				if h.Rerank < 0.2 {
					t.Errorf("kept %s with probability %v below MinScore", h.Chunk.ID, h.Rerank)
				}
			}
		})
	}
}

func TestRetrieveRerankTop(t *testing.T) {
	rr := &rtReranker{}
	probs := make([]float64, 25)
	for i := range probs {
		probs[i] = 0.9
	}
	p := rtPipeline(t, rag.Config{Searcher: &rtSearcher{hits: rtHits(probs...)}, Sparse: rtSparseFn, Reranker: rr, RerankTop: 7})
	r, err := p.Retrieve(t.Context(), rag.Question{Text: "attention"})
	if err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	if len(rr.passages) != 7 || len(r.Candidates) != 7 || len(r.Hits) != 5 {
		t.Errorf("reranked %d, candidates %d, hits %d; want 7, 7, 5", len(rr.passages), len(r.Candidates), len(r.Hits))
	}
}

func TestRetrieveRerankPassageIsChunkText(t *testing.T) {
	rr := &rtReranker{}
	hits := []rag.Hit{
		{Chunk: rag.Chunk{ID: "a", Section: []string{"3 Model Architecture", "3.2.2 Multi-Head Attention"}, Text: "p=0.9 Instead of …"}},
		{Chunk: rag.Chunk{ID: "b", Section: []string{"5 Training"}, Text: "5 Training p=0.8 This section …"}},
	}
	p := rtPipeline(t, rag.Config{Searcher: &rtSearcher{hits: hits}, Sparse: rtSparseFn, Reranker: rr})
	if _, err := p.Retrieve(t.Context(), rag.Question{Text: "multi-head"}); err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	want := []string{"p=0.9 Instead of …", "5 Training p=0.8 This section …"}
	if diff := cmp.Diff(want, rr.passages); diff != "" {
		t.Errorf("passages (-want +got):\n%s", diff)
	}
}

func TestRetrieveWithoutReranker(t *testing.T) {
	p := rtPipeline(t, rag.Config{Searcher: &rtSearcher{hits: rtHits(0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01)}, Sparse: rtSparseFn})
	r, err := p.Retrieve(t.Context(), rag.Question{Text: "attention"})
	if err != nil {
		t.Fatalf("Retrieve: %v (no reranker means no score cut)", err)
	}
	if diff := cmp.Diff([]string{"c0", "c1", "c2", "c3", "c4"}, ids(r.Hits)); diff != "" {
		t.Errorf("hits (-want +got):\n%s", diff)
	}
	if len(r.Candidates) != 7 || r.Reranked {
		t.Errorf("candidates %d reranked %v, want 7 false", len(r.Candidates), r.Reranked)
	}
	if r.Hits[0].Score != 1.0/61 {
		t.Errorf("hit score %v, want the fused score", r.Hits[0].Score)
	}

	// An empty result is still a refusal.
	p = rtPipeline(t, rag.Config{Searcher: &rtSearcher{}, Sparse: rtSparseFn})
	if _, err := p.Retrieve(t.Context(), rag.Question{Text: "attention"}); !errors.Is(err, rag.ErrNoEvidence) {
		t.Errorf("empty store: err = %v, want ErrNoEvidence", err)
	}
}

func TestRetrieveEmptySparseQuery(t *testing.T) {
	s := &rtSearcher{hits: rtHits(0.9)}
	p := rtPipeline(t, rag.Config{Searcher: s, Sparse: rtSparseFn})
	_, err := p.Retrieve(t.Context(), rag.Question{Text: "the the", Method: "bm25"})
	if !errors.Is(err, rag.ErrNoEvidence) {
		t.Errorf("err = %v, want ErrNoEvidence for a query with no BM25 terms", err)
	}
	if n := len(s.requests()); n != 0 {
		t.Errorf("searched %d times with an empty query vector", n)
	}
}

func TestRetrieveMethodErrors(t *testing.T) {
	tests := []struct {
		name     string
		cfg      rag.Config
		method   string
		sentinel error
		mention  []string
	}{
		{
			name:     "dense model not configured",
			cfg:      rag.Config{Embedders: []rag.Embedder{&rtEmbedder{name: "bge_small_en_v1_5"}}, Sparse: rtSparseFn},
			method:   "dense:openai_text_embedding_3_small",
			sentinel: rag.ErrModelMissing,
			mention:  []string{"openai_text_embedding_3_small", "bge_small_en_v1_5", "footnote models pull"},
		},
		{
			name:     "dense without models",
			cfg:      rag.Config{Sparse: rtSparseFn},
			method:   "dense",
			sentinel: rag.ErrModelMissing,
			mention:  []string{"footnote models pull", "bm25"},
		},
		{
			name:     "nothing configured",
			cfg:      rag.Config{},
			method:   "hybrid",
			sentinel: rag.ErrModelMissing,
			mention:  []string{"footnote models pull"},
		},
		{
			name:     "unknown name",
			cfg:      rag.Config{Sparse: rtSparseFn},
			method:   "splade",
			sentinel: rag.ErrUnknownMethod,
			mention:  []string{"splade", "hybrid, bm25"},
		},
		{
			name:     "bm25 disabled",
			cfg:      rag.Config{Embedders: []rag.Embedder{&rtEmbedder{name: "m"}}},
			method:   "bm25",
			sentinel: rag.ErrUnknownMethod,
			mention:  []string{"BM25 is not configured"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &rtSearcher{hits: rtHits(0.9)}
			tt.cfg.Searcher = s
			p := rtPipeline(t, tt.cfg)
			_, err := p.Retrieve(t.Context(), rag.Question{Text: "attention", Method: tt.method})
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("err = %v, want %v", err, tt.sentinel)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if len(s.requests()) != 0 {
				t.Error("searched despite the method error")
			}
		})
	}
}

func TestRetrieveStageErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		cfg    rag.Config
		prefix string
	}{
		{"embed", rag.Config{Searcher: &rtSearcher{hits: rtHits(0.9)}, Embedders: []rag.Embedder{&rtEmbedder{name: "m", err: boom}}, Sparse: rtSparseFn}, "embed query: m: boom"},
		{"sparse", rag.Config{Searcher: &rtSearcher{hits: rtHits(0.9)}, Sparse: func(context.Context) (rag.SparseEncoder, error) { return nil, boom }}, "embed query: bm25: boom"},
		{"search", rag.Config{Searcher: &rtSearcher{err: boom}, Sparse: rtSparseFn}, "search: boom"},
		{"rerank", rag.Config{Searcher: &rtSearcher{hits: rtHits(0.9)}, Sparse: rtSparseFn, Reranker: &rtReranker{err: boom}}, "rerank: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rtPipeline(t, tt.cfg).Retrieve(t.Context(), rag.Question{Text: "attention"})
			if !errors.Is(err, boom) || err.Error() != tt.prefix {
				t.Errorf("err = %v, want %q wrapping boom", err, tt.prefix)
			}
			if errors.Is(err, rag.ErrNoEvidence) {
				t.Error("a failure must not read as a refusal")
			}
		})
	}
}

func TestRetrieveRespectsDeadline(t *testing.T) {
	slow := &rtEmbedder{name: "slow", delay: 10 * time.Second}
	p := rtPipeline(t, rag.Config{Searcher: &rtSearcher{hits: rtHits(0.9)}, Embedders: []rag.Embedder{slow}, Sparse: rtSparseFn})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := p.Retrieve(ctx, rag.Question{Text: "attention"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v past a 50ms deadline", el)
	}
	if r.Timings.Total <= 0 || r.Timings.Embed <= 0 {
		t.Errorf("timings %+v, want embed and total set", r.Timings)
	}
}

// rtRendezvous is an embedder that returns only once every embedder of its group has
// started: it can succeed only if the pipeline embeds with them concurrently.
type rtRendezvous struct {
	rtEmbedder
	arrived *sync.WaitGroup
	all     chan struct{}
}

func (e *rtRendezvous) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	e.arrived.Done()
	select {
	case <-e.all:
		return e.rtEmbedder.EmbedQuery(ctx, text)
	case <-time.After(5 * time.Second):
		return nil, errors.New("the other embedder never started: embedding is sequential")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestRetrieveEmbedsConcurrently(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	a := &rtRendezvous{rtEmbedder: rtEmbedder{name: "a"}, arrived: &arrived, all: all}
	b := &rtRendezvous{rtEmbedder: rtEmbedder{name: "b"}, arrived: &arrived, all: all}
	p := rtPipeline(t, rag.Config{Searcher: &rtSearcher{hits: rtHits(0.9)}, Embedders: []rag.Embedder{a, b}, Sparse: rtSparseFn})
	r, err := p.Retrieve(t.Context(), rag.Question{Text: "attention"})
	if err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	if r.Timings.Embed <= 0 || r.Timings.Total < r.Timings.Embed+r.Timings.Search {
		t.Errorf("timings %+v: want embed set and total at least embed+search", r.Timings)
	}
}

func TestRetrieveEmptyQuery(t *testing.T) {
	p := rtPipeline(t, rag.Config{Searcher: &rtSearcher{}, Sparse: rtSparseFn})
	if _, err := p.Retrieve(t.Context(), rag.Question{Text: "  "}); err == nil || errors.Is(err, rag.ErrNoEvidence) {
		t.Errorf("err = %v, want an empty-query error", err)
	}
}

func TestCut(t *testing.T) {
	sc := func(ps ...float64) []rag.Scored {
		out := make([]rag.Scored, len(ps))
		for i, p := range ps {
			out[i] = rag.Scored{Hit: rag.Hit{Chunk: rag.Chunk{ID: fmt.Sprint(i)}}, Rerank: p}
		}
		return out
	}
	tests := []struct {
		name  string
		cands []rag.Scored
		want  int
	}{
		{"empty", nil, 0},
		{"all strong", sc(0.99, 0.95, 0.9, 0.88, 0.8, 0.7, 0.6), 5},
		{"below min", sc(0.19), 0},
		{"exactly min", sc(0.2), 1},
		{"gap exactly max is kept", sc(0.9, 0.55), 2},
		{"gap above max stops", sc(0.9, 0.54), 1},
		{"min stops before gap", sc(0.6, 0.5, 0.1), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rag.Cut(tt.cands, 0.2, 0.35, 5); len(got) != tt.want {
				t.Errorf("kept %d, want %d", len(got), tt.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	s := &rtSearcher{search: func(_ context.Context, req rag.SearchRequest) ([]rag.Hit, error) {
		if req.Sparse == nil { // dense only: off-topic
			return rtHits(0.01, 0.02), nil
		}
		return rtHits(0.9, 0.8, 0.1, 0.05, 0.7, 0.6, 0.5), nil
	}}
	p := rtPipeline(t, rag.Config{Searcher: s, Embedders: []rag.Embedder{&rtEmbedder{name: "m"}}, Sparse: rtSparseFn, Reranker: &rtReranker{}, TopK: 3})
	got, err := p.Compare(t.Context(), rag.Question{Text: "attention"}, nil)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	var methods []string
	for _, m := range got {
		methods = append(methods, m.Method)
	}
	if diff := cmp.Diff([]string{"hybrid", "bm25", "dense:m"}, methods); diff != "" {
		t.Fatalf("methods (-want +got):\n%s", diff)
	}
	hy := got[0]
	if hy.Refused || len(hy.Rows) != 3 {
		t.Fatalf("hybrid refused %v rows %d, want false 3", hy.Refused, len(hy.Rows))
	}
	wantRow := rag.CompareRow{Rank: 1, ChunkID: "c0", Name: "1706.03762", Score: 0.9, Fused: 1.0 / 61, Kept: true}
	if diff := cmp.Diff(wantRow, hy.Rows[0]); diff != "" {
		t.Errorf("first row (-want +got):\n%s", diff)
	}
	if hy.Timings.Total <= 0 || hy.Elapsed <= 0 {
		t.Errorf("timings %+v elapsed %v, want set", hy.Timings, hy.Elapsed)
	}
	dense := got[2]
	if !dense.Refused || len(dense.Rows) != 2 || dense.Rows[0].Kept {
		t.Errorf("dense: refused %v rows %+v, want a refusal showing its 2 unkept candidates", dense.Refused, dense.Rows)
	}

	if _, err := p.Compare(t.Context(), rag.Question{Text: "attention"}, []string{"bm25", "dense:nope"}); !errors.Is(err, rag.ErrModelMissing) {
		t.Errorf("unknown model: err = %v, want ErrModelMissing", err)
	}
}

func TestRetrieveLargeTopK(t *testing.T) {
	probs := make([]float64, 80)
	for i := range probs {
		probs[i] = 0.9
	}
	tests := []struct{ topK, want int }{{25, 25}, {1000, rag.MaxTopK}}
	for _, tt := range tests {
		s := &rtSearcher{hits: rtHits(probs...)}
		rr := &rtReranker{}
		p := rtPipeline(t, rag.Config{Searcher: s, Sparse: rtSparseFn, Reranker: rr})
		r, err := p.Retrieve(t.Context(), rag.Question{Text: "attention", TopK: tt.topK})
		if err != nil {
			t.Fatalf("Retrieve: %v", err)
		}
		if s.requests()[0].Limit != tt.want || len(rr.passages) != tt.want || len(r.Hits) != tt.want {
			t.Errorf("TopK %d: limit %d, reranked %d, kept %d; want %d each", tt.topK, s.requests()[0].Limit, len(rr.passages), len(r.Hits), tt.want)
		}
	}
}
