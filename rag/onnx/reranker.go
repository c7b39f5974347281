package onnx

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"

	"golang.org/x/sync/errgroup"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/onnx/hftok"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

// RerankerConfig configures NewReranker. Zero values are documented per field.
type RerankerConfig struct {
	// Dir is the cross-encoder's folder: model.onnx (inputs input_ids, attention_mask and
	// optionally token_type_ids; output logits [batch, 1] or [batch, 2]), tokenizer.json
	// (any family hftok reads: WordPiece, Unigram, byte-level BPE) and manifest.json with
	// kind "cross-encoder"; required.
	Dir string
	// BatchSize is the most pairs per ONNX run; zero means 32.
	BatchSize int
	// BatchTokens caps a run's padded size as in EmbedderConfig; zero means 256.
	BatchTokens int
	// MaxLength caps tokens per pair; zero (or more than the manifest allows) means the
	// manifest's max_length, else 512.
	MaxLength int
	// Sessions and Threads are as in EmbedderConfig.
	Sessions int
	Threads  int
	// VerifyChecksums is as in EmbedderConfig.
	VerifyChecksums bool
	Logger          *slog.Logger // nil discards
}

// Reranker is a local cross-encoder. It implements rag.Reranker and is safe for concurrent use.
type Reranker struct {
	man      *pull.Manifest
	tok      *hftok.Tokenizer
	sess     *session
	batch    int
	tokens   int
	maxLen   int
	sessions int
}

var _ rag.Reranker = (*Reranker)(nil)

// NewReranker loads the cross-encoder in cfg.Dir. Init must have been called.
func NewReranker(cfg RerankerConfig) (*Reranker, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("onnx: RerankerConfig.Dir is required")
	}
	man, err := pull.Check(cfg.Dir, cfg.VerifyChecksums)
	if err != nil {
		return nil, err
	}
	if man.Kind != pull.KindCrossEncoder {
		return nil, fmt.Errorf("onnx: %s holds a %s, not a cross-encoder", cfg.Dir, man.Kind)
	}
	tok, err := hftok.Load(filepath.Join(cfg.Dir, pull.TokenizerFile))
	if err != nil {
		return nil, fmt.Errorf("onnx: tokenizer: %w", err)
	}
	r := &Reranker{man: man, tok: tok, batch: cfg.BatchSize, tokens: cfg.BatchTokens, maxLen: man.MaxLength, sessions: max(1, cfg.Sessions)}
	if r.batch <= 0 {
		r.batch = 32
	}
	if r.tokens <= 0 {
		r.tokens = 256
	}
	if r.maxLen <= 0 {
		r.maxLen = 512
	}
	if cfg.MaxLength > 0 && cfg.MaxLength < r.maxLen {
		r.maxLen = cfg.MaxLength
	}
	r.sess, err = openSession(filepath.Join(cfg.Dir, pull.ModelFile), man.Inputs, man.Output, r.sessions, cfg.Threads,
		[]string{"input_ids", "attention_mask", "token_type_ids"})
	if err != nil {
		return nil, err
	}
	if cfg.Logger != nil {
		cfg.Logger.Info("reranker loaded", "model", man.Name, "max_length", r.maxLen, "sessions", r.sessions)
	}
	return r, nil
}

// Manifest returns the model's manifest (do not modify it).
func (r *Reranker) Manifest() *pull.Manifest { return r.man }

// Score returns one relevance probability in [0, 1] per passage, in order: the sigmoid of
// the model's logit (or, for a two-class head, the softmax probability of class 1).
//
// Each pair is laid out by the tokenizer's post-processor ([CLS] query [SEP] passage [SEP]
// with token types 0/1 for BERT, <s> query </s></s> passage </s> for XLM-R) and truncated
// longest segment first, as Hugging Face tokenizers does (package hftok).
func (r *Reranker) Score(ctx context.Context, query string, passages []string) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q := r.tok.Tokenize(query)
	seqs := make([][]int32, len(passages))
	types := make([][]int32, len(passages))
	lens := make([]int, len(passages))
	for i, p := range passages {
		seqs[i], types[i] = r.tok.PairIDs(q, r.tok.Tokenize(p), r.maxLen)
		lens[i] = len(seqs[i])
	}
	scores := make([]float64, len(passages))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(r.sessions)
	for _, idx := range plan(lens, r.batch, r.tokens, nil) {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			bs := make([][]int32, len(idx))
			bt := make([][]int32, len(idx))
			for i, j := range idx {
				bs[i], bt[i] = seqs[j], types[j]
			}
			b := newBatch(bs, bt, r.tok.Pad())
			err := r.sess.run(ctx, b, func(logits []float32, shape []int64) error {
				probs, err := probabilities(logits, shape, b.rows)
				if err != nil {
					return err
				}
				for i, j := range idx {
					scores[j] = probs[i]
				}
				return nil
			})
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("rerank %s: %w", r.man.Name, err)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return scores, nil
}

