package milvus

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/milvus-io/milvus-sdk-go/v2/client"
	"github.com/milvus-io/milvus-sdk-go/v2/entity"
	"golang.org/x/sync/errgroup"

	"github.com/footnote-dev/footnote/rag"
)

// sub is one retriever of a search.
type sub struct {
	field  string
	metric entity.MetricType
	vector entity.Vector
	param  entity.SearchParam
	expr   string
}

// Search returns at most req.Limit hits, best first. One retriever is a plain search on its
// field. Several are fused: RRF by one Milvus HybridSearch (its RRF ranker computes
// Σ 1/(k + rank), as rag.Fuse does); weighted fusion by rag.Fuse over one search per
// retriever, because Milvus' WeightedRanker normalises scores differently (arctan and
// (x+1)/2 rather than min-max) and would rank unlike the embedded store. Hits of document
// versions being replaced are dropped (see the package comment); ties go to the smaller
// chunk id.
func (s *Store) Search(ctx context.Context, req rag.SearchRequest) ([]rag.Hit, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = 20
	}
	n := len(req.Dense)
	if req.Sparse != nil {
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("search: no retriever (neither dense nor sparse query)")
	}
	switch req.Fusion.Method {
	case "", "rrf", "weighted":
	default:
		return nil, fmt.Errorf("search: unknown fusion method %q (want rrf or weighted)", req.Fusion.Method)
	}
	if req.Fusion.Method == "weighted" && len(req.Fusion.Weights) > 0 && len(req.Fusion.Weights) != n {
		return nil, fmt.Errorf("search: %d fusion weights for %d retrievers", len(req.Fusion.Weights), n)
	}
	expr := filterExpr(req.Filter)
	out := s.outputFields(req.WithVectors)
	// subs holds one retriever per list position, dense first then sparse; nil marks a
	// retriever that cannot match anything (a query without terms).
	subs := make([]*sub, 0, n)
	for _, d := range req.Dense {
		m, ok := s.byName[d.Model]
		if !ok {
			return nil, fmt.Errorf("search: %w", s.unknownModel(d.Model))
		}
		if err := checkDense(m, d.Vector); err != nil {
			return nil, fmt.Errorf("search: query: %w", err)
		}
		mt, _ := metricType(m.Metric)
		sp, err := s.searchParam(d.Model, limit+10)
		if err != nil {
			return nil, fmt.Errorf("search: %s", plain(err))
		}
		subs = append(subs, &sub{d.Model, mt, entity.FloatVector(d.Vector), sp, andExpr(expr, hasPrefix+d.Model+" == true")})
	}
	if req.Sparse != nil {
		e, err := sparseEmbedding(*req.Sparse, false)
		if err != nil {
			return nil, fmt.Errorf("search: query: %w", err)
		}
		if e.Len() == 0 {
			// Milvus rejects empty sparse vectors; an empty ranking stands in.
			subs = append(subs, nil)
		} else {
			sp, err := entity.NewIndexSparseInvertedSearchParam(0)
			if err != nil {
				return nil, fmt.Errorf("search: %s", plain(err))
			}
			subs = append(subs, &sub{fBM25, entity.IP, e, sp, expr})
		}
	}
	var live []*sub
	for _, sb := range subs {
		if sb != nil {
			live = append(live, sb)
		}
	}
	switch {
	case len(live) == 0:
		return nil, nil
	case n == 1:
		hits, err := s.searchOne(ctx, live[0], limit, out)
		if err != nil {
			return nil, fmt.Errorf("search %s: %w", s.coll, err)
		}
		return hits, nil
	case req.Fusion.Method == "weighted" || len(live) == 1:
		lists := make([][]rag.Hit, len(subs))
		g, gctx := errgroup.WithContext(ctx)
		for i, sb := range subs {
			if sb == nil {
				continue
			}
			g.Go(func() (err error) {
				lists[i], err = s.searchOne(gctx, sb, limit, out)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, fmt.Errorf("search %s: %w", s.coll, err)
		}
		return rag.Fuse(lists, req.Fusion, limit), nil
	}
	hits, err := s.hybrid(ctx, live, req.Fusion.K, limit, out)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", s.coll, err)
	}
	return hits, nil
}

// searchOne runs one retriever: its best limit visible hits, best first, ties by chunk id.
func (s *Store) searchOne(ctx context.Context, sb *sub, limit int, out []string) ([]rag.Hit, error) {
	// Ask for more than limit: ties at the cut are then broken by chunk id here (as in the
	// embedded store) rather than arbitrarily, and hits of versions being replaced (dropped
	// below) do not leave the list short.
	fetch := min(limit+10, 16384)
	var res []client.SearchResult
	err := s.do(ctx, "search "+sb.field, func(ctx context.Context) (err error) {
		res, err = s.c.Search(ctx, s.coll, nil, sb.expr, out, []entity.Vector{sb.vector}, sb.field, sb.metric, fetch, sb.param)
		return err
	})
	if err != nil {
		return nil, err
	}
	// L2 is a distance; Hit.Score is higher-is-better.
	return s.hits(ctx, res, limit, sb.metric == entity.L2, sb.field == fBM25)
}

