package rag

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// trSearcher ranks a fixed corpus by the order given and honours Filter.DocIDs; global
// lists the chunk ids an unfiltered search returns, so a paper can be absent from it.
// With enc set, an unfiltered BM25-only search (the gate's and completion's searches for a
// name) returns the chunks sharing a term with the query instead, as a store's would.
type trSearcher struct {
	corpus   map[string]Chunk
	global   []string
	searches []SearchRequest
	enc      SparseEncoder
}

func (s *trSearcher) Search(_ context.Context, req SearchRequest) ([]Hit, error) {
	s.searches = append(s.searches, req)
	var out []Hit
	if s.enc != nil && len(req.Dense) == 0 && req.Sparse != nil && len(req.Filter.DocIDs) == 0 {
		for _, id := range slices.Sorted(mapsKeys(s.corpus)) {
			c := s.corpus[id]
			v := s.enc.EncodeQuery(c.Title + " " + c.Text)
			if slices.ContainsFunc(req.Sparse.Indices, func(i uint32) bool { return slices.Contains(v.Indices, i) }) {
				out = append(out, Hit{Chunk: c, Score: 1})
			}
		}
		return out, nil
	}
	if len(req.Filter.DocIDs) == 0 {
		for i, id := range s.global {
			out = append(out, Hit{Chunk: s.corpus[id], Score: 1 / float64(61+i)})
		}
		return out, nil
	}
	for _, id := range slices.Sorted(mapsKeys(s.corpus)) {
		if c := s.corpus[id]; slices.Contains(req.Filter.DocIDs, c.DocID) {
			out = append(out, Hit{Chunk: c, Score: 0.01})
		}
	}
	return out, nil
}

func mapsKeys(m map[string]Chunk) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (s *trSearcher) Chunks(context.Context, []string) ([]Chunk, error) { return nil, ErrNotFound }

// trReranker scores a passage by the distinctive phrase it contains.
type trReranker map[string]float64

func (r trReranker) Score(_ context.Context, _ string, passages []string) ([]float64, error) {
	out := make([]float64, len(passages))
	for i, p := range passages {
		for phrase, s := range r {
			if strings.Contains(p, phrase) {
				out[i] = s
			}
		}
	}
	return out, nil
}

var trCorpus = map[string]Chunk{
	"bertBatch": {ID: "bertBatch", DocID: "bert", Title: "BERT: Pre-training of Deep Bidirectional Transformers", PageStart: 13,
		Text: "We train with a batch size of 256 sequences for 1,000,000 steps, which is approximately 40 epochs over the corpus."},
	"bertMLM": {ID: "bertMLM", DocID: "bert", Title: "BERT: Pre-training of Deep Bidirectional Transformers", PageStart: 4,
		Text: "BERT is pre-trained with a masked language model objective that masks 15% of the input tokens at random."},
	"robBatch": {ID: "robBatch", DocID: "roberta", Title: "RoBERTa: A Robustly Optimized BERT Pretraining Approach", PageStart: 5,
		Text: "RoBERTa is trained with large batches of 8K sequences, and the batch size is increased while the learning rate is tuned."},
	"electra": {ID: "electra", DocID: "electra", Title: "ELECTRA: Pre-training Text Encoders as Discriminators", PageStart: 2,
		Text: "ELECTRA uses a batch size of 2048 for its large model and trains a discriminator to detect replaced tokens."},
}

