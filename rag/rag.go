// Package rag is footnote's question pipeline: it turns a question (and the thread so far)
// into retrieved, reranked and cited evidence, and from that into an answer or an explicit
// refusal. It declares the small interfaces it consumes — Searcher, Embedder, SparseEncoder,
// Reranker, Generator — and the types they exchange; implementations live in leaf packages
// (rag/bm25, rag/onnx, rag/remote, rag/generate) and in index (the stores).
//
// rag never imports index, bot or a platform SDK: cmd hands it a store.
package rag

import (
	"context"
	"errors"
	"time"
)

// Refusal is the exact text footnote answers when the documents do not hold the answer.
const Refusal = "Not found in indexed documents."

// ErrNoEvidence reports that retrieval found nothing that survived the score cut.
var ErrNoEvidence = errors.New("no evidence in indexed documents")

// ErrNotFound reports an unknown chunk or document id.
var ErrNotFound = errors.New("not found")

// ErrModelMissing reports that a model file or the ONNX Runtime library is not installed.
// Errors wrapping it name the missing file and the command that installs it.
var ErrModelMissing = errors.New("model not installed")

// Document is one indexed source file.
type Document struct {
	ID        string    `json:"doc_id"` // stable per source path: re-indexing a changed file replaces it
	Source    string    `json:"source"` // path as given to the indexer, cleaned and absolute
	Name      string    `json:"name"`   // file name without directory and extension, e.g. "1706.03762"
	Kind      string    `json:"kind"`   // "pdf", "markdown", "text" or "code"
	Title     string    `json:"title"`  // from metadata or the first page's largest lines
	Authors   []string  `json:"authors,omitempty"`
	Pages     int       `json:"pages,omitempty"` // PDF page count; 0 for line-based files
	Lines     int       `json:"lines,omitempty"` // line count for line-based files
	Hash      string    `json:"content_hash"`    // sha256 hex of the file's bytes
	Chunks    int       `json:"chunks"`          // number of chunks stored
	IndexedAt time.Time `json:"indexed_at"`      // when this version was stored
}

// Chunk is one retrievable passage of a document. Pages are 1-based and inclusive; line-based
// files leave them zero and set LineStart/LineEnd instead.
type Chunk struct {
	ID        string   `json:"chunk_id"` // derived from the document's content hash and Index
	DocID     string   `json:"doc_id"`
	Index     int      `json:"index"` // position within the document, from 0
	Text      string   `json:"text"`
	Tokens    int      `json:"tokens"`
	PageStart int      `json:"page_start,omitempty"`
	PageEnd   int      `json:"page_end,omitempty"`
	LineStart int      `json:"line_start,omitempty"`
	LineEnd   int      `json:"line_end,omitempty"`
	Section   []string `json:"section,omitempty"` // outermost first: ["3 Model Architecture", "3.1 Encoder and Decoder Stacks"]
	CharStart int      `json:"char_start"`        // offsets into the document's extracted text
	CharEnd   int      `json:"char_end"`
	// PageBreaks are the byte offsets into Text at which pages PageStart+1, PageStart+2, …
	// begin, so a quoted sentence can be cited with its own page; empty when the chunk lies
	// on one page or the store predates the field.
	PageBreaks []int `json:"page_breaks,omitempty"`

	// Denormalised from the document so a search hit can be cited without a second lookup.
	Source string `json:"source"`
	Name   string `json:"name"`
	Title  string `json:"title"`
}

// SparseVector is a sparse embedding: parallel slices with Indices strictly increasing.
// BM25 uses a hash of the analysed term as the index, so no vocabulary has to be shared
// between stores.
type SparseVector struct {
	Indices []uint32  `json:"indices"`
	Values  []float32 `json:"values"`
}

// Dot returns the inner product of two sparse vectors.
func (v SparseVector) Dot(w SparseVector) float64 {
	var s float64
	i, j := 0, 0
	for i < len(v.Indices) && j < len(w.Indices) {
		switch {
		case v.Indices[i] == w.Indices[j]:
			s += float64(v.Values[i]) * float64(w.Values[j])
			i++
			j++
		case v.Indices[i] < w.Indices[j]:
			i++
		default:
			j++
		}
	}
	return s
}

// Metric is how a dense model's vectors are compared.
type Metric string

