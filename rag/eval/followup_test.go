package eval

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/rag"
)

func TestLoadFollowUps(t *testing.T) {
	in := `{"id":"c1","category":"followup","question":"How was BERT pre-trained?","answerable":true,"expected_sources":["B"],"expected_pages":{"B":[5]},"followups":[{"question":"And what batch size did they use?","answerable":true,"expected_sources":["B"],"expected_pages":{"B":[13]}},{"question":"And GPT-4?","answerable":false}]}
{"id":"m1","category":"near-miss","question":"What accuracy does GPT-4 reach on MMLU?","answerable":false}`
	qs, err := LoadQuestions(strings.NewReader(in))
	if err != nil {
		t.Fatalf("LoadQuestions: %v", err)
	}
	turns := qs[0].Turns()
	want := []Question{
		{ID: "c1", Category: "followup", Question: "How was BERT pre-trained?", Answerable: true,
			ExpectedSources: []string{"B"}, ExpectedPages: map[string][]int{"B": {5}}},
		{ID: "c1#2", Category: CategoryFollowUpTurn, Question: "And what batch size did they use?", Answerable: true,
			ExpectedSources: []string{"B"}, ExpectedPages: map[string][]int{"B": {13}}},
		{ID: "c1#3", Category: CategoryFollowUpTurn, Question: "And GPT-4?"},
	}
	if diff := cmp.Diff(want, turns); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	if got := qs[1].Kind(); got != "near-miss" {
		t.Errorf("Kind = %q", got)
	}

	bad := []struct{ in, want string }{
		{`{"id":"c","question":"q","followups":[{"question":" "}]}`, "line 1 (c#2): empty question"},
		{`{"id":"c","question":"q","followups":[{"question":"r","answerable":true}]}`, "(c#2): answerable question without expected_sources"},
		{`{"id":"c","question":"q","followups":[{"question":"r","answerable":true,"expected_sources":["x"],"expected_pages":{"y":[2]}}]}`, `(c#2): expected_pages names "y"`},
		{`{"id":"c#2","question":"q"}`, "reserved"},
		{`{"id":"c","question":"q","expected_sources":["x"]}`, "unanswerable question with expected sources"},
		{`{"id":"c","question":"q","answerable":true,"expected_sources":["x"],"expected_pages":{"x":[0]}}`, "pages count from 1"},
	}
	for _, b := range bad {
		if _, err := LoadQuestions(strings.NewReader(b.in)); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("LoadQuestions(%q) err = %v, want %q", b.in, err, b.want)
		}
	}
}

