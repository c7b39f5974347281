package rag

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// Retrieval is the evidence found for one query.
type Retrieval struct {
	Query  string `json:"query"`  // the standalone query that was searched
	Method string `json:"method"` // canonical method name, e.g. "hybrid" or "dense:bge_small_en_v1_5"
	// Hits are the candidates kept after the cut, best first: at most TopK. Empty when the
	// error wraps ErrNoEvidence.
	Hits []Scored `json:"hits"`
	// Candidates are every candidate the cut chose from, best first: the reranked top
	// RerankTop (or TopK, if larger), or without a reranker the fused list. Hits is a
	// prefix of it (sharing its array); the rest backs "More sources".
	Candidates []Scored `json:"candidates"`
	// Reranked reports whether the cross-encoder scored the candidates: Scored.Rerank is then
	// a probability; otherwise it is zero and only Hit.Score (the fused score) is set.
	Reranked bool    `json:"reranked"`
	Timings  Timings `json:"timings"` // Embed, Search, Rerank and Total are set
}

// MaxTopK bounds Question.TopK: larger values are treated as MaxTopK.
const MaxTopK = 50

// Retrieve finds the evidence for q.Text, which must already be a standalone query (Ask
// condenses follow-ups first); q.History and q.Selected are ignored.
//
// Steps: embed the query with every dense model the method needs (concurrently, together
// with the BM25 query encoding), one Searcher.Search with all retrievers (the store fuses
// them as Config.Fusion says, Config.Candidates per retriever), rerank the fused top
// Config.RerankTop (or TopK, if larger) in one Reranker call, then cut: candidates sorted
// by rerank probability are kept while the probability is at least Config.MinScore and the
// drop from the previous kept candidate is at most Config.MaxGap, at most q.TopK (else
// Config.TopK, and never more than MaxTopK).
//
// When nothing survives the cut (or the store returns nothing) the error wraps
// ErrNoEvidence and the Retrieval still carries Candidates and Timings: the caller answers
// Refusal. Without a reranker there is no score cut — the first TopK fused hits are kept —
// so the only refusal is an empty search result.
//
// Errors name their stage ("embed query: …", "search: …", "rerank: …"); an unknown method
// wraps ErrUnknownMethod, a method whose dense model is not configured ErrModelMissing.
func (p *Pipeline) Retrieve(ctx context.Context, q Question) (Retrieval, error) {
	return p.retrieve(withSparse(ctx), q, nil)
}

// retrieve is Retrieve steered to some documents, an earlier turn's (see followup.go) or
// those the question names (see Pipeline.ask): they are searched as well, and their passages
// lifted before the cut.
func (p *Pipeline) retrieve(ctx context.Context, q Question, steered []string) (Retrieval, error) {
	start := time.Now()
	r := Retrieval{Query: strings.TrimSpace(q.Text)}
	if r.Query == "" {
		return r, errors.New("retrieve: empty query")
	}
	pl, err := p.resolve(q.Method)
	if err != nil {
		return r, err
	}
	r.Method = pl.method
	topK := q.TopK
	if topK <= 0 {
		topK = p.cfg.TopK
	}
	// Every kept source is reranked: bound what one question can cost.
	topK = min(topK, MaxTopK)
	fail := func(err error) (Retrieval, error) {
		r.Timings.Total = time.Since(start)
		return r, err
	}

	t := time.Now()
	req, err := p.encodeQuery(ctx, pl, r.Query, topK)
	r.Timings.Embed = time.Since(t)
	if err != nil {
		return fail(err)
	}
	req.Filter = q.Filter
	vr := p.vectorReranker()
	req.WithVectors = vr != nil

	var hits []Hit
	if len(req.Dense) > 0 || req.Sparse != nil {
		if err := ctx.Err(); err != nil {
			return fail(fmt.Errorf("search: %w", err))
		}
		t = time.Now()
		hits, err = p.cfg.Searcher.Search(ctx, req)
		if err == nil && len(steered) > 0 && len(q.Filter.DocIDs) == 0 {
			sreq := req
			sreq.Filter.DocIDs = steered
			var sh []Hit
			if sh, err = p.cfg.Searcher.Search(ctx, sreq); err == nil {
				pool := min(max(p.cfg.RerankTop, topK), len(hits))
				hits = append(mergeSteered(hits[:pool], sh), hits[pool:]...)
			}
		}
		r.Timings.Search = time.Since(t)
		if err != nil {
			return fail(fmt.Errorf("search: %w", err))
		}
	}

	if p.cfg.Reranker == nil || len(hits) == 0 {
		r.Candidates = make([]Scored, len(hits))
		for i, h := range hits {
			r.Candidates[i] = Scored{Hit: h}
		}
		r.Hits = r.Candidates[:min(topK, len(r.Candidates))]
	} else {
		if err := ctx.Err(); err != nil {
			return fail(fmt.Errorf("rerank: %w", err))
		}
		t = time.Now()
		// A question asking for more sources than RerankTop gets them all reranked.
		r.Candidates, err = p.rerank(ctx, r.Query, queryVector(req, vr), hits[:min(max(p.cfg.RerankTop, topK)+steerPool(steered), len(hits))])
		r.Timings.Rerank = time.Since(t)
		if err != nil {
			return fail(fmt.Errorf("rerank: %w", err))
		}
		r.Reranked = true
		if _, similarity := p.cfg.Reranker.(VectorReranker); similarity && p.cfg.FusedWeight > 0 {
			r.Candidates = fusedPrior(r.Candidates, p.cfg.FusedWeight)
		}
		if p.cfg.DocWeight > 0 {
			r.Candidates = documentPrior(r.Candidates, p.cfg.DocWeight)
		}
		r.Candidates = steer(r.Candidates, steered)
		r.Hits = Cut(r.Candidates, p.cfg.MinScore, p.cfg.MaxGap, topK)
	}
	r.Timings.Total = time.Since(start)
	p.log.DebugContext(ctx, "retrieved", "method", r.Method, "candidates", len(r.Candidates),
		"kept", len(r.Hits), "embed", r.Timings.Embed, "search", r.Timings.Search,
		"rerank", r.Timings.Rerank)
	if len(r.Hits) == 0 {
		return r, fmt.Errorf("retrieve %s: %w", r.Method, ErrNoEvidence)
	}
	return r, nil
}

