package bot

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/footnote-dev/footnote/rag"
)

func TestRecordCountsInStats(t *testing.T) {
	b, err := New(Config{
		Asker:     AskerFunc(nil),
		StatePath: filepath.Join(t.TempDir(), "state.db"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	q := rag.Question{Text: "What are the two sub-layers?"}
	b.Record(ctx, "http", "", q, rag.Answer{Text: "Two [1].", Sources: []rag.Source{{N: 1, Chunk: rag.Chunk{ID: "c1"}}}}, nil)
	b.Record(ctx, "cli", "", q, rag.Answer{Refused: true, Text: rag.Refusal}, nil)
	b.Record(ctx, "http", "", q, rag.Answer{}, fmt.Errorf("retrieve: %w", rag.ErrNoEvidence))
	b.Record(ctx, "http", "", q, rag.Answer{}, errors.New("search: connection refused"))
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Questions != 4 || st.Answered != 1 || st.Refusals != 2 || st.Errors != 1 {
		t.Errorf("stats = %+v, want 4 questions: 1 answered, 2 refusals, 1 error", st)
	}
}
