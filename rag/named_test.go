package rag

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestTitleNames(t *testing.T) {
	cases := []struct {
		title, item string
		want        bool
	}{
		{"Dense Passage Retrieval for Open-Domain Question Answering", "DPR", true},
		{"Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks", "RAG", true},
		{"BERT: Pre-training of Deep Bidirectional Transformers", "BERT", true},
		{"DistilBERT, a distilled version of BERT: smaller, faster", "DistilBERT", true},
		// A title that merely uses the name does not name the paper.
		{"RoBERTa: A Robustly Optimized BERT Pretraining Approach", "BERT", false},
		{"DistilBERT, a distilled version of BERT: smaller, faster", "BERT", false},
		{"Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer", "T5", false},
		// A first version goes by the name it had before its successor.
		{"Improving Language Understanding by Generative Pre-Training", "GPT", true},
		{"Improving Language Understanding by Generative Pre-Training", "GPT-1", true},
		{"Improving Language Understanding by Generative Pre-Training", "GPT-2", false},
		{"Language Models are Unsupervised Multitask Learners", "GPT-1", false},
	}
	for _, c := range cases {
		it := keyItem{text: c.item, key: squeeze(c.item), hard: true, acro: isAcronym(c.item)}
		if got := titleNames(c.title, it); got != c.want {
			t.Errorf("titleNames(%q, %q) = %v, want %v", c.title, c.item, got, c.want)
		}
	}
}

// TestTitleHolds: a name of several words names the paper whose title holds it whole,
// wherever it stands; a single word or a name split across the title does not.
func TestTitleHolds(t *testing.T) {
	const dsi = "Transformer Memory as a Differentiable Search Index"
	cases := []struct {
		title, item string
		want        bool
	}{
		{dsi, "Differentiable Search Index", true},
		{dsi, "differentiable search index", true},
		{dsi, "Search Index", true},
		{dsi, "Transformer", false},
		{dsi, "Transformer Index", false},
		{"Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks", "Siamese BERT-Networks", true},
		{"Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks", "Siamese BERT", true},
		{"LLaMA: Open and Efficient Foundation Language Models", "Large Language Models", false},
	}
	for _, c := range cases {
		if got := titleHolds(c.title, keyItem{text: c.item, key: squeeze(c.item), hard: true}); got != c.want {
			t.Errorf("titleHolds(%q, %q) = %v, want %v", c.title, c.item, got, c.want)
		}
	}
}

