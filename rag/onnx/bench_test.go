package onnx_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/rag/onnx"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

// flops estimates the forward-pass cost of a BERT encoder over sequences of the given
// lengths (useful tokens, padding excluded):
//
//	F(S) = 2·S·L·(4·d² + 2·d·f) + 4·L·S²·d
//
// the first term is the dense layers (Q, K, V and output projections: 4·d² multiply-adds
// per token; the feed-forward pair: 2·d·f), the second the attention scores QKᵀ and their
// product with V (2·S²·d multiply-adds per layer). A multiply-add counts as 2 FLOPs.
// Embedding look-ups, layer norms, softmax and pooling are ignored (< 2%).
func flops(m *pull.Manifest, lens []int) float64 {
	L, d, f := float64(m.Layers), float64(m.Hidden), float64(m.Intermediate)
	var total float64
	for _, n := range lens {
		s := float64(n)
		total += 2*s*L*(4*d*d+2*d*f) + 4*L*s*s*d
	}
	return total
}

// chunkText is about one chunk of a paper (~230 tokens).
var chunkText = strings.Repeat("The Transformer follows this overall architecture using stacked self-attention and point-wise, fully connected layers for both the encoder and decoder. ", 9)

func BenchmarkEmbedQuery(b *testing.B) {
	for _, name := range []string{pull.BGESmall, pull.BGESmallInt8, pull.AllMiniLML6} {
		b.Run(name, func(b *testing.B) {
			e := newEmbedder(b, name, onnx.EmbedderConfig{CacheSize: -1})
			q := "What are the two sub-layers of a Transformer encoder layer?"
			for b.Loop() {
				if _, err := e.EmbedQuery(b.Context(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEmbedDocuments embeds 32 chunk-sized texts (or 32 sentences) per op and compares
// run sizes (BatchTokens), and one session using both cores for each run with two
// single-threaded sessions running side by side.
func BenchmarkEmbedDocuments(b *testing.B) {
	b.Run("chunks", func(b *testing.B) { benchmarkEmbed(b, chunkText) })
	b.Run("sentences", func(b *testing.B) {
		benchmarkEmbed(b, "Multi-head attention runs several attention functions in parallel.")
	})
}

func benchmarkEmbed(b *testing.B, text string) {
	texts := make([]string, 32)
	for i := range texts {
		texts[i] = fmt.Sprintf("%d %s", i, text)
	}
	for _, name := range []string{pull.BGESmall, pull.BGESmallInt8, pull.AllMiniLML6} {
		for _, c := range []struct{ sessions, threads, tokens int }{{1, 2, 256}, {1, 2, 1024}, {1, 2, 4096}, {2, 1, 256}} {
			b.Run(fmt.Sprintf("%s/sessions=%d,threads=%d,tokens=%d", name, c.sessions, c.threads, c.tokens), func(b *testing.B) {
				e := newEmbedder(b, name, onnx.EmbedderConfig{Sessions: c.sessions, Threads: c.threads, BatchTokens: c.tokens, CacheSize: -1})
				lens := make([]int, len(texts))
				for i, t := range texts {
					lens[i] = len(e.Tokenizer().Encode(t, e.MaxLength()))
				}
				for b.Loop() {
					if _, err := e.EmbedDocuments(b.Context(), texts); err != nil {
						b.Fatal(err)
					}
				}
				sec := b.Elapsed().Seconds()
				b.ReportMetric(float64(b.N*len(texts))/sec, "texts/s")
				b.ReportMetric(flops(e.Manifest(), lens)*float64(b.N)/sec/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkRerank10 scores one query against 10 chunk-sized passages, the pipeline's
// default rerank depth.
//
// similarity: the shipped SimilarityReranker (bge-small, one query + 10 passages embedded).
// cross-encoder-cost: no cross-encoder weights are installable here, so this runs
// all-MiniLM-L6-v2 — the same architecture as ms-marco-MiniLM-L-6-v2 (6 layers, 384 hidden,
// 1536 feed-forward) — over the 10 concatenated [CLS] query [SEP] passage [SEP] pairs,
// which is what a MiniLM-L6 cross-encoder computes, less its one-unit head.
func BenchmarkRerank10(b *testing.B) {
	query := "What are the two sub-layers of a Transformer encoder layer?"
	passages := make([]string, 10)
	for i := range passages {
		passages[i] = fmt.Sprintf("%d %s", i, chunkText)
	}
	b.Run("similarity", func(b *testing.B) {
		e := newEmbedder(b, pull.BGESmall, onnx.EmbedderConfig{CacheSize: -1})
		r := onnx.NewSimilarityReranker(e, onnx.SimilarityConfig{})
		lens := []int{len(e.Tokenizer().Encode(e.Manifest().QueryPrefix+query, e.MaxLength()))}
		for _, p := range passages {
			lens = append(lens, len(e.Tokenizer().Encode(p, e.MaxLength())))
		}
		for b.Loop() {
			if _, err := r.Score(b.Context(), query, passages); err != nil {
				b.Fatal(err)
			}
		}
		sec := b.Elapsed().Seconds()
		b.ReportMetric(float64(b.N*len(passages))/sec, "pairs/s")
		b.ReportMetric(flops(e.Manifest(), lens)*float64(b.N)/sec/1e9, "GFLOP/s")
	})
	// similarity-cached: the passages and the query were embedded before (at indexing and
	// for retrieval), as in `footnote serve`.
	b.Run("similarity-cached", func(b *testing.B) {
		e := newEmbedder(b, pull.BGESmall, onnx.EmbedderConfig{})
		r := onnx.NewSimilarityReranker(e, onnx.SimilarityConfig{})
		if _, err := r.Score(b.Context(), query, passages); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := r.Score(b.Context(), query, passages); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(passages))/b.Elapsed().Seconds(), "pairs/s")
	})
	b.Run("cross-encoder-cost", func(b *testing.B) {
		e := newEmbedder(b, pull.AllMiniLML6, onnx.EmbedderConfig{MaxLength: 512, CacheSize: -1})
		pairs := make([]string, len(passages))
		var lens []int
		for i, p := range passages {
			pairs[i] = query + " [SEP] " + p
			ids, _ := e.Tokenizer().EncodePair(query, p, 512)
			lens = append(lens, len(ids))
		}
		for b.Loop() {
			if _, err := e.EmbedDocuments(b.Context(), pairs); err != nil {
				b.Fatal(err)
			}
		}
		sec := b.Elapsed().Seconds()
		b.ReportMetric(float64(b.N*len(pairs))/sec, "pairs/s")
		b.ReportMetric(flops(e.Manifest(), lens)*float64(b.N)/sec/1e9, "GFLOP/s")
	})
}

func BenchmarkLoadEmbedder(b *testing.B) {
	dir := models(b)
	for b.Loop() {
		e, err := onnx.NewEmbedder(onnx.EmbedderConfig{Dir: pull.ModelDir(dir, pull.BGESmall)})
		if err != nil {
			b.Fatal(err)
		}
		e.Close()
	}
}

// BenchmarkTokenizerShare measures, alternately in one loop, tokenizing a chunk-sized text
// (package hftok, through sugarme/tokenizer) and embedding it (tokenizing again, the run
// and pooling): the tokenizer's share of the cost of embedding a document.
func BenchmarkTokenizerShare(b *testing.B) {
	for _, name := range []string{pull.BGESmall, pull.BGESmallInt8} {
		b.Run(name, func(b *testing.B) {
			e := newEmbedder(b, name, onnx.EmbedderConfig{CacheSize: -1})
			var tok, emb time.Duration
			i := 0
			for b.Loop() {
				text := fmt.Sprintf("%d %s", i, chunkText)
				i++
				start := time.Now()
				e.Tokenizer().Encode(text, e.MaxLength())
				mid := time.Now()
				if _, err := e.EmbedDocuments(b.Context(), []string{text}); err != nil {
					b.Fatal(err)
				}
				tok, emb = tok+mid.Sub(start), emb+time.Since(mid)
			}
			b.ReportMetric(float64(tok.Microseconds())/float64(b.N), "tokenize-µs/chunk")
			b.ReportMetric(float64(emb.Microseconds())/float64(b.N), "embed-µs/chunk")
			b.ReportMetric(100*tok.Seconds()/emb.Seconds(), "tokenize-%")
		})
	}
}
