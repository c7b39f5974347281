package onnx

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/onnx/hftok"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

// EmbedderConfig configures NewEmbedder. Zero values are documented per field.
type EmbedderConfig struct {
	// Dir is the model folder, e.g. <models>/bge_small_en_v1_5 (pull.ModelDir); required.
	Dir string
	// BatchSize is the most texts per ONNX run; zero means 32.
	BatchSize int
	// BatchTokens caps a run's padded size (texts × longest text, in tokens): texts are
	// sorted by length and packed until the next would pass it; a text longer than the cap
	// runs alone. Zero means 256. On CPU, small runs win: in BenchmarkEmbedDocuments one
	// 230-token chunk per run was twice as fast per chunk as four or sixteen, because a
	// run's activations then stay in the cores' caches; short texts still share runs.
	BatchTokens int
	// MaxLength caps tokens per text, [CLS] and [SEP] included; zero (or more than the
	// manifest allows) means the manifest's max_length.
	MaxLength int
	// Sessions is the number of ONNX sessions (parallel runs); zero means 1.
	Sessions int
	// Threads is the intra-op thread count per session; zero means NumCPU / Sessions.
	Threads int
	// CacheSize is how many vectors are kept, by exact input text, for repeated texts (a
	// query embedded for retrieval and again by SimilarityReranker; passages reranked again);
	// zero means 4096 (about 6 MB at 384 dims), negative disables the cache.
	CacheSize int
	// VerifyChecksums hashes the model files against the manifest before loading (about
	// 0.3 s for 130 MB); false checks only that they exist with the right size.
	VerifyChecksums bool
	Logger          *slog.Logger // nil discards
}

// Embedder is a local bi-encoder. It implements rag.Embedder and is safe for concurrent use.
type Embedder struct {
	man      *pull.Manifest
	tok      *hftok.Tokenizer
	sess     *session
	batch    int
	tokens   int
	maxLen   int
	sessions int
	cache    *vectorCache
	log      *slog.Logger
}

var _ rag.Embedder = (*Embedder)(nil)

// NewEmbedder loads the model in cfg.Dir. Init must have been called. A missing or
// corrupt file is an error wrapping rag.ErrModelMissing that names it.
func NewEmbedder(cfg EmbedderConfig) (*Embedder, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("onnx: EmbedderConfig.Dir is required")
	}
	man, err := pull.Check(cfg.Dir, cfg.VerifyChecksums)
	if err != nil {
		return nil, err
	}
	if man.Kind != pull.KindEmbedder {
		return nil, fmt.Errorf("onnx: %s holds a %s, not an embedder", cfg.Dir, man.Kind)
	}
	if man.Dim <= 0 || (man.Pooling != pull.PoolCLS && man.Pooling != pull.PoolMean) {
		return nil, fmt.Errorf("onnx: manifest of %s: bad dim %d or pooling %q", cfg.Dir, man.Dim, man.Pooling)
	}
	tok, err := hftok.Load(filepath.Join(cfg.Dir, pull.TokenizerFile))
	if err != nil {
		return nil, fmt.Errorf("onnx: tokenizer: %w", err)
	}
	e := &Embedder{man: man, tok: tok, batch: cfg.BatchSize, tokens: cfg.BatchTokens, maxLen: man.MaxLength, sessions: max(1, cfg.Sessions), log: cfg.Logger}
	if e.batch <= 0 {
		e.batch = 32
	}
	if e.tokens <= 0 {
		e.tokens = 256
	}
	if e.maxLen <= 0 {
		e.maxLen = 512
	}
	if cfg.MaxLength > 0 && cfg.MaxLength < e.maxLen {
		e.maxLen = cfg.MaxLength
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.CacheSize == 0:
		e.cache = newVectorCache(4096)
	case cfg.CacheSize > 0:
		e.cache = newVectorCache(cfg.CacheSize)
	}
	e.sess, err = openSession(filepath.Join(cfg.Dir, pull.ModelFile), man.Inputs, man.Output, e.sessions, cfg.Threads,
		[]string{"input_ids", "attention_mask", "token_type_ids"})
	if err != nil {
		return nil, err
	}
	e.log.Info("embedder loaded", "model", man.Name, "dim", man.Dim, "pooling", man.Pooling,
		"max_length", e.maxLen, "sessions", e.sessions)
	return e, nil
}

// Info names the model; it never does I/O.
func (e *Embedder) Info() rag.ModelInfo {
	return rag.ModelInfo{Name: e.man.Name, Dim: e.man.Dim, Metric: rag.Cosine}
}

// Manifest returns the model's manifest (do not modify it).
func (e *Embedder) Manifest() *pull.Manifest { return e.man }

// MaxLength is the token limit per text, special tokens included.
func (e *Embedder) MaxLength() int { return e.maxLen }

