package bot

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/rag"
)

func TestBoundHistory(t *testing.T) {
	turn := func(q string, answerTokens int) rag.Turn {
		return rag.Turn{Question: q, Answer: strings.Repeat("abcd", answerTokens)}
	}
	tests := []struct {
		name        string
		budget      int
		newestFirst []rag.Turn
		want        []string // questions kept, oldest first
		newestLen   int      // tokens of the newest answer kept, -1 for unchanged
	}{
		{"all fit", 100, []rag.Turn{turn("q3", 10), turn("q2", 10), turn("q1", 10)}, []string{"q1", "q2", "q3"}, -1},
		{"oldest dropped", 25, []rag.Turn{turn("q3", 10), turn("q2", 10), turn("q1", 10)}, []string{"q2", "q3"}, -1},
		{"newest alone is cut to fit", 20, []rag.Turn{turn("q2", 50), turn("q1", 1)}, []string{"q2"}, 19},
		{"no history", 20, nil, nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Bot{cfg: Config{HistoryTokens: tt.budget}}
			b.cfg.Asker, b.cfg.StatePath = AskerFunc(nil), "x"
			if err := b.cfg.fill(); err != nil {
				t.Fatal(err)
			}
			got := b.boundHistory(tt.newestFirst)
			var qs []string
			total := 0
			for _, h := range got {
				qs = append(qs, h.Question)
				total += b.cfg.CountTokens(h.Question) + b.cfg.CountTokens(h.Answer)
			}
			if diff := cmp.Diff(tt.want, qs); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if total > tt.budget {
				t.Errorf("kept %d tokens, budget %d", total, tt.budget)
			}
			if tt.newestLen >= 0 {
				if n := b.cfg.CountTokens(got[len(got)-1].Answer); n != tt.newestLen {
					t.Errorf("newest answer: %d tokens, want %d", n, tt.newestLen)
				}
			}
		})
	}
}

func TestHumanWait(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{300 * time.Millisecond, "a second"},
		{5200 * time.Millisecond, "6 seconds"},
		{89 * time.Second, "89 seconds"},
		{150 * time.Second, "3 minutes"},
	} {
		if got := humanWait(tt.d); got != tt.want {
			t.Errorf("humanWait(%v): got %q, want %q", tt.d, got, tt.want)
		}
	}
}
