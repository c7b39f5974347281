package retrievalbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
	"github.com/footnote-dev/footnote/rag/eval"
)

// tuneConfig is one candidate setting of the retrieval defaults.
type tuneConfig struct {
	method     string
	fusion     rag.Fusion // Weights: dense, then bm25
	candidates int
	rerankTop  int
	docWeight  float64
	fusedW     float64
}

func (c tuneConfig) String() string {
	f := fmt.Sprintf("rrf k=%d", c.fusion.K)
	if c.fusion.Method == "weighted" {
		f = fmt.Sprintf("weighted %v", c.fusion.Weights)
	}
	if c.method != rag.MethodHybrid {
		f = "-"
	}
	return fmt.Sprintf("%s\t%s\t%d\t%d\t%.1f\t%.1f", c.method, f, c.candidates, c.rerankTop, c.docWeight, c.fusedW)
}

func (f *fixture) tunePipeline(tb testing.TB, c tuneConfig) *rag.Pipeline {
	tb.Helper()
	p, err := rag.New(rag.Config{
		Searcher:  f.store,
		Embedders: f.embedders[:1],
		Sparse: func(ctx context.Context) (rag.SparseEncoder, error) {
			st, err := f.store.Stats(ctx)
			if err != nil {
				return nil, err
			}
			return bm25.NewQueryEncoder(bm25.Params{}, st.Chunks, st.DF), nil
		},
		Reranker:    f.reranker,
		Candidates:  c.candidates,
		RerankTop:   c.rerankTop,
		DocWeight:   c.docWeight,
		FusedWeight: c.fusedW,
		Fusion:      c.fusion,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// tuneScore is what a setting is judged by on the answerable questions: the mean
// reciprocal rank of the first chunk on an expected page and of the first from an
// expected paper, and Recall@5 of expected pages, after rerank and document prior, as
// the answer sees them; and the questions the cut refuses, wrongly or rightly.
type tuneScore struct {
	pageMRR, srcMRR, pageR5, srcR5 float64
	srcP5                          float64 // share of the top 5 from an expected paper
	falseRef, refused, unanswer    int
}

func tuneRun(tb testing.TB, p *rag.Pipeline, method string, qs []eval.Question) tuneScore {
	tb.Helper()
	var s tuneScore
	answerable := 0
	for _, q := range qs {
		r, err := p.Retrieve(tb.(interface{ Context() context.Context }).Context(), rag.Question{Text: q.Question, Method: method})
		refused := errors.Is(err, rag.ErrNoEvidence)
		if err != nil && !refused {
			tb.Fatal(err)
		}
		if !q.Answerable {
			s.unanswer++
			if refused {
				s.refused++
			}
			continue
		}
		answerable++
		if refused {
			s.falseRef++
		}
		firstSrc, firstPage := 0, 0
		for i, c := range r.Candidates {
			if i < 5 && q.Relevant(c.Chunk, eval.SourceLevel) {
				s.srcP5 += 0.2
			}
			if firstSrc == 0 && q.Relevant(c.Chunk, eval.SourceLevel) {
				firstSrc = i + 1
			}
			if firstPage == 0 && q.Relevant(c.Chunk, eval.PageLevel) {
				firstPage = i + 1
			}
		}
		if firstSrc > 0 {
			s.srcMRR += 1 / float64(firstSrc)
		}
		if firstPage > 0 {
			s.pageMRR += 1 / float64(firstPage)
		}
		if firstSrc > 0 && firstSrc <= 5 {
			s.srcR5++
		}
		if firstPage > 0 && firstPage <= 5 {
			s.pageR5++
		}
	}
	n := float64(max(answerable, 1))
	s.pageMRR /= n
	s.srcMRR /= n
	s.pageR5 /= n
	s.srcR5 /= n
	s.srcP5 /= n
	return s
}

// TestTuneDefaults is a tuning tool, not a check: it runs the first turns of the
// questions in $FOOTNOTE_TUNE_QUESTIONS (the tuning half of the development set, never
// the reporting half) through a grid of retrieval settings and logs one row each:
//
//	FOOTNOTE_TUNE_QUESTIONS=…/tune.jsonl go test -run TuneDefaults -v ./internal/retrievalbench/
func TestTuneDefaults(t *testing.T) {
	path := os.Getenv("FOOTNOTE_TUNE_QUESTIONS")
	if path == "" {
		t.Skip("skipping: a tuning tool; set FOOTNOTE_TUNE_QUESTIONS to the tuning half of the question set")
	}
	qs, err := eval.LoadQuestionsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := corpus(t)
	var grid []tuneConfig
	for _, m := range []string{rag.MethodBM25, rag.MethodDense} {
		for _, dw := range []float64{0, 0.3, 0.8} {
			for _, rt := range []int{10, 20} {
				for _, fw := range []float64{0, 0.3, 0.5} {
					grid = append(grid, tuneConfig{method: m, fusion: rag.Fusion{Method: "rrf", K: 60}, candidates: 20, rerankTop: rt, docWeight: dw, fusedW: fw})
				}
			}
		}
	}
	fusions := []rag.Fusion{{Method: "rrf", K: 60}, {Method: "rrf", K: 10}}
	for _, w := range [][]float64{{1, 1}, {0.5, 1}, {0.3, 1}} {
		fusions = append(fusions, rag.Fusion{Method: "weighted", Weights: w})
	}
	for _, fu := range fusions {
		for _, dw := range []float64{0, 0.3, 0.8} {
			for _, rt := range []int{5, 10, 20} {
				for _, fw := range []float64{0, 0.3, 0.5} {
					grid = append(grid, tuneConfig{method: rag.MethodHybrid, fusion: fu, candidates: 20, rerankTop: rt, docWeight: dw, fusedW: fw})
				}
			}
		}
	}
	if os.Getenv("FOOTNOTE_TUNE_GRID") == "final" {
		// The old default, the plain methods, and the chosen default.
		grid = []tuneConfig{
			{method: rag.MethodHybrid, fusion: rag.Fusion{Method: "rrf", K: 60}, candidates: 20, rerankTop: 10, docWeight: 0.8},
			{method: rag.MethodBM25, fusion: rag.Fusion{Method: "rrf", K: 60}, candidates: 20, rerankTop: 10, docWeight: 0.8},
			{method: rag.MethodDense, fusion: rag.Fusion{Method: "rrf", K: 60}, candidates: 20, rerankTop: 10, docWeight: 0.8},
			{method: rag.MethodHybrid, fusion: rag.Fusion{Method: "weighted"}, candidates: 20, rerankTop: 10, docWeight: 0.8},
			{method: rag.MethodHybrid, fusion: rag.Fusion{Method: "weighted"}, candidates: 20, rerankTop: 10, docWeight: 0.3},
			{method: rag.MethodHybrid, fusion: rag.Fusion{Method: "weighted"}, candidates: 20, rerankTop: 10, docWeight: 0.3, fusedW: 0.3},
			{method: rag.MethodHybrid, fusion: rag.Fusion{Method: "weighted"}, candidates: 20, rerankTop: 10, docWeight: 0.8, fusedW: 0.3},
			{method: rag.MethodBM25, fusion: rag.Fusion{Method: "rrf", K: 60}, candidates: 20, rerankTop: 10, docWeight: 0.3, fusedW: 0.3},
		}
	}
	if filter := os.Getenv("FOOTNOTE_TUNE_FILTER"); filter != "" {
		grid = slices.DeleteFunc(grid, func(c tuneConfig) bool { return !strings.Contains(c.String(), filter) })
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "method\tfusion\tcand\trerank top\tdoc w\tfused w\t| page MRR\tsrc MRR\tpage R@5\tsrc R@5\tsrc P@5\tfalse ref\trefused unans.")
	for _, c := range grid {
		p := f.tunePipeline(t, c)
		s := tuneRun(t, p, c.method, qs)
		fmt.Fprintf(tw, "%s\t| %.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%d/%d\n", c, s.pageMRR, s.srcMRR, s.pageR5, s.srcR5, s.srcP5, s.falseRef, s.refused, s.unanswer)
	}
	tw.Flush()
	t.Logf("%d questions from %s; reranker %s\n%s", len(qs), path, f.rerankBy, b.String())
}

// TestTuneExtractive is a tuning tool like TestTuneDefaults: it answers the answerable
// first turns of $FOOTNOTE_TUNE_QUESTIONS extractively with several sentence shortlist
// sizes (rag.Config.SentenceCandidates; -1 scores every candidate) and logs how often an
// expected paper and an expected page are cited (a source's quoted Pages, else its
// first page) and the composing time.
func TestTuneExtractive(t *testing.T) {
	path := os.Getenv("FOOTNOTE_TUNE_QUESTIONS")
	if path == "" {
		t.Skip("skipping: a tuning tool; set FOOTNOTE_TUNE_QUESTIONS to the tuning half of the question set")
	}
	qs, err := eval.LoadQuestionsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := corpus(t)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "shortlist\t| answered\tcited paper\tcited page\tcompose p50\tcompose p95")
	for _, limit := range []int{-1, 32, 24, 16, 12} {
		p, err := rag.New(rag.Config{
			Searcher:  f.store,
			Embedders: f.embedders[:1],
			Sparse: func(ctx context.Context) (rag.SparseEncoder, error) {
				st, err := f.store.Stats(ctx)
				if err != nil {
					return nil, err
				}
				return bm25.NewQueryEncoder(bm25.Params{}, st.Chunks, st.DF), nil
			},
			Reranker:           f.reranker,
			DocWeight:          0.8,
			Fusion:             rag.Fusion{Method: "weighted"},
			FusedWeight:        0.3,
			SentenceCandidates: limit,
		})
		if err != nil {
			t.Fatal(err)
		}
		answered, paper, page := 0, 0, 0
		var compose []time.Duration
		for _, q := range qs {
			if !q.Answerable {
				continue
			}
			ans, err := p.Ask(t.Context(), rag.Question{Text: q.Question}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ans.Refused {
				continue
			}
			answered++
			compose = append(compose, ans.Timings.Generate)
			gotPaper, gotPage := false, false
			for _, s := range ans.Sources {
				if !s.Cited || !slices.Contains(q.ExpectedSources, s.Chunk.Name) {
					continue
				}
				gotPaper = true
				pages := s.Pages
				if len(pages) == 0 {
					pages = []int{s.Chunk.PageStart}
				}
				want, ok := q.ExpectedPages[s.Chunk.Name]
				for _, pg := range pages {
					gotPage = gotPage || !ok || slices.Contains(want, pg)
				}
			}
			if gotPaper {
				paper++
			}
			if gotPage {
				page++
			}
		}
		slices.Sort(compose)
		pct := func(q float64) time.Duration {
			if len(compose) == 0 {
				return 0
			}
			return compose[min(len(compose)-1, int(q*float64(len(compose))))].Round(time.Millisecond)
		}
		fmt.Fprintf(tw, "%d\t| %d\t%d\t%d\t%v\t%v\n", limit, answered, paper, page, pct(0.5), pct(0.95))
	}
	tw.Flush()
	t.Logf("%s; reranker %s\n%s", path, f.rerankBy, b.String())
}
