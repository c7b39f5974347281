package rag

import (
	"context"
	"errors"
	"slices"
	"testing"
)

var (
	authTransformer = Chunk{ID: "atr", DocID: "transformer", Title: "Attention Is All You Need",
		Text: "We trained the base Transformer models for 100,000 steps with the Adam optimizer and a learning rate that varies over training."}
	authBERT = Chunk{ID: "abert", DocID: "bert", Title: "BERT: Pre-training of Deep Bidirectional Transformers",
		Text: "We train BERT with Adam, a learning rate of 1e-4, and L2 weight decay of 0.01, on the Transformer encoder."}
	authSBERT = Chunk{ID: "asbert", DocID: "sbert", Title: "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks",
		Text: "We fine-tune SBERT with a batch size of 16, the Adam optimizer with learning rate 2e-5, and a linear learning rate warm-up."}
	authXL = Chunk{ID: "axl", DocID: "xl", Title: "Transformer-XL: Attentive Language Models",
		Text: "Transformer-XL is trained with the Adam optimizer and a cosine learning rate schedule."}
	authXLdecay = Chunk{ID: "axld", DocID: "xl2", Title: "Scaling Transformers",
		Text: "We use a weight decay of 0.1 when training the large Transformer models."}
	authDocs = []Document{
		{ID: "xl", Authors: []string{"Zihang Dai", "Zhilin Yang"}},
		{ID: "xl2", Authors: []string{"Zihang Dai", "Zhilin Yang", "Quoc Le"}},
		{ID: "transformer", Title: "Attention Is All You Need", Authors: []string{"Ashish Vaswani", "Noam Shazeer"}},
		{ID: "bert", Title: "BERT: Pre-training of Deep Bidirectional Transformers", Authors: []string{"Jacob Devlin", "Ming-Wei Chang", "Kenton Lee", "Kristina Toutanova"}},
		{ID: "sbert", Authors: []string{"Nils Reimers", "Iryna Gurevych"}},
		{ID: "distil", Authors: []string{"Victor SANH", "Lysandre DEBUT"}},
	}
)

// TestGateAuthorPaper: a question naming a paper by its authors is about that paper; a
// setting it never states is refused even when another kept paper states it, and one it
// states is answered. Without the document list the authors name nothing, as before.
func TestGateAuthorPaper(t *testing.T) {
	corpus := []Chunk{authTransformer, authBERT, authSBERT, authXL, authXLdecay}
	p := gateDocsPipeline(t, corpus, func(context.Context) ([]Document, error) { return authDocs, nil })
	kept := []Chunk{authBERT, authTransformer}
	runGateCases(t, p, corpus, []gateCase{
		{"another paper's setting does not answer", "What weight decay did Vaswani et al. use?", kept, []string{"weight decay"}, "weight decay"},
		{"the named paper states it", "What weight decay did Devlin et al. use?", kept, nil, ""},
		{"two authors, paper not kept", "What weight decay did Reimers and Gurevych use?", kept, []string{"weight decay"}, "weight decay"},
		{"two authors, stated", "What warm-up did Reimers & Gurevych use?", []Chunk{authBERT}, nil, ""},
		// Dai et al. wrote both; the question names the one that states no decay.
		// A title names its paper as its authors do; two of its words name none.
		{"the named title's paper states none", "In Attention Is All You Need, what weight decay was used?", kept, []string{"weight decay"}, "weight decay"},
		{"a title's first words in lower case", "what weight decay did attention is all you need use?", kept, []string{"weight decay"}, "weight decay"},
		{"two words of a title", "What weight decay does attention need?", kept, nil, ""},
		{"a title's words without its capitals", "Attention is all you need to set the weight decay?", kept, nil, ""},
		{"three words of a title in lower case", "what weight decay: attention is all?", kept, nil, ""},
		// Naming a kept paper's authors puts the question on it: words the papers never use
		// are the asker's. Without the authors, nothing of the question is the papers'.
		{"words the papers never use, beside a kept paper's authors", "What do Vaswani et al. point to that makes constituency parsing awkward?", kept, nil, ""},
		{"the same words alone", "What makes constituency parsing awkward?", kept, []string{"constituency", "parsing", "awkward"}, "constituency"},
		{"the question's names single out one of the authors' papers", "What weight decay did Dai et al. use for the Transformer-XL?", []Chunk{authXL, authBERT}, []string{"weight decay"}, "weight decay"},
	})
	runGateCases(t, gateDocsPipeline(t, corpus, nil), corpus, []gateCase{
		{"no document list", "What weight decay did Vaswani et al. use?", kept, nil, ""},
	})
	// Two names are a two-author paper's authors only when it has no others.
	if got, _ := p.authorPapers(t.Context(), "What temperature did Sanh et al. use, and what did Devlin and Chang report?"); !slices.Equal(got, []string{"distil"}) {
		t.Errorf("authorPapers = %q, want only the paper whose first author is Sanh", got)
	}
}

// TestDocumentsListedOnce: the papers a question names and the gate both read the
// document list; a question lists the documents once.
func TestDocumentsListedOnce(t *testing.T) {
	corpus := []Chunk{authTransformer, authBERT, authSBERT}
	calls := 0
	p := gateDocsPipeline(t, corpus, func(context.Context) ([]Document, error) { calls++; return authDocs, nil })
	if _, err := p.Ask(t.Context(), Question{Text: "What weight decay did Vaswani et al. use for the BERT and GPT-1 models?"}, nil); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("documents listed %d times in one question, want 1", calls)
	}
}

// TestDocumentsListFails: a document list that fails names no paper by its authors; the
// question is judged by its passages alone, as without a list, and no error reaches the
// asker.
func TestDocumentsListFails(t *testing.T) {
	corpus := []Chunk{authTransformer, authBERT, authSBERT}
	p := gateDocsPipeline(t, corpus, func(context.Context) ([]Document, error) { return nil, errors.New("store down") })
	runGateCases(t, p, corpus, []gateCase{
		{"failed list", "What weight decay did Vaswani et al. use?", []Chunk{authBERT, authTransformer}, nil, ""},
	})
	if _, err := p.Ask(t.Context(), Question{Text: "What weight decay did Vaswani et al. use?"}, nil); err != nil {
		t.Errorf("ask with a failing document list: %v", err)
	}
}

// TestNamedByAuthorsOrTitle: a question naming one paper by its authors or its title is
// searched within that paper; authors of several papers ("Dai et al.") name none of them.
func TestNamedByAuthorsOrTitle(t *testing.T) {
	corpus := []Chunk{authTransformer, authBERT, authSBERT, authXL, authXLdecay}
	p := gateDocsPipeline(t, corpus, func(context.Context) ([]Document, error) { return authDocs, nil })
	enc, err := p.sparse(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    string
		want string
	}{
		{"What learning rate did Vaswani et al. use?", "transformer"},
		{"What learning rate did Reimers and Gurevych use?", "sbert"},
		{"In Attention Is All You Need, what learning rate was used?", "transformer"},
		{"What learning rate did Dai et al. use?", ""},
	} {
		got := p.namedPapers(withSparse(t.Context()), c.q, enc)
		if (c.want == "" && len(got) > 0) || (c.want != "" && !slices.Contains(got, c.want)) {
			t.Errorf("namedPapers(%q) = %q, want %q", c.q, got, c.want)
		}
	}
}