// A conversation's later turns must reach the retriever and the answerer with the earlier
// turns as history, and be reported in their own category.
func TestRunFollowUps(t *testing.T) {
	b5 := rag.Chunk{ID: "b5", Name: "B", PageStart: 5, PageEnd: 5, Text: "BERT was pre-trained on books and Wikipedia."}
	b13 := rag.Chunk{ID: "b13", Name: "B", PageStart: 12, PageEnd: 13, PageBreaks: []int{30},
		Text: "Appendix A.2 covers training. We train with batch size of 256 sequences for 1,000,000 steps."}
	g1 := rag.Chunk{ID: "g1", Name: "G", PageStart: 1, PageEnd: 1, Text: "GPT was trained on books."}
	qs := []Question{{
		ID: "c1", Category: "followup", Question: "How was BERT pre-trained?", Answerable: true,
		ExpectedSources: []string{"B"}, ExpectedPages: map[string][]int{"B": {5}},
		Followups: []FollowUp{
			{Question: "And what batch size did they use?", Answerable: true, ExpectedSources: []string{"B"}, ExpectedPages: map[string][]int{"B": {13}}},
			{Question: "What about GPT-4?"},
		},
	}}
	var retrieved, asked []rag.Question
	retrieve := func(_ context.Context, q rag.Question) (rag.Retrieval, error) {
		retrieved = append(retrieved, q)
		var c rag.Chunk
		switch q.Text {
		case "How was BERT pre-trained?":
			c = b5
		case "And what batch size did they use?":
			c = b13
		default:
			return rag.Retrieval{Candidates: []rag.Scored{{Hit: rag.Hit{Chunk: g1}}}}, fmt.Errorf("cut: %w", rag.ErrNoEvidence)
		}
		h := rag.Scored{Hit: rag.Hit{Chunk: c, Score: 0.9}}
		return rag.Retrieval{Candidates: []rag.Scored{h}, Hits: []rag.Scored{h}}, nil
	}
	ask := func(_ context.Context, q rag.Question, _ func(string) error) (rag.Answer, error) {
		asked = append(asked, q)
		switch q.Text {
		case "How was BERT pre-trained?":
			return rag.Answer{Text: "On books and Wikipedia [1].", Citations: 1, Sources: []rag.Source{{N: 1, Chunk: b5, Cited: true}}}, nil
		case "And what batch size did they use?":
			// The quoted sentence lies on page 13 of a chunk that starts on page 12.
			return rag.Answer{Text: "We train with batch size of 256 sequences for 1,000,000 steps [1].", Citations: 1,
				Sources: []rag.Source{{N: 1, Chunk: b13, Cited: true}}}, nil
		}
		return rag.Answer{Text: rag.Refusal, Refused: true, Missing: []string{"GPT-4"}}, nil
	}
	rep, err := Run(t.Context(), Config{Retrieve: retrieve, Ask: ask, Methods: []string{"m"}, SkipWarmup: true}, qs)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(retrieved) != 3 || len(asked) != 3 {
		t.Fatalf("%d retrievals, %d answers; want 3 each", len(retrieved), len(asked))
	}
	if len(retrieved[0].History) != 0 || len(asked[0].History) != 0 {
		t.Error("the first turn has history")
	}
	h := asked[2].History
	if len(h) != 2 || h[0].Answer != "On books and Wikipedia [1]." || h[1].Question != "And what batch size did they use?" ||
		len(h[1].Sources) != 1 || h[1].Sources[0].Chunk.ID != "b13" {
		t.Errorf("history of the third turn: %+v", h)
	}
	if len(retrieved[1].History) != 1 || retrieved[1].History[0].Question != "How was BERT pre-trained?" {
		t.Errorf("retrieval of the second turn got history %+v", retrieved[1].History)
	}
	if rep.Questions != 3 || rep.Conversations != 1 || rep.Answerable != 2 || rep.Unanswerable != 1 {
		t.Errorf("report header %+v", rep)
	}
	if diff := cmp.Diff([]string{"followup", CategoryFollowUpTurn}, rep.Categories); diff != "" {
		t.Errorf("categories (-want +got):\n%s", diff)
	}
	m := rep.Methods[0]
	var ids []string
	for _, r := range m.Results {
		ids = append(ids, fmt.Sprintf("%s/%d/%s", r.ID, r.Turn, r.Category))
	}
	if diff := cmp.Diff([]string{"c1/1/followup", "c1#2/2/followup-turn", "c1#3/3/followup-turn"}, ids); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	turns := m.Categories[1]
	if turns.Questions != 2 || turns.Answerable != 1 || turns.Refusal.Refused != 1 || turns.Source.Hit != 1 {
		t.Errorf("follow-up turns: %+v", turns)
	}
	// The follow-up cites page 13 through the quoted sentence, though its chunk starts on 12.
	if a := turns.Answers; a == nil || a.CitedExpected != 1 || a.CitedExpectedPage != 1 || a.RefusalAccuracy != 1 {
		t.Errorf("follow-up answers: %+v", a)
	}
	if got := m.Results[2].Answer.Missing; len(got) != 1 || got[0] != "GPT-4" {
		t.Errorf("missing = %v", got)
	}
	if got := m.Summary["cited_page/followup-turn"]; got != 1 {
		t.Errorf("figure cited_page/followup-turn = %v, want 1", got)
	}

	var buf strings.Builder
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), CategoryFollowUpTurn) {
			row = l
		}
	}
	// n; paper@k, page@k, MRR, page MRR; the cut's refusals and false refusals; the
	// answers' refusals, false refusals, cited paper, cited page, page precision, no
	// grounding checked, validity.
	want := "followup-turn 2 1.000 1.000 1.000 1.000 1/1 1.00 0/1 0.00 | 1/1 1.00 0/1 0.00 1.000 1.000 1.000 - 1.000"
	if got := strings.Join(strings.Fields(row), " "); got != want {
		t.Errorf("follow-up row\n got %s\nwant %s\n%s", got, want, out)
	}
}

func TestCitedPages(t *testing.T) {
	c := rag.Chunk{ID: "c", Name: "P", PageStart: 3, PageEnd: 5, PageBreaks: []int{40, 120},
		Text: "Intro text that sits on the third page. The model is trained with a learning rate of 2.5e-4 and warm-\nup over 2000 steps. " +
			"Page five says the batch holds 64 sequences of 512 tokens."}
	src := rag.Source{N: 2, Chunk: c, Cited: true}
	tests := []struct {
		name, text string
		want       []int
	}{
		{"chunk page only", "Something unrelated [2].", []int{3}},
		{"quote on page four, mended hyphen", "The model is trained with a learning rate of 2.5e-4 and warmup over 2000 steps [2].", []int{3, 4}},
		{"two quotes", "Intro text that sits on the third page [2]. Page five says the batch holds 64 sequences of 512 tokens [2].", []int{3, 5}},
		{"another source's marker", "Page five says the batch holds 64 sequences of 512 tokens [1].", []int{3}},
		{"quote cut at the start", "... trained with a learning rate of 2.5e-4 and warm-up over 2000 steps [1][2].", []int{3, 4}},
	}
	for _, tt := range tests {
		if got := CitedPages(tt.text, src); !cmp.Equal(got, tt.want) {
			t.Errorf("%s: CitedPages = %v, want %v", tt.name, got, tt.want)
		}
	}
	q := Question{ExpectedSources: []string{"P"}, ExpectedPages: map[string][]int{"P": {4}}}
	if !q.CitedOnPage(tests[1].text, src) || q.CitedOnPage(tests[0].text, src) {
		t.Error("CitedOnPage disagrees with CitedPages")
	}
	if (Question{ExpectedSources: []string{"Q"}}).CitedOnPage(tests[1].text, src) {
		t.Error("a source that is not expected counts")
	}
	if !(Question{ExpectedSources: []string{"P"}}).CitedOnPage("x [2].", src) {
		t.Error("an expected source without pages does not count at page level")
	}
	noBreaks := src
	noBreaks.Chunk.PageBreaks = nil
	if got := CitedPages(tests[1].text, noBreaks); !cmp.Equal(got, []int{3}) {
		t.Errorf("without page breaks: %v, want the chunk's first page only", got)
	}
}