// hybrid fuses live retrievers by reciprocal rank in one Milvus HybridSearch.
func (s *Store) hybrid(ctx context.Context, live []*sub, k, limit int, out []string) ([]rag.Hit, error) {
	// Each retriever contributes its best limit candidates, as the fusion contract says;
	// the fused list is the whole union, cut after the tie-break.
	reqs := make([]*client.ANNSearchRequest, len(live))
	for i, sb := range live {
		reqs[i] = client.NewANNSearchRequest(sb.field, sb.metric, sb.expr, []entity.Vector{sb.vector}, sb.param, limit)
	}
	if k <= 0 {
		k = 60
	}
	var res []client.SearchResult
	err := s.do(ctx, "hybrid search", func(ctx context.Context) (err error) {
		res, err = s.c.HybridSearch(ctx, s.coll, nil, min(limit*len(live), 16384), out,
			client.NewRRFReranker().WithK(float64(k)), reqs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.hits(ctx, res, limit, false, false)
}

// outputFields are the fields a search returns: the chunk's, and with vectors every dense
// field and its presence flag (rag.SearchRequest.WithVectors).
func (s *Store) outputFields(vectors bool) []string {
	out := s.scalars()
	if vectors {
		for _, m := range s.models {
			out = append(out, m.Name, hasPrefix+m.Name)
		}
	}
	return out
}

// hits turns a search result into visible hits, best first, ties by chunk id, at most limit.
func (s *Store) hits(ctx context.Context, res []client.SearchResult, limit int, negate, sparse bool) ([]rag.Hit, error) {
	if len(res) == 0 || res[0].ResultCount == 0 {
		return nil, nil
	}
	if res[0].Err != nil {
		return nil, fmt.Errorf("search: %s", plain(res[0].Err))
	}
	r := newRows(res[0].Fields)
	vis, err := s.visibleRows(ctx, r)
	if err != nil {
		return nil, err
	}
	hits := make([]rag.Hit, 0, r.n)
	for i := 0; i < r.n && i < len(res[0].Scores); i++ {
		if !vis[i] {
			continue
		}
		score := float64(res[0].Scores[i])
		if negate {
			score = -score
		}
		if sparse && score < 1e-30 {
			continue // matched only a chunk's empty-vector marker (see emptyMark)
		}
		h := rag.Hit{Chunk: r.chunk(i), Score: score}
		for _, m := range s.models {
			if r.cols[m.Name] != nil && r.bool(hasPrefix+m.Name, i) {
				if h.Vectors == nil {
					h.Vectors = make(map[string][]float32, len(s.models))
				}
				h.Vectors[m.Name] = r.dense(m.Name, i)
			}
		}
		hits = append(hits, h)
	}
	if r.err != nil {
		return nil, r.err
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Chunk.ID < hits[j].Chunk.ID
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

func andExpr(a, b string) string {
	if a == "" {
		return b
	}
	return "(" + a + ") and " + b
}

// visibleRows reports for each chunk row whether it belongs to its document's current
// version (see the package comment).
func (s *Store) visibleRows(ctx context.Context, r *rows) ([]bool, error) {
	var ids []string
	seen := map[string]bool{}
	for i := 0; i < r.n; i++ {
		if d := r.str(fDocID, i); !seen[d] {
			seen[d] = true
			ids = append(ids, d)
		}
	}
	recs, err := s.records(ctx, ids)
	if err != nil {
		return nil, err
	}
	keep := make([]bool, r.n)
	for i := range keep {
		rec, ok := recs[r.str(fDocID, i)]
		keep[i] = ok && rec.visible(r.str(fVersion, i))
	}
	return keep, r.err
}

// Chunks returns the chunks with the given ids, in the order asked; an unknown id (or one
// of a replaced document version) is an error wrapping rag.ErrNotFound.
func (s *Store) Chunks(ctx context.Context, ids []string) ([]rag.Chunk, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	found := map[string]rag.Chunk{}
	uniq := make([]string, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	for start := 0; start < len(uniq); start += exprBatch {
		part := uniq[start:min(start+exprBatch, len(uniq))]
		var rs client.ResultSet
		if err := s.do(ctx, "read chunks", func(ctx context.Context) (err error) {
			rs, err = s.query(ctx, s.coll, nil, fChunkID+" in "+quoteList(part), s.scalars())
			return err
		}); err != nil {
			return nil, fmt.Errorf("chunks: %w", err)
		}
		r := newRows(rs)
		vis, err := s.visibleRows(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("chunks: %w", err)
		}
		for i := 0; i < r.n; i++ {
			if vis[i] {
				c := r.chunk(i)
				found[c.ID] = c
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("chunks: %w", r.err)
		}
	}
	out := make([]rag.Chunk, 0, len(ids))
	for _, id := range ids {
		c, ok := found[id]
		if !ok {
			return nil, fmt.Errorf("chunk %s: %w", id, rag.ErrNotFound)
		}
		out = append(out, c)
	}
	return out, nil
}

// filterExpr is the Milvus boolean expression for f; "" means no restriction.
func filterExpr(f rag.Filter) string {
	var parts []string
	if len(f.DocIDs) > 0 {
		parts = append(parts, fDocID+" in "+quoteList(f.DocIDs))
	}
	if f.SectionPrefix != "" {
		parts = append(parts, fSection0+" like "+likePrefix(f.SectionPrefix))
	}
	return strings.Join(parts, " and ")
}
