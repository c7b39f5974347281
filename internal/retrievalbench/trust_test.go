package retrievalbench

import (
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/rag"
)

// TestTrustOnCorpus asks the real corpus a few near misses, answerable paraphrases and an
// elliptical follow-up, extractively as the default configuration does: the gate must
// refuse the near misses naming what is missing, answer the others from the expected
// paper, and keep the follow-up on its paper.
func TestTrustOnCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds the corpus index and reranks with the local model (a minute or more on two cores)")
	}
	f := corpus(t)
	p := f.pipeline(t, true)
	ask := func(q string, history []rag.Turn) rag.Answer {
		t.Helper()
		a, err := p.Ask(t.Context(), rag.Question{Text: q, History: history}, nil)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		return a
	}
	cited := func(a rag.Answer, name string) bool {
		for _, s := range a.Sources {
			if s.Cited && s.Chunk.Name == name {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ q, missing string }{
		{"What accuracy does GPT-4 reach on MMLU?", ""}, // refused by the gate or the cut
		{"How does Sentence-T5 pool its encoder outputs?", "Sentence-T5"},
		{"What context length does LLaMA 2 support?", "LLaMA 2"},
		{"How does DistilBERT perform on the SuperGLUE benchmark?", "SuperGLUE"},
	} {
		a := ask(c.q, nil)
		if !a.Refused || !strings.HasPrefix(a.Text, rag.Refusal) {
			t.Errorf("near miss %q answered: %q", c.q, a.Text)
			continue
		}
		if c.missing != "" && (!strings.Contains(a.Text, c.missing) || len(a.Missing) == 0) {
			t.Errorf("near miss %q: refusal %q (missing %q) does not name %s", c.q, a.Text, a.Missing, c.missing)
		}
	}
	for _, c := range []struct{ q, paper string }{
		{"How does Sentence-BERT pool BERT outputs into a fixed-size vector?", "1908.10084"},
		{"Which data type does QLoRA introduce for 4-bit weights?", "2305.14314"},
		{"Why does the Transformer scale dot products by the square root of the key dimension?", "1706.03762"},
	} {
		if a := ask(c.q, nil); a.Refused || !cited(a, c.paper) {
			t.Errorf("%q: refused %v, answer %q does not cite %s", c.q, a.Refused, a.Text, c.paper)
		}
	}
	first := ask("How does Dense Passage Retrieval train its question and passage encoders?", nil)
	if first.Refused || !cited(first, "2004.04906") {
		t.Fatalf("DPR question: %q", first.Text)
	}
	h := []rag.Turn{{Question: "How does Dense Passage Retrieval train its question and passage encoders?", Answer: first.Text, Sources: first.Sources}}
	if a := ask("And what batch size did they use?", h); a.Refused || !cited(a, "2004.04906") {
		t.Errorf("follow-up left the DPR paper: refused %v, %q", a.Refused, a.Text)
	}
}
