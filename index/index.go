// Package index turns files into stored, searchable chunks: it walks folders, parses PDFs
// (index/pdf) and text, Markdown and code files (index/textfile), cuts section-aware chunks
// (index/chunk), encodes them (BM25 always, dense per configured model) and writes each
// document to a Store all-or-nothing. The stores — index/embedded (SQLite, the default) and
// index/milvus — implement both Store and rag.Searcher.
package index

import (
	"context"

	"github.com/footnote-dev/footnote/rag"
)

// EncodedChunk is a chunk with its encodings, ready to store.
type EncodedChunk struct {
	rag.Chunk
	Sparse rag.SparseVector     // BM25 document vector
	Terms  int                  // analysed term count (BM25 document length)
	Dense  map[string][]float32 // model name -> vector, one entry per configured model
}

// Stats are corpus statistics a store keeps current on every Replace and Delete: the BM25
// query encoder needs them (IDF) and `footnote docs`/`/stats` show them.
type Stats struct {
	Documents int            `json:"documents"`
	Chunks    int            `json:"chunks"` // BM25 N: every chunk is a BM25 document
	Terms     int64          `json:"terms"`  // sum of chunk term counts; avgdl = Terms/Chunks
	DF        map[uint32]int `json:"-"`      // chunks containing each term hash
}

// Store is where ingestion writes. Implementations also implement rag.Searcher.
type Store interface {
	rag.Searcher

	// Models are the dense models the store holds fields for.
	Models() []rag.ModelInfo

	// Document returns one document; an unknown id wraps rag.ErrNotFound.
	Document(ctx context.Context, id string) (rag.Document, error)
	// Documents lists every document, ordered by source.
	Documents(ctx context.Context) ([]rag.Document, error)

	// Replace stores doc and its chunks, replacing every chunk of an earlier version of the
	// same doc.ID, all-or-nothing: after an error or a cancelled ctx the store holds the old
	// version or the new one, never a mix. Stats are updated in the same step.
	Replace(ctx context.Context, doc rag.Document, chunks []EncodedChunk) error
	// Delete removes a document and its chunks; deleting an unknown id is not an error.
	Delete(ctx context.Context, docID string) error

	// Stats returns the current corpus statistics.
	Stats(ctx context.Context) (Stats, error)

	// MissingDense lists up to limit chunks that have no vector for model yet (a model added
	// after they were indexed); PutDense stores those vectors. Together they back-fill a
	// new model without re-parsing.
	MissingDense(ctx context.Context, model string, limit int) ([]rag.Chunk, error)
	PutDense(ctx context.Context, model string, ids []string, vectors [][]float32) error

	Close() error
}

// Counter is implemented by stores that count their corpus (Stats without DF) cheaply,
// for health checks and "Searching N papers…" placeholders.
type Counter interface {
	Counts(ctx context.Context) (Stats, error)
}

// QueryStatser is implemented by stores that answer what a BM25 query encoder needs for
// one query — the chunk count N and the document frequencies of the query's terms (absent:
// in no chunk) — without reading the whole vocabulary.
type QueryStatser interface {
	QueryStats(ctx context.Context, terms []uint32) (chunks int, df map[uint32]int, err error)
}

// Counts returns the store's corpus totals: Counter's cheap path when the store has one,
// else Stats without its document frequencies.
func Counts(ctx context.Context, s Store) (Stats, error) {
	if c, ok := s.(Counter); ok {
		return c.Counts(ctx)
	}
	st, err := s.Stats(ctx)
	st.DF = nil
	return st, err
}
