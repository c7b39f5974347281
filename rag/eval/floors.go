package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// Figures names one method's headline figures, for floors and for comparing runs. Only
// figures that were measured appear (a rate over nothing is left out rather than read as
// zero):
//
//	paper@k, page@k, mrr, page_mrr, false_refusal_rate    retrieval, answerable turns
//	refused/<category>                                    the cut's refusals, unanswerable turns
//	paper@k/<category>, page@k/<category>                 per answerable category
//
// and with answers:
//
//	cited_paper, cited_page, page_precision, citation_validity, supported_rate,
//	answer_false_refusal_rate, answer_refused/<category>,
//	cited_paper/<category>, cited_page/<category>
func (m MethodReport) Figures() map[string]float64 {
	f := map[string]float64{}
	answerable := 0
	for _, c := range m.Categories {
		answerable += c.Answerable
	}
	if answerable > 0 {
		f["paper@k"], f["page@k"] = m.Source.Hit, m.Page.Hit
		f["mrr"], f["page_mrr"] = m.Source.MRR, m.Page.MRR
		f["false_refusal_rate"] = m.Refusal.FalseRefusalRate
	}
	if a := m.Answers; a != nil {
		f["citation_validity"] = a.CitationValidity
		if answerable > 0 {
			f["answer_false_refusal_rate"] = float64(a.FalseRefusals) / float64(answerable)
		}
		if a.Answered > 0 {
			f["cited_paper"], f["cited_page"] = a.CitedExpected, a.CitedExpectedPage
		}
		if a.CitedSources > 0 {
			f["page_precision"] = a.PagePrecision
		}
		if a.Checked > 0 {
			f["supported_rate"] = a.SupportedRate
		}
	}
	for _, c := range m.Categories {
		if c.Unanswerable > 0 {
			f["refused/"+c.Category] = c.Refusal.Accuracy
			if c.Answers != nil {
				f["answer_refused/"+c.Category] = c.Answers.RefusalAccuracy
			}
		}
		if c.Answerable > 0 {
			f["paper@k/"+c.Category], f["page@k/"+c.Category] = c.Source.Hit, c.Page.Hit
			if a := c.Answers; a != nil && a.Answered > 0 {
				f["cited_paper/"+c.Category], f["cited_page/"+c.Category] = a.CitedExpected, a.CitedExpectedPage
			}
		}
	}
	return f
}

// Floors are the limits a method's Figures must keep: each Min figure at least its value,
// each Max figure at most its value. A limit on a figure that was not measured fails too,
// so that a stage that silently stops running (no answers, no grounding) cannot pass.
type Floors struct {
	Method string             `json:"method"`
	Min    map[string]float64 `json:"min,omitempty"`
	Max    map[string]float64 `json:"max,omitempty"`
}

// LoadFloors reads Floors from a JSON file; unknown fields are errors, since a misspelt
// key would otherwise hold nothing.
func LoadFloors(path string) (Floors, error) {
	var fl Floors
	b, err := os.ReadFile(path)
	if err != nil {
		return fl, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fl); err != nil {
		return fl, fmt.Errorf("%s: %w", path, err)
	}
	if fl.Method == "" || len(fl.Min)+len(fl.Max) == 0 {
		return fl, fmt.Errorf("%s: want a method and at least one limit", path)
	}
	return fl, nil
}

// Check returns one message per limit the report breaks, sorted by figure name; none
// means the report holds every limit.
func (fl Floors) Check(r Report) []string {
	i := slices.IndexFunc(r.Methods, func(m MethodReport) bool { return m.Method == fl.Method })
	if i < 0 {
		return []string{fmt.Sprintf("method %s was not measured", fl.Method)}
	}
	got := r.Methods[i].Figures()
	var out []string
	check := func(limits map[string]float64, below bool) {
		for name, lim := range limits {
			v, ok := got[name]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s %s: not measured (limit %.3f)", fl.Method, name, lim))
			case below && v < lim-1e-9:
				out = append(out, fmt.Sprintf("%s %s = %.3f, below the floor %.3f", fl.Method, name, v, lim))
			case !below && v > lim+1e-9:
				out = append(out, fmt.Sprintf("%s %s = %.3f, above the ceiling %.3f", fl.Method, name, v, lim))
			}
		}
	}
	check(fl.Min, true)
	check(fl.Max, false)
	slices.Sort(out)
	return out
}

// Suggest returns floors at the method's measured figures minus margin (rates plus margin
// for the false-refusal ceilings), clamped to [0, 1] and rounded down (up) to 0.01, as a
// starting point for a floors file.
func Suggest(m MethodReport, margin float64) Floors {
	fl := Floors{Method: m.Method, Min: map[string]float64{}, Max: map[string]float64{}}
	for name, v := range m.Figures() {
		if strings.Contains(name, "false_refusal") {
			fl.Max[name] = math.Min(1, math.Ceil((v+margin)*100-1e-6)/100)
			continue
		}
		fl.Min[name] = math.Max(0, math.Floor((v-margin)*100+1e-6)/100)
	}
	return fl
}
