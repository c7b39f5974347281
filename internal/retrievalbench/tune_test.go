package retrievalbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/footnote-dev/footnote/rag"
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
	cfg := f.defaultConfig()
	cfg.Candidates, cfg.RerankTop, cfg.DocWeight, cfg.FusedWeight, cfg.Fusion = c.candidates, c.rerankTop, c.docWeight, c.fusedW, c.fusion
	p, err := rag.New(cfg)
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
// sizes (rag.Config.SentenceCandidates; -1 scores every candidate) on the default
// configuration and logs how often an
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
		cfg := f.defaultConfig()
		cfg.SentenceCandidates = limit
		p, err := rag.New(cfg)
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

// spent reports whether a reporting set has already decided between the candidates it was
// written for (rag/eval/testdata/README.md): it is then tuning data for the next candidate,
// which a fresh held-out set judges. A set gets its CI floors (reportSets) when it is
// measured for its decision, so the sets with floors are the spent ones; every other
// report*.jsonl is held out.
func spent(name string) bool {
	return slices.ContainsFunc(reportSets, func(s reportSet) bool {
		return filepath.Base(s.questions) == name
	})
}

// TestTuneDevSet is a tuning tool like TestTuneDefaults: it answers the questions of
// $FOOTNOTE_TUNE_QUESTIONS (comma-separated files of the tuning side, never a held-out
// reporting set) with the default pipeline, as TestDevSetFloors does, and logs the table
// and every turn that missed: a false refusal, an answerable turn citing no expected
// paper or page, an unanswerable one answered. FOOTNOTE_EVAL_JSON=path writes the report.
func TestTuneDevSet(t *testing.T) {
	paths := os.Getenv("FOOTNOTE_TUNE_QUESTIONS")
	if paths == "" {
		t.Skip("skipping: a tuning tool; set FOOTNOTE_TUNE_QUESTIONS to the tuning files of the question set")
	}
	var qs []eval.Question
	for _, path := range strings.Split(paths, ",") {
		if name := filepath.Base(path); strings.HasPrefix(name, "report") && !spent(name) {
			t.Fatalf("%s is a held-out reporting set: tune on the tuning files only", path)
		}
		q, err := eval.LoadQuestionsFile(path)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q...)
	}
	f := corpus(t)
	p := f.defaultPipeline(t)
	// FOOTNOTE_TUNE_METHODS=bm25 compares another method on the tuning side.
	var methods []string
	if m := os.Getenv("FOOTNOTE_TUNE_METHODS"); m != "" {
		methods = strings.Split(m, ",")
	}
	rep, err := eval.Run(t.Context(), eval.Config{Retrieve: p.Retrieve, Ask: p.Ask, Methods: methods}, qs)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Methods[0].Results {
		a := r.Answer
		var miss string
		switch {
		case a == nil:
		case r.Answerable && a.Refused:
			miss = "false refusal " + strings.Join(a.Missing, "; ")
		case r.Answerable && !a.CitedExpected:
			miss = "no expected paper cited"
		case r.Answerable && !a.CitedExpectedPage:
			miss = "no expected page cited"
		case !r.Answerable && !a.Refused:
			miss = "answered an unanswerable turn"
		}
		if miss != "" {
			fmt.Fprintf(&b, "MISS %s#%d [%s] %s (first source %d, first page %d, top %v)\n   %.300s\n", r.ID, r.Turn, r.Category, miss, r.FirstSource, r.FirstPage, r.TopK, strings.ReplaceAll(a.Text, "\n", " "))
		}
	}
	t.Logf("%d questions from %s; reranker %s\n%s", len(qs), paths, f.rerankBy, b.String())
	if path := os.Getenv("FOOTNOTE_EVAL_JSON"); path != "" {
		js, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(path, js, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// tuneOverrides applies $FOOTNOTE_TUNE_SET ("min=0.25,top=15,doc=0.5") to the default
// pipeline's settings, so TestTuneDevSet can try one candidate setting per run. The floors
// test never reads it (it fails when the variable is set).
func tuneOverrides(tb testing.TB, cfg *rag.Config) {
	set := os.Getenv("FOOTNOTE_TUNE_SET")
	if set == "" {
		return
	}
	if !strings.HasPrefix(tb.Name(), "TestTune") {
		tb.Fatalf("FOOTNOTE_TUNE_SET=%s is a tuning override: unset it for %s", set, tb.Name())
	}
	for _, kv := range strings.Split(set, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var x float64
		if _, err := fmt.Sscan(v, &x); err != nil {
			tb.Fatalf("FOOTNOTE_TUNE_SET: %s: %v", kv, err)
		}
		switch k {
		case "min":
			cfg.MinScore = x
		case "gap":
			cfg.MaxGap = x
		case "doc":
			cfg.DocWeight = x
		case "fused":
			cfg.FusedWeight = x
		case "debug":
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		case "top":
			cfg.RerankTop = int(x)
		case "wbm25":
			// BM25's weight in weighted fusion, every dense model weighing 1.
			w := make([]float64, len(cfg.Embedders)+1)
			for i := range w {
				w[i] = 1
			}
			w[len(w)-1] = x
			cfg.Fusion.Weights = w
		default:
			tb.Fatalf("FOOTNOTE_TUNE_SET: unknown setting %q", k)
		}
	}
}

// TestTuneAsk is a tuning tool: it answers $FOOTNOTE_TUNE_ASK with the default pipeline
// (and $FOOTNOTE_TUNE_SET; "debug=1" logs the pipeline's decisions) and logs the answer
// and its sources.
func TestTuneAsk(t *testing.T) {
	q := os.Getenv("FOOTNOTE_TUNE_ASK")
	if q == "" {
		t.Skip("skipping: a tuning tool; set FOOTNOTE_TUNE_ASK to a question")
	}
	f := corpus(t)
	pl := f.defaultPipeline(t)
	if r, err := pl.Retrieve(t.Context(), rag.Question{Text: q}); err == nil || errors.Is(err, rag.ErrNoEvidence) {
		for _, c := range r.Candidates {
			t.Logf("candidate %s p%d rerank %.3f: %.90s", c.Chunk.DocID, c.Chunk.PageStart, c.Rerank, c.Chunk.Text)
		}
	}
	a, err := pl.Ask(t.Context(), rag.Question{Text: q}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(a.Text)
	for _, s := range a.Sources {
		t.Log(s.Chunk.DocID, s.Chunk.PageStart, s.Pages, s.Cited, s.Score, s.Chunk.Section)
	}
}
