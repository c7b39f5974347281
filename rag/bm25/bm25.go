// Package bm25 is footnote's lexical retriever encoded as sparse vectors: an analyzer
// (Unicode word segmentation, lowercase, accent folding, English stopwords, Snowball
// stemming), hashed term indices, BM25 document weights (term-frequency saturation and
// length normalisation) and query weights (IDF from corpus statistics), arranged so that
// the inner product of a query vector and a document vector is exactly the document's
// BM25 score. Because scoring is a plain inner product, the embedded store and Milvus
// (SPARSE_FLOAT_VECTOR, IP) rank identically.
package bm25

import (
	"math"
	"slices"

	"github.com/footnote-dev/footnote/rag"
)

// Params are the BM25 constants. They act in Document only, i.e. when a chunk is indexed
// (a query vector is IDF alone), so they belong to an index: stores record them (Setting)
// and refuse others (Check).
type Params struct {
	K1 float64 // term-frequency saturation; zero means 1.5
	B  float64 // length normalisation; zero means 0.75
}

func (p Params) withDefaults() Params {
	if p.K1 == 0 {
		p.K1 = 1.5
	}
	if p.B == 0 {
		p.B = 0.75
	}
	return p
}

// Hash returns the sparse index of an analysed term: FNV-1a 32-bit. Milvus requires sparse
// indices below 2^32-1, so that one value is folded onto 2^32-2 (a collision no worse than
// any other hash collision).
func Hash(term string) uint32 {
	// FNV-1a, 32-bit (the same as hash/fnv's New32a, without its allocation).
	h := uint32(2166136261)
	for i := 0; i < len(term); i++ {
		h ^= uint32(term[i])
		h *= 16777619
	}
	return foldMax(h)
}

// foldMax moves the one index Milvus rejects, 2^32-1, to 2^32-2.
func foldMax(h uint32) uint32 {
	if h == math.MaxUint32 {
		return math.MaxUint32 - 1
	}
	return h
}

// Count analyses text and returns its raw term counts by hashed term (Indices strictly
// increasing) and its length in analysed terms, the BM25 document length.
func Count(text string) (tf rag.SparseVector, length int) {
	terms := Analyze(text)
	return countTerms(terms), len(terms)
}

func countTerms(terms []string) rag.SparseVector {
	counts := make(map[uint32]float32, len(terms))
	for _, t := range terms {
		counts[Hash(t)]++
	}
	v := rag.SparseVector{Indices: make([]uint32, 0, len(counts)), Values: make([]float32, 0, len(counts))}
	for i := range counts {
		v.Indices = append(v.Indices, i)
	}
	slices.Sort(v.Indices)
	for _, i := range v.Indices {
		v.Values = append(v.Values, counts[i])
	}
	return v
}

// Document turns raw term counts (from Count) into BM25 document weights:
//
//	w = tf·(k1+1) / (tf + k1·(1 − b + b·length/avgdl))
//
// avgdl is the corpus' mean document length; zero (an empty corpus) is treated as length,
// i.e. no length normalisation.
func (p Params) Document(tf rag.SparseVector, length int, avgdl float64) rag.SparseVector {
	p = p.withDefaults()
	ratio := 1.0
	if avgdl > 0 {
		ratio = float64(length) / avgdl
	}
	norm := p.K1 * (1 - p.B + p.B*ratio)
	out := rag.SparseVector{Indices: slices.Clone(tf.Indices), Values: make([]float32, len(tf.Values))}
	for i, f := range tf.Values {
		tf := float64(f)
		out.Values[i] = float32(tf * (p.K1 + 1) / (tf + norm))
	}
	return out
}

// IDF is the BM25 inverse document frequency of a term found in df of n documents:
// ln(1 + (n − df + 0.5)/(df + 0.5)), which is always positive.
func IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// QueryEncoder encodes queries against fixed corpus statistics. It is safe for concurrent
// use and never modifies the df map it was given.
type QueryEncoder struct {
	p  Params
	n  int
	df map[uint32]int
}

var _ rag.SparseEncoder = (*QueryEncoder)(nil)

// NewQueryEncoder returns an encoder for a corpus of n documents (chunks) whose document
// frequencies by term hash are df. The encoder keeps df; the caller must not modify it
// afterwards.
func NewQueryEncoder(p Params, n int, df map[uint32]int) *QueryEncoder {
	return &QueryEncoder{p: p.withDefaults(), n: n, df: df}
}

// QueryTerms returns the distinct hashed terms of a query, ascending: the terms whose
// document frequencies EncodeQuery looks up, so a store can be asked for just these.
func QueryTerms(text string) []uint32 {
	return countTerms(analyzeQuery(text)).Indices
}

// EncodeQuery returns the query's sparse vector: each distinct analysed term weighted by
// its IDF times its multiplicity in the query, so that the inner product with a Document
// vector is the BM25 score. Terms absent from the corpus still get an IDF; they match
// nothing, so it does no harm.
func (e *QueryEncoder) EncodeQuery(text string) rag.SparseVector {
	v := countTerms(analyzeQuery(text))
	for i, idx := range v.Indices {
		v.Values[i] = float32(float64(v.Values[i]) * IDF(e.n, e.df[idx]))
	}
	return v
}