const (
	Cosine Metric = "COSINE"
	IP     Metric = "IP"
	L2     Metric = "L2"
)

// ModelInfo describes a dense embedding model as the stores need to know it.
type ModelInfo struct {
	Name   string `json:"name"`   // field-safe name, e.g. "bge_small_en_v1_5"
	Dim    int    `json:"dim"`    // vector dimension
	Metric Metric `json:"metric"` // how vectors compare
}

// Embedder turns text into dense vectors with one model.
type Embedder interface {
	// Info names the model and its dimension; it never does I/O.
	Info() ModelInfo
	// EmbedDocuments returns one vector per text, in order. Implementations batch internally.
	// A cancelled ctx stops the work and returns ctx.Err().
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	// EmbedQuery embeds a search query, applying any query instruction the model wants.
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// SparseEncoder encodes a query against the current corpus statistics, so that its inner
// product with a stored document vector is the document's BM25 score.
type SparseEncoder interface {
	EncodeQuery(text string) SparseVector
}

// Fusion selects how the results of several retrievers are combined.
type Fusion struct {
	Method  string    `json:"method"`            // "rrf" (default) or "weighted"
	K       int       `json:"k,omitempty"`       // RRF constant; zero means 60
	Weights []float64 `json:"weights,omitempty"` // weighted: one per retriever, dense fields first in request order, then sparse
}

// Filter restricts a search. Zero values mean no restriction.
type Filter struct {
	DocIDs        []string `json:"doc_ids,omitempty"`
	SectionPrefix string   `json:"section_prefix,omitempty"` // matches the first element of a chunk's section path
}

// DenseQuery is one dense retriever of a search: a model field and the query vector.
type DenseQuery struct {
	Model  string    // ModelInfo.Name
	Vector []float32 // the embedded query
}

// SearchRequest asks a store for candidates. With one retriever (only Sparse, or one Dense)
// the hits are that retriever's ranking; with several they are fused as Fusion says.
type SearchRequest struct {
	Dense  []DenseQuery
	Sparse *SparseVector // nil: no BM25 retriever
	Limit  int           // candidates per retriever and of the fused list; zero means 20
	Fusion Fusion
	Filter Filter
	// WithVectors asks the store to return each hit's stored dense vectors (Hit.Vectors),
	// so a similarity reranker can score candidates without embedding them again.
	WithVectors bool
}

// Hit is one search result. Score is the retriever's score for a single retriever and the
// fused score otherwise; higher is better.
type Hit struct {
	Chunk Chunk   `json:"chunk"`
	Score float64 `json:"score"`
	// Vectors holds the chunk's stored dense vectors by model name (ModelInfo.Name) when the
	// request set WithVectors; a store may leave out models the chunk was not embedded with.
	Vectors map[string][]float32 `json:"-"`
}

// Searcher is the retrieval side of a store (embedded or Milvus).
type Searcher interface {
	// Search returns at most req.Limit hits, best first. An empty index gives no hits and
	// no error. Searching a dense model the store does not hold is an error naming it.
	Search(ctx context.Context, req SearchRequest) ([]Hit, error)
	// Chunks returns the chunks with the given ids, in the order asked; an unknown id is
	// an error wrapping ErrNotFound.
	Chunks(ctx context.Context, ids []string) ([]Chunk, error)
}

// Scored is a candidate after reranking; Score is a probability in [0, 1].
type Scored struct {
	Hit
	Rerank float64 `json:"rerank_score"`
}

// Reranker scores (query, passage) pairs with a cross-encoder.
type Reranker interface {
	// Score returns one relevance probability in [0, 1] per passage, in order.
	Score(ctx context.Context, query string, passages []string) ([]float64, error)
}

// Message is one turn of a chat with a generator.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// GenerateRequest is what a generator is asked.
type GenerateRequest struct {
	Messages    []Message
	Temperature float64 // zero means the generator's default (0.1)
	MaxTokens   int     // zero means the generator's default
}

// Generator produces an answer from a prompt, streaming deltas through fn. An error from fn
// stops generation and is returned. A cancelled ctx stops the stream with ctx.Err().
type Generator interface {
	Name() string
	Generate(ctx context.Context, req GenerateRequest, fn func(delta string) error) error
}
