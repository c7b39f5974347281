package rag_test

import (
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/generate"
	"github.com/footnote-dev/footnote/rag/generate/generatetest"
)

// TestAskGroundsLLMAnswers: a generated answer's citations are checked against their
// sources before it is returned. Prompt sources by rerank order: [1] encoder, [2] heads.
func TestAskGroundsLLMAnswers(t *testing.T) {
	cases := []struct {
		name    string
		reply   string
		want    string // "" with refused
		refused bool
		note    string
		g       rag.Grounding
	}{
		{"a wrong source is replaced by the supporting one",
			"Each encoder layer has two sub-layers [2].",
			"Each encoder layer has two sub-layers [1].", false, "", rag.Grounding{Checked: 1, Unsupported: 1}},
		{"an unsupported claim is dropped",
			"Each encoder layer has two sub-layers [1]. The decoder was trained with reinforcement learning from human preferences [2].",
			"Each encoder layer has two sub-layers [1].", false, "", rag.Grounding{Checked: 2, Supported: 1, Unsupported: 1, Dropped: 1}},
		{"nothing supported becomes the refusal",
			"The decoder was trained with reinforcement learning from human preferences [1][2].",
			"", true, "", rag.Grounding{Checked: 2, Unsupported: 2, Dropped: 1}},
		{"an answer citing nothing gets citations by support",
			"The encoder stacks six identical layers, each with two sub-layers. The model employs 8 parallel attention heads.",
			"The encoder stacks six identical layers, each with two sub-layers [1]. The model employs 8 parallel attention heads [2].", false, "", rag.Grounding{Checked: 2, Supported: 2}},
		{"an uncited answer no source supports falls back to extractive",
			"Rainfall in the Sahel doubled during the monsoon season.",
			"", false, "cited no source", rag.Grounding{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{c.reply}}))
			gen, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m"})
			env := akPipeline(t, gen)
			ans, _ := akAsk(t, env.p, rag.Question{Text: akHeadsQ})
			if ans.Refused != c.refused {
				t.Fatalf("refused %v, want %v (text %q)", ans.Refused, c.refused, ans.Text)
			}
			if c.refused {
				if !strings.HasPrefix(ans.Text, rag.Refusal) || len(ans.Sources) != 0 {
					t.Errorf("refusal %+v", ans)
				}
				return
			}
			if c.note != "" {
				if !strings.Contains(ans.Note, c.note) || ans.Generator != rag.GeneratorExtractive {
					t.Errorf("generator %q note %q, want an extractive fallback saying %q", ans.Generator, ans.Note, c.note)
				}
				return
			}
			if ans.Text != c.want {
				t.Errorf("text %q\nwant %q", ans.Text, c.want)
			}
			if ans.Grounding != c.g {
				t.Errorf("grounding %+v, want %+v", ans.Grounding, c.g)
			}
			checkCitations(t, ans)
		})
	}
}
