package onnx

import (
	"context"
	"fmt"

	"github.com/footnote-dev/footnote/rag"
)

var _ rag.VectorReranker = (*SimilarityReranker)(nil)

// VectorModel names the embedder whose stored passage vectors ScoreVectors reads.
func (s *SimilarityReranker) VectorModel() string { return s.e.Info().Name }

// ScoreVectors maps the cosine similarity of the query's embedding and each stored passage
// vector through the same calibration as Score. The stores hold exactly the vectors Score
// would compute (the indexer embeds each chunk's text with EmbedDocuments), so the
// probabilities agree within float rounding, without running the model over the passages.
// queryVec nil embeds query with its instruction, as Score does.
func (s *SimilarityReranker) ScoreVectors(ctx context.Context, query string, queryVec []float32, passages [][]float32) ([]float64, error) {
	q := queryVec
	if q == nil {
		var err error
		if q, err = s.e.EmbedQuery(ctx, query); err != nil {
			return nil, err
		}
	}
	dim := s.e.Info().Dim
	if len(q) != dim {
		return nil, fmt.Errorf("similarity %s: query vector of dimension %d, want %d", s.VectorModel(), len(q), dim)
	}
	out := make([]float64, len(passages))
	for i, p := range passages {
		if len(p) != dim {
			return nil, fmt.Errorf("similarity %s: passage vector %d of dimension %d, want %d", s.VectorModel(), i, len(p), dim)
		}
		out[i] = s.probability(cosine(q, p))
	}
	return out, nil
}

// probability is the calibrated map from cosine similarity to relevance probability.
func (s *SimilarityReranker) probability(cos float64) float64 {
	return sigmoid(s.scale * (cos - s.center))
}
