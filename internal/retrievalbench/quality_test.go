package retrievalbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/eval"
)

// TestQuality runs the evaluation questions through every method and logs the report
// (`go test -v -run Quality`). FOOTNOTE_EVAL_JSON=path also writes it as JSON. The
// assertions are floors that catch a broken stage, not targets: the numbers are the output.
func TestQuality(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: the quality run embeds every reranked passage afresh (minutes on two cores)")
	}
	f := corpus(t)
	qs, err := eval.LoadQuestionsFile(corpustest.Questions(t))
	if err != nil {
		t.Fatal(err)
	}
	p := f.pipeline(t, true)
	rep, err := eval.Run(t.Context(), eval.Config{Retrieve: p.Retrieve, Methods: p.Methods()}, qs)
	if err != nil {
		t.Fatalf("eval.Run: %v", err)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("corpus: %d documents, %d chunks, ingested in %v; reranker %s\n%s", f.docs, f.chunks, f.ingestDur, f.rerankBy, buf.String())
	if path := os.Getenv("FOOTNOTE_EVAL_JSON"); path != "" {
		js, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(path, js, 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, m := range rep.Methods {
		// Every method must find an expected paper among its top k for most questions;
		// below this a stage is broken (wrong vectors, empty BM25, a mis-ordered fusion).
		if m.Source.Recall < 0.6 {
			t.Errorf("%s: source Recall@%d %.2f below the 0.6 floor", m.Method, rep.K, m.Source.Recall)
		}
		// The cut must still tell the off-topic questions from the answerable ones.
		if m.Refusal.Accuracy < 0.5 || m.Refusal.FalseRefusalRate > 0.5 {
			t.Errorf("%s: refused %d/%d unanswerable and %d answerable questions: the score cut is broken",
				m.Method, m.Refusal.Refused, m.Refusal.Unanswerable, m.Refusal.FalseRefusals)
		}
	}
}

// lastReportSet is the newest reporting set with floors: report<N>.jsonl and floors<N>.json.
const lastReportSet = 113

// reportSet is a reporting set of rag/eval/testdata (see its README) with the floors CI
// holds it to.
type reportSet struct{ questions, floors string }

// reportSets are report.jsonl with floors.json, then report2.jsonl … with floors2.json ….
var reportSets = func() []reportSet {
	sets := []reportSet{{testdata("report.jsonl"), testdata("floors.json")}}
	for n := 2; n <= lastReportSet; n++ {
		sets = append(sets, reportSet{testdata(fmt.Sprintf("report%d.jsonl", n)), testdata(fmt.Sprintf("floors%d.json", n))})
	}
	return sets
}()

func testdata(name string) string { return filepath.Join("..", "..", "rag", "eval", "testdata", name) }

// TestDevSetFloors answers each reporting set of the development set with the default
// configuration (hybrid, extractive answers) and fails when a figure breaks a limit of its
// floors file: near misses and off-topic questions refused, false refusals, an expected
// paper/page retrieved and cited, follow-up turns citing the expected paper, citation
// validity, grounding support. FOOTNOTE_EVAL_JSON=dir also writes each report there, and
// FOOTNOTE_EVAL_FLOORS=dir floors at the measured figures minus 0.05, named as the floors
// files.
func TestDevSetFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: answers the reporting sets of the development set on the whole corpus (minutes on two cores)")
	}
	f := corpus(t)
	p := f.defaultPipeline(t)
	for _, set := range reportSets {
		t.Run(filepath.Base(set.questions), func(t *testing.T) {
			qs, err := eval.LoadQuestionsFile(set.questions)
			if err != nil {
				t.Fatal(err)
			}
			// The floors files hold the default method.
			rep, err := eval.Run(t.Context(), eval.Config{Retrieve: p.Retrieve, Ask: p.Ask, Methods: []string{rag.MethodHybrid}}, qs)
			if err != nil {
				t.Fatalf("eval.Run: %v", err)
			}
			var buf bytes.Buffer
			if err := rep.WriteTable(&buf); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s, default configuration; reranker %s\n%s", filepath.Base(set.questions), f.rerankBy, buf.String())
			name := strings.TrimSuffix(filepath.Base(set.questions), ".jsonl")
			if dir := os.Getenv("FOOTNOTE_EVAL_JSON"); dir != "" {
				js, _ := json.MarshalIndent(rep, "", "  ")
				if err := os.WriteFile(filepath.Join(dir, name+".json"), js, 0o644); err != nil {
					t.Error(err)
				}
			}
			if dir := os.Getenv("FOOTNOTE_EVAL_FLOORS"); dir != "" {
				js, _ := json.MarshalIndent(eval.Suggest(rep.Methods[0], 0.05), "", "  ")
				if err := os.WriteFile(filepath.Join(dir, filepath.Base(set.floors)), append(js, '\n'), 0o644); err != nil {
					t.Error(err)
				}
			}
			fl, err := eval.LoadFloors(set.floors)
			if err != nil {
				t.Fatal(err)
			}
			if fl.Method != rag.MethodHybrid {
				t.Fatalf("%s holds %s; the default method is %s", set.floors, fl.Method, rag.MethodHybrid)
			}
			for _, b := range fl.Check(rep) {
				t.Error(b)
			}
		})
	}
}

// TestCompare runs one evaluation question through every method side by side, as
// `footnote compare` does, and logs the rows.
func TestCompare(t *testing.T) {
	f := corpus(t)
	p := f.pipeline(t, true)
	q := rag.Question{Text: "What are the two sub-layers in each encoder layer of the Transformer model?"}
	res, err := p.Compare(t.Context(), q, nil)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	if len(res) != len(p.Methods()) {
		t.Fatalf("%d results for %d methods", len(res), len(p.Methods()))
	}
	var b strings.Builder
	for _, m := range res {
		fmt.Fprintf(&b, "%s (%v, refused %v)\n", m.Method, m.Elapsed.Round(time.Millisecond), m.Refused)
		for _, r := range m.Rows {
			fmt.Fprintf(&b, "  %d. %s p.%d %q %.3f kept=%v\n", r.Rank, r.Name, r.PageStart, strings.Join(r.Section, " > "), r.Score, r.Kept)
		}
		if m.Refused || len(m.Rows) == 0 || m.Rows[0].Name != "1706.03762" {
			t.Errorf("%s: refused %v, rows %d; want the Transformer paper first", m.Method, m.Refused, len(m.Rows))
		}
	}
	t.Log("\n" + b.String())
}
