package rag

import (
	"context"
	"testing"
)

func TestLexicalCoverage(t *testing.T) {
	corpus := []Chunk{gateAdam, gateFill, gateSBERT, gateGPT3}
	p := gatePipeline(t, corpus)
	enc, _ := p.cfg.Sparse(t.Context())
	lq := p.lexicalQuery(enc, "Which beta2 does the AdamW optimizer use?")
	if got := lq.coverage(gateAdam.Text); got < 0.99 {
		t.Errorf("coverage of the AdamW passage = %.2f, want 1: β1 is beta, and every word is there", got)
	}
	if got := lq.coverage(gateFill.Text); got > 0.01 {
		t.Errorf("coverage of the Transformer passage = %.2f, want 0", got)
	}
	// Question words and stopwords carry nothing: a question of only those covers nothing.
	if lq := p.lexicalQuery(enc, "How many of them are there exactly?"); lq.total != 0 {
		t.Errorf("a question without content words weighs %.2f", lq.total)
	}
	// A word only the passage's paper holds counts for contextCredit.
	lq = p.lexicalQuery(enc, "Which optimizer trains the Transformer?")
	full := lq.coverageIn(stemSet("the optimizer trains the Transformer"), nil)
	ctx := lq.coverageIn(stemSet("the optimizer trains it"), stemSet("Transformer"))
	bare := lq.coverageIn(stemSet("the optimizer trains it"), nil)
	if !(bare < ctx && ctx < full) {
		t.Errorf("coverage without, with context, in full = %.2f, %.2f, %.2f: want increasing", bare, ctx, full)
	}
}

// A similarity scorer ranks the passage about the model in general above the one stating
// the fact; the blend lifts the one holding the question's rare words, and a passage
// below the score cut by similarity alone can pass it.
func TestLexicalBlend(t *testing.T) {
	corpus := []Chunk{gateAdam, gateFill, gateSBERT, gateGPT3}
	p := gatePipeline(t, corpus)
	enc, _ := p.cfg.Sparse(t.Context())
	lq := p.lexicalQuery(enc, "Which beta values does the AdamW optimizer use?")
	cands := []Scored{
		{Hit: Hit{Chunk: gateFill}, Rerank: 0.30},
		{Hit: Hit{Chunk: gateAdam}, Rerank: 0.15},
	}
	out := lexicalBlend(cands, lq, 0.3)
	if out[0].Chunk.ID != gateAdam.ID {
		t.Fatalf("blended order %s, %s: want the AdamW passage first", out[0].Chunk.ID, out[1].Chunk.ID)
	}
	if out[0].Rerank < 0.2 {
		t.Errorf("blended score %.2f: want it above the default cut 0.2", out[0].Rerank)
	}
	if cands[0].Chunk.ID != gateFill.ID {
		t.Error("lexicalBlend reordered its input")
	}
	if same := lexicalBlend(cands, lexicalQuery{}, 0.3); same[0].Rerank != 0.30 {
		t.Error("an empty lexical query changed the scores")
	}
}

var (
	compREALM = Chunk{ID: "realm1", DocID: "realm", Title: "REALM: Retrieval-Augmented Language Model Pre-Training",
		Text: "REALM refreshes the document index asynchronously during pre-training and updates the document encoder."}
	compRAG = Chunk{ID: "rag1", DocID: "rag", Title: "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks",
		Text: "We keep the document encoder fixed and only fine-tune the query encoder and the generator, so the index is never rebuilt."}
	compBench = Chunk{ID: "beir1", DocID: "beir", Title: "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation",
		Text: "We evaluate on HotpotQA, FEVER and NQ; HotpotQA needs multi-hop reasoning."}
	compFiD = Chunk{ID: "fid1", DocID: "fid", Title: "Leveraging Passage Retrieval with Generative Models for Open Domain Question Answering",
		Text: "Fusion-in-Decoder reaches 51.4 exact match on NaturalQuestions and 67.6 on TriviaQA."}
)

