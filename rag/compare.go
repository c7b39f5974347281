package rag

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MethodResult is one method's column of `footnote compare`.
type MethodResult struct {
	Method   string        `json:"method"` // canonical method name
	Rows     []CompareRow  `json:"rows"`   // best first
	Refused  bool          `json:"refused"`
	Reranked bool          `json:"reranked"`
	Timings  Timings       `json:"timings"`
	Elapsed  time.Duration `json:"elapsed_ns"` // wall time of the whole retrieval
}

// CompareRow is one ranked candidate of a method.
type CompareRow struct {
	Rank      int      `json:"rank"` // from 1
	ChunkID   string   `json:"chunk_id"`
	Name      string   `json:"name"` // document file name without extension
	Title     string   `json:"title"`
	Section   []string `json:"section,omitempty"`
	PageStart int      `json:"page_start,omitempty"`
	PageEnd   int      `json:"page_end,omitempty"`
	LineStart int      `json:"line_start,omitempty"`
	LineEnd   int      `json:"line_end,omitempty"`
	Score     float64  `json:"score"`       // reranker probability when reranked, else the fused score
	Fused     float64  `json:"fused_score"` // the store's (fused) retrieval score
	Kept      bool     `json:"kept"`        // survived the cut: would be a source of the answer
}

// Compare runs the same question through each method in turn (sequentially, so their times
// compare) and returns one result per method, in the order given; nil methods means
// Methods(). Each result lists the method's top candidates — TopK rows, more when more
// were kept — marking those that survived the cut, so a method whose candidates all fall
// below it shows them with Refused set. Every method is resolved before any runs: an
// unknown method or missing model fails the whole comparison.
func (p *Pipeline) Compare(ctx context.Context, q Question, methods []string) ([]MethodResult, error) {
	if len(methods) == 0 {
		methods = p.Methods()
	}
	for _, m := range methods {
		if _, err := p.resolve(m); err != nil {
			return nil, err
		}
	}
	topK := q.TopK
	if topK <= 0 {
		topK = p.cfg.TopK
	}
	out := make([]MethodResult, 0, len(methods))
	for _, m := range methods {
		mq := q
		mq.Method = m
		start := time.Now()
		r, err := p.Retrieve(ctx, mq)
		elapsed := time.Since(start)
		if err != nil && !errors.Is(err, ErrNoEvidence) {
			return out, fmt.Errorf("compare %s: %w", m, err)
		}
		res := MethodResult{
			Method:   r.Method,
			Refused:  err != nil,
			Reranked: r.Reranked,
			Timings:  r.Timings,
			Elapsed:  elapsed,
		}
		n := min(max(topK, len(r.Hits)), len(r.Candidates))
		for i, c := range r.Candidates[:n] {
			score := c.Score
			if r.Reranked {
				score = c.Rerank
			}
			res.Rows = append(res.Rows, CompareRow{
				Rank:      i + 1,
				ChunkID:   c.Chunk.ID,
				Name:      c.Chunk.Name,
				Title:     c.Chunk.Title,
				Section:   c.Chunk.Section,
				PageStart: c.Chunk.PageStart,
				PageEnd:   c.Chunk.PageEnd,
				LineStart: c.Chunk.LineStart,
				LineEnd:   c.Chunk.LineEnd,
				Score:     score,
				Fused:     c.Score,
				Kept:      i < len(r.Hits),
			})
		}
		out = append(out, res)
	}
	return out, nil
}
