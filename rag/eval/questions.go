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
}

// LoadQuestions reads JSON Lines questions: one object per line, blank lines and lines
// starting with "#" or "//" skipped. Ids must be unique; answerable questions need at
// least one expected source.
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
		case strings.TrimSpace(q.Question) == "":
			return nil, fmt.Errorf("line %d (%s): empty question", line, q.ID)
		case q.Answerable && len(q.ExpectedSources) == 0:
			return nil, fmt.Errorf("line %d (%s): answerable question without expected_sources", line, q.ID)
		}
		for src := range q.ExpectedPages {
			if !slices.Contains(q.ExpectedSources, src) {
				return nil, fmt.Errorf("line %d (%s): expected_pages names %q, which is not an expected source", line, q.ID, src)
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