// A question naming two papers, retrieved from one, is completed from the paper whose
// title names the other ("Retrieval-Augmented Generation" spells RAG); a dataset a
// benchmark paper lists is not a paper the question names.
func TestCompleteEvidence(t *testing.T) {
	// Other papers, so that the names are as rare here as in a real corpus.
	corpus := []Chunk{compREALM, compRAG, compFiD, gateGPT3, gateSBERT, gateFill, gateAdam}
	for _, id := range []string{"beir1", "beir2", "beir3"} {
		c := compBench
		c.ID = id
		corpus = append(corpus, c) // a paper that uses HotpotQA throughout
	}
	p := gatePipeline(t, corpus)
	q := Question{Text: "REALM refreshes its index during training while RAG does not; what does each do with its document encoder?"}
	kept := []Scored{{Hit: Hit{Chunk: compREALM}}}
	g := p.gate(t.Context(), q.Text, hitChunks(kept), nil)
	if len(g.absent) != 1 || g.absent[0].text != "RAG" {
		t.Fatalf("gate absent %+v, want RAG", g.absent)
	}
	extra := p.completeEvidence(t.Context(), q, kept, g)
	if len(extra) != 1 || extra[0].Chunk.DocID != "rag" {
		t.Fatalf("completed with %+v, want the RAG paper's passage", extra)
	}
	if g := p.gate(t.Context(), q.Text, hitChunks(append(kept, extra...)), nil); g.refused() {
		t.Errorf("gate on the completed evidence refused: %+v", g)
	}

	q = Question{Text: "What exact match does Fusion-in-Decoder reach on HotpotQA?"}
	kept = []Scored{{Hit: Hit{Chunk: compFiD}}}
	g = p.gate(t.Context(), q.Text, hitChunks(kept), nil)
	if !g.refused() {
		t.Fatalf("gate passed a near miss: %+v", g)
	}
	if extra := p.completeEvidence(t.Context(), q, kept, g); len(extra) != 0 {
		t.Errorf("completed a near miss with %s: HotpotQA is not a paper's name (gate %+v)", extra[0].Chunk.DocID, g)
	}
}

// A question whose only name the kept passages lack was retrieved from the wrong paper:
// it is completed from the paper using the name most.
func TestCompleteEvidenceWrongPaper(t *testing.T) {
	corpus := []Chunk{gateFill, gateSBERT, gateGPT3, gateAdam}
	for i, text := range []string{
		"LLaMA-65B has 80 layers, 64 attention heads and a model dimension of 8192.",
		"LLaMA-65B is competitive with Chinchilla-70B and PaLM-540B.",
		"We train LLaMA-65B on 1.4T tokens with a batch size of 4M tokens.",
	} {
		corpus = append(corpus, Chunk{ID: "llama" + string(rune('a'+i)), DocID: "llama", Title: gateAdam.Title, Text: text})
	}
	p := gatePipeline(t, corpus)
	q := Question{Text: "LLaMA-65B: how many layers and attention heads does it have?"}
	kept := []Scored{{Hit: Hit{Chunk: gateFill}}}
	g := p.gate(t.Context(), q.Text, hitChunks(kept), nil)
	if len(g.absent) != 1 || g.absent[0].text != "LLaMA-65B" {
		t.Fatalf("gate absent %+v, want LLaMA-65B", g.absent)
	}
	extra := p.completeEvidence(t.Context(), q, kept, g)
	if len(extra) != 1 || extra[0].Chunk.DocID != "llama" {
		t.Fatalf("completed with %+v, want a passage of the LLaMA paper", extra)
	}
}

// A name the kept paper uses in a passage the retrieval did not keep completes the
// evidence with that passage.
func TestCompleteEvidenceSamePaper(t *testing.T) {
	appendix := Chunk{ID: "rag2", DocID: "rag", Title: compRAG.Title,
		Text: "We store the document index vectors on CPU, requiring 100 GB of CPU memory for all of Wikipedia; RAG's compressed index needs 36 GB."}
	corpus := []Chunk{compREALM, compRAG, appendix, compFiD, gateGPT3, gateSBERT, gateFill, gateAdam}
	p := gatePipeline(t, corpus)
	q := Question{Text: "How much CPU memory does RAG's document index need?"}
	kept := []Scored{{Hit: Hit{Chunk: compRAG}}}
	g := p.gate(t.Context(), q.Text, hitChunks(kept), nil)
	if len(g.absent) != 1 || g.absent[0].text != "CPU" {
		t.Fatalf("gate absent %+v, want CPU", g.absent)
	}
	extra := p.completeEvidence(t.Context(), q, kept, g)
	if len(extra) != 1 || extra[0].Chunk.ID != "rag2" {
		t.Fatalf("completed with %+v, want the passage naming CPU", extra)
	}
	if g := p.gate(t.Context(), q.Text, hitChunks(append(kept, extra...)), nil); g.refused() {
		t.Errorf("gate on the completed evidence refused: %+v", g)
	}
}

// A question builds its BM25 encoder once, whatever asks for it (search, lexical evidence,
// gate), and within the question's context, not a shorter one.
func TestSparseOncePerQuestion(t *testing.T) {
	built := 0
	var builtIn context.Context
	p, err := New(Config{
		Searcher: gateSearcher{[]Chunk{gateAdam, gateFill}},
		Sparse: func(ctx context.Context) (SparseEncoder, error) {
			built++
			builtIn = ctx
			return newIDFEncoder([]Chunk{gateAdam, gateFill}), nil
		},
		LexicalWeight: 0.3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ask(t.Context(), Question{Text: "Which optimizer did the LLaMA authors use?"}, nil); err != nil {
		t.Fatal(err)
	}
	if built != 1 {
		t.Errorf("the encoder was built %d times for one question, want 1", built)
	}
	if builtIn.Err() != nil {
		t.Errorf("the encoder was built in a context that has ended: %v", builtIn.Err())
	}
}
