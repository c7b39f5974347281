package rag

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// vecEmbedder embeds the texts it knows as given and anything else along a fourth axis,
// so a test sets every similarity it depends on.
type vecEmbedder map[string][]float32

func (vecEmbedder) Info() ModelInfo { return ModelInfo{Name: "vec", Dim: 4, Metric: Cosine} }
func (e vecEmbedder) EmbedQuery(_ context.Context, s string) ([]float32, error) {
	return e.vec(s), nil
}
func (e vecEmbedder) EmbedDocuments(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		out[i] = e.vec(s)
	}
	return out, nil
}
func (e vecEmbedder) vec(s string) []float32 {
	if v, ok := e[s]; ok {
		return v
	}
	return []float32{0, 0, 0, 1}
}

// simReranker stands for the similarity reranker over the model it names; a test that
// reaches Score fails, since sentences are then to be scored from the embedder.
type simReranker struct {
	t     *testing.T
	model string
}

func (r simReranker) Score(context.Context, string, []string) ([]float64, error) {
	r.t.Error("sentences scored by the similarity reranker's Score, not by question-specific similarity")
	return nil, context.Canceled
}
func (r simReranker) VectorModel() string { return r.model }
func (r simReranker) ScoreVectors(context.Context, string, []float32, [][]float32) ([]float64, error) {
	return nil, context.Canceled
}

// TestExtractiveQuestionSpecific: the paper's summary sentence is the closest to the
// question, but only because it is close to everything the paper is about (its title); the
// sentence stating the fact is less close to the question and not to the title. An
// embedding scorer quotes the fact, on the page it is on; a cross-encoder's scores are
// taken as they are.
func TestExtractiveQuestionSpecific(t *testing.T) {
	const (
		title   = "LoRA: Low-Rank Adaptation of Large Language Models"
		query   = "How are the two low-rank matrices initialized at the start of training?"
		summary = "We propose Low-Rank Adaptation, which freezes the weights and injects trainable rank decomposition matrices."
		fact    = "We use a random Gaussian initialization for A and zero for B, so the product is zero at the beginning of training."
		other   = "Our experiments cover RoBERTa, DeBERTa, GPT-2 and GPT-3 on a range of benchmarks."
	)
	e := vecEmbedder{
		title:   {1, 0, 0, 0},
		query:   {0.6, 0.8, 0, 0},
		summary: {0.8, 0.6, 0, 0}, // cosine 0.96 to the question, 0.8 to the title
		fact:    {0, 1, 0, 0},     // cosine 0.8 to the question, 0 to the title
		other:   {0, 0, 1, 0},
	}
	chunk := Chunk{ID: "lora", Name: "2106.09685", Title: title, PageStart: 3, PageEnd: 4,
		Text: summary + " " + other + " " + fact}
	chunk.PageBreaks = []int{strings.Index(chunk.Text, fact)}

	first := func(t *testing.T, cfg Config) (string, []int) {
		sources := sourcesOf(chunk)
		got := testPipeline(t, cfg).extractive(t.Context(), query, sources)
		return splitSentences(got)[0], sources[0].Pages
	}
	for name, cfg := range map[string]Config{
		"embedder":           {Embedders: []Embedder{e}},
		"similarity scorer":  {Embedders: []Embedder{bowEmbedder{}, e}, Reranker: simReranker{t: t, model: "vec"}},
		"first embedder too": {Embedders: []Embedder{e}, Reranker: simReranker{t: t, model: "vec"}},
	} {
		t.Run(name, func(t *testing.T) {
			s, pages := first(t, cfg)
			if !strings.HasPrefix(s, "We use a random Gaussian") {
				t.Errorf("answer starts with %q, want the sentence stating the initialization", s)
			}
			if !slices.Contains(pages, 4) {
				t.Errorf("source cited on pages %v, want 4, the page of the initialization sentence", pages)
			}
		})
	}

	t.Run("cross-encoder", func(t *testing.T) {
		ce := fnReranker(func(_ string, ps []string) []float64 {
			out := make([]float64, len(ps))
			for i, p := range ps {
				if p == summary {
					out[i] = 0.9
				}
			}
			return out
		})
		if s, _ := first(t, Config{Embedders: []Embedder{e}, Reranker: ce}); !strings.HasPrefix(s, "We propose") {
			t.Errorf("answer starts with %q, want the cross-encoder's best sentence", s)
		}
	})

	t.Run("without the contrast the summary wins", func(t *testing.T) {
		defer func(w float64) { titleContrast = w }(titleContrast)
		titleContrast = 0
		if s, _ := first(t, Config{Embedders: []Embedder{e}}); !strings.HasPrefix(s, "We propose") {
			t.Errorf("answer starts with %q: the test no longer shows the problem", s)
		}
	})
}