// completionPipeline extends trCorpus with papers an unfiltered search never returns.
func completionPipeline(t *testing.T, extra map[string]Chunk, global []string, scores trReranker) *Pipeline {
	t.Helper()
	corpus := maps.Clone(trCorpus)
	maps.Copy(corpus, extra)
	enc := newIDFEncoder(slices.Collect(mapsValues(corpus)))
	s := &trSearcher{corpus: corpus, global: global, enc: enc}
	p, err := New(Config{
		Searcher: s,
		// A dense model makes the question's own search a hybrid one, which returns the
		// global list: only the searches for a name find the papers retrieval missed.
		Embedders: []Embedder{bowEmbedder{}},
		Sparse:    func(context.Context) (SparseEncoder, error) { return enc, nil },
		Reranker:  scores,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAskNamedPaperJoins: a question comparing two papers, one of which retrieval missed,
// is answered with both among its sources instead of refused with "The papers do not
// mention DistilBERT."
func TestAskNamedPaperJoins(t *testing.T) {
	distil := Chunk{ID: "distil", DocID: "distilbert", Title: "DistilBERT, a distilled version of BERT: smaller, faster, cheaper and lighter", PageStart: 3,
		Text: "DistilBERT is distilled on very large batches of 4K examples per batch using dynamic masking."}
	p := completionPipeline(t, map[string]Chunk{"distil": distil}, []string{"electra", "robBatch", "bertMLM"},
		trReranker{"2048": 0.6, "8K sequences": 0.55, "masked language model": 0.5, "4K examples": 0.3})
	ans, err := p.Ask(t.Context(), Question{Text: "What batch size do ELECTRA and DistilBERT train with?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Refused {
		t.Fatalf("refused: %q", ans.Text)
	}
	if !slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Chunk.DocID == "distilbert" }) {
		t.Errorf("answer %q: sources lack the DistilBERT passage", ans.Text)
	}
}

// TestAskComparisonLooksDeeper: a question comparing two papers shares its words between
// them, and the passage one paper gives its part in ranks under the score cut; it is
// found deeper in that paper before the gate refuses. A question about one paper is not
// looked into as deeply, and is refused naming what is missing.
func TestAskComparisonLooksDeeper(t *testing.T) {
	sts := map[string]Chunk{
		"robSTS": {ID: "robSTS", DocID: "roberta", Title: "RoBERTa: A Robustly Optimized BERT Pretraining Approach", PageStart: 8,
			Text: "Table 5: on the GLUE dev sets RoBERTa reaches 92.4 on STS-B."},
	}
	p := completionPipeline(t, sts, []string{"robBatch", "electra", "bertMLM"},
		trReranker{"8K sequences": 0.6, "2048": 0.5, "masked language model": 0.3})
	ans, err := p.Ask(t.Context(), Question{Text: "What STS-B score does RoBERTa report, and which tokens does ELECTRA train a discriminator to detect?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Refused || !slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Chunk.ID == "robSTS" }) {
		t.Fatalf("answer %q (sources %v), want the STS-B passage among its sources", ans.Text, sourceIDs(ans.Sources))
	}

	ans, err = p.Ask(t.Context(), Question{Text: "What STS-B score does RoBERTa report on GLUE dev?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ans.Refused || !slices.Contains(ans.Missing, "STS-B") {
		t.Errorf("answer %q (missing %q), want a refusal naming STS-B", ans.Text, ans.Missing)
	}
}

func sourceIDs(sources []Source) []string {
	var out []string
	for _, s := range sources {
		out = append(out, s.Chunk.ID)
	}
	return out
}

// TestAskMissingNameFoundInKeptPaper: the kept paper's passage on the benchmark asked about
// ranked below its general passages; it is found before the gate refuses. A benchmark no
// kept paper reports is still refused, naming it.
func TestAskMissingNameFoundInKeptPaper(t *testing.T) {
	gpt2 := map[string]Chunk{
		"gpt2lm": {ID: "gpt2lm", DocID: "gpt2", Title: "Language Models are Unsupervised Multitask Learners", PageStart: 1,
			Text: "GPT-2 is a large language model that reaches strong perplexity on language modeling benchmarks zero-shot."},
		"gpt2lambada": {ID: "gpt2lambada", DocID: "gpt2", Title: "Language Models are Unsupervised Multitask Learners", PageStart: 6,
			Text: "On LAMBADA, GPT-2 improves the state of the art perplexity from 99.8 to 8.6."},
	}
	p := completionPipeline(t, gpt2, []string{"gpt2lm", "bertMLM"},
		trReranker{"strong perplexity": 0.6, "masked language model": 0.3, "99.8 to 8.6": 0.7})
	ans, err := p.Ask(t.Context(), Question{Text: "What perplexity does GPT-2 reach on LAMBADA?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Refused || !strings.Contains(ans.Text, "8.6") {
		t.Fatalf("answer %q, want the LAMBADA passage quoted", ans.Text)
	}
	if !slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Cited && s.Chunk.ID == "gpt2lambada" }) {
		t.Errorf("answer %q does not cite the LAMBADA passage", ans.Text)
	}

	ans, err = p.Ask(t.Context(), Question{Text: "What accuracy does GPT-2 reach on HellaSwag?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ans.Refused || !slices.Contains(ans.Missing, "HellaSwag") {
		t.Errorf("answer %q (missing %q), want a refusal naming HellaSwag", ans.Text, ans.Missing)
	}
}

func TestIntroduced(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"We call the resulting models InstructGPT.", []string{"instructgpt"}},
		{"The model performs evidence fusion in the decoder only, and we refer to it as Fusion-in-Decoder.", []string{"fusionindecoder", "fid"}},
		{"We develop DrQA, a strong system for question answering from Wikipedia.", []string{"drqa"}},
		{"We refer to our model and framework as the “Text-to-Text Transfer Transformer” (T5).", []string{"texttotexttransfertransformer", "t5"}},
		{"“T5” refers to our model, which we dub the “Text-to-Text Transfer Transformer”.", []string{"texttotexttransfertransformer", "t5"}},
		{"Our largest model, GPT-2, is a 1.5B parameter Transformer.", []string{"gpt2"}},
		// A quoted model and its setting introduce the model, with and without its size.
		{"In Table 1, our model “E5mistral-7b + full data” attains the highest average score.", []string{"e5mistral7b+fulldata", "e5mistral7b", "e5mistral"}},
		// A run of a model is not the model's name stripped of its size.
		{"We train a model for 400k steps (ELECTRA-400K) and introduce ELECTRA-Small.", []string{"electrasmall"}},
		// Using or evaluating on a name does not introduce it.
		{"We present results on GSM8K and use GPT-4 to rate the outputs.", nil},
		{"Chain-of-thought prompting reaches state of the art accuracy on GSM8K.", nil},
	}
	for _, c := range cases {
		if got := introduced(c.text); !slices.Equal(got, c.want) {
			t.Errorf("introduced(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

// ownedCorpus holds a paper that introduces InstructGPT on one page and reports, on
// another, a result without naming it; and another paper's passage on GSM8K.
var ownedCorpus = map[string]Chunk{
	"instructIntro": {ID: "instructIntro", DocID: "instructgpt", Title: "Training language models to follow instructions with human feedback", PageStart: 1,
		Text: "We call the resulting models InstructGPT. Labelers prefer their outputs to those of the original model."},
	"instructPPO": {ID: "instructPPO", DocID: "instructgpt", Title: "Training language models to follow instructions with human feedback", PageStart: 14,
		Text: "Mixing pretraining gradients into the PPO updates reduces the performance regressions on SQuAD and DROP that RLHF causes."},
	"cotGSM": {ID: "cotGSM", DocID: "cot", Title: "Chain-of-Thought Prompting Elicits Reasoning in Large Language Models", PageStart: 6,
		Text: "Chain-of-thought prompting reaches state of the art accuracy on GSM8K math word problems."},
}

// TestAskOwnedName: a paper's own name, which its title lacks, is spoken of in all its
// passages, so a passage reporting its result without naming it answers; it does not make
// another paper's passage on a benchmark the paper never reports an answer about it.
func TestAskOwnedName(t *testing.T) {
	p := completionPipeline(t, ownedCorpus, []string{"instructPPO", "cotGSM"},
		trReranker{"regressions on SQuAD": 0.7, "GSM8K math": 0.8, "We call": 0.1})
	ans, err := p.Ask(t.Context(), Question{Text: "How did InstructGPT reduce the regressions on SQuAD and DROP that RLHF caused?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Refused || !slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Cited && s.Chunk.ID == "instructPPO" }) {
		t.Fatalf("answer %q (missing %q), want the PPO passage cited", ans.Text, ans.Missing)
	}

	ans, err = p.Ask(t.Context(), Question{Text: "What accuracy does InstructGPT reach on GSM8K?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ans.Refused {
		t.Errorf("answer %q, want a refusal: the InstructGPT paper never reports GSM8K", ans.Text)
	}
}

// TestAskOwnedJoinedName: a paper that writes its model's name joined and sized
// ("E5mistral-7b") in a quoted setting ("our model “E5mistral-7b + full data”") owns the
// user's "E5-mistral", so its passage on the synthetic data, which never names the model,
// answers a question about E5-mistral and GPT-4.
func TestAskOwnedJoinedName(t *testing.T) {
	const title = "Improving Text Embeddings with Large Language Models"
	e5 := map[string]Chunk{
		"e5Intro": {ID: "e5Intro", DocID: "e5", Title: title, PageStart: 5,
			Text: "In Table 1, our model “E5mistral-7b + full data” attains the highest average score on the MTEB benchmark."},
		"e5Data": {ID: "e5Data", DocID: "e5", Title: title, PageStart: 3,
			Text: "We prompt GPT-4 to brainstorm candidate retrieval tasks and then to generate 500k synthetic examples for them."},
	}
	p := completionPipeline(t, e5, []string{"e5Data", "cotGSM"},
		trReranker{"brainstorm": 0.7, "GSM8K math": 0.3, "Table 1": 0.2})
	ans, err := p.Ask(t.Context(), Question{Text: "How many synthetic examples did the E5-mistral authors generate with GPT-4?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Refused || !slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Cited && s.Chunk.ID == "e5Data" }) {
		t.Errorf("answer %q (missing %q), want the passage on synthetic data cited", ans.Text, ans.Missing)
	}
}

// TestAskLiftsNamedPaper: the passage stating the fact of a paper the question names is
// searched for within that paper, where the global search did not reach it.
func TestAskLiftsNamedPaper(t *testing.T) {
	const title = "LLaMA: Open and Efficient Foundation Language Models"
	llama := map[string]Chunk{
		"llamaIntro": {ID: "llamaIntro", DocID: "llama", Title: title, PageStart: 1,
			Text: "We introduce LLaMA, a collection of foundation language models ranging from 7B to 65B parameters."},
		"llamaData": {ID: "llamaData", DocID: "llama", Title: title, PageStart: 2,
			Text: "We only use publicly available data, which makes our work compatible with open-sourcing."},
	}
	p := completionPipeline(t, llama, []string{"llamaIntro", "bertMLM", "robBatch"},
		trReranker{"We introduce LLaMA": 0.5, "masked language model": 0.45, "8K sequences": 0.4, "publicly available data": 0.6})
	ans, err := p.Ask(t.Context(), Question{Text: "Why did the LLaMA authors train on publicly available data only?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Refused || !slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Cited && s.Chunk.ID == "llamaData" }) {
		t.Errorf("answer %q does not cite the passage on public data", ans.Text)
	}
}

func TestWithoutPaperNames(t *testing.T) {
	p := completionPipeline(t, ownedCorpus, nil, trReranker{})
	roberta := Source{Chunk: trCorpus["robBatch"]}
	instruct := Source{Chunk: ownedCorpus["instructPPO"]}
	cases := []struct {
		query   string
		sources []Source
		want    string
	}{
		// Named by the title, or introduced by the paper: not what tells its sentences apart.
		{"Did RoBERTa's results get worse without NSP?", []Source{roberta}, "did s results get worse without nsp"},
		{"How did InstructGPT reduce regressions on SQuAD?", []Source{instruct}, "how did reduce regressions on squad"},
		// Another paper's name, a benchmark, and a size stay.
		{"Did RoBERTa beat InstructGPT on SQuAD?", []Source{instruct}, "did roberta beat on squad"},
		{"What does RoBERTa-large get on SQuAD?", []Source{roberta}, "What does RoBERTa-large get on SQuAD?"},
	}
	for _, c := range cases {
		if got := p.withoutPaperNames(withSparse(t.Context()), c.query, c.sources); got != c.want {
			t.Errorf("withoutPaperNames(%q) = %q, want %q", c.query, got, c.want)
		}
	}
}

// TestChunkIntrosReindexed: the cache of introduced names notices a passage re-indexed
// under the same ID with other text.
func TestChunkIntrosReindexed(t *testing.T) {
	p := completionPipeline(t, nil, nil, trReranker{})
	c := Chunk{ID: "c1", Text: "We call the resulting models InstructGPT."}
	if got := p.chunkIntros(c); !slices.Equal(got, []string{"instructgpt"}) {
		t.Fatalf("chunkIntros = %q", got)
	}
	c.Text = "We develop DrQA, a reader over Wikipedia." // as long as the first
	if got := p.chunkIntros(c); !slices.Equal(got, []string{"drqa"}) {
		t.Errorf("after re-indexing, chunkIntros = %q, want drqa", got)
	}
}

func TestFirstVersion(t *testing.T) {
	for _, c := range []struct{ item, want string }{
		{"GPT-1", "GPT"}, {"LLaMA 1", "LLaMA"}, {"gpt1", "gpt"},
		{"GPT-2", ""}, {"L1", ""}, {"11", ""}, {"T5", ""},
	} {
		base, ok := firstVersion(keyItem{text: c.item, key: squeeze(c.item), hard: true})
		if got := base.text; got != c.want || ok != (c.want != "") {
			t.Errorf("firstVersion(%q) = %q, %v; want %q", c.item, got, ok, c.want)
		}
	}
	// "gpt-1" in lower case is the initials of the GPT-1 paper's title all the same.
	title := "Improving Language Understanding by Generative Pre-Training"
	for _, c := range []struct {
		item string
		want bool
	}{{"GPT-1", true}, {"gpt-1", true}, {"gpt1", true}, {"llama-1", false}} {
		if got := titleNames(title, keyItem{text: c.item, key: squeeze(c.item), hard: true}); got != c.want {
			t.Errorf("titleNames(%q, %q) = %v, want %v", title, c.item, got, c.want)
		}
	}
}

// TestAskFirstVersionPaper: the GPT-1 paper never spells "GPT-1" or "GPT", which are the
// initials of its title; a question asking by either name is answered from it.
func TestAskFirstVersionPaper(t *testing.T) {
	gpt1 := map[string]Chunk{"gpt1books": {ID: "gpt1books", DocID: "gpt1", Title: "Improving Language Understanding by Generative Pre-Training", PageStart: 4,
		Text: "We use the BooksCorpus dataset for pre-training the language model, which contains over 7,000 unique unpublished books."}}
	for _, q := range []string{"How many books are in the corpus GPT-1 was pre-trained on?", "How many unpublished books did the original GPT pre-train on?"} {
		p := completionPipeline(t, gpt1, []string{"robBatch", "bertMLM"},
			trReranker{"7,000 unique": 0.7, "8K sequences": 0.4, "masked language model": 0.35})
		ans, err := p.Ask(t.Context(), Question{Text: q}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Refused || !slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Cited && s.Chunk.ID == "gpt1books" }) {
			t.Errorf("%q: answer %q (missing %q) does not cite the GPT-1 paper", q, ans.Text, ans.Missing)
		}
	}
}

// hidingSearcher is gateSearcher whose unfiltered searches never reach the hidden papers,
// as a BM25 search for "GPT-1" never reaches the paper that does not spell it.
type hidingSearcher struct {
	gateSearcher
	hidden map[string]bool
}

func (s hidingSearcher) Search(ctx context.Context, req SearchRequest) ([]Hit, error) {
	hits, err := s.gateSearcher.Search(ctx, req)
	if len(req.Filter.DocIDs) > 0 {
		return hits, err
	}
	return slices.DeleteFunc(hits, func(h Hit) bool { return s.hidden[h.Chunk.DocID] }), err
}

// TestNamedFirstVersionUnreached: a first version's paper that no search reaches is found
// by its title's initials in the document list, and the question is answered from it;
// without the list the question is refused as before.
func TestNamedFirstVersionUnreached(t *testing.T) {
	gpt1 := Chunk{ID: "gpt1bpe", DocID: "gpt1", Title: "Improving Language Understanding by Generative Pre-Training", PageStart: 5,
		Text: "We used a bytepair encoding vocabulary with 40,000 merges for the tokenizer."}
	gpt2 := Chunk{ID: "gpt2bpe", DocID: "gpt2", Title: "Language Models are Unsupervised Multitask Learners", PageStart: 3,
		Text: "GPT-2 uses a byte-level version of the tokenizer's BPE with a base vocabulary of 256."}
	docs := []Document{{ID: "gpt1", Title: gpt1.Title}, {ID: "gpt2", Title: gpt2.Title}}
	corpus := []Chunk{gpt1, gpt2}
	for _, listed := range []bool{true, false} {
		enc := newIDFEncoder(corpus)
		cfg := Config{
			Searcher: hidingSearcher{gateSearcher{corpus}, map[string]bool{"gpt1": true}},
			Sparse:   func(context.Context) (SparseEncoder, error) { return enc, nil },
		}
		if listed {
			cfg.Documents = func(context.Context) ([]Document, error) { return docs, nil }
		}
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ans, err := p.Ask(t.Context(), Question{Text: "What tokenizer did GPT-1 use?"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cited := !ans.Refused && slices.ContainsFunc(ans.Sources, func(s Source) bool { return s.Cited && s.Chunk.DocID == "gpt1" })
		if cited != listed {
			t.Errorf("documents listed %v: answer %q (missing %q) cites the GPT-1 paper: %v", listed, ans.Text, ans.Missing, cited)
		}
	}
}

func TestCompoundInitials(t *testing.T) {
	for name, want := range map[string]string{
		"Fusion-in-Decoder": "FiD",
		"English-to-German": "EtG",
		"state-of-the-art":  "",
		"State-of-the-art":  "",
		"GPT-3-175B":        "",
		"Text-to-Text":      "TtT",
		"Sequence-Level-KD": "",
		"Second-order-Net":  "",
		"Fusion-Decoder":    "",
	} {
		if got := CompoundInitials(name); got != want {
			t.Errorf("CompoundInitials(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestNamedByTitlePhrase: a question naming a paper by a phrase of its title ("the
// Differentiable Search Index") beside another paper's model ("T5") names both; before,
// only T5's paper was searched and the question was refused for lacking the phrase.
func TestNamedByTitlePhrase(t *testing.T) {
	dsi := Chunk{ID: "dsi", DocID: "dsi", Title: "Transformer Memory as a Differentiable Search Index",
		Text: "We introduce the Differentiable Search Index (DSI), a paradigm that encodes a corpus in the parameters of a T5 model and decodes docids."}
	t5 := Chunk{ID: "t5", DocID: "t5", Title: "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer",
		Text: "We refer to our model as the Text-to-Text Transfer Transformer (T5). Closed-book question answering asks T5 to answer from its parameters."}
	corpus := []Chunk{dsi, t5}
	p := gateDocsPipeline(t, corpus, func(context.Context) ([]Document, error) { return nil, nil })
	enc, err := p.sparse(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	q := "How is the Differentiable Search Index different from closed-book QA, where a T5 model answers questions from its parameters?"
	got := p.namedPapers(withSparse(t.Context()), q, enc)
	if !slices.Contains(got, "dsi") || !slices.Contains(got, "t5") {
		t.Errorf("namedPapers(%q) = %q, want dsi and t5", q, got)
	}
}
