package rag

import "context"

// VectorReranker is a Reranker that can also score candidates from the dense vectors the
// store already holds for them, so retrieval does not embed every candidate passage again.
// onnx.SimilarityReranker is one: its score is a function of the cosine similarity between
// the query's and the passage's embeddings, and the stored vector is the passage's
// embedding. A cross-encoder reads text and does not implement it.
type VectorReranker interface {
	Reranker
	// VectorModel names the dense model (ModelInfo.Name) whose stored vectors ScoreVectors
	// reads; a candidate without that vector is scored by Score instead.
	VectorModel() string
	// ScoreVectors returns one probability per passage vector, in order: what Score would
	// return for the passages the vectors were embedded from. queryVec is the query
	// embedded by VectorModel's embedder with its query instruction (as retrieval embeds
	// it); nil means the reranker embeds query itself.
	ScoreVectors(ctx context.Context, query string, queryVec []float32, passages [][]float32) ([]float64, error)
}