// CountTokens counts text's tokens with the model's tokenizer, without the special tokens
// the model adds.
func (e *Embedder) CountTokens(text string) int { return e.tok.Count(text) }

// Tokenizer returns the model's tokenizer.
func (e *Embedder) Tokenizer() *hftok.Tokenizer { return e.tok }

// EmbedQuery embeds a search query with the model's query instruction, if any.
func (e *Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := e.embed(ctx, []string{e.man.QueryPrefix + text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// EmbedDocuments returns one vector per text, in order. Texts are sorted by length and
// batched with their neighbours so that little compute goes to padding.
func (e *Embedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts)
}

func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	out := make([][]float32, len(texts))
	seqs := make([][]int32, len(texts))
	keys := make([][32]byte, len(texts))
	cached := make([]bool, len(texts))
	lens := make([]int, len(texts))
	for i, t := range texts {
		if e.cache != nil {
			keys[i] = cacheKey(t)
			if v, ok := e.cache.get(keys[i]); ok {
				out[i], cached[i] = v, true
				continue
			}
		}
		seqs[i] = e.tok.Encode(t, e.maxLen)
		lens[i] = len(seqs[i])
	}

	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(e.sessions)
	for _, idx := range plan(lens, e.batch, e.tokens, func(i int) bool { return cached[i] }) {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			batchSeqs := make([][]int32, len(idx))
			for i, j := range idx {
				batchSeqs[i] = seqs[j]
			}
			b := newBatch(batchSeqs, nil, e.tok.Pad())
			err := e.sess.run(ctx, b, func(hidden []float32, shape []int64) error {
				vecs, err := e.pool(hidden, shape, b)
				if err != nil {
					return err
				}
				for i, j := range idx {
					out[j] = vecs[i]
					e.cache.put(keys[j], vecs[i])
				}
				return nil
			})
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("embed %s: %w", e.man.Name, err)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	e.log.Debug("embedded", "model", e.man.Name, "texts", len(texts), "took", time.Since(start).Round(time.Millisecond))
	return out, nil
}

// pool turns last_hidden_state [rows, cols, dim] into one vector per row. An output that is
// already one vector per row ([rows, dim], e.g. a "sentence_embedding" output) is taken
// as it is.
func (e *Embedder) pool(hidden []float32, shape []int64, b batch) ([][]float32, error) {
	dim := e.man.Dim
	if len(shape) == 2 && int(shape[0]) == b.rows && int(shape[1]) == dim {
		vecs := make([][]float32, b.rows)
		for r := range b.rows {
			vecs[r] = append([]float32(nil), hidden[r*dim:(r+1)*dim]...)
			if e.man.Normalize {
				normalize(vecs[r])
			}
		}
		return vecs, nil
	}
	if len(shape) != 3 || int(shape[0]) != b.rows || int(shape[1]) != b.cols || int(shape[2]) != dim {
		return nil, fmt.Errorf("embed %s: output shape %v, want [%d %d %d]", e.man.Name, shape, b.rows, b.cols, dim)
	}
	vecs := make([][]float32, b.rows)
	for r := range b.rows {
		v := make([]float32, dim)
		base := r * b.cols * dim
		switch e.man.Pooling {
		case pull.PoolCLS:
			copy(v, hidden[base:base+dim])
		case pull.PoolMean:
			acc := make([]float64, dim)
			n := 0
			for c := range b.cols {
				if b.mask[r*b.cols+c] == 0 {
					continue
				}
				n++
				row := hidden[base+c*dim : base+(c+1)*dim]
				for k, x := range row {
					acc[k] += float64(x)
				}
			}
			for k := range v {
				v[k] = float32(acc[k] / float64(max(n, 1)))
			}
		}
		if e.man.Normalize {
			normalize(v)
		}
		vecs[r] = v
	}
	return vecs, nil
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}

// Batches returns the token id runs EmbedDocuments would execute for texts, in order, before
// padding: for comparing footnote with another runtime on exactly the same inputs.
func (e *Embedder) Batches(texts []string) [][][]int32 {
	seqs := make([][]int32, len(texts))
	lens := make([]int, len(texts))
	for i, t := range texts {
		seqs[i] = e.tok.Encode(t, e.maxLen)
		lens[i] = len(seqs[i])
	}
	var out [][][]int32
	for _, idx := range plan(lens, e.batch, e.tokens, nil) {
		run := make([][]int32, len(idx))
		for i, j := range idx {
			run[i] = seqs[j]
		}
		out = append(out, run)
	}
	return out
}

// CacheStats reports vector cache hits and look-ups since the embedder was created.
func (e *Embedder) CacheStats() (hits, lookups int64) { return e.cache.stats() }

// Close frees the ONNX sessions, after running batches finish.
func (e *Embedder) Close() error { return e.sess.Close() }
