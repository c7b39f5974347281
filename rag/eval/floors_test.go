package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func floorsReport() Report {
	return Report{Methods: []MethodReport{{
		Method:  "hybrid",
		Source:  Ranking{Hit: 0.9, MRR: 0.8},
		Page:    Ranking{Hit: 0.7, MRR: 0.6},
		Refusal: Refusal{FalseRefusalRate: 0.1},
		Answers: &AnswerMetrics{CitationValidity: 1, Answered: 8, CitedExpected: 0.875, CitedExpectedPage: 0.5, FalseRefusals: 2},
		Categories: []CategoryReport{
			{Category: "numeric", Answerable: 10, Source: Ranking{Hit: 0.9}, Page: Ranking{Hit: 0.7},
				Answers: &AnswerMetrics{Answered: 8, CitedExpected: 0.875, CitedExpectedPage: 0.5}},
			{Category: "near-miss", Unanswerable: 4, Refusal: Refusal{Accuracy: 0.25}, Answers: &AnswerMetrics{RefusalAccuracy: 0.5}},
		},
	}}}
}

func TestFigures(t *testing.T) {
	got := floorsReport().Methods[0].Figures()
	want := map[string]float64{
		"paper@k": 0.9, "page@k": 0.7, "mrr": 0.8, "page_mrr": 0.6, "false_refusal_rate": 0.1,
		"citation_validity": 1, "answer_false_refusal_rate": 0.2, "cited_paper": 0.875, "cited_page": 0.5,
		"paper@k/numeric": 0.9, "page@k/numeric": 0.7, "cited_paper/numeric": 0.875, "cited_page/numeric": 0.5,
		"refused/near-miss": 0.25, "answer_refused/near-miss": 0.5,
		// No supported_rate and no page_precision: nothing was checked or counted.
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, eps)); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
}

func TestFloorsCheck(t *testing.T) {
	rep := floorsReport()
	fl := Floors{Method: "hybrid",
		Min: map[string]float64{"paper@k": 0.9, "answer_refused/near-miss": 0.9, "supported_rate": 0.5},
		Max: map[string]float64{"answer_false_refusal_rate": 0.05, "false_refusal_rate": 0.1}}
	want := []string{
		"hybrid answer_false_refusal_rate = 0.200, above the ceiling 0.050",
		"hybrid answer_refused/near-miss = 0.500, below the floor 0.900",
		"hybrid supported_rate: not measured (limit 0.500)",
	}
	if diff := cmp.Diff(want, fl.Check(rep)); diff != "" {
		t.Errorf("Check (-want +got):\n%s", diff)
	}
	if got := (Floors{Method: "bm25", Min: map[string]float64{"mrr": 0}}).Check(rep); len(got) != 1 || !strings.Contains(got[0], "not measured") {
		t.Errorf("missing method: %v", got)
	}
	// Floors suggested from a report hold for that report.
	s := Suggest(rep.Methods[0], 0.05)
	if got := s.Check(rep); len(got) != 0 {
		t.Errorf("suggested floors fail their own report: %v", got)
	}
	if s.Min["paper@k"] != 0.85 || s.Max["false_refusal_rate"] != 0.15 || s.Min["refused/near-miss"] != 0.2 {
		t.Errorf("suggested %+v", s)
	}
}

func TestLoadFloors(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "f.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fl, err := LoadFloors(write(`{"method":"hybrid","min":{"mrr":0.5}}`))
	if err != nil || fl.Min["mrr"] != 0.5 {
		t.Errorf("LoadFloors = %+v, %v", fl, err)
	}
	for _, bad := range []string{`{"method":"hybrid","minimum":{"mrr":0.5}}`, `{"method":"hybrid"}`, `{"min":{"mrr":1}}`, `{`} {
		if _, err := LoadFloors(write(bad)); err == nil {
			t.Errorf("LoadFloors(%s) succeeded", bad)
		}
	}
	// The committed floors file loads.
	if _, err := LoadFloors("testdata/floors.json"); err != nil {
		t.Error(err)
	}
}
