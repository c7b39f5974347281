package rag

import (
	"context"
	"sync"
)

// A question asks for its BM25 encoder more than once: to search, and for the gate to
// weigh its words. Config.Sparse builds a new encoder each time, and one reading
// statistics from a store (Milvus) reads them again, a round trip each. Ask and Retrieve keep the question's first encoder in the context.
type sparseKey struct{}

type sparseOnce struct {
	// ctx is the question's: an encoder may read statistics lazily within the context it
	// was built in, so it must not be one that ends earlier (a search's errgroup).
	ctx  context.Context
	once sync.Once
	enc  SparseEncoder
	err  error
	// owners memoizes Pipeline.owner by item key: the papers a question names, the gate
	// (which may run twice) and the extractive answer each ask about the same names.
	owners sync.Map
	// docs is the question's list of documents (Pipeline.documents): the papers a
	// question names and the gate, which may run twice, each read it.
	docsOnce sync.Once
	docs     []Document
}

// withSparse returns ctx carrying a slot for the question's encoder (unless it has one).
func withSparse(ctx context.Context) context.Context {
	if _, ok := ctx.Value(sparseKey{}).(*sparseOnce); ok {
		return ctx
	}
	return context.WithValue(ctx, sparseKey{}, &sparseOnce{ctx: ctx})
}

// memoOwner returns the question's memo of paper owners, nil outside a question.
func memoOwner(ctx context.Context) *sync.Map {
	if s, ok := ctx.Value(sparseKey{}).(*sparseOnce); ok {
		return &s.owners
	}
	return nil
}

// sparse returns the question's BM25 encoder: Config.Sparse's, built once per context
// made by withSparse. The caller checks Config.Sparse != nil.
func (p *Pipeline) sparse(ctx context.Context) (SparseEncoder, error) {
	s, ok := ctx.Value(sparseKey{}).(*sparseOnce)
	if !ok {
		return p.cfg.Sparse(ctx)
	}
	s.once.Do(func() { s.enc, s.err = p.cfg.Sparse(s.ctx) })
	return s.enc, s.err
}
