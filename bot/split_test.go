package bot

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitText(t *testing.T) {
	para := strings.Repeat("word ", 30) // 150 runes
	tests := []struct {
		name   string
		in     string
		limit  int
		canCut func(string) bool
		want   []string
	}{
		{"fits", "short answer [1]", 100, nil, []string{"short answer [1]"}},
		{"paragraphs", "first paragraph.\n\nsecond paragraph.", 24, nil, []string{"first paragraph.", "second paragraph."}},
		{"words", "alpha beta gamma delta epsilon", 16, nil, []string{"alpha beta", "gamma delta", "epsilon"}},
		{"veto", "see the doc at <https://x.org/a b|the link> now", 40, func(p string) bool { return strings.Count(p, "<") == strings.Count(p, ">") }, []string{"see the doc at", "<https://x.org/a b|the link> now"}},
		{"fence", "```\ncode line one\ncode line two\n```", 24, nil, []string{"```\ncode line one\n```", "```\ncode line two\n```"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitText(tt.in, tt.limit, tt.canCut)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("SplitText = %q, want %q", got, tt.want)
			}
		})
	}
	parts := SplitText(para+"\n\n"+para+"ünïcödé", 64, nil)
	for _, p := range parts {
		if n := utf8.RuneCountInString(p); n > 64 {
			t.Errorf("part of %d runes exceeds the limit: %q", n, p)
		}
		if strings.HasSuffix(p, "wor") || strings.HasPrefix(p, "d ") {
			t.Errorf("part cut mid-word: %q", p)
		}
	}
}