func trPipeline(t *testing.T) (*Pipeline, *trSearcher) {
	t.Helper()
	s := &trSearcher{corpus: trCorpus, global: []string{"robBatch", "electra", "bertMLM"}}
	p, err := New(Config{
		Searcher: s,
		Sparse: func(context.Context) (SparseEncoder, error) {
			return newIDFEncoder(slices.Collect(mapsValues(trCorpus))), nil
		},
		Reranker: trReranker{"8K sequences": 0.6, "2048": 0.35, "masked language model": 0.3, "256 sequences": 0.5},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

func mapsValues(m map[string]Chunk) func(func(Chunk) bool) {
	return func(yield func(Chunk) bool) {
		for _, k := range slices.Sorted(mapsKeys(m)) {
			if !yield(m[k]) {
				return
			}
		}
	}
}

var trHistory = []Turn{{
	Question: "How is BERT pre-trained?",
	Answer:   "BERT is pre-trained with a masked language model objective [1].",
	Sources: []Source{{N: 1, Chunk: trCorpus["bertMLM"], Score: 0.9, Cited: true},
		// Retrieved but not cited: naming ELECTRA later still moves the thread.
		{N: 2, Chunk: trCorpus["electra"], Score: 0.4}},
}}

func firstCited(a Answer) string {
	for _, s := range a.Sources {
		if s.Cited {
			return s.Chunk.DocID
		}
	}
	return ""
}

// TestFollowUpSteering: an elliptical follow-up is answered from the paper the thread is
// about even though an unsteered search never returns that passage; a follow-up naming
// another paper moves to it; without history the best-scored paper wins.
func TestFollowUpSteering(t *testing.T) {
	cases := []struct {
		name    string
		q       string
		history []Turn
		want    string
	}{
		{"elliptical follow-up stays on the paper", "And what batch size did they use?", trHistory, "bert"},
		{"pronoun follow-up stays on the paper", "How many steps did it train for?", trHistory, "bert"},
		{"a follow-up naming another paper moves", "And what batch size did ELECTRA use?", trHistory, "electra"},
		{"without history the best passage wins", "What batch size was used?", nil, "roberta"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, s := trPipeline(t)
			ans, err := p.Ask(t.Context(), Question{Text: c.q, History: c.history}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ans.Refused || firstCited(ans) != c.want {
				t.Fatalf("answer %q cites %q first, want %q (query %q)", ans.Text, firstCited(ans), c.want, ans.Query)
			}
			if c.want == "bert" && !slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Cited && s.Chunk.ID == "bertBatch" }) {
				t.Errorf("answer %q does not cite the batch-size passage only the steered search finds", ans.Text)
			}
			// The retrieval steered to the thread's paper, not the look-up of whether that
			// paper uses a name (movesOn), which reads rescueHits passages.
			steered := false
			for _, r := range s.searches {
				steered = steered || r.Limit != rescueHits && slices.Contains(r.Filter.DocIDs, "bert")
			}
			if steered != (c.want == "bert") {
				t.Errorf("searched the thread's paper: %v", steered)
			}
		})
	}
}

func TestSteerDocs(t *testing.T) {
	h := []Turn{
		{Question: "q1", Sources: []Source{{Chunk: Chunk{DocID: "old"}, Cited: true}}},
		{Question: "q2", Sources: []Source{{Chunk: Chunk{DocID: "also"}}, {Chunk: Chunk{DocID: "cited"}, Cited: true}}},
		{Question: "q3", Answer: Refusal},
	}
	if got := steerDocs(Question{Text: "and the learning rate?", History: h}, len(unseenNames("and the learning rate?", h)) > 0); !slices.Equal(got, []string{"cited"}) {
		t.Errorf("steerDocs = %v, want the most recent answer's cited paper", got)
	}
	if got := steerDocs(Question{Text: "and what about GPT-4?", History: h}, len(unseenNames("and what about GPT-4?", h)) > 0); got != nil {
		t.Errorf("steerDocs = %v for a question naming something new", got)
	}
}

func TestCondenseRuleMovesOn(t *testing.T) {
	h := []Turn{{Question: "What batch size did BERT use for pre-training?"}}
	got := condenseRule("And what about ELECTRA?", h, len(unseenNames("And what about ELECTRA?", h)) > 0)
	if strings.Contains(got, "BERT") || !strings.Contains(got, "batch") {
		t.Errorf("condensed %q: want the topic carried without the earlier paper's name", got)
	}
	if got := condenseRule("How long did the biggest model take to train?", h, false); !strings.Contains(got, "BERT") {
		t.Errorf("condensed %q: a short question naming nothing should carry the subject", got)
	}
}

// TestAskNearMissRefusal: the gate's refusal starts with the refusal sentence, says what
// is missing, lists it in Missing, cites nothing and still offers the closest passages.
func TestAskNearMissRefusal(t *testing.T) {
	p, _ := trPipeline(t)
	var streamed strings.Builder
	ans, err := p.Ask(t.Context(), Question{Text: "What batch size did RoBERTa-XL use?"}, func(d string) error {
		streamed.WriteString(d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ans.Refused || !strings.HasPrefix(ans.Text, Refusal+" ") || !strings.Contains(ans.Text, "RoBERTa-XL") {
		t.Fatalf("answer %q, want a refusal naming RoBERTa-XL", ans.Text)
	}
	if !strings.Contains(ans.Text, "The papers mention RoBERTa, but not RoBERTa-XL.") {
		t.Errorf("answer %q does not say what the papers mention instead", ans.Text)
	}
	if !slices.Equal(ans.Missing, []string{"RoBERTa-XL"}) || len(ans.Sources) != 0 || ans.Citations != 0 {
		t.Errorf("missing %q sources %d citations %d", ans.Missing, len(ans.Sources), ans.Citations)
	}
	if len(ans.More) == 0 || ans.More[0].Chunk.ID != "robBatch" || ans.More[0].N != 1 {
		t.Errorf("more %+v, want the closest passages from [1]", ans.More)
	}
	if streamed.String() != ans.Text {
		t.Errorf("streamed %q, answer %q", streamed.String(), ans.Text)
	}
}

// TestSteerDocsMostCited checks a follow-up is steered to the paper the previous answer
// was about, not to one it quoted once in passing, and to both papers of an answer that
// compares two.
func TestSteerDocsMostCited(t *testing.T) {
	src := func(n int, doc string) Source { return Source{N: n, Chunk: Chunk{DocID: doc}, Cited: true} }
	turn := Turn{
		Question: "Which objective does Sentence-BERT optimize?",
		Answer:   "SBERT adds a pooling operation [1]. It is trained on SNLI [2]. The NSP objective was designed for inference [3]. It optimizes a softmax classifier [1].",
		Sources:  []Source{src(1, "sbert"), src(2, "sbert"), src(3, "roberta")},
	}
	if got := steerDocs(Question{Text: "And what batch size did they use?", History: []Turn{turn}}, false); !slices.Equal(got, []string{"sbert"}) {
		t.Errorf("steerDocs = %v, want [sbert]: the answer quoted RoBERTa once in passing", got)
	}
	turn.Answer = "LoRA freezes the pretrained weights [1]. QLoRA quantizes them to 4 bits [3]."
	if got := steerDocs(Question{Text: "And what rank did they use?", History: []Turn{turn}}, false); !slices.Equal(got, []string{"sbert", "roberta"}) {
		t.Errorf("steerDocs = %v, want both papers an answer cites alike", got)
	}
}

func TestExtractiveQuery(t *testing.T) {
	h := []Turn{{Question: "Which objective does Sentence-BERT optimize?"}}
	q := Question{Text: "And what batch size did they use?", History: h}
	if got := extractiveQuery(q, q.Text+" objective Sentence-BERT optimize"); got != q.Text {
		t.Errorf("rule-condensed follow-up scored against %q, want the user's words", got)
	}
	if got := extractiveQuery(q, "What batch size did Sentence-BERT use?"); got != "What batch size did Sentence-BERT use?" {
		t.Errorf("model-condensed follow-up scored against %q, want the condensed question", got)
	}
	if got := extractiveQuery(Question{Text: "What batch size?"}, "What batch size?"); got != "What batch size?" {
		t.Errorf("standalone question scored against %q", got)
	}
}

// TestSteeredEvidenceOwnWords checks that a rule-condensed follow-up is answered from the
// thread's paper's passages that pass the threshold, ordered by the user's own words (the
// batch-size passage first, though the carried terms rank the objective passage higher),
// and that a model-condensed one keeps the kept hits.
func TestSteeredEvidenceOwnWords(t *testing.T) {
	p := testPipeline(t, Config{Reranker: fnReranker(func(q string, ps []string) []float64 { return overlapScores(q, ps) }), MinScore: 0.2, TopK: 5})
	cand := func(id, doc, text string, score float64) Scored {
		return Scored{Hit: Hit{Chunk: Chunk{ID: id, DocID: doc, Text: text}}, Rerank: score}
	}
	r := Retrieval{
		Query: "And what batch size did they use? objective Sentence-BERT NLI",
		Candidates: []Scored{
			cand("roberta-batch", "roberta", "We pretrain with a batch size of 8K sequences.", 0.95),
			cand("sbert-objective", "sbert", "SBERT optimizes a classification objective on NLI pairs.", 0.9),
			cand("sbert-batch", "sbert", "We use a batch size of 16 and train for one epoch.", 0.5),
			cand("sbert-weak", "sbert", "We used a batch size that fits the GPU.", 0.1),
		},
		Reranked: true,
	}
	r.Hits = r.Candidates[:2]
	ids := func(hs []Scored) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Chunk.ID)
		}
		return out
	}
	got := p.steeredEvidence(t.Context(), r, []string{"sbert"}, "And what batch size did they use?")
	if !slices.Equal(ids(got), []string{"sbert-batch", "sbert-objective"}) {
		t.Errorf("evidence %v, want sbert-batch, sbert-objective", ids(got))
	}
	if got[0].Rerank != 0.5 {
		t.Errorf("score %v, want the query's 0.5 kept", got[0].Rerank)
	}
	r.Query = "What batch size did Sentence-BERT use?"
	if got := p.steeredEvidence(t.Context(), r, []string{"sbert"}, "And what batch size did they use?"); !slices.Equal(ids(got), []string{"roberta-batch", "sbert-objective"}) {
		t.Errorf("model-condensed follow-up: evidence %v, want the kept hits", ids(got))
	}
}

// TestMovesOn: a follow-up naming a model the thread's paper evaluates stays in the
// thread, though the answer so far never named it; one naming what the paper never uses
// moves on, as does any new name when the paper cannot be searched.
func TestMovesOn(t *testing.T) {
	lora := func(id, text string) Chunk {
		return Chunk{ID: id, DocID: "lora", Title: "LoRA: Low-Rank Adaptation of Large Language Models", Text: text}
	}
	cited := lora("l1", "On GPT-3 175B, LoRA matches or exceeds fine-tuning with far fewer trainable parameters.")
	corpus := []Chunk{cited,
		lora("l2", "We evaluate LoRA on RoBERTa base and large on the GLUE benchmark."),
		lora("l3", "For RoBERTa, LoRA is applied to the query and value projections."),
		lora("l4", "Table 2 lists RoBERTa large with LoRA against adapters."),
		{ID: "e1", DocID: "electra", Title: "ELECTRA: Pre-training Text Encoders as Discriminators", Text: "ELECTRA trains a discriminator."},
	}
	h := []Turn{{Question: "How does LoRA do on GPT-3?", Answer: "It matches fine-tuning [1].", Sources: []Source{{N: 1, Chunk: cited, Cited: true}}}}
	p := gatePipeline(t, corpus)
	for q, want := range map[string]bool{"and for the RoBERTa runs?": false, "and what about ELECTRA?": true, "and the learning rate?": false} {
		if got := p.movesOn(t.Context(), Question{Text: q, History: h}); got != want {
			t.Errorf("movesOn(%q) = %v, want %v", q, got, want)
		}
		if got := steerDocs(Question{Text: q, History: h}, want); (got == nil) != want {
			t.Errorf("steerDocs(%q) = %v", q, got)
		}
	}
	// The thread's paper answers, and the RoBERTa paper's own passage on its runs is not
	// added beside it.
	roberta := Chunk{ID: "r1", DocID: "roberta", Title: "RoBERTa: A Robustly Optimized BERT Pretraining Approach", Text: "RoBERTa runs use batches of 8K sequences."}
	ans, err := gatePipeline(t, append(corpus, roberta)).Ask(t.Context(), Question{Text: "and for the RoBERTa runs?", History: h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Refused || firstCited(ans) != "lora" || slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Chunk.DocID == "roberta" }) {
		t.Errorf("answer %q cites %q first, want only the thread's paper", ans.Text, firstCited(ans))
	}
	noBM25, err := New(Config{Searcher: gateSearcher{corpus}})
	if err != nil {
		t.Fatal(err)
	}
	if !noBM25.movesOn(t.Context(), Question{Text: "and for the RoBERTa runs?", History: h}) {
		t.Error("without BM25 a new name moves on")
	}
}

// TestFollowUpAsksQuantity: "and MNLI?" after a question asking for a score asks for one
// too, so its answer points at the table holding it, as the first answer would; after a
// question asking for no number it does not.
func TestFollowUpAsksQuantity(t *testing.T) {
	prose := "RoBERTa is fine-tuned on MNLI and QNLI with the same recipe as BERT. Each run uses its own random seed."
	rows := "MNLI 90.2 QNLI 94.7 QQP 92.2"
	caption := "Table 9: Development set results of RoBERTa on MNLI, QNLI and QQP."
	text := prose + "\n\n" + rows + "\n\n" + caption
	glue := Chunk{ID: "glue", DocID: "roberta", Title: "RoBERTa: A Robustly Optimized BERT Pretraining Approach",
		PageStart: 5, PageEnd: 6, PageBreaks: []int{strings.Index(text, rows)}, Text: text}
	corpus := map[string]Chunk{"glue": glue}
	p, err := New(Config{
		Searcher: &trSearcher{corpus: corpus, global: []string{"glue"}},
		Sparse: func(context.Context) (SparseEncoder, error) {
			return newIDFEncoder(slices.Collect(mapsValues(corpus))), nil
		},
		// Passages score by their best phrase; the caption is a strong sentence.
		Reranker: fnReranker(func(_ string, ps []string) []float64 {
			out := make([]float64, len(ps))
			for i, s := range ps {
				for phrase, v := range map[string]float64{"fine-tuned on MNLI": 0.9, "Table 9": 0.7} {
					if strings.Contains(s, phrase) {
						out[i] = max(out[i], v)
					}
				}
			}
			return out
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		first string
		want  bool
	}{
		{"What accuracy does RoBERTa reach on QNLI?", true},
		{"Which recipe is RoBERTa fine-tuned with on QNLI?", false},
	} {
		h := []Turn{{Question: c.first, Answer: prose + " [1]",
			Sources: []Source{{N: 1, Chunk: glue, Score: 0.9, Cited: true}}}}
		ans, err := p.Ask(t.Context(), Question{Text: "and MNLI?", History: h}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Refused {
			t.Fatalf("after %q: refused: %q", c.first, ans.Text)
		}
		if got := strings.Contains(ans.Text, "Table 9"); got != c.want {
			t.Errorf("after %q: answer %q points at the table: %v, want %v", c.first, ans.Text, got, c.want)
		}
	}
}

// TestFollowUpEarlierTable: "and BM25?" after an answer quoting BEIR's Recall@100 table
// asks for another row of it. The table the thread's last answer cited names BM25, so it
// comes first, before retrieval's passage on how BM25 is run, and is not kept twice. A
// follow-up naming what the table lacks ("and DPR?"), or nothing hard at all, keeps
// retrieval's hits.
func TestFollowUpEarlierTable(t *testing.T) {
	table := Chunk{ID: "beirTable", DocID: "beir", PageStart: 24, Text: "Table 9: Recall@100 on Natural Questions. ColBERT 0.912, TAS-B 0.903, BM25 0.783."}
	lexical := Chunk{ID: "beirBM25", DocID: "beir", PageStart: 6, Text: "BM25 is the lexical retriever, run with Elasticsearch and its default parameters."}
	history := []Turn{{Question: "In BEIR's Recall@100 table, what score does ColBERT get on Natural Questions?",
		Answer: "ColBERT 0.912 [1].", Sources: []Source{{N: 1, Chunk: lexical}, {N: 2, Chunk: table, Cited: true}}}}
	ids := func(hits []Scored) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.Chunk.ID)
		}
		return out
	}
	for _, c := range []struct {
		q    string
		hits []Scored
		want []string
	}{
		{"and BM25?", []Scored{{Hit: Hit{Chunk: lexical}, Rerank: 0.9}}, []string{"beirTable", "beirBM25"}},
		{"and BM25?", []Scored{{Hit: Hit{Chunk: lexical}, Rerank: 0.9}, {Hit: Hit{Chunk: table}, Rerank: 0.3}}, []string{"beirTable", "beirBM25"}},
		{"and DPR?", []Scored{{Hit: Hit{Chunk: lexical}, Rerank: 0.9}}, []string{"beirBM25"}},
		{"and the other one?", []Scored{{Hit: Hit{Chunk: lexical}, Rerank: 0.9}}, []string{"beirBM25"}},
	} {
		got := withEarlierHolder(Question{Text: c.q, History: history}, c.hits)
		if !slices.Equal(ids(got), c.want) {
			t.Errorf("%q: hits %v, want %v", c.q, ids(got), c.want)
		}
		if got[0].Rerank != 0.9 {
			t.Errorf("%q: the first hit scores %v, want the best hit's 0.9", c.q, got[0].Rerank)
		}
	}
}
