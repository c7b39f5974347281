package milvus

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/milvus-io/milvus-sdk-go/v2/client"
	"github.com/milvus-io/milvus-sdk-go/v2/entity"

	"github.com/footnote-dev/footnote/rag"
)

// Search returns at most req.Limit hits, best first: one retriever is a plain search on its
// field, several are one HybridSearch fused by Milvus (RRF with k = req.Fusion.K, or
// weighted). Hits of document versions being replaced are dropped (see the package comment).
func (s *Store) Search(ctx context.Context, req rag.SearchRequest) ([]rag.Hit, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = 20
	}
	expr := filterExpr(req.Filter)
	type sub struct {
		field  string
		metric entity.MetricType
		vector entity.Vector
		param  entity.SearchParam
		expr   string
	}
	var subs []sub
	var weights []float64
	weighted := strings.EqualFold(req.Fusion.Method, "weighted")
	nRetrievers := len(req.Dense)
	if req.Sparse != nil {
		nRetrievers++
	}
	if weighted && nRetrievers > 1 && len(req.Fusion.Weights) != nRetrievers {
		return nil, fmt.Errorf("search: weighted fusion needs %d weights, got %d", nRetrievers, len(req.Fusion.Weights))
	}
	for i, d := range req.Dense {
		m, ok := s.byName[d.Model]
		if !ok {
			return nil, fmt.Errorf("search: %w", s.unknownModel(d.Model))
		}
		if len(d.Vector) != m.Dim {
			return nil, fmt.Errorf("search: %s query vector has %d dimensions, want %d", d.Model, len(d.Vector), m.Dim)
		}
		mt, _ := metricType(m.Metric)
		sp, err := s.searchParam(d.Model, limit+10)
		if err != nil {
			return nil, fmt.Errorf("search: %s", plain(err))
		}
		subs = append(subs, sub{d.Model, mt, entity.FloatVector(d.Vector), sp, andExpr(expr, hasPrefix+d.Model+" == true")})
		if weighted && nRetrievers > 1 {
			weights = append(weights, req.Fusion.Weights[i])
		}
	}
	if req.Sparse != nil {
		e, err := sparseEmbedding(*req.Sparse, false)
		if err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		// A query without terms matches nothing; Milvus rejects empty sparse vectors, and
		// leaving the retriever out fuses the others exactly as an empty ranking would.
		if e.Len() > 0 {
			sp, err := entity.NewIndexSparseInvertedSearchParam(0)
			if err != nil {
				return nil, fmt.Errorf("search: %s", plain(err))
			}
			subs = append(subs, sub{fBM25, entity.IP, e, sp, expr})
			if weighted && nRetrievers > 1 {
				weights = append(weights, req.Fusion.Weights[len(req.Dense)])
			}
		}
	}
	if len(subs) == 0 {
		return nil, nil
	}

	// Ask for more than limit: ties at the cut are then broken by chunk id here (as in the
	// embedded store) rather than arbitrarily, and hits of versions being replaced (dropped
	// below) do not leave the list short.
	fetch := min(limit+10, 16384)
	var res []client.SearchResult
	var err error
	if len(subs) == 1 {
		sb := subs[0]
		err = s.do(ctx, "search "+sb.field, func(ctx context.Context) (err error) {
			res, err = s.c.Search(ctx, s.coll, nil, sb.expr, chunkScalars, []entity.Vector{sb.vector}, sb.field, sb.metric, fetch, sb.param)
			return err
		})
	} else {
		// Each retriever contributes its best limit candidates, as the fusion contract says;
		// the fused list is cut after the tie-break.
		reqs := make([]*client.ANNSearchRequest, len(subs))
		for i, sb := range subs {
			reqs[i] = client.NewANNSearchRequest(sb.field, sb.metric, sb.expr, []entity.Vector{sb.vector}, sb.param, limit)
		}
		var rr client.Reranker
		if weighted {
			rr = client.NewWeightedReranker(weights)
		} else {
			k := req.Fusion.K
			if k <= 0 {
				k = 60
			}
			rr = client.NewRRFReranker().WithK(float64(k))
		}
		err = s.do(ctx, "hybrid search", func(ctx context.Context) (err error) {
			res, err = s.c.HybridSearch(ctx, s.coll, nil, min(limit*len(subs), 16384), chunkScalars, rr, reqs)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", s.coll, err)
	}
	if len(res) == 0 || res[0].ResultCount == 0 {
		return nil, nil
	}
	if res[0].Err != nil {
		return nil, fmt.Errorf("search %s: %s", s.coll, plain(res[0].Err))
	}
	r := newRows(res[0].Fields)
	vis, err := s.visibleRows(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", s.coll, err)
	}
	// L2 is a distance; Hit.Score is higher-is-better.
	negate := len(subs) == 1 && subs[0].metric == entity.L2
	onlySparse := len(subs) == 1 && subs[0].field == fBM25
	hits := make([]rag.Hit, 0, r.n)
	for i := 0; i < r.n && i < len(res[0].Scores); i++ {
		if !vis[i] {
			continue
		}
		score := float64(res[0].Scores[i])
		if negate {
			score = -score
		}
		if onlySparse && score < 1e-30 {
			continue // matched only a chunk's empty-vector marker (see emptyMark)
		}
		hits = append(hits, rag.Hit{Chunk: r.chunk(i), Score: score})
	}
	if r.err != nil {
		return nil, fmt.Errorf("search %s: %w", s.coll, r.err)
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
			rs, err = s.c.Query(ctx, s.coll, nil, fChunkID+" in "+quoteList(part), chunkScalars)
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
