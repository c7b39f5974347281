package retrievalbench

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/eval"
)

// servePipeline is a Pipeline over the fixture with footnote serve's default settings
// (defaultConfig): the reranker reading stored vectors and extractive answers scoring a
// shortlist of sentences; or, with before, the path this replaced: the reranker embeds
// every candidate's text and every candidate sentence is scored.
func (f *fixture) servePipeline(tb testing.TB, before bool) *rag.Pipeline {
	tb.Helper()
	cfg := f.defaultConfig()
	if before {
		cfg.RerankText = true
		cfg.SentenceCandidates = -1
	}
	p, err := rag.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// speedQuestions are the development questions, answerable and not, as traffic mixes them.
func speedQuestions(tb testing.TB) []string {
	tb.Helper()
	qs, err := eval.LoadQuestionsFile(corpustest.Questions(tb))
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, q := range qs {
		out = append(out, q.Question)
	}
	return out
}

// reportPercentiles adds p50 and p95 of the per-operation latencies to the benchmark line.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
}

// BenchmarkRetrieveRerank measures hybrid retrieval with rerank on a warm pipeline, as
// `footnote serve` runs it, twice in one run: embedding the candidates' text again
// ("before") and scoring them from their stored vectors ("after", the default). The fixture's embedder caches no vectors, so re-embed pays for every
// candidate, as serve does for passages it has not reranked before. Run with
// -benchtime=Nx for N questions; p50-ms and p95-ms are per question.
func BenchmarkRetrieveRerank(b *testing.B) {
	f := corpus(b)
	qs := speedQuestions(b)
	for _, mode := range []struct {
		name   string
		before bool
	}{{"before", true}, {"after", false}} {
		p := f.servePipeline(b, mode.before)
		b.Run(mode.name, func(b *testing.B) {
			// Warm the store snapshot and the ONNX session outside the timing.
			if _, err := p.Retrieve(b.Context(), rag.Question{Text: qs[0]}); err != nil && !errors.Is(err, rag.ErrNoEvidence) {
				b.Fatal(err)
			}
			var lat []time.Duration
			var rerank time.Duration
			n := 0
			for b.Loop() {
				start := time.Now()
				r, err := p.Retrieve(b.Context(), rag.Question{Text: qs[n%len(qs)]})
				lat = append(lat, time.Since(start))
				if err != nil && !errors.Is(err, rag.ErrNoEvidence) {
					b.Fatal(err)
				}
				rerank += r.Timings.Rerank
				n++
			}
			reportPercentiles(b, lat)
			b.ReportMetric(float64(rerank.Microseconds())/float64(n)/1000, "rerank-ms/op")
		})
	}
}

// BenchmarkAnswerExtractive measures a whole extractive answer (condense, retrieve,
// rerank, compose; the work behind POST /query without the HTTP and bot layers) on a
// warm pipeline, before (candidates re-embedded, every sentence scored) and after
// (stored vectors, a shortlist of sentences) in one run.
func BenchmarkAnswerExtractive(b *testing.B) {
	f := corpus(b)
	qs := speedQuestions(b)
	for _, mode := range []struct {
		name   string
		before bool
	}{{"before", true}, {"after", false}} {
		p := f.servePipeline(b, mode.before)
		b.Run(mode.name, func(b *testing.B) {
			if _, err := p.Ask(b.Context(), rag.Question{Text: qs[0]}, nil); err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			var compose time.Duration
			n := 0
			for b.Loop() {
				start := time.Now()
				ans, err := p.Ask(b.Context(), rag.Question{Text: qs[n%len(qs)]}, nil)
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				compose += ans.Timings.Generate
				n++
			}
			reportPercentiles(b, lat)
			b.ReportMetric(float64(compose.Microseconds())/float64(n)/1000, "compose-ms/op")
		})
	}
}

// TestStoredVectorsMatchReembedding retrieves development questions through the real store
// twice, the reranker reading stored vectors and embedding the candidates' text, and
// requires the same candidates with the same probabilities (within float rounding: index
// and rerank batches pad differently).
func TestStoredVectorsMatchReembedding(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: re-embeds the candidates of several questions")
	}
	f := corpus(t)
	if _, ok := f.reranker.(rag.VectorReranker); !ok {
		t.Skipf("skipping: reranker %s reads text, not vectors", f.rerankBy)
	}
	qs := speedQuestions(t)
	fromVectors, fromText := f.servePipeline(t, false), f.servePipeline(t, true)
	compared := 0
	for _, q := range qs[:min(6, len(qs))] {
		a, errA := fromVectors.Retrieve(t.Context(), rag.Question{Text: q})
		b, errB := fromText.Retrieve(t.Context(), rag.Question{Text: q})
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%q: errors differ: %v vs %v", q, errA, errB)
		}
		byID := map[string]float64{}
		for _, c := range b.Candidates {
			byID[c.Chunk.ID] = c.Rerank
		}
		if len(a.Candidates) != len(b.Candidates) || len(a.Hits) != len(b.Hits) {
			t.Errorf("%q: %d candidates / %d kept from vectors, %d / %d from text", q, len(a.Candidates), len(a.Hits), len(b.Candidates), len(b.Hits))
		}
		for _, c := range a.Candidates {
			want, ok := byID[c.Chunk.ID]
			if !ok {
				t.Errorf("%q: candidate %s only from vectors", q, c.Chunk.ID)
				continue
			}
			if d := c.Rerank - want; d > 1e-4 || d < -1e-4 {
				t.Errorf("%q: %s scores %.6f from vectors, %.6f from text", q, c.Chunk.ID, c.Rerank, want)
			}
			compared++
		}
	}
	if compared == 0 {
		t.Fatal("no candidate compared")
	}
}
