package retrievalbench

import (
	"errors"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/rag"
)

// benchQuestions mix answerable questions with unanswerable ones, as traffic does. The
// fixture's models cache no vectors, so each iteration pays for its embeddings.
var benchQuestions = []string{
	"What are the two sub-layers in each encoder layer of the Transformer model?",
	"How does Dense Passage Retrieval train its encoders with in-batch negatives?",
	"What is the capital of Mars?",
	"What does LoRA freeze and what does it train when adapting a large model?",
	"How do I bake sourdough bread with a stiff levain?",
	"How does Sentence-BERT derive fixed-size sentence embeddings from BERT?",
}

// BenchmarkRetrieve measures one retrieval per method end to end (query embedding, hybrid
// search over the corpus, cross-encoder rerank of the top 10, cut), and reports the mean
// time of each stage.
func BenchmarkRetrieve(b *testing.B) {
	f := corpus(b)
	for _, reranked := range []bool{true, false} {
		p := f.pipeline(b, reranked)
		for _, m := range p.Methods() {
			name := m
			if !reranked {
				name += "/no-rerank"
			}
			b.Run(name, func(b *testing.B) {
				var embed, search, rerank time.Duration
				// Warm the caches (store snapshot, ONNX sessions) outside the timing.
				if _, err := p.Retrieve(b.Context(), rag.Question{Text: benchQuestions[0], Method: m}); err != nil && !errors.Is(err, rag.ErrNoEvidence) {
					b.Fatal(err)
				}
				n := 0
				for b.Loop() {
					r, err := p.Retrieve(b.Context(), rag.Question{Text: benchQuestions[n%len(benchQuestions)], Method: m})
					if err != nil && !errors.Is(err, rag.ErrNoEvidence) {
						b.Fatal(err)
					}
					embed += r.Timings.Embed
					search += r.Timings.Search
					rerank += r.Timings.Rerank
					n++
				}
				b.ReportMetric(float64(embed.Microseconds())/float64(n)/1000, "embed-ms/op")
				b.ReportMetric(float64(search.Microseconds())/float64(n)/1000, "search-ms/op")
				b.ReportMetric(float64(rerank.Microseconds())/float64(n)/1000, "rerank-ms/op")
			})
		}
	}
}

// BenchmarkRerank measures the cross-encoder stage alone: one batched call over the ten
// candidates hybrid search returns.
func BenchmarkRerank(b *testing.B) {
	f := corpus(b)
	p := f.pipeline(b, false)
	r, err := p.Retrieve(b.Context(), rag.Question{Text: benchQuestions[0], TopK: 10})
	if err != nil {
		b.Fatal(err)
	}
	var passages []string
	for _, c := range r.Candidates[:min(10, len(r.Candidates))] {
		passages = append(passages, c.Chunk.Text)
	}
	for b.Loop() {
		if _, err := f.reranker.Score(b.Context(), benchQuestions[0], passages); err != nil {
			b.Fatal(err)
		}
	}
}
