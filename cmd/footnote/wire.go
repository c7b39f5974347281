package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/embedded"
	"github.com/footnote-dev/footnote/index/milvus"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
	"github.com/footnote-dev/footnote/rag/generate"
	"github.com/footnote-dev/footnote/rag/onnx"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
	"github.com/footnote-dev/footnote/rag/remote"
)

// components are what one command has opened, built once on first use.
type components struct {
	embedders   []rag.Embedder
	countTokens func(string) int
	reranker    rag.Reranker
	store       index.Store
	pipe        *rag.Pipeline
	local       *onnx.Embedder // the local model, when configured
}

// modelsInstalled reports whether the ONNX Runtime and the default embedder are installed.
func (a *app) modelsInstalled() bool {
	dir := a.cfg.ModelsPath()
	if _, err := os.Stat(pull.LibraryPath(dir)); err != nil {
		return false
	}
	_, err := pull.Check(pull.ModelDir(dir, pull.BGESmall), false)
	return err == nil
}

// embedderSpecs resolves FOOTNOTE_EMBEDDERS: empty means the local model when installed.
func (a *app) embedderSpecs() []string {
	spec := strings.TrimSpace(a.cfg.Embedders)
	if spec == "" {
		if a.modelsInstalled() {
			return []string{"onnx"}
		}
		a.log.Warn("no dense model installed: BM25 only; run `footnote models pull` for hybrid search")
		return nil
	}
	if spec == "none" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(spec, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (a *app) initONNX() error {
	return onnx.InitModels(a.cfg.ModelsPath())
}

// buildEmbedders opens every configured dense model.
func (a *app) buildEmbedders(ctx context.Context, c *components) error {
	for _, spec := range a.embedderSpecs() {
		kind, model, _ := strings.Cut(spec, ":")
		switch kind {
		case "onnx":
			if err := a.initONNX(); err != nil {
				return err
			}
			name := pull.BGESmall
			if model != "" {
				name = model
			}
			e, err := onnx.NewEmbedder(onnx.EmbedderConfig{Dir: pull.ModelDir(a.cfg.ModelsPath(), name), Logger: a.log})
			if err != nil {
				return err
			}
			a.onClose(e.Close)
			c.embedders = append(c.embedders, e)
			if c.local == nil {
				c.local = e
				c.countTokens = e.CountTokens
			}
		case "openai":
			e, err := remote.NewOpenAI(remote.OpenAIConfig{APIKey: string(a.cfg.OpenAIKey), BaseURL: a.cfg.OpenAIBaseURL, Model: model, Logger: a.log})
			if err != nil {
				return err
			}
			c.embedders = append(c.embedders, e)
		case "ollama":
			e, err := remote.NewOllama(ctx, remote.OllamaConfig{Host: a.cfg.OllamaHost, Model: model, Logger: a.log})
			if err != nil {
				return err
			}
			c.embedders = append(c.embedders, e)
		default:
			return fmt.Errorf("FOOTNOTE_EMBEDDERS: unknown embedder %q (want onnx, openai[:model], ollama[:model] or none)", spec)
		}
	}
	return nil
}

// buildReranker opens the cross-encoder when one is installed; without one, the local
// embedder's similarity stands in so that the relevance cut (and so refusals) still work.
func (a *app) buildReranker(c *components) error {
	if a.cfg.Reranker == "none" {
		return nil
	}
	dir := a.cfg.ModelsPath()
	if name := crossEncoderName(dir); name != "" {
		if err := a.initONNX(); err != nil {
			return err
		}
		r, err := onnx.NewReranker(onnx.RerankerConfig{Dir: pull.ModelDir(dir, name), Logger: a.log})
		if err != nil {
			return err
		}
		a.onClose(r.Close)
		c.reranker = r
		return nil
	}
	if c.local != nil {
		c.reranker = onnx.NewSimilarityReranker(c.local, onnx.SimilarityConfig{})
		return nil
	}
	if a.cfg.Reranker == "onnx" {
		return fmt.Errorf("FOOTNOTE_RERANKER=onnx: no cross-encoder installed in %s: %w (run `footnote models pull`)", dir, rag.ErrModelMissing)
	}
	return nil
}

// crossEncoderName finds an installed cross-encoder under the models folder.
func crossEncoderName(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if m, err := pull.ReadManifest(filepath.Join(dir, e.Name())); err == nil && m.Kind == pull.KindCrossEncoder {
			return m.Name
		}
	}
	return ""
}

func (a *app) generator() (rag.Generator, error) {
	switch a.cfg.LLM {
	case "ollama":
		return generate.NewOllama(generate.OllamaConfig{Host: a.cfg.OllamaHost, Model: a.cfg.LLMModel, Timeout: a.cfg.LLMTimeout,
			FirstTokenTimeout: a.cfg.LLMFirstTokenTimeout, IdleTimeout: a.cfg.LLMIdleTimeout, ContextTokens: a.cfg.LLMContext})
	case "openai":
		return generate.NewOpenAI(generate.OpenAIConfig{APIKey: string(a.cfg.OpenAIKey), BaseURL: a.cfg.OpenAIBaseURL, Model: a.cfg.LLMModel, Timeout: a.cfg.LLMTimeout,
			FirstTokenTimeout: a.cfg.LLMFirstTokenTimeout, IdleTimeout: a.cfg.LLMIdleTimeout, ContextTokens: a.cfg.LLMContext})
	}
	return nil, nil
}

// openStore opens the embedded store, or Milvus when FOOTNOTE_MILVUS_ADDR is set.
func (a *app) openStore(ctx context.Context, models []rag.ModelInfo, rebuild bool) (index.Store, error) {
	if a.cfg.MilvusAddr != "" {
		return milvus.Open(ctx, milvus.Config{
			Addr: a.cfg.MilvusAddr, Token: string(a.cfg.MilvusToken), User: a.cfg.MilvusUser,
			Password: string(a.cfg.MilvusPassword), DB: a.cfg.MilvusDB, TLS: a.cfg.MilvusTLS,
			Corpus: a.cfg.Corpus, Models: models, Recreate: rebuild, BM25: a.bm25Params(), Logger: a.log,
		})
	}
	return embedded.Open(ctx, embedded.Config{Dir: a.cfg.DataDir, Corpus: a.cfg.Corpus, Models: models, Rebuild: rebuild,
		BM25: a.bm25Params(), Logger: a.log})
}

// open builds the components a command needs, once.
func (a *app) open(ctx context.Context, rebuild bool) (*components, error) {
	if a.comp != nil {
		return a.comp, nil
	}
	c := &components{}
	if err := a.buildEmbedders(ctx, c); err != nil {
		return nil, err
	}
	models := make([]rag.ModelInfo, len(c.embedders))
	for i, e := range c.embedders {
		models[i] = e.Info()
	}
	st, err := a.openStore(ctx, models, rebuild)
	if err != nil {
		return nil, err
	}
	a.onClose(st.Close)
	c.store = st
	a.comp = c
	return c, nil
}

// store opens the store alone, for commands that read documents and chunks only.
func (a *app) store(ctx context.Context) (index.Store, error) {
	if a.comp != nil {
		return a.comp.store, nil
	}
	if a.cfg.MilvusAddr != "" {
		// A Milvus collection is opened with exactly the models it was built with.
		c, err := a.open(ctx, false)
		if err != nil {
			return nil, err
		}
		return c.store, nil
	}
	st, err := a.openStore(ctx, nil, false)
	if err != nil {
		return nil, err
	}
	a.onClose(st.Close)
	a.comp = &components{store: st}
	return st, nil
}

func (a *app) bm25Params() bm25.Params { return bm25.Params{K1: a.cfg.BM25K1, B: a.cfg.BM25B} }

// pipeline builds the question pipeline over the configured store and models.
func (a *app) pipeline(ctx context.Context) (*rag.Pipeline, error) {
	c, err := a.open(ctx, false)
	if err != nil {
		return nil, err
	}
	if c.pipe != nil {
		return c.pipe, nil
	}
	if err := a.buildReranker(c); err != nil {
		return nil, err
	}
	gen, err := a.generator()
	if err != nil {
		return nil, err
	}
	cfg := rag.Config{
		Searcher:         c.store,
		Embedders:        c.embedders,
		Sparse:           sparseSource(c.store, a.bm25Params(), a.log),
		Reranker:         c.reranker,
		Candidates:       a.cfg.Candidates,
		RerankTop:        a.cfg.RerankTop,
		TopK:             a.cfg.TopK,
		MinScore:         a.cfg.MinScore,
		MaxGap:           a.cfg.MaxGap,
		DocWeight:        a.cfg.DocWeight,
		FusedWeight:      a.cfg.FusedWeight,
		Method:           a.cfg.Method,
		Fusion:           rag.Fusion{Method: a.cfg.Fusion, K: a.cfg.RRFK},
		Generator:        gen,
		Documents:        c.store.Documents,
		MaxTokens:        a.cfg.LLMMaxTokens,
		FirstTokenTarget: a.cfg.LLMFirstTokenTarget,
		CountTokens:      c.countTokens,
		Logger:           a.log,
	}
	p, err := rag.New(cfg)
	if err != nil {
		return nil, err
	}
	c.pipe = p
	return p, nil
}

// sparseSource serves BM25 query encoders. A store that answers per-query statistics
// (index.QueryStatser: both stores do) is asked, for each question, for N and the document
// frequencies of that question's terms only: one point query on Milvus instead of a read of
// every document record and the whole vocabulary. Other stores fall back to Stats, re-read
// only when the corpus changed and at most once a second.
func sparseSource(st index.Store, p bm25.Params, log *slog.Logger) func(ctx context.Context) (rag.SparseEncoder, error) {
	if qs, ok := st.(index.QueryStatser); ok {
		return func(ctx context.Context) (rag.SparseEncoder, error) {
			return &termEncoder{ctx: ctx, st: qs, p: p, log: log}, nil
		}
	}
	var (
		mu      sync.Mutex
		enc     *bm25.QueryEncoder
		chunks  int
		terms   int64
		checked time.Time
	)
	return func(ctx context.Context) (rag.SparseEncoder, error) {
		mu.Lock()
		defer mu.Unlock()
		if enc != nil && time.Since(checked) < time.Second {
			return enc, nil
		}
		s, err := st.Stats(ctx)
		if err != nil {
			if enc != nil {
				return enc, nil // stale statistics beat no BM25 at all
			}
			return nil, fmt.Errorf("bm25 statistics: %w", err)
		}
		checked = time.Now()
		if enc == nil || s.Chunks != chunks || s.Terms != terms {
			enc = bm25.NewQueryEncoder(p, s.Chunks, s.DF)
			chunks, terms = s.Chunks, s.Terms
		}
		return enc, nil
	}
}

// termEncoder encodes one question with the statistics of its own terms, read within the
// question's context. The evidence gate asks it for single words after the whole question,
// so the statistics it has read are kept for the question's life: one store round trip for
// the question's terms, not one per word.
type termEncoder struct {
	ctx context.Context
	st  index.QueryStatser
	p   bm25.Params
	log *slog.Logger

	mu     sync.Mutex
	chunks int
	df     map[uint32]int // terms read so far, absent ones with 0
}

func (e *termEncoder) EncodeQuery(text string) rag.SparseVector {
	terms := bm25.QueryTerms(text)
	if len(terms) == 0 {
		return rag.SparseVector{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var missing []uint32
	for _, t := range terms {
		if _, ok := e.df[t]; !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		n, df, err := e.st.QueryStats(e.ctx, missing)
		if err != nil {
			// The search that follows meets the same store and reports its failure; this
			// question goes on without BM25 rather than with made-up statistics.
			e.log.Warn("bm25 statistics unavailable: searching without BM25", "err", err)
			return rag.SparseVector{}
		}
		if e.df == nil {
			e.df = make(map[uint32]int, len(missing))
		}
		e.chunks = n
		for _, t := range missing {
			e.df[t] = df[t]
		}
	}
	return bm25.NewQueryEncoder(e.p, e.chunks, e.df).EncodeQuery(text)
}

// indexer builds an ingestion run over the configured store and models.
func (a *app) indexer(ctx context.Context, bar bool, rebuild bool) (*index.Indexer, error) {
	c, err := a.open(ctx, rebuild)
	if err != nil {
		return nil, err
	}
	cfg := index.Config{
		Store:       c.store,
		Embedders:   c.embedders,
		BM25:        a.bm25Params(),
		CountTokens: c.countTokens,
		Logger:      a.log,
	}
	if bar {
		cfg.Progress = a.newProgress()
	}
	return index.New(cfg)
}