// Batches returns the (ids, token types) runs Score would execute, before padding: for
// comparing footnote with another runtime on exactly the same inputs.
func (r *Reranker) Batches(query string, passages []string) (ids, types [][][]int32) {
	q := r.tok.Tokenize(query)
	seqs := make([][]int32, len(passages))
	tys := make([][]int32, len(passages))
	lens := make([]int, len(passages))
	for i, p := range passages {
		seqs[i], tys[i] = r.tok.PairIDs(q, r.tok.Tokenize(p), r.maxLen)
		lens[i] = len(seqs[i])
	}
	for _, idx := range plan(lens, r.batch, r.tokens, nil) {
		var bi, bt [][]int32
		for _, j := range idx {
			bi, bt = append(bi, seqs[j]), append(bt, tys[j])
		}
		ids, types = append(ids, bi), append(types, bt)
	}
	return ids, types
}

// Pad is the padding token id of the model's tokenizer.
func (r *Reranker) Pad() int32 { return r.tok.Pad() }

func probabilities(logits []float32, shape []int64, rows int) ([]float64, error) {
	classes := 1
	switch {
	case len(shape) == 1 && int(shape[0]) == rows:
	case len(shape) == 2 && int(shape[0]) == rows && (shape[1] == 1 || shape[1] == 2):
		classes = int(shape[1])
	default:
		return nil, fmt.Errorf("logits shape %v, want [%d 1] or [%d 2]", shape, rows, rows)
	}
	out := make([]float64, rows)
	for i := range rows {
		if classes == 1 {
			out[i] = sigmoid(float64(logits[i]))
		} else {
			// softmax(l0, l1)[1] = sigmoid(l1 - l0)
			out[i] = sigmoid(float64(logits[2*i+1]) - float64(logits[2*i]))
		}
	}
	return out, nil
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Close frees the ONNX sessions, after running batches finish.
func (r *Reranker) Close() error { return r.sess.Close() }

// SimilarityConfig calibrates a SimilarityReranker. Zero values are documented per field.
//
// The defaults suit bge-small-en-v1.5 (fp32 or int8) only; other models spread their
// similarities differently. They were fitted on the evaluation questions against 150-word
// windows of the corpus (int8 model; fp32 is within 0.005): the best window of the expected page scored cosine
// 0.71–0.88 for every answerable question, while the best window anywhere scored
// 0.49–0.62 for the unanswerable ones. With Center 0.70 and Scale 25 the pipeline's
// default cut (probability 0.2) falls at cosine 0.645, between the two groups.
type SimilarityConfig struct {
	// Center is the cosine similarity that maps to probability 0.5; zero means 0.70.
	Center float64
	// Scale is the logistic slope; zero means 25 (cosine 0.62 → 0.12, 0.78 → 0.88).
	Scale float64
}

// SimilarityReranker scores (query, passage) pairs by the cosine similarity of their
// embeddings, mapped through a logistic curve to [0, 1]. It is the reranker of last
// resort when no cross-encoder is installed: the registries reachable here carry no
// cross-encoder weights, so footnote ships this one by default. It implements rag.Reranker.
type SimilarityReranker struct {
	e             *Embedder
	center, scale float64
}

var _ rag.Reranker = (*SimilarityReranker)(nil)

// NewSimilarityReranker scores with e; it does not take ownership of e.
func NewSimilarityReranker(e *Embedder, cfg SimilarityConfig) *SimilarityReranker {
	if cfg.Center == 0 {
		cfg.Center = 0.70
	}
	if cfg.Scale == 0 {
		cfg.Scale = 25
	}
	return &SimilarityReranker{e: e, center: cfg.Center, scale: cfg.Scale}
}

// Score embeds the query (with its instruction) and the passages, and maps each cosine
// similarity c to sigmoid(Scale·(c − Center)).
func (s *SimilarityReranker) Score(ctx context.Context, query string, passages []string) ([]float64, error) {
	q, err := s.e.EmbedQuery(ctx, query)
	if err != nil {
		return nil, err
	}
	ps, err := s.e.EmbedDocuments(ctx, passages)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = s.probability(cosine(q, p))
	}
	return out, nil
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
