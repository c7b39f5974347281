package rag

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCiter(t *testing.T) {
	cases := []struct {
		name           string
		sources        int
		in             string
		want           string
		order          []int // prompt numbers in citation order
		valid, invalid int
	}{
		{"none", 3, "No markers here.", "No markers here.", nil, 0, 0},
		{"single", 3, "Claim [2].", "Claim [1].", []int{2}, 1, 0},
		{"renumbered in citation order", 3, "A [3]. B [1]. C [3].", "A [1]. B [2]. C [1].", []int{3, 1}, 3, 0},
		{"comma list", 3, "A [1, 3].", "A [1][2].", []int{1, 3}, 2, 0},
		{"semicolon and 'and'", 4, "A [4; 2] and B [1 and 3].", "A [1][2] and B [3][4].", []int{4, 2, 1, 3}, 4, 0},
		{"adjacent", 3, "A [2][1].", "A [1][2].", []int{2, 1}, 2, 0},
		{"range", 4, "A [2-4].", "A [1][2][3].", []int{2, 3, 4}, 3, 0},
		{"en-dash range", 4, "A [1–2].", "A [1][2].", []int{1, 2}, 2, 0},
		{"out of range dropped with its space", 2, "A [3]. B [1].", "A. B [1].", []int{1}, 1, 1},
		{"zero is invalid", 2, "A [0].", "A.", nil, 0, 1},
		{"partly valid list", 2, "A [1, 5].", "A [1].", []int{1}, 1, 1},
		{"reversed range is invalid", 5, "A [3-1].", "A.", nil, 0, 1},
		{"huge range is invalid", 5, "A [1-400].", "A.", nil, 0, 1},
		{"duplicate in list", 3, "A [1, 1].", "A [1].", []int{1}, 1, 0},
		{"adjacent duplicates", 3, "A [1][1].", "A [1].", []int{1}, 1, 0},
		{"spaced duplicates", 3, "A [1] [1].", "A [1].", []int{1}, 1, 0},
		{"repeated later counts again", 3, "A [1]. B [1].", "A [1]. B [1].", []int{1}, 2, 0},
		{"not a citation", 3, "x[a] and [see] and [].", "x[a] and [see] and [].", nil, 0, 0},
		{"no sources", 0, "A [1].", "A.", nil, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Whole, and one rune at a time as a stream would split it.
			for _, split := range []bool{false, true} {
				ct := newCiter(c.sources)
				var streamed strings.Builder
				if split {
					for _, r := range c.in {
						streamed.WriteString(ct.Write(string(r)))
					}
				} else {
					streamed.WriteString(ct.Write(c.in))
				}
				streamed.WriteString(ct.Flush())
				if streamed.String() != ct.Text() {
					t.Errorf("split=%v: streamed %q, Text() %q", split, streamed.String(), ct.Text())
				}
				if got := ct.Text(); got != c.want {
					t.Errorf("split=%v: text %q, want %q", split, got, c.want)
				}
				if diff := cmp.Diff(c.order, ct.order); diff != "" {
					t.Errorf("split=%v: order (-want +got):\n%s", split, diff)
				}
				if ct.valid != c.valid || ct.invalid != c.invalid {
					t.Errorf("split=%v: valid, invalid = %d, %d, want %d, %d", split, ct.valid, ct.invalid, c.valid, c.invalid)
				}
			}
		})
	}
}

func TestCiterHoldsIncompleteMarker(t *testing.T) {
	ct := newCiter(2)
	if got := ct.Write("Claim [1"); got != "Claim" {
		t.Errorf("Write = %q, want the text before the open marker", got)
	}
	if got := ct.Write("]. Next"); got != " [1]. Next" {
		t.Errorf("Write = %q", got)
	}
}

func TestStripMarkers(t *testing.T) {
	got := stripMarkers("Attention was used before [2, 5]. Recurrent models [12] are slow [3–4].")
	want := "Attention was used before. Recurrent models are slow."
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestExcerpt(t *testing.T) {
	text := "The Transformer follows an encoder-decoder structure. " + strings.Repeat("The encoder maps an input sequence of symbol representations to a sequence of continuous representations. ", 5) +
		"Multi-head attention allows the model to jointly attend to information from different representation subspaces."
	cases := []struct{ query, prefix string }{
		{"encoder decoder structure", "The Transformer follows"},
		{"representation subspaces attend", "… Multi-head attention allows"},
		{"unrelated words entirely", "The Transformer follows"},
	}
	for _, c := range cases {
		got := excerpt(text, c.query)
		if !strings.HasPrefix(got, c.prefix) {
			t.Errorf("excerpt(%q) = %q, want prefix %q", c.query, got, c.prefix)
		}
		body := strings.TrimPrefix(strings.TrimSuffix(got, "…"), "… ")
		if len([]rune(body)) > excerptLen {
			t.Errorf("excerpt(%q) has %d runes, want at most %d", c.query, len([]rune(body)), excerptLen)
		}
		if !strings.Contains(text, body) {
			t.Errorf("excerpt(%q) = %q is not a passage of the text", c.query, got)
		}
		// Never mid-word: the excerpt ends at the text's end or before a space.
		i := strings.Index(text, body) + len(body)
		if i < len(text) && text[i] != ' ' {
			t.Errorf("excerpt(%q) = %q ends mid-word", c.query, got)
		}
	}
}

func TestCutWords(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"one two three four", 9, "one two…"},
		{"one two, three", 9, "one two…"},
		{"unbreakable", 4, "unbreakable"},
	}
	for _, c := range cases {
		if got := cutWords(c.in, c.max); got != c.want {
			t.Errorf("cutWords(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestConfidence(t *testing.T) {
	src := func(score float64, cited bool) Source { return Source{Score: score, Cited: cited} }
	cases := []struct {
		name           string
		sources        []Source
		text           string
		valid, invalid int
		scored         bool
		want           float64
	}{
		{"nothing cited", []Source{src(0.9, false)}, "Uncited.", 0, 0, true, 0},
		{"strong and fully cited", []Source{src(0.9, true), src(0.7, true)}, "A [1]. B [2].", 2, 0, true, 0.5*0.9 + 0.2*0.8 + 0.3},
		{"half covered", []Source{src(0.9, true)}, "A [1]. B.", 1, 0, true, 0.5*0.9 + 0.2*0.9 + 0.3*0.5},
		{"invalid markers penalised", []Source{src(0.9, true)}, "A [1].", 1, 1, true, (0.5*0.9 + 0.2*0.9 + 0.3) * 0.5},
		{"unscored counts 0.5", []Source{src(0.03, true)}, "A [1].", 1, 0, false, 0.5*0.5 + 0.2*0.5 + 0.3},
		{"interpretation not counted", []Source{src(1, true)}, "A [1].\n\nInterpretation: so it seems.", 1, 0, true, 1},
	}
	for _, c := range cases {
		got := confidence(c.sources, c.text, c.valid, c.invalid, c.scored)
		if d := got - c.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: confidence = %v, want %v", c.name, got, c.want)
		}
		if got < 0 || got > 1 {
			t.Errorf("%s: confidence %v outside [0, 1]", c.name, got)
		}
	}
}
