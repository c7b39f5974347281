package rag

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Config assembles a Pipeline. Zero values are documented per field.
type Config struct {
	Searcher Searcher // required
	// Embedders are the dense models; empty means BM25 only.
	Embedders []Embedder
	// Sparse returns the BM25 query encoder for the current corpus statistics; it is called
	// once per question so that a re-index is seen without a restart. Nil disables BM25.
	Sparse func(ctx context.Context) (SparseEncoder, error)
	// Reranker is the cross-encoder; nil keeps the fused order and skips the score cut. A
	// VectorReranker scores candidates from their stored vectors unless RerankText is set.
	Reranker Reranker
	// RerankText makes a VectorReranker embed and score the candidates' text, as a
	// cross-encoder does, instead of reading their stored vectors: the same scores, many
	// times slower. For benchmarks and for stores whose vectors are not the passages'.
	RerankText bool
	// Generator writes answers; nil means extractive answers.
	Generator Generator
	// Documents lists the indexed documents; the gate reads their authors to know which
	// paper "Vaswani et al." names, and their titles to find a paper that never spells its
	// own name ("GPT-1"). Nil: authors and such names name no paper.
	Documents func(ctx context.Context) ([]Document, error)

	Candidates int     // per retriever; zero means 20
	RerankTop  int     // fused candidates sent to the reranker; zero means 10
	TopK       int     // sources kept after the cut; zero means 5
	MinScore   float64 // reranker probability below which a candidate is dropped; zero means 0.2
	MaxGap     float64 // stop at a drop larger than this between neighbours; zero means 0.35
	// Method is the retrieval method of a question that names none (Question.Method empty):
	// MethodHybrid when empty, MethodBM25 or "dense:<model>" (see Pipeline.Retrieve). New
	// rejects one this pipeline cannot run.
	Method string
	// Fusion combines the retrievers; zero means RRF with k = 60. Weighted fusion without
	// Weights weighs every retriever 1, which footnote's CLI uses (see FusedWeight).
	Fusion Fusion
	// DocWeight blends each reranked candidate's probability with its document's best
	// (see documentPrior); zero keeps the reranker's order. footnote's CLI uses 0.8, which
	// lifted hybrid Precision@5 on the evaluation questions from 0.74–0.78 to 0.86 with the
	// same MRR and refusals.
	DocWeight float64
	// FusedWeight blends each reranked candidate's probability with its retrieval score
	// (see fusedPrior) when the reranker is a similarity scorer (a VectorReranker, which
	// scores with a retrieval model); zero keeps the reranker's order, and so does a
	// cross-encoder, which brings evidence of its own. footnote's CLI uses 0.3 with
	// equal-weight weighted fusion: on the tuning half of the development set hybrid page
	// MRR rose from 0.59 (RRF, no blend) to 0.66 and source MRR from 0.88 to 0.94, with the
	// same refusals. With RRF, whose scores barely differ, it does not help.
	FusedWeight float64

	// SentenceCandidates is how many candidate sentences of an extractive answer the
	// reranker (or embedder) scores, shortlisted by term overlap and source score; zero
	// means 12, negative scores all (at most 60). On the tuning half of the development
	// set 12 cited as many expected pages as scoring all (21 of 26 answers identical, the
	// rest differing in a later sentence), and the key-concept test found 11 of 18 either
	// way, at a fifth of the embedding work.
	SentenceCandidates int

	// ContextTokens is the prompt budget for sources; zero means 4000. A generator that
	// reports its limits (LimitedGenerator) lowers it to fit its context window and its
	// measured prompt speed (see sourceBudget).
	ContextTokens int
	// FirstTokenTarget is how long the generator may take to read a prompt before its
	// first token, at its measured speed; zero means 15 s. It sizes the sources for slow
	// (small, local, CPU) models; fast servers are bounded by ContextTokens alone.
	FirstTokenTarget time.Duration
	Temperature      float64 // zero means 0.1
	MaxTokens        int     // zero means 1024
	// CountTokens counts tokens for the context budget; nil approximates 4 chars per token.
	CountTokens func(string) int

	Logger *slog.Logger // nil discards
}

// Pipeline answers questions over one corpus. It is safe for concurrent use.
type Pipeline struct {
	cfg   Config
	log   *slog.Logger
	speed *prefillSpeed
	// limits reports the generator's model limits; nil when it cannot (then the prompt
	// budget is ContextTokens alone).
	limits func(context.Context) ModelLimits
	// intros caches the names each passage introduces (see chunkIntros).
	intros sync.Map
}

// New validates cfg and fills its defaults.
func New(cfg Config) (*Pipeline, error) {
	if cfg.Searcher == nil {
		return nil, errors.New("rag: Config.Searcher is required")
	}
	if cfg.Candidates == 0 {
		cfg.Candidates = 20
	}
	if cfg.RerankTop == 0 {
		cfg.RerankTop = 10
	}
	if cfg.TopK == 0 {
		cfg.TopK = 5
	}
	if cfg.MinScore == 0 {
		cfg.MinScore = 0.2
	}
	if cfg.MaxGap == 0 {
		cfg.MaxGap = 0.35
	}
	if cfg.Fusion.Method == "" {
		cfg.Fusion.Method = "rrf"
	}
	if cfg.Fusion.K == 0 {
		cfg.Fusion.K = 60
	}
	if cfg.SentenceCandidates == 0 {
		cfg.SentenceCandidates = 12
	}
	if cfg.ContextTokens == 0 {
		cfg.ContextTokens = 4000
	}
	if cfg.FirstTokenTarget == 0 {
		cfg.FirstTokenTarget = 15 * time.Second
	}
	if cfg.Temperature == 0 {
		cfg.Temperature = 0.1
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 1024
	}
	if cfg.CountTokens == nil {
		cfg.CountTokens = func(s string) int { return (len(s) + 3) / 4 }
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	speed := &prefillSpeed{}
	var limits func(context.Context) ModelLimits
	if cfg.Generator != nil {
		if lg, ok := cfg.Generator.(LimitedGenerator); ok {
			limits = lg.Limits
		}
		cfg.Generator = watchedGenerator{Generator: cfg.Generator, count: cfg.CountTokens, speed: speed, limits: limits}
	}
	p := &Pipeline{cfg: cfg, log: log, speed: speed, limits: limits}
	// Hybrid degrades at query time when a retriever is missing; any other default must be
	// runnable, or every question would fail with the same error.
	if m := strings.TrimSpace(cfg.Method); m != "" && !strings.EqualFold(m, MethodHybrid) {
		if _, err := p.resolve(""); err != nil {
			return nil, fmt.Errorf("default method: %w", err)
		}
	}
	return p, nil
}
