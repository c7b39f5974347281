package rag

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitSentences(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"simple", "One is here. Two is there! Three? Four.", []string{"One is here.", "Two is there!", "Three?", "Four."}},
		{"et al.", "Vaswani et al. Proposed it. Then more.", []string{"Vaswani et al. Proposed it.", "Then more."}},
		{"e.g. and i.e.", "Models, e.g. Transformers, i.e. attention models. Next.", []string{"Models, e.g. Transformers, i.e. attention models.", "Next."}},
		{"figure and equation refs", "As shown in Fig. 3 and Eq. 2 it works. Done.", []string{"As shown in Fig. 3 and Eq. 2 it works.", "Done."}},
		{"decimals", "The rate was 0.1 in total. Then 2.5 more.", []string{"The rate was 0.1 in total.", "Then 2.5 more."}},
		{"initials", "Written by A. Vaswani and N. Shazeer. Next one.", []string{"Written by A. Vaswani and N. Shazeer.", "Next one."}},
		{"lowercase continuation", "It uses approx. four heads. the end.", []string{"It uses approx. four heads. the end."}},
		{"line breaks are spaces", "The encoder is\ncomposed of a stack. Each layer\nhas two sub-layers.", []string{"The encoder is composed of a stack.", "Each layer has two sub-layers."}},
		{"hyphen at line end", "We use self-\nattention here.", []string{"We use self-attention here."}},
		{"paragraph break ends a sentence", "Heading without period\n\nBody text here.", []string{"Heading without period", "Body text here."}},
		{"closing quote and bracket", `He said "stop." Then (it ended.) Later.`, []string{`He said "stop."`, `Then (it ended.)`, "Later."}},
		{"citation before period", "Known before [12]. Next sentence.", []string{"Known before [12].", "Next sentence."}},
		{"bullets end sentences", "Each position can attend to all positions. • Similarly, the decoder attends too. • Last item", []string{"Each position can attend to all positions.", "Similarly, the decoder attends too.", "Last item"}},
		{"empty", "  \n ", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, splitSentences(c.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrimToSentences(t *testing.T) {
	text := "First sentence here. Second sentence is longer than the first. Third."
	count := func(s string) int { return len(s) }
	cases := []struct {
		budget  int
		want    string
		trimmed bool
	}{
		{1000, text, false},
		{len("First sentence here."), "First sentence here.", true},
		{len("First sentence here. Second sentence is longer than the first.") + 3, "First sentence here. Second sentence is longer than the first.", true},
		{5, "", true},
	}
	for _, c := range cases {
		got, trimmed := trimToSentences(text, c.budget, count)
		if got != c.want || trimmed != c.trimmed {
			t.Errorf("budget %d: got %q, %v; want %q, %v", c.budget, got, trimmed, c.want, c.trimmed)
		}
		if got != "" && !strings.HasPrefix(text, got) {
			t.Errorf("budget %d: %q is not a prefix of the text", c.budget, got)
		}
	}
}

func TestTerms(t *testing.T) {
	got := terms("What are the heads of Multi-Head attention using?")
	want := []string{"head", "multi", "head", "attent"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
