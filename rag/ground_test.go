package rag

import (
	"context"
	"slices"
	"strings"
	"testing"
)

var (
	grEncoder = Source{Chunk: Chunk{ID: "enc", DocID: "d1", Title: "Attention Is All You Need",
		Text: "The encoder is composed of a stack of N = 6 identical layers. Each layer has two sub-layers: a multi-head self-attention mechanism and a position-wise feed-forward network."}}
	grHeads = Source{Chunk: Chunk{ID: "heads", DocID: "d1", Title: "Attention Is All You Need",
		Text: "In this work we employ h = 8 parallel attention layers, or heads. For each of these we use dk = dv = 64."}}
	grBatch = Source{Chunk: Chunk{ID: "batch", DocID: "bert", Title: "BERT: Pre-training of Deep Bidirectional Transformers",
		Text: "We train with batch size of 256 sequences for 1,000,000 steps, which is approximately 40 epochs over the 3.3 billion word corpus."}}
)

func groundPipeline(t *testing.T, embedders ...Embedder) *Pipeline {
	t.Helper()
	p, err := New(Config{Searcher: gateSearcher{}, Embedders: embedders})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGround(t *testing.T) {
	srcs := []Source{grEncoder, grHeads, grBatch}
	cases := []struct {
		name string
		in   string
		want string
		g    Grounding
	}{
		{"supported markers stay", "The encoder is a stack of 6 identical layers [1]. It employs 8 parallel attention heads [2].",
			"The encoder is a stack of 6 identical layers [1]. It employs 8 parallel attention heads [2].", Grounding{Checked: 2, Supported: 2}},
		{"a wrong source loses its marker and the right one is cited", "The model employs 8 parallel attention heads [1].",
			"The model employs 8 parallel attention heads [2].", Grounding{Checked: 1, Unsupported: 1}},
		{"one of two markers unsupported", "Each encoder layer has two sub-layers [1][3].",
			"Each encoder layer has two sub-layers [1].", Grounding{Checked: 2, Supported: 1, Unsupported: 1}},
		{"a wrong number is not supported", "BERT is trained with a batch size of 512 sequences [3].",
			"", Grounding{Checked: 1, Unsupported: 1, Dropped: 1}},
		{"a claim no source supports is dropped", "The decoder is trained with reinforcement learning from human feedback [2]. Each layer has two sub-layers [1].",
			"Each layer has two sub-layers [1].", Grounding{Checked: 2, Supported: 1, Unsupported: 1, Dropped: 1}},
		{"each marker vouches for its clause", "BERT trains for 1,000,000 steps [3], and each encoder layer has two sub-layers [1].",
			"BERT trains for 1,000,000 steps [3], and each encoder layer has two sub-layers [1].", Grounding{Checked: 2, Supported: 2}},
		{"uncited sentences are left alone", "Each layer has two sub-layers [1].\n\nInterpretation: this keeps the model simple.",
			"Each layer has two sub-layers [1].\n\nInterpretation: this keeps the model simple.", Grounding{Checked: 1, Supported: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, g := groundPipeline(t).newGrounder(t.Context(), srcs).ground(c.in)
			if got != c.want {
				t.Errorf("text %q\nwant %q", got, c.want)
			}
			if g != c.g {
				t.Errorf("grounding %+v, want %+v", g, c.g)
			}
		})
	}
}

func TestAttachCitations(t *testing.T) {
	g := groundPipeline(t).newGrounder(t.Context(), []Source{grEncoder, grHeads})
	got, n := g.attach("The Transformer employs 8 parallel attention heads. The encoder stacks 6 identical layers. The weather was fine.")
	want := "The Transformer employs 8 parallel attention heads [2]. The encoder stacks 6 identical layers [1]. The weather was fine."
	if got != want || n != 2 {
		t.Errorf("attach = %q, %d\nwant %q, 2", got, n, want)
	}
}

// grEmbedder embeds a text as a vector of the words it contains from a fixed list, so that
// texts about the same things are similar and others are not.
type grEmbedder struct{ calls *int }

var grAxes = []string{"attention", "heads", "weather"}

func (grEmbedder) Info() ModelInfo { return ModelInfo{Name: "gr", Dim: len(grAxes), Metric: Cosine} }
func (e grEmbedder) EmbedDocuments(_ context.Context, texts []string) ([][]float32, error) {
	*e.calls += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(grAxes))
		for j, a := range grAxes {
			if strings.Contains(strings.ToLower(t), a) {
				v[j] = 1
			}
		}
		out[i] = v
	}
	return out, nil
}
func (e grEmbedder) EmbedQuery(ctx context.Context, t string) ([]float32, error) {
	v, err := e.EmbedDocuments(ctx, []string{t})
	return v[0], err
}

// TestGroundSemantic: a paraphrase sharing few words with its source is settled by the
// embedder; a quote is not embedded at all.
func TestGroundSemantic(t *testing.T) {
	calls := 0
	p := groundPipeline(t, grEmbedder{&calls})
	g := p.newGrounder(t.Context(), []Source{grHeads})
	// The claim shares 2 of its 6 content words with the passage.
	claim := "Several attention heads run side by side simultaneously."
	if s := g.support(claim, 0); s == 0 {
		t.Errorf("the embedder did not vouch for %q", claim)
	}
	if calls == 0 {
		t.Error("the paraphrase was not embedded")
	}
	calls = 0
	if s := g.support("In this work we employ h = 8 parallel attention layers, or heads.", 0); s == 0 || calls != 0 {
		t.Errorf("a quote: support %v after %d embeddings, want supported without any", s, calls)
	}
	calls = 0
	if s := g.support("The weather heads run side by side.", 0); s != 0 || calls == 0 {
		t.Errorf("an unrelated claim sharing a word: support %v after %d embeddings, want unsupported by the embedder", s, calls)
	}
}

