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

// The reporting sets of rag/eval/testdata (see its README), each with the floors CI holds
// it to.
var reportSets = []struct{ questions, floors string }{
	{testdata("report.jsonl"), testdata("floors.json")},
	{testdata("report2.jsonl"), testdata("floors2.json")},
	{testdata("report3.jsonl"), testdata("floors3.json")},
	{testdata("report4.jsonl"), testdata("floors4.json")},
	{testdata("report5.jsonl"), testdata("floors5.json")},
	{testdata("report6.jsonl"), testdata("floors6.json")},
	{testdata("report7.jsonl"), testdata("floors7.json")},
	{testdata("report8.jsonl"), testdata("floors8.json")},
	{testdata("report9.jsonl"), testdata("floors9.json")},
	{testdata("report10.jsonl"), testdata("floors10.json")},
	{testdata("report11.jsonl"), testdata("floors11.json")},
	{testdata("report12.jsonl"), testdata("floors12.json")},
	{testdata("report13.jsonl"), testdata("floors13.json")},
	{testdata("report14.jsonl"), testdata("floors14.json")},
	{testdata("report15.jsonl"), testdata("floors15.json")},
	{testdata("report16.jsonl"), testdata("floors16.json")},
	{testdata("report17.jsonl"), testdata("floors17.json")},
	{testdata("report18.jsonl"), testdata("floors18.json")},
	{testdata("report19.jsonl"), testdata("floors19.json")},
	{testdata("report20.jsonl"), testdata("floors20.json")},
	{testdata("report21.jsonl"), testdata("floors21.json")},
	{testdata("report22.jsonl"), testdata("floors22.json")},
	{testdata("report23.jsonl"), testdata("floors23.json")},
	{testdata("report24.jsonl"), testdata("floors24.json")},
	{testdata("report25.jsonl"), testdata("floors25.json")},
	{testdata("report26.jsonl"), testdata("floors26.json")},
	{testdata("report27.jsonl"), testdata("floors27.json")},
	{testdata("report28.jsonl"), testdata("floors28.json")},
	{testdata("report29.jsonl"), testdata("floors29.json")},
	{testdata("report30.jsonl"), testdata("floors30.json")},
	{testdata("report31.jsonl"), testdata("floors31.json")},
	{testdata("report32.jsonl"), testdata("floors32.json")},
	{testdata("report33.jsonl"), testdata("floors33.json")},
	{testdata("report34.jsonl"), testdata("floors34.json")},
	{testdata("report35.jsonl"), testdata("floors35.json")},
	{testdata("report36.jsonl"), testdata("floors36.json")},
	{testdata("report37.jsonl"), testdata("floors37.json")},
	{testdata("report38.jsonl"), testdata("floors38.json")},
	{testdata("report39.jsonl"), testdata("floors39.json")},
	{testdata("report40.jsonl"), testdata("floors40.json")},
	{testdata("report41.jsonl"), testdata("floors41.json")},
	{testdata("report42.jsonl"), testdata("floors42.json")},
	{testdata("report43.jsonl"), testdata("floors43.json")},
	{testdata("report44.jsonl"), testdata("floors44.json")},
	{testdata("report45.jsonl"), testdata("floors45.json")},
	{testdata("report46.jsonl"), testdata("floors46.json")},
	{testdata("report47.jsonl"), testdata("floors47.json")},
	{testdata("report48.jsonl"), testdata("floors48.json")},
	{testdata("report49.jsonl"), testdata("floors49.json")},
	{testdata("report50.jsonl"), testdata("floors50.json")},
	{testdata("report51.jsonl"), testdata("floors51.json")},
	{testdata("report52.jsonl"), testdata("floors52.json")},
	{testdata("report53.jsonl"), testdata("floors53.json")},
	{testdata("report54.jsonl"), testdata("floors54.json")},
	{testdata("report55.jsonl"), testdata("floors55.json")},
	{testdata("report56.jsonl"), testdata("floors56.json")},
	{testdata("report57.jsonl"), testdata("floors57.json")},
	{testdata("report58.jsonl"), testdata("floors58.json")},
	{testdata("report59.jsonl"), testdata("floors59.json")},
	{testdata("report60.jsonl"), testdata("floors60.json")},
	{testdata("report61.jsonl"), testdata("floors61.json")},
	{testdata("report62.jsonl"), testdata("floors62.json")},
	{testdata("report63.jsonl"), testdata("floors63.json")},
	{testdata("report64.jsonl"), testdata("floors64.json")},
	{testdata("report65.jsonl"), testdata("floors65.json")},
}

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
