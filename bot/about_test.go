package bot_test

import (
	"context"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/rag"
)

// TestWithPapers: a question about a message that names an indexed paper cites the message
// first and the paper's passages after it, renumbered; without a reference, or for ordinary
// questions, the pipeline is asked once as before.
func TestWithPapers(t *testing.T) {
	var asked []rag.Question
	inner := bot.AskerFunc(func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
		asked = append(asked, q)
		if q.Selected != "" {
			return rag.Answer{Text: "The message says BERT masks tokens [1].", Sources: []rag.Source{{N: 1, Chunk: rag.Chunk{ID: "selected", Text: q.Selected}, Cited: true}}}, nil
		}
		if len(q.Filter.DocIDs) == 1 && q.Filter.DocIDs[0] == "bert" {
			return rag.Answer{Text: "BERT masks 15% of tokens [1], replacing most with [MASK] [2].", Sources: []rag.Source{
				{N: 1, Chunk: rag.Chunk{ID: "b1", DocID: "bert", PageStart: 4}, Cited: true}, {N: 2, Chunk: rag.Chunk{ID: "b2", DocID: "bert"}, Cited: true}}}, nil
		}
		return rag.Answer{Text: "plain"}, nil
	})
	docs := func(context.Context) []bot.DocSummary {
		return []bot.DocSummary{{ID: "bert", Name: "1810.04805", Title: "BERT: Pre-training of Deep Bidirectional Transformers"},
			{ID: "tf", Name: "1706.03762", Title: "Attention Is All You Need"}}
	}
	a := bot.WithPapers(inner, bot.DocRefs(docs))
	ans, err := a.Ask(t.Context(), rag.Question{Text: "How much is masked?", Selected: "see https://arxiv.org/abs/1810.04805 for how BERT masks"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || asked[1].Selected != "" || asked[1].Filter.DocIDs[0] != "bert" {
		t.Fatalf("asked %+v, want the message, then the paper alone", asked)
	}
	if !strings.Contains(ans.Text, "masks tokens [1]") || !strings.Contains(ans.Text, "15% of tokens [2], replacing most with [MASK] [3]") {
		t.Errorf("merged text %q", ans.Text)
	}
	if len(ans.Sources) != 3 || ans.Sources[1].N != 2 || ans.Sources[2].N != 3 || ans.Sources[1].Chunk.DocID != "bert" {
		t.Errorf("merged sources %+v", ans.Sources)
	}

	asked = nil
	a.Ask(t.Context(), rag.Question{Text: "q", Selected: "about 1706.037621 and nothing indexed"}, nil)
	a.Ask(t.Context(), rag.Question{Text: "attention is all you need?"}, nil)
	if len(asked) != 2 || asked[0].Selected == "" || asked[1].Selected != "" || len(asked[1].Filter.DocIDs) != 0 {
		t.Errorf("asked %+v, want each question once, unchanged", asked)
	}
	// The title counts as a reference too.
	if ids := bot.DocRefs(docs)(t.Context(), "Per “Attention is all you need”, heads attend…"); len(ids) != 1 || ids[0] != "tf" {
		t.Errorf("title reference found %v", ids)
	}
}

func TestStripLinksKeepsText(t *testing.T) {
	var got []string
	inner := bot.AskerFunc(func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
		got = append(got, q.Selected)
		return rag.Answer{Refused: true}, nil
	})
	a := bot.WithPapers(inner, func(context.Context, string) []string { return nil })
	for _, in := range []string{
		"Encoders stack layers (https://arxiv.org/abs/1706.03762).",
		"Encoders stack layers <https://arxiv.org/abs/1706.03762|the paper>.",
		"Encoders stack layers [the paper](https://arxiv.org/abs/1706.03762).",
	} {
		a.Ask(t.Context(), rag.Question{Text: "q", Selected: in}, nil)
	}
	want := []string{"Encoders stack layers.", "Encoders stack layers the paper.", "Encoders stack layers the paper."}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("selected %q, want %q", got, want)
			break
		}
	}
}