// TestGroundQuote checks a sentence quoted from its source is supported even when the
// name check would misread it: "Sentence-BERT (Reimers and Gurevych, 2019)" reads as the
// name "Gurevych 2019", which the source only holds with a comma in between, and a
// footnote number glued to a word is gone from the quote. Half a quote, or a quote with a
// number changed, is not supported by that rule.
func TestGroundQuote(t *testing.T) {
	src := Chunk{ID: "e5", Text: "With the advent of pre-trained language models (Devlin et al., 2019), Sentence-BERT (Reimers and\nGurevych, 2019) and SimCSE (Gao et al., 2021) have been proposed to learn text embeddings by fine-tuning BERT on natural language inference (NLI) datasets. Our embeddings2 are trained on 500k examples."}
	other := Chunk{ID: "other", Text: "Models are trained on text from the web for many steps."}
	p := testPipeline(t, Config{})
	g := p.newGrounder(t.Context(), sourcesOf(src, other))
	quote := "With the advent of pre-trained language models (Devlin et al., 2019), Sentence-BERT (Reimers and Gurevych, 2019) and SimCSE (Gao et al., 2021) have been proposed to learn text embeddings by fine-tuning BERT on natural language inference (NLI) datasets."
	if s := g.support(quote, 0); s != 1 {
		t.Errorf("support of a quote from its source = %v, want 1", s)
	}
	if s := g.support("Our embeddings are trained on 500k examples.", 0); s != 1 {
		t.Errorf("support of a quote without its footnote number = %v, want 1", s)
	}
	if s := g.support("Our embeddings are trained on 700k examples.", 0); s != 0 {
		t.Errorf("support of a quote with another number = %v, want 0", s)
	}
	if s := g.support(quote, 1); s != 0 {
		t.Errorf("support of the quote by another source = %v, want 0", s)
	}
	text, gr := g.ground(withCitation(quote, 1))
	if gr.Unsupported != 0 || !strings.Contains(text, "[1]") {
		t.Errorf("grounding the quote: %q, %+v; want it kept with its marker", text, gr)
	}
}

func TestHoldersFirst(t *testing.T) {
	hit := func(id, doc string) Scored { return Scored{Hit: Hit{Chunk: Chunk{ID: id, DocID: doc}}} }
	ids := func(hs []Scored) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Chunk.ID)
		}
		return out
	}
	adds := func(ids ...int) func(int) bool { return func(i int) bool { return slices.Contains(ids, i) } }
	hits := []Scored{hit("a", "p1"), hit("b", "p2"), hit("c", "p3")}
	// a names what b does not (the second paper of a comparison): it stays after b.
	if got := ids(holdersFirst(hits, []int{1, 2, 0}, adds(0))); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("order %v, want b (two names), a (one); c names none", got)
	}
	// a names only what b names too (the Transformer's WMT beside GPT-2's, for "GPT-2 on
	// WMT"): it is not evidence.
	if got := ids(holdersFirst(hits, []int{1, 2, 0}, adds())); !slices.Equal(got, []string{"b"}) {
		t.Errorf("order %v, want b alone", got)
	}
	if got := holdersFirst(hits, []int{0, 0, 0}, adds()); len(got) != 3 {
		t.Errorf("%d hits kept when none holds a name, want all", len(got))
	}
	// The passage of the best holder's paper that does not repeat the name (the one
	// stating the number) stays, after the holders; a passage of a paper whose passages
	// hold fewer names does not come back with it.
	hits = []Scored{hit("drqa-system", "drqa"), hit("drqa-count", "drqa"), hit("other-nli", "roberta"), hit("other-batch", "roberta")}
	if got := ids(holdersFirst(hits, []int{2, 0, 1, 0}, adds(2))); !slices.Equal(got, []string{"drqa-system", "other-nli", "drqa-count"}) {
		t.Errorf("order %v, want drqa-system, other-nli, drqa-count", got)
	}
	if got := ids(holdersFirst(hits, []int{2, 0, 1, 0}, adds())); !slices.Equal(got, []string{"drqa-system", "drqa-count"}) {
		t.Errorf("order %v, want drqa-system, drqa-count", got)
	}
}

// TestNewNames: a hit adds a name when it holds one that no hit holding the most names
// holds.
func TestNewNames(t *testing.T) {
	hit := func(text, title string) Scored { return Scored{Hit: Hit{Chunk: Chunk{Text: text, Title: title}}} }
	hits := []Scored{
		hit("GPT-2 gets 5 BLEU on WMT-14 English-French zero-shot.", "Language Models are Unsupervised Multitask Learners"),
		hit("On the WMT 2014 English-to-French task the Transformer reaches 41.8 BLEU.", "Attention Is All You Need"),
		hit("RAG uses BART as its generator.", "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks"),
	}
	adds := newNames("What BLEU does GPT-2 get on WMT-14 English to French, compared with RAG?", hits, []int{2, 1, 1})
	if adds(1) {
		t.Error("the Transformer's WMT passage adds nothing GPT-2's does not hold")
	}
	if !adds(2) {
		t.Error("the RAG passage adds RAG")
	}
}