// encodeQuery embeds the query with every dense model of the plan and encodes it for BM25,
// concurrently, and builds the search request. An all-stopword query has an empty BM25
// vector; that retriever is then left out rather than searched for nothing.
func (p *Pipeline) encodeQuery(ctx context.Context, pl retrievalPlan, query string, topK int) (SearchRequest, error) {
	req := SearchRequest{
		Dense: make([]DenseQuery, len(pl.dense)),
		// The fused list must be long enough to feed the reranker and fill TopK.
		Limit:  max(p.cfg.Candidates, p.cfg.RerankTop, topK),
		Fusion: p.cfg.Fusion,
	}
	var sparse SparseVector
	g, gctx := errgroup.WithContext(ctx)
	for i, idx := range pl.dense {
		e := p.cfg.Embedders[idx]
		g.Go(func() error {
			v, err := e.EmbedQuery(gctx, query)
			if err != nil {
				return fmt.Errorf("embed query: %s: %w", e.Info().Name, err)
			}
			if len(v) == 0 {
				return fmt.Errorf("embed query: %s: empty vector", e.Info().Name)
			}
			req.Dense[i] = DenseQuery{Model: e.Info().Name, Vector: v}
			return nil
		})
	}
	if pl.sparse {
		g.Go(func() error {
			enc, err := p.sparse(gctx)
			if err != nil {
				return fmt.Errorf("embed query: bm25: %w", err)
			}
			sparse = enc.EncodeQuery(query)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return req, err
	}
	if pl.sparse && len(sparse.Indices) > 0 {
		req.Sparse = &sparse
	}
	if req.Fusion.Method == "weighted" && len(p.cfg.Fusion.Weights) > 0 {
		// Weights are configured for the full hybrid set: one per dense model in
		// configuration order, then BM25. Pick the ones this request's retrievers use.
		// Without weights every retriever weighs 1.
		w, err := p.weightsFor(pl, req.Sparse != nil)
		if err != nil {
			return req, err
		}
		req.Fusion.Weights = w
	}
	return req, nil
}

// weightsFor selects the configured fusion weights of the retrievers a plan searches.
func (p *Pipeline) weightsFor(pl retrievalPlan, sparse bool) ([]float64, error) {
	all := p.cfg.Fusion.Weights
	n := len(p.cfg.Embedders)
	if p.cfg.Sparse != nil {
		n++
	}
	if len(all) != n {
		return nil, fmt.Errorf("search: weighted fusion needs %d weights (one per dense model, then bm25), got %d", n, len(all))
	}
	var w []float64
	for _, i := range pl.dense {
		w = append(w, all[i])
	}
	if sparse {
		w = append(w, all[len(p.cfg.Embedders)])
	}
	return w, nil
}

// vectorReranker returns the configured reranker when it can score stored vectors and
// Config.RerankText does not ask for the text path; else nil.
func (p *Pipeline) vectorReranker() VectorReranker {
	if p.cfg.RerankText {
		return nil
	}
	vr, _ := p.cfg.Reranker.(VectorReranker)
	return vr
}

// queryVector is the query as vr's model embedded it for the search, or nil when the
// search did not use that model (BM25 alone): vr then embeds the query itself.
func queryVector(req SearchRequest, vr VectorReranker) []float32 {
	if vr == nil {
		return nil
	}
	for _, d := range req.Dense {
		if d.Model == vr.VectorModel() {
			return d.Vector
		}
	}
	return nil
}

// rerank scores hits in one Reranker call and returns them by descending probability;
// equal probabilities keep the fused order. A reranker that reads stored vectors
// (VectorReranker) scores the hits that carry its model's vector from it; only the rest
// are embedded, by Score. Embedding ten 400-token passages was about 95% of a question's
// time.
func (p *Pipeline) rerank(ctx context.Context, query string, queryVec []float32, hits []Hit) ([]Scored, error) {
	scores := make([]float64, len(hits))
	todo := make([]int, 0, len(hits)) // hits scored from their text
	if vr := p.vectorReranker(); vr != nil {
		model := vr.VectorModel()
		var idx []int
		var vecs [][]float32
		for i, h := range hits {
			if v := h.Vectors[model]; len(v) > 0 {
				idx = append(idx, i)
				vecs = append(vecs, v)
			} else {
				todo = append(todo, i)
			}
		}
		if len(vecs) > 0 {
			s, err := vr.ScoreVectors(ctx, query, queryVec, vecs)
			if err != nil {
				return nil, err
			}
			if len(s) != len(vecs) {
				return nil, fmt.Errorf("%d scores for %d vectors", len(s), len(vecs))
			}
			for j, i := range idx {
				scores[i] = s[j]
			}
		}
	} else {
		for i := range hits {
			todo = append(todo, i)
		}
	}
	if len(todo) > 0 {
		passages := make([]string, len(todo))
		for j, i := range todo {
			passages[j] = rerankPassage(hits[i].Chunk)
		}
		s, err := p.cfg.Reranker.Score(ctx, query, passages)
		if err != nil {
			return nil, err
		}
		if len(s) != len(passages) {
			return nil, fmt.Errorf("%d scores for %d passages", len(s), len(passages))
		}
		for j, i := range todo {
			scores[i] = s[j]
		}
	}
	out := make([]Scored, len(hits))
	for i, h := range hits {
		out[i] = Scored{Hit: h, Rerank: scores[i]}
	}
	sortByRerank(out)
	return out, nil
}

// fusedPrior blends each candidate's reranker probability with its retrieval score
// relative to the best candidate's, scaled by the best probability: score' = (1-w)·score +
// w·best·fused/fusedMax. A similarity reranker scores with the dense model that also
// retrieved, so on its own it re-orders hybrid candidates by dense similarity alone and
// the lexical evidence of BM25 only decides which candidates it sees; the blend keeps that
// evidence in the order. It never lifts a candidate above the best probability, so the
// refusal gate is not loosened.
func fusedPrior(cands []Scored, w float64) []Scored {
	best, top := 0.0, 0.0
	for _, c := range cands {
		best, top = max(best, c.Rerank), max(top, c.Score)
	}
	out := make([]Scored, len(cands))
	for i, c := range cands {
		f := 0.0
		if top > 0 {
			f = max(c.Score, 0) / top
		}
		c.Rerank = (1-w)*c.Rerank + w*best*f
		out[i] = c
	}
	sortByRerank(out)
	return out
}

// documentPrior blends each candidate's reranker probability with the best probability of
// any candidate from the same document (max-passage document relevance): score' =
// (1-w)·score + w·best(doc). A paper whose best passage answers the question lends weight to
// its other candidate passages, so sources gather on the paper the question is about
// rather than on papers that merely mention the topic. The cut then reads the blended
// scores; the blend never raises a candidate above its document's best, so a document
// with no strong passage is not lifted over the refusal gate.
func documentPrior(cands []Scored, w float64) []Scored {
	best := map[string]float64{}
	for _, c := range cands {
		best[c.Chunk.DocID] = max(best[c.Chunk.DocID], c.Rerank)
	}
	out := make([]Scored, len(cands))
	for i, c := range cands {
		c.Rerank = (1-w)*c.Rerank + w*best[c.Chunk.DocID]
		out[i] = c
	}
	sortByRerank(out)
	return out
}

// rerankPassage is what the reranker reads for a chunk: exactly the text that was embedded
// at indexing, so a reranker that embeds passages (onnx.SimilarityReranker) finds them in
// its vector cache and scores them as it was calibrated. Prefixing the innermost section
// heading was tried on the evaluation questions: no better within noise (hybrid MRR 0.95
// vs 0.93, page-level MRR 0.78 vs 0.83).
func rerankPassage(c Chunk) string { return c.Text }

// Cut keeps the candidates worth citing from a list sorted by descending Rerank: it stops
// at the first candidate below minScore, at the first drop larger than maxGap from the
// previous candidate, and after topK candidates. It returns a prefix of cands.
//
// The gap rule keeps one strong passage from being padded with weak ones: probabilities
// 0.97, 0.91, 0.34 keep two, because the evidence falls off a cliff after the second.
func Cut(cands []Scored, minScore, maxGap float64, topK int) []Scored {
	n := 0
	for i, c := range cands {
		if n >= topK || c.Rerank < minScore {
			break
		}
		if i > 0 && cands[i-1].Rerank-c.Rerank > maxGap {
			break
		}
		n++
	}
	return cands[:n]
}

// sortByRerank orders candidates by descending probability; equal ones keep their order
// (the fused order), so ties stay deterministic.
func sortByRerank(out []Scored) {
	slices.SortStableFunc(out, func(a, b Scored) int {
		switch {
		case a.Rerank > b.Rerank:
			return -1
		case a.Rerank < b.Rerank:
			return 1
		}
		return 0
	})
}
