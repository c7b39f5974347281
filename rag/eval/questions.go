// Package eval measures retrieval quality and latency per retrieval method over a set of
// evaluation questions (see ../shared/eval/README.md for the file format): Precision@k,
// Recall@k, MRR and nDCG@10 at two strictness levels, refusal accuracy on questions the
// corpus cannot answer, and per-stage latency percentiles. `footnote eval` prints its
// Report as a table or JSON.
package eval

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Question is one evaluation question.
type Question struct {
	ID         string `json:"id"`
	Question   string `json:"question"`
	Answerable bool   `json:"answerable"` // false: the right response is rag.Refusal
	// ExpectedSources are document names (file names without extension) that hold the
	// answer; a chunk from one of them is relevant.
	ExpectedSources []string `json:"expected_sources,omitempty"`
	// ExpectedPages lists, per expected source, the 1-based pages stating the answer; a
	// chunk touching one of them is relevant under the stricter page level.
	ExpectedPages map[string][]int `json:"expected_pages,omitempty"`
	KeyConcepts   []string         `json:"key_concepts,omitempty"` // terms a good answer mentions
	// Category groups questions in the report ("paraphrase", "numeric", "two-paper",
	// "followup", "near-miss", "off-topic", …); empty means "answerable" or
	// "unanswerable" by Answerable (see Kind).
	Category string `json:"category,omitempty"`
	// Followups continue the question as a conversation: each is asked after the earlier
	// turns, with them (question, answer, sources) as rag.Question.History.
	Followups []FollowUp `json:"followups,omitempty"`
}

// FollowUp is a later turn of a conversation: a question that may lean on the earlier
// turns ("And what batch size did they use?") and what answers it.
type FollowUp struct {
	Question        string           `json:"question"`
	Answerable      bool             `json:"answerable"`
	ExpectedSources []string         `json:"expected_sources,omitempty"`
	ExpectedPages   map[string][]int `json:"expected_pages,omitempty"`
	KeyConcepts     []string         `json:"key_concepts,omitempty"`
}

// CategoryFollowUpTurn is the report category of every follow-up turn after a
// conversation's first question, whatever the conversation's own category.
const CategoryFollowUpTurn = "followup-turn"

// Kind is q's report category: Category, else "answerable" or "unanswerable".
func (q Question) Kind() string {
	switch {
	case q.Category != "":
		return q.Category
	case q.Answerable:
		return "answerable"
	}
	return "unanswerable"
}

// Turns returns the questions asked for q in order: q itself (without its follow-ups),
// then one Question per follow-up, with ID "<id>#<turn>" (turns count from 1) and
// Category CategoryFollowUpTurn.
func (q Question) Turns() []Question {
	first := q
	first.Followups = nil
	turns := []Question{first}
	for i, f := range q.Followups {
		turns = append(turns, Question{
			ID:              fmt.Sprintf("%s#%d", q.ID, i+2),
			Question:        f.Question,
			Answerable:      f.Answerable,
			ExpectedSources: f.ExpectedSources,
			ExpectedPages:   f.ExpectedPages,
			KeyConcepts:     f.KeyConcepts,
			Category:        CategoryFollowUpTurn,
		})
	}
	return turns
}

// LoadQuestions reads JSON Lines questions: one object per line, blank lines and lines
// starting with "#" or "//" skipped. Ids must be unique and free of '#' (follow-up turns
// are named "<id>#<turn>"); answerable questions and follow-ups need at least one expected
// source, unanswerable ones none.
func LoadQuestions(r io.Reader) ([]Question, error) {
	var qs []Question
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, "//") {
			continue
		}
		var q Question
		if err := json.Unmarshal([]byte(text), &q); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case q.ID == "":
			return nil, fmt.Errorf("line %d: missing id", line)
		case seen[q.ID]:
			return nil, fmt.Errorf("line %d: duplicate id %q", line, q.ID)
		case strings.Contains(q.ID, "#"):
			return nil, fmt.Errorf("line %d (%s): '#' is reserved for follow-up turn ids", line, q.ID)
		}
		for _, t := range q.Turns() {
			if err := t.check(); err != nil {
				return nil, fmt.Errorf("line %d (%s): %w", line, t.ID, err)
			}
		}
		seen[q.ID] = true
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, errors.New("no questions")
	}
	return qs, nil
}

// check validates one turn's own fields.
func (q Question) check() error {
	switch {
	case strings.TrimSpace(q.Question) == "":
		return errors.New("empty question")
	case q.Answerable && len(q.ExpectedSources) == 0:
		return errors.New("answerable question without expected_sources")
	case !q.Answerable && (len(q.ExpectedSources) > 0 || len(q.ExpectedPages) > 0):
		return errors.New("unanswerable question with expected sources")
	}
	for src, pages := range q.ExpectedPages {
		if !slices.Contains(q.ExpectedSources, src) {
			return fmt.Errorf("expected_pages names %q, which is not an expected source", src)
		}
		for _, p := range pages {
			if p < 1 {
				return fmt.Errorf("expected_pages of %q holds page %d; pages count from 1", src, p)
			}
		}
	}
	return nil
}

// LoadQuestionsFile reads a questions file with LoadQuestions.
func LoadQuestionsFile(path string) ([]Question, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	qs, err := LoadQuestions(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return qs, nil
}
