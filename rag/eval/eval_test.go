package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag"
)

const eps = 1e-5

func near(a, b float64) bool { return math.Abs(a-b) < eps }

func TestPrecisionAt(t *testing.T) {
	tests := []struct {
		rel  []bool
		k    int
		want float64
	}{
		{[]bool{true, false, true, false, false}, 5, 0.4},
		{[]bool{true, false, true, false, false}, 3, 2.0 / 3},
		{[]bool{true}, 5, 0.2}, // missing ranks count as misses
		{nil, 5, 0},
		{[]bool{true}, 0, 0},
	}
	for _, tt := range tests {
		if got := PrecisionAt(tt.rel, tt.k); !near(got, tt.want) {
			t.Errorf("PrecisionAt(%v, %d) = %v, want %v", tt.rel, tt.k, got, tt.want)
		}
	}
}

func TestReciprocalRank(t *testing.T) {
	tests := []struct {
		rel  []bool
		want float64
	}{
		{[]bool{true, true}, 1},
		{[]bool{false, false, true}, 1.0 / 3},
		{[]bool{false, false}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := ReciprocalRank(tt.rel); !near(got, tt.want) {
			t.Errorf("ReciprocalRank(%v) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}

func TestNDCGAt(t *testing.T) {
	f, tr := false, true
	tests := []struct {
		name     string
		rel      []bool
		k        int
		relevant int
		want     float64
	}{
		// DCG = 1/log2(3) + 1/log2(4) = 1.130930; IDCG(2) = 1 + 1/log2(3) = 1.630930.
		{"two relevant known", []bool{f, tr, tr}, 10, 2, 0.693426},
		// IDCG(4) = 1 + 0.630930 + 0.5 + 0.430677 = 2.561606.
		{"pool of four", []bool{f, tr, tr}, 10, 4, 0.441492},
		{"perfect", []bool{tr, tr, f}, 10, 2, 1},
		{"relevant beyond k", append(make([]bool, 10), tr), 10, 1, 0},
		{"list holds more than told", []bool{tr, tr}, 10, 0, 1},
		{"k cuts the ideal too", []bool{tr, f, tr}, 2, 5, 1 / (1 + 1/math.Log2(3))},
		{"nothing relevant", []bool{f, f}, 10, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NDCGAt(tt.rel, tt.k, tt.relevant); !near(got, tt.want) {
				t.Errorf("NDCGAt = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for _, v := range []int{70, 10, 100, 20, 30, 90, 40, 50, 60, 80} {
		ds = append(ds, time.Duration(v)*time.Millisecond)
	}
	tests := []struct {
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{ds, 50, 50 * time.Millisecond},  // rank ceil(5) = 5
		{ds, 95, 100 * time.Millisecond}, // rank ceil(9.5) = 10
		{ds, 10, 10 * time.Millisecond},
		{ds[:1], 95, 70 * time.Millisecond},
		{nil, 50, 0},
	}
	for _, tt := range tests {
		if got := Percentile(tt.ds, tt.p); got != tt.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tt.ds, tt.p, got, tt.want)
		}
	}
	if ds[0] != 70*time.Millisecond {
		t.Error("Percentile sorted its input in place")
	}
}

func chunk(id, name string, page int) rag.Chunk {
	return rag.Chunk{ID: id, Name: name, PageStart: page, PageEnd: page}
}

func TestRelevant(t *testing.T) {
	q := Question{
		ExpectedSources: []string{"1706.03762", "2203.02155"},
		ExpectedPages:   map[string][]int{"1706.03762": {4, 5}},
	}
	tests := []struct {
		name       string
		c          rag.Chunk
		src, pages bool
	}{
		{"expected page", chunk("a", "1706.03762", 4), true, true},
		{"span reaching an expected page", rag.Chunk{Name: "1706.03762", PageStart: 3, PageEnd: 4}, true, true},
		{"other page", chunk("a", "1706.03762", 6), true, false},
		{"expected source without pages", chunk("a", "2203.02155", 9), true, true},
		{"other source", chunk("a", "1810.04805", 4), false, false},
		{"no page information", rag.Chunk{Name: "1706.03762", LineStart: 1, LineEnd: 9}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := q.Relevant(tt.c, SourceLevel); got != tt.src {
				t.Errorf("source level = %v, want %v", got, tt.src)
			}
			if got := q.Relevant(tt.c, PageLevel); got != tt.pages {
				t.Errorf("page level = %v, want %v", got, tt.pages)
			}
		})
	}
	// Without expected_pages the page level is the source level.
	q2 := Question{ExpectedSources: []string{"1810.04805"}}
	if !q2.Relevant(chunk("a", "1810.04805", 12), PageLevel) {
		t.Error("page level without expected_pages should fall back to the source")
	}
}

func TestSourceRecallAt(t *testing.T) {
	q := Question{
		ExpectedSources: []string{"2201.11903", "2203.02155"},
		ExpectedPages:   map[string][]int{"2201.11903": {2, 3}},
	}
	chunks := []rag.Chunk{
		chunk("1", "2201.11903", 9),
		chunk("2", "1706.03762", 1),
		chunk("3", "2201.11903", 2),
		chunk("4", "2203.02155", 1),
	}
	tests := []struct {
		l    Level
		k    int
		want float64
	}{
		{SourceLevel, 1, 0.5},
		{SourceLevel, 3, 0.5},
		{SourceLevel, 4, 1},
		{PageLevel, 1, 0}, // page 9 is not an expected page
		{PageLevel, 3, 0.5},
		{PageLevel, 10, 1},
	}
	for _, tt := range tests {
		if got := q.SourceRecallAt(chunks, tt.l, tt.k); !near(got, tt.want) {
			t.Errorf("SourceRecallAt(%s, %d) = %v, want %v", tt.l, tt.k, got, tt.want)
		}
	}
}

func TestLoadQuestions(t *testing.T) {
	in := `{"id":"s2","question":"What are the two sub-layers?","answerable":true,"expected_sources":["1706.03762"],"expected_pages":{"1706.03762":[3]},"key_concepts":["self-attention"]}

# a comment
{"id":"n1","question":"What is the capital of Mars?","answerable":false}
`
	got, err := LoadQuestions(strings.NewReader(in))
	if err != nil {
		t.Fatalf("LoadQuestions: %v", err)
	}
	want := []Question{
		{ID: "s2", Question: "What are the two sub-layers?", Answerable: true, ExpectedSources: []string{"1706.03762"},
			ExpectedPages: map[string][]int{"1706.03762": {3}}, KeyConcepts: []string{"self-attention"}},
		{ID: "n1", Question: "What is the capital of Mars?"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("questions (-want +got):\n%s", diff)
	}

	bad := []struct{ in, want string }{
		{`{"id":"a","question":"q","answerable":true}`, "without expected_sources"},
		{`{"id":"a","question":"q"}` + "\n" + `{"id":"a","question":"r"}`, `line 2: duplicate id "a"`},
		{`{"question":"q"}`, "missing id"},
		{`{"id":"a","question":" "}`, "empty question"},
		{`{"id":"a","question":"q","answerable":true,"expected_sources":["x"],"expected_pages":{"y":[1]}}`, `names "y"`},
		{`{"id":`, "line 1"},
		{"\n", "no questions"},
	}
	for _, b := range bad {
		if _, err := LoadQuestions(strings.NewReader(b.in)); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("LoadQuestions(%q) err = %v, want %q", b.in, err, b.want)
		}
	}
}

func TestLoadSharedQuestions(t *testing.T) {
	qs, err := LoadQuestionsFile(corpustest.Questions(t))
	if err != nil {
		t.Fatalf("LoadQuestionsFile: %v", err)
	}
	var answerable int
	for _, q := range qs {
		if q.Answerable {
			answerable++
		}
	}
	if answerable == 0 || answerable == len(qs) {
		t.Errorf("%d of %d questions answerable; want both kinds", answerable, len(qs))
	}
}

// script is a fake retriever: per method and question text, a canned Retrieval and error.
type script map[string]map[string]scripted

type scripted struct {
	cands []rag.Chunk
	kept  int
	err   error
	embed time.Duration
}

func (s script) retrieve(calls *int) func(context.Context, rag.Question) (rag.Retrieval, error) {
	return func(_ context.Context, q rag.Question) (rag.Retrieval, error) {
		*calls++
		sc, ok := s[q.Method][q.Text]
		if !ok {
			return rag.Retrieval{}, fmt.Errorf("unscripted %s %q", q.Method, q.Text)
		}
		r := rag.Retrieval{Query: q.Text, Method: q.Method, Timings: rag.Timings{Embed: sc.embed, Search: time.Millisecond}}
		for i, c := range sc.cands {
			r.Candidates = append(r.Candidates, rag.Scored{Hit: rag.Hit{Chunk: c, Score: 1 / float64(61+i)}})
		}
		r.Hits = r.Candidates[:sc.kept]
		return r, sc.err
	}
}

var evalQuestions = []Question{
	{ID: "q1", Question: "one", Answerable: true, ExpectedSources: []string{"X"}, ExpectedPages: map[string][]int{"X": {2}}, KeyConcepts: []string{"alpha", "beta"}},
	{ID: "q2", Question: "two", Answerable: true, ExpectedSources: []string{"Y"}},
	{ID: "q3", Question: "three"},
}

func evalScript() script {
	x2, x5, z1 := chunk("x2", "X", 2), chunk("x5", "X", 5), chunk("z1", "Z", 1)
	y1, y3, y4 := chunk("y1", "Y", 1), chunk("y3", "Y", 3), chunk("y4", "Y", 4)
	noEvidence := fmt.Errorf("retrieve: %w", rag.ErrNoEvidence)
	return script{
		"a": {
			"one":   {cands: []rag.Chunk{x2, z1, x5}, kept: 2, embed: 1 * time.Millisecond},
			"two":   {cands: []rag.Chunk{z1, y1}, kept: 1, embed: 2 * time.Millisecond},
			"three": {cands: []rag.Chunk{z1}, err: noEvidence, embed: 3 * time.Millisecond},
		},
		"b": {
			"one":   {cands: []rag.Chunk{z1, x5}, err: noEvidence},
			"two":   {cands: []rag.Chunk{y3, y4}, kept: 2},
			"three": {cands: []rag.Chunk{z1}, kept: 1},
		},
	}
}

func TestRun(t *testing.T) {
	calls := 0
	rep, err := Run(t.Context(), Config{Retrieve: evalScript().retrieve(&calls), Methods: []string{"a", "b"}, K: 2}, evalQuestions)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if calls != 8 {
		t.Errorf("%d retrievals, want 6 + 2 warm-ups", calls)
	}
	// Hand-computed; see the script. nDCG pools: q1 source {x2, x5}, q1 page {x2},
	// q2 {y1, y3, y4}.
	want := []MethodReport{
		{
			Method:        "a",
			Source:        Ranking{Hit: 1, Precision: 0.5, Recall: 1, MRR: 0.75, NDCG10: (1.5/(1+1/math.Log2(3)) + (1/math.Log2(3))/(1+1/math.Log2(3)+0.5)) / 2},
			Page:          Ranking{Hit: 1, Precision: 0.5, Recall: 1, MRR: 0.75, NDCG10: (1 + (1/math.Log2(3))/(1+1/math.Log2(3)+0.5)) / 2},
			Refusal:       Refusal{Unanswerable: 1, Refused: 1, Accuracy: 1},
			Kept:          1.5,
			KeptPrecision: 1.0 / 3,
		},
		{
			Method:        "b",
			Source:        Ranking{Hit: 1, Precision: 0.75, Recall: 1, MRR: 0.75, NDCG10: ((1/math.Log2(3))/(1+1/math.Log2(3)) + (1+1/math.Log2(3))/(1+1/math.Log2(3)+0.5)) / 2},
			Page:          Ranking{Hit: 0.5, Precision: 0.5, Recall: 0.5, MRR: 0.5, NDCG10: (1 + 1/math.Log2(3)) / (1 + 1/math.Log2(3) + 0.5) / 2},
			Refusal:       Refusal{Unanswerable: 1, Refused: 0, Accuracy: 0, FalseRefusals: 1, FalseRefusalRate: 0.5},
			Kept:          1,
			KeptPrecision: 1,
		},
	}
	opts := cmp.Options{
		cmpopts.EquateApprox(0, eps),
		cmpopts.IgnoreFields(MethodReport{}, "Latency", "Results", "Categories", "Summary"),
	}
	if diff := cmp.Diff(want, rep.Methods, opts); diff != "" {
		t.Errorf("methods (-want +got):\n%s", diff)
	}
	// The categories default by answerability and split the same counts.
	if diff := cmp.Diff([]string{"answerable", "unanswerable"}, rep.Categories); diff != "" {
		t.Errorf("categories (-want +got):\n%s", diff)
	}
	wantCats := []CategoryReport{
		{Category: "answerable", Questions: 2, Answerable: 2, Source: want[1].Source, Page: want[1].Page,
			Refusal: Refusal{FalseRefusals: 1, FalseRefusalRate: 0.5}},
		{Category: "unanswerable", Questions: 1, Unanswerable: 1, Refusal: Refusal{Unanswerable: 1}},
	}
	if diff := cmp.Diff(wantCats, rep.Methods[1].Categories, opts); diff != "" {
		t.Errorf("categories of b (-want +got):\n%s", diff)
	}
	if rep.Questions != 3 || rep.Answerable != 2 || rep.Unanswerable != 1 || rep.K != 2 {
		t.Errorf("report header %+v", rep)
	}

	a := rep.Methods[0]
	if a.Latency.Embed != (Percentiles{P50: 2 * time.Millisecond, P95: 3 * time.Millisecond}) {
		t.Errorf("embed latency %+v, want p50 2ms p95 3ms", a.Latency.Embed)
	}
	if a.Latency.Total.P50 <= 0 || a.Latency.Rerank != (Percentiles{}) {
		t.Errorf("total %+v rerank %+v, want measured total and no rerank", a.Latency.Total, a.Latency.Rerank)
	}
	wantResults := []QuestionResult{
		{ID: "q1", Category: "answerable", Turn: 1, Answerable: true, Kept: 2, FirstSource: 1, FirstPage: 1, TopK: []string{"X", "Z"}},
		{ID: "q2", Category: "answerable", Turn: 1, Answerable: true, Kept: 1, FirstSource: 2, FirstPage: 2, TopK: []string{"Z", "Y"}},
		{ID: "q3", Category: "unanswerable", Turn: 1, Refused: true, TopK: []string{"Z"}},
	}
	if diff := cmp.Diff(wantResults, a.Results, cmpopts.IgnoreFields(QuestionResult{}, "Timings"), cmpopts.IgnoreUnexported(QuestionResult{})); diff != "" {
		t.Errorf("results of a (-want +got):\n%s", diff)
	}
}

func TestRunStopsOnError(t *testing.T) {
	calls := 0
	s := evalScript()
	s["b"]["two"] = scripted{err: errors.New("search: store closed")}
	_, err := Run(t.Context(), Config{Retrieve: s.retrieve(&calls), Methods: []string{"a", "b"}, SkipWarmup: true}, evalQuestions)
	if err == nil || !strings.Contains(err.Error(), "question q2, method b: search: store closed") {
		t.Errorf("err = %v", err)
	}
	if calls != 4 {
		t.Errorf("%d retrievals, want 4 (stopped at the failure, no warm-up)", calls)
	}
	if _, err := Run(t.Context(), Config{}, evalQuestions); err == nil {
		t.Error("Run without Retrieve succeeded")
	}
}

// The pipeline's methods plug straight into Config.
var _ = Config{Retrieve: (*rag.Pipeline)(nil).Retrieve, Ask: (*rag.Pipeline)(nil).Ask}

func TestRunAnswers(t *testing.T) {
	calls := 0
	answers := map[string]rag.Answer{
		"one": {Text: "It uses alpha [1] and [2] [7].", Citations: 2, InvalidCitations: 1, Grounding: rag.Grounding{Checked: 4, Supported: 3, Unsupported: 1},
			Sources: []rag.Source{{N: 1, Chunk: chunk("x2", "X", 2), Cited: true}, {N: 2, Chunk: chunk("z1", "Z", 1), Cited: true}},
			Timings: rag.Timings{Generate: 40 * time.Millisecond}},
		"two":   {Text: rag.Refusal, Refused: true},
		"three": {Text: rag.Refusal, Refused: true},
	}
	ask := func(_ context.Context, q rag.Question, _ func(string) error) (rag.Answer, error) {
		return answers[q.Text], nil
	}
	rep, err := Run(t.Context(), Config{Retrieve: evalScript().retrieve(&calls), Ask: ask, Methods: []string{"a"}, K: 2}, evalQuestions)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := rep.Methods[0].Answers
	if got == nil {
		t.Fatal("no answer metrics")
	}
	want := AnswerMetrics{
		Questions: 3, CitationValidity: 2.0 / 3, Citations: 2, InvalidCitations: 1,
		RefusalAccuracy: 1, FalseRefusals: 1, Answered: 1, CitedExpected: 1, KeyConcepts: 0.5,
		CitedExpectedPage: 1, PagePrecision: 0.5, CitedSources: 2, CitedOnPage: 1,
		Checked: 4, Supported: 3, SupportedRate: 0.75,
		Generate: Percentiles{P50: 40 * time.Millisecond, P95: 40 * time.Millisecond},
	}
	if diff := cmp.Diff(want, *got, cmpopts.EquateApprox(0, eps), cmpopts.IgnoreFields(AnswerMetrics{}, "Total")); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	// Each cited source is named with the pages the answer cites it on.
	for _, r := range rep.Methods[0].Results {
		if r.Answer != nil && !r.Answer.Refused {
			if want := []string{"X p2", "Z p1"}; !slices.Equal(r.Answer.Cited, want) {
				t.Errorf("question %s cites %q, want %q", r.ID, r.Answer.Cited, want)
			}
		}
	}
}

func TestReportOutput(t *testing.T) {
	calls := 0
	rep, err := Run(t.Context(), Config{Retrieve: evalScript().retrieve(&calls), Methods: []string{"a", "b"}, K: 2}, evalQuestions)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatalf("WriteTable: %v", err)
	}
	out := buf.String()
	t.Log("\n" + out)
	for _, want := range []string{"3 questions (2 answerable, 1 unanswerable), k = 2", "P@2", "nDCG@10", "page R@2", "latency, p50 / p95", "1.00ms / 1.00ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// One row per method in each table, columns aligned.
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "by category") {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(l), "a ") || strings.HasPrefix(strings.TrimSpace(l), "b ") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 4 || len(rows[0]) != len(rows[1]) {
		t.Errorf("method rows %q, want 4 with the first two aligned", rows)
	}
	if !strings.Contains(rows[0], "0.500  1.000  0.750") || !strings.Contains(rows[0], "1/1 1.00") {
		t.Errorf("row a %q lacks its metrics", rows[0])
	}

	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	m := back["methods"].([]any)[0].(map[string]any)
	if m["method"] != "a" || m["source"].(map[string]any)["precision_at_k"] != 0.5 ||
		m["refusal"].(map[string]any)["accuracy"] != 1.0 || m["latency"].(map[string]any)["embed"].(map[string]any)["p50_ns"] != 2e6 {
		t.Errorf("JSON method report: %s", js)
	}
	if _, ok := m["answers"]; ok {
		t.Error("answers present in JSON without Ask")
	}
}
