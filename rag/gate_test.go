package rag

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
)

// hardItems returns the texts of a question's hard items.
func hardItems(q string) []string {
	var out []string
	for _, it := range questionItems(q) {
		if it.hard {
			out = append(out, it.text)
		}
	}
	return out
}

// coverCase is an item looked up in an evidence index, and whether it should be found.
type coverCase struct {
	item string
	want bool
}

// checkCovers looks each hard item up in ix.
func checkCovers(t *testing.T, ix *evidenceIndex, cases []coverCase) {
	t.Helper()
	for _, c := range cases {
		it := keyItem{text: c.item, key: squeeze(c.item), hard: true, acro: isAcronym(c.item)}
		if got := ix.covers(it); got != c.want {
			t.Errorf("covers(%q) = %v, want %v", c.item, got, c.want)
		}
	}
}

func TestQuestionItems(t *testing.T) {
	hard := hardItems
	cases := []struct {
		q    string
		want []string
	}{
		{"What accuracy does GPT-4 reach on MMLU?", []string{"GPT-4", "MMLU"}},
		{"How does Sentence-T5 pool its encoder outputs?", []string{"Sentence-T5"}},
		{"What context length does LLaMA 2 support?", []string{"LLaMA 2"}},
		{"How many parameters does Llama 2 have?", []string{"Llama 2"}},
		{"Does BERT's base model use 512 tokens and 12 layers?", []string{"BERT", "512", "12"}},
		{"How does RAPTOR perform on the Natural Questions dataset?", []string{"RAPTOR", "Natural Questions"}},
		{"How many documents did DSI index from MS MARCO?", []string{"DSI", "MS MARCO"}},
		// Capitals that are grammar or shouting are not names; hyphenated words are not.
		{"What is self-attention?", nil},
		{"WHAT IS SELF-ATTENTION USED FOR?", nil},
		{"Transformers use multi-head attention, why?", nil},
		// "-style" makes a name an adjective; an author is not what is asked about; two
		// capitalised words joined by "of" are one name.
		{"When SBERT is trained on STS-style data, what loss is used?", []string{"SBERT", "STS"}},
		{"Which rank did Dettmers et al. use for QLoRA?", []string{"QLoRA"}},
		// A round figure is no name.
		{"With ~1000-dim random vectors, does HNSW's hierarchy still help?", []string{"HNSW"}},
		{"Why does DrQA fall from about 70 EM on SQuAD?", []string{"DrQA", "EM", "SQuAD"}},
		{"Why does DrQA fall from 70 EM on SQuAD?", []string{"DrQA", "70", "EM", "SQuAD"}},
		{"How does Tree of Thoughts improve on chain-of-thought prompting?", []string{"Tree of Thoughts"}},
		// A comma or a coined name's possessive ends a name; a plain word's does not.
		{"Were the adapters for MRPC, RTE and STS-B trained from scratch?", []string{"MRPC", "RTE", "STS-B"}},
		{"WNLI's NLI format is awkward; what did they do?", []string{"WNLI", "NLI"}},
		{"How big is DPR's FAISS index?", []string{"DPR", "FAISS"}},
		{"What does GPT-2 get on the Children's Book Test?", []string{"GPT-2", "Children Book Test"}},
	}
	for _, c := range cases {
		if got := hard(c.q); !slices.Equal(got, c.want) {
			t.Errorf("hard items of %q = %q, want %q", c.q, got, c.want)
		}
	}
}

func TestEvidenceIndexMatching(t *testing.T) {
	ix := newEvidenceIndex(`We compare with GPT-3 (175B) and GPT 2. BERTBASE (L=12) uses large language models. ` +
		`Each layer has two sub-layers. The learning rate was 0.1. Next sentence. BERT is bidirectional. ` +
		`We use AdamW with β1 = 0.9, β2 = 0.95.`)
	cases := []struct {
		item string
		want bool
	}{
		{"GPT-3", true}, {"GPT3", true}, {"gpt 3", true}, {"GPT-2", true},
		{"GPT-4", false}, {"GPT-3.5", false},
		{"BERT-base", true}, {"BERT base", true}, {"BERT-large", false},
		{"LLMs", true}, {"LLM", true}, {"NLI", false},
		{"2", true},              // "two" is spelled out
		{"0.1", true},            // a decimal stays one number
		{"12", true},             // "L=12"
		{"175B", true},           // "(175B)"
		{"Sentence-BERT", false}, // "Next sentence. BERT …" crosses a full stop
		{"beta1", true},          // "β1 = 0.9": Greek letters are spelled out
		{"beta2", true},
		{"beta3", false},
		{"WMT14", false}, // the index names no workshop at all
	}
	for _, c := range cases {
		it := keyItem{text: c.item, key: squeeze(c.item), hard: true, acro: isAcronym(c.item)}
		if got := ix.covers(it); got != c.want {
			t.Errorf("covers(%q) = %v, want %v", c.item, got, c.want)
		}
	}
}

// gateSearcher is a store for the gate's document-level search: it returns the chunks of
// the filtered documents.
type gateSearcher struct{ chunks []Chunk }

func (s gateSearcher) Search(_ context.Context, req SearchRequest) ([]Hit, error) {
	var out []Hit
	for _, c := range s.chunks {
		if len(req.Filter.DocIDs) == 0 || slices.Contains(req.Filter.DocIDs, c.DocID) {
			out = append(out, Hit{Chunk: c, Score: 1})
		}
	}
	return out, nil
}

func (gateSearcher) Chunks(context.Context, []string) ([]Chunk, error) { return nil, ErrNotFound }

// idfEncoder is a BM25 query encoder over a corpus, as rag/bm25 builds one (which this
// package's tests cannot import): a term's weight is its IDF.
type idfEncoder struct {
	n  int
	df map[string]int
	id map[string]uint32
}

func newIDFEncoder(corpus []Chunk) *idfEncoder {
	e := &idfEncoder{n: len(corpus), df: map[string]int{}, id: map[string]uint32{}}
	for _, c := range corpus {
		for t := range termSet(c.Text) {
			e.df[t]++
		}
	}
	return e
}

func (e *idfEncoder) EncodeQuery(text string) SparseVector {
	var v SparseVector
	for t := range termSet(text) {
		id, ok := e.id[t]
		if !ok {
			id = uint32(len(e.id))
			e.id[t] = id
		}
		df := float64(e.df[t])
		v.Indices = append(v.Indices, id)
		v.Values = append(v.Values, float32(math.Log(1+(float64(e.n)-df+0.5)/(df+0.5))))
	}
	return v
}

// gatePipeline is a pipeline whose BM25 statistics come from the given corpus.
func gatePipeline(t *testing.T, corpus []Chunk) *Pipeline {
	t.Helper()
	return gateDocsPipeline(t, corpus, nil)
}

// gateDocsPipeline is gatePipeline listing the documents with docs (nil: none).
func gateDocsPipeline(t *testing.T, corpus []Chunk, docs func(context.Context) ([]Document, error)) *Pipeline {
	t.Helper()
	return gateSearchPipeline(t, corpus, func(*idfEncoder) Searcher { return gateSearcher{corpus} }, docs)
}

// gateSearchPipeline is gateDocsPipeline searching with the searcher made from the
// corpus' BM25 encoder.
func gateSearchPipeline(t *testing.T, corpus []Chunk, searcher func(*idfEncoder) Searcher, docs func(context.Context) ([]Document, error)) *Pipeline {
	t.Helper()
	enc := newIDFEncoder(corpus)
	p, err := New(Config{
		Searcher:  searcher(enc),
		Sparse:    func(context.Context) (SparseEncoder, error) { return enc, nil },
		Documents: docs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	gateGPT3 = Chunk{ID: "g3", DocID: "instruct", Title: "Training language models to follow instructions",
		Text: "We compare InstructGPT with GPT-3 on MMLU-style benchmarks. GPT-3 reaches 43.9% accuracy on MMLU in the 5-shot setting, and our 175B model is preferred by labelers."}
	gateSBERT = Chunk{ID: "sb", DocID: "sbert", Title: "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks",
		Text: "SBERT adds a pooling operation to the output of BERT to derive a fixed sized sentence embedding. The default pooling strategy is MEAN."}
	gateJudge = Chunk{ID: "judge", DocID: "qlora", Title: "QLoRA: Efficient Finetuning of Quantized LLMs",
		Text: "Mean 5-shot MMLU accuracy improves with dataset quality rather than size, and we report it for every model size we train in this work. " +
			strings.Repeat("The chatbot experiments use other benchmarks entirely. ", 4) +
			"We conduct a human evaluation with the same wording given to GPT-4 in the original Vicuna evaluation."}
	gateRefs = Chunk{ID: "refs", DocID: "llama", Title: "LLaMA: Open and Efficient Foundation Language Models",
		Text: "We tokenize the data with the byte-pair encoding algorithm, using SentencePiece.\n\nClaude E Shannon. 1948. A mathematical theory of communication. The Bell system technical journal, 27(3):379–423."}
	gateT5a = Chunk{ID: "t5a", DocID: "t5", Title: "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer",
		Text: "Our unsupervised objective corrupts 15% of the tokens as spans and trains the model to predict the dropped-out spans."}
	gateMS = Chunk{ID: "ms", DocID: "sbert", Title: "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks",
		Text: "We index 8.8M passages; SBERT uses MS and NLI data for training, as Table 2 shows."}
	gateAdam = Chunk{ID: "adam", DocID: "llama", Title: "LLaMA: Open and Efficient Foundation Language Models",
		Text: "Our models are trained using the AdamW optimizer, with the following hyper-parameters: β1 = 0.9, β2 = 0.95."}
	gateDPR = Chunk{ID: "dpr", DocID: "dpr", Title: "Dense Passage Retrieval for Open-Domain Question Answering",
		Text: "On TREC, WebQuestions and CuratedTREC only question-answer pairs exist, so the highest-ranked BM25 passage containing the answer is the positive. " +
			strings.Repeat("The remaining datasets come with gold passages. ", 4) + "DPR is trained on them all with FAISS, 5 epochs each."}
	gateFill = Chunk{ID: "fill", DocID: "other", Title: "Attention Is All You Need",
		Text: "The Transformer uses multi-head attention with 8 heads in each layer and was trained on WMT 2014."}
)

// gateCase is one question put to the gate with the passages kept for it.
type gateCase struct {
	name    string
	q       string
	kept    []Chunk
	missing []string // nil: the gate passes
	explain string   // a part of the explanation
}

func runGateCases(t *testing.T, p *Pipeline, corpus []Chunk, cases []gateCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := p.gate(t.Context(), c.q, c.kept, corpus)
			if !slices.Equal(g.missing, c.missing) {
				t.Fatalf("missing %q, want %q (explain %q)", g.missing, c.missing, g.explain)
			}
			if g.refused() && !strings.Contains(g.explain, c.explain) {
				t.Errorf("explain %q, want it to contain %q", g.explain, c.explain)
			}
		})
	}
}

func TestGate(t *testing.T) {
	t5Mentions := []Chunk{gateT5a}
	for i := range 3 {
		t5Mentions = append(t5Mentions, Chunk{ID: "t5m" + string(rune('a'+i)), DocID: "t5", Text: "We call our model T5, the Text-to-Text Transfer Transformer, and evaluate T5 on GLUE."})
	}
	corpus := append([]Chunk{gateGPT3, gateSBERT, gateJudge, gateRefs, gateFill, gateMS, gateAdam, gateDPR}, t5Mentions...)
	p := gatePipeline(t, corpus)
	runGateCases(t, p, corpus, []gateCase{
		{"version missing", "What accuracy does GPT-4 reach on MMLU?", []Chunk{gateGPT3}, []string{"GPT-4"}, "The papers mention GPT-3, but not GPT-4."},
		{"version present", "What accuracy does GPT-3 reach on MMLU?", []Chunk{gateGPT3}, nil, ""},
		{"a name's first word is not its variant", "How many documents did the SBERT authors index from MS MARCO?", []Chunk{gateMS}, []string{"MS MARCO"}, "The papers do not mention MS MARCO."},
		{"year missing", "What BLEU does the Transformer get on WMT 2016?", []Chunk{gateFill}, []string{"BLEU", "WMT 2016"}, "The papers mention WMT 2014, but not WMT 2016."},
		{"sibling model", "How does Sentence-T5 pool its encoder outputs?", []Chunk{gateSBERT}, []string{"Sentence-T5"}, "The papers mention Sentence-BERT, but not Sentence-T5."},
		{"model present", "How does Sentence-BERT pool BERT outputs?", []Chunk{gateSBERT}, nil, ""},
		{"number missing", "Does GPT-3 reach 52.1% on MMLU?", []Chunk{gateGPT3}, []string{"52.1%"}, "52.1%"},
		{"number present", "Does GPT-3 reach 43.9% on MMLU?", []Chunk{gateGPT3}, nil, ""},
		{"names far apart", "What accuracy does GPT-4 reach on MMLU?", []Chunk{gateJudge}, []string{"MMLU"}, "The passages that mention GPT-4 do not mention MMLU."},
		{"name only in a reference list", "What tokenizer does Claude use?", []Chunk{gateRefs}, []string{"Claude"}, "Claude"},
		{"paper's short name elsewhere in the paper", "What does T5 use as its unsupervised objective?", []Chunk{gateT5a}, nil, ""},
		{"dataset the paper never used", "What is the accuracy of SBERT on ImageNet?", []Chunk{gateSBERT}, []string{"ImageNet"}, "ImageNet"},
		{"paraphrase without names", "How is a fixed-size sentence vector obtained from BERT's outputs?", []Chunk{gateSBERT}, nil, ""},
		{"Greek letters spelled out", "What beta1 and beta2 values did the LLaMA authors set for AdamW?", []Chunk{gateAdam}, nil, ""},
		{"a Greek-letter parameter the paper lacks", "What beta3 value did the LLaMA authors set for AdamW?", []Chunk{gateAdam}, []string{"beta3"}, "beta3"},
		// Four names, three of them together and the fourth further on, answer; so do two
		// of three when the paper uses the third (TestGateTable).
		{"all but one of many names together", "How does DPR pick positives on TREC, WebQuestions and CuratedTREC?", []Chunk{gateDPR}, nil, ""},
		{"two of three names together", "Are the TREC and WebQuestions positives searched with FAISS?", []Chunk{gateDPR}, nil, ""},
		// A bare number is a premise: found, it need not stand near the names.
		{"a number further on", "Are the TREC and WebQuestions positives trained on for 5 epochs?", []Chunk{gateDPR}, nil, ""},
	})
}

func TestGateUnseenWords(t *testing.T) {
	p := gatePipeline(t, []Chunk{gateGPT3, gateSBERT, gateFill})
	g := p.gate(t.Context(), "How do I bake sourdough bread with a stiff levain?", []Chunk{gateFill}, nil)
	if !g.refused() || !slices.Contains(g.missing, "sourdough") {
		t.Errorf("gate %+v, want a refusal naming sourdough", g)
	}
	// Words the corpus never uses do not refuse a question naming what the papers hold:
	// they are the asker's.
	g = p.gate(t.Context(), "Did the GPT-3 folks dig up fresh placeholder piles?", []Chunk{gateGPT3}, nil)
	if g.refused() {
		t.Errorf("gate refused a question on GPT-3 for the asker's words: %+v", g)
	}
	g = p.gate(t.Context(), "How long should a grilled steak rest before I cut into it?", []Chunk{gateFill}, nil)
	if !g.refused() {
		t.Errorf("gate passed an off-topic question naming nothing the papers hold: %+v", g)
	}
	// Words the corpus uses, even if this passage lacks them, do not refuse: a paraphrase.
	g = p.gate(t.Context(), "How many attention heads sit in each Transformer layer, and what accuracy?", []Chunk{gateFill}, nil)
	if g.refused() {
		t.Errorf("gate refused a paraphrase: %+v", g)
	}
}

// TestEvidenceIndexYears: a workshop's year is written either way round.
func TestEvidenceIndexYears(t *testing.T) {
	item := func(s string) keyItem { return keyItem{text: s, key: squeeze(s), hard: true} }
	long := newEvidenceIndex("On the WMT 2014 English-to-French task the Transformer reaches 41.8 BLEU.")
	short := newEvidenceIndex("GPT-2 gets 5 BLEU on WMT14 English-French.")
	for _, c := range []struct {
		ix   *evidenceIndex
		item string
		want bool
	}{
		{long, "WMT14", true}, {long, "WMT 2014", true}, {long, "WMT16", false}, {long, "WMT 2016", false},
		{short, "WMT 2014", true}, {short, "WMT-14", true}, {short, "WMT 2016", false},
	} {
		if got := c.ix.covers(item(c.item)); got != c.want {
			t.Errorf("covers(%q) = %v, want %v", c.item, got, c.want)
		}
	}
}

// TestEvidenceIndexSpellings: a hyphenated count is the paper's plural ("1.4T-token" =
// "1.4T tokens"), a version may carry a "v" ("SQuAD 1.1" = "SQuAD v1.1"), and neither
// makes another number or version match.
func TestEvidenceIndexSpellings(t *testing.T) {
	item := func(s string) keyItem { return keyItem{text: s, key: squeeze(s), hard: true} }
	ix := newEvidenceIndex("LLaMA-65B was trained on 1.4T tokens with 80 layers. On SQuAD v1.1 BERT gets 93.2 F1; on SQuAD 2.0, 83.1. " +
		"Training used NVIDIA V100 GPUs.")
	checkCovers(t, ix, []coverCase{
		{"1.4T-token", true}, {"80-layer", true}, {"1.0T-token", false}, {"12-layer", false},
		{"SQuAD 1.1", true}, {"SQuAD v1.1", true}, {"SQuAD v2.0", true}, {"SQuAD 1.0", false}, {"SQuAD v3", false},
		{"V100", true}, {"NVIDIA V100", true}, {"NVIDIA 100", false},
	})
	if !newEvidenceIndex("Training emitted 1,015 tCO2eq.").covers(item("CO2")) || !newEvidenceIndex("0.385 kg CO2eq/KWh").covers(item("CO2")) {
		t.Error("a CO2 equivalent does not state the CO2 of a question")
	}
	// A factor written with a times sign is the user's "4x"; a product of two numbers is
	// none. A name is found in its plural.
	ix = newEvidenceIndex("Ensembles use 4× the computation of a 3×3 grid. An ELMo encoder is followed by two BiLSTMs; the clips were cut.")
	checkCovers(t, ix, []coverCase{
		{"4x", true}, {"2x", false}, {"3x", false}, {"BiLSTM", true}, {"ELMo", true}, {"CO2", false},
	})
	// A dataset ending in "QA" is shortened in tables to its initials and capitals: the
	// chain-of-thought paper's "CSQA" is "CommonsenseQA"; a short form spelling other
	// letters, or with other capitals, is not, nor the bare "CQA": every name of a C and a
	// QA would be it.
	ix = newEvidenceIndex("Table 4: CSQA (commonsense) and StrategyQA accuracy; the SIQA and CQA columns follow.")
	checkCovers(t, ix, []coverCase{
		{"CommonsenseQA", true}, {"StrategyQA", true}, {"ClinicalQA", false}, {"ComplexWebQA", false}, {"CommonsenseNLI", false},
	})
	checkCovers(t, newEvidenceIndex("LoRA adapts the attention weights."), []coverCase{{"LongLoRA", false}, {"LoRA", true}})
	// A rank is written "r = 8" in low-rank papers' tables.
	checkCovers(t, newEvidenceIndex("Weight Type r=1 r=2 r = 8 and r = 64; it corresponds to r = 8."), []coverCase{
		{"rank-8", true}, {"rank-64", true}, {"rank-2", true}, {"rank-16", false}, {"8", true},
	})
	// A PDF's subscript size joins the model's name: LoRA's "DeBERTaXXL" and "RoBERTalarge".
	checkCovers(t, newEvidenceIndex("Table 2: RoBERTabase, RoBERTalarge, and DeBERTaXXL on GLUE; DeBXXL (LoRA) 4.7M. A Database of base models."), []coverCase{
		{"XXL", true}, {"DeBERTa", true}, {"DeBERTa XXL", true}, {"RoBERTa", true}, {"RoBERTa-large", true}, {"large", true}, {"Data", false},
	})
	// A results table heads its ROUGE columns "R-1", "R-2", "R-L".
	checkCovers(t, newEvidenceIndex("R-1 R-2 R-L R-AVG Bottom-Up Sum 41.22 18.68 38.34 32.75"), []coverCase{
		{"ROUGE-1", true}, {"ROUGE-2", true}, {"ROUGE-L", true}, {"ROUGE-AVG", true}, {"ROUGE-3", false}, {"ROUGE-Lsum", false},
	})
	// A table clips a long last word: RAG's "RAG-Seq." and "RAG-Tok.". A sentence ending
	// in a lower-case word is no clipped name, nor is a name clipped below three letters.
	checkCovers(t, newEvidenceIndex("Model NQ TQA RAG-Tok. 44.1 55.2 RAG-Seq. 44.5 56.8; REALM Sq. 40.4, trained with BERT base."), []coverCase{
		{"RAG-Sequence", true}, {"RAG-Token", true}, {"REALM-Square", false},
		{"BERT-Baseline", false}, {"RAG-Seq", true}, {"RAG-Segment", false}, {"RAG-Tok", true},
	})
	// A name's adjective is the name: HNSW compares algorithms "in Euclid spaces". A short
	// root is no name ("Indian" is not "Ind").
	checkCovers(t, newEvidenceIndex("Comparison in Euclid spaces with a Gauss kernel, a Laplace prior and the Ind set."), []coverCase{
		{"Euclidean", true}, {"Gaussian", true}, {"Laplacian", true}, {"Indian", false}, {"Bayesian", false},
	})
	if got := (keyItem{text: "CommonsenseQA"}).searchText(); got != "CommonsenseQA Commonsense QA" {
		t.Errorf("search text %q: a short form's passages are found by the name's words", got)
	}
	if hard := hardItems("Which datasets trained the NQ-only DPR model?"); !slices.Equal(hard, []string{"NQ", "DPR"}) {
		t.Errorf("hard items %q, want NQ and DPR: -only makes a name an adjective and ends it", hard)
	}
}

// TestGateNameSpellings: a question names a thing as a paper's table or another
// sentence of it does not: with a "v" before its version, its size first, spelled out
// where the table has initials, or beside an alternative after a slash.
func TestGateNameSpellings(t *testing.T) {
	squad := Chunk{ID: "electra", DocID: "electra", Title: "ELECTRA", Text: "ELECTRA-Large reaches 89.7 exact match on SQuAD 1.1 after 1.75M steps."}
	dsi := Chunk{ID: "dsi", DocID: "dsi", Title: "Transformer Memory as a Differentiable Search Index",
		Text: "Table 3: Hits@1 on NQ10K. DSI XXL with naive string docids gets 46.7 after finetuning."}
	realm := Chunk{ID: "realm", DocID: "realm", Title: "REALM: Retrieval-Augmented Language Model Pre-Training",
		Text: "Table 1: exact match on NQ, WQ and CT. GraphRetriever gets 31.8 on NQ; REALM gets 40.4."}
	lucene := Chunk{ID: "beir", DocID: "beir", Title: "BEIR", Text: "We use the Lucene implementation of BM25 with default k1 and b."}
	corpus := []Chunk{squad, dsi, realm, lucene}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"a v before the version", "What exact match does ELECTRA-Large get on SQuAD v1.1?", []Chunk{squad}, nil, ""},
		{"another version", "What exact match does ELECTRA-Large get on SQuAD v2.0?", []Chunk{squad}, []string{"SQuAD v2.0"}, "SQuAD v2.0"},
		{"size first", "What Hits@1 on NQ10K does the XXL DSI model with naive string docids get?", []Chunk{dsi}, nil, ""},
		{"another size", "What Hits@1 on NQ10K does the XL DSI model with naive string docids get?", []Chunk{dsi}, []string{"XL DSI"}, "XL DSI"},
		{"initials in the table", "What exact match does REALM list for GraphRetriever on Natural Questions?", []Chunk{realm}, nil, ""},
		{"initials of another name", "What exact match does REALM list for GraphRetriever on Natural Language Inference?", []Chunk{realm}, []string{"Natural Language Inference"}, "Natural Language Inference"},
		{"one of two alternatives", "Did BEIR run BM25 through Lucene/Pyserini, and with which k1?", []Chunk{lucene}, nil, ""},
		{"neither alternative", "Did BEIR run BM25 through Vespa/Pyserini, and with which k1?", []Chunk{lucene}, []string{"Vespa"}, "Vespa"},
	})
	// "CNN/Daily Mail" is one dataset's two names: a phrase after a slash is no alternative.
	if texts := hardItems("What ROUGE-L does GPT-2 get on CNN/Daily Mail?"); !slices.Equal(texts, []string{"ROUGE-L", "GPT-2", "CNN", "Daily Mail"}) {
		t.Errorf("hard items %q, want the dataset's two names as two items", texts)
	}
}

// TestQuestionItemsContractions: a contraction is grammar, not a word the papers lack.
// TestQuestionItemsLabs: a lab says who made a model, and its name is no item; a word
// spelled like one is.
func TestQuestionItemsLabs(t *testing.T) {
	texts := func(q string) []string {
		var out []string
		for _, it := range questionItems(q) {
			out = append(out, it.text)
		}
		return out
	}
	for _, q := range []string{"What weight decay did Meta use when pre-training LLaMA?", "How did OpenAI filter the web pages for GPT-2's WebText?"} {
		for _, w := range texts(q) {
			if labs[w] {
				t.Errorf("%q: item %q is a lab", q, w)
			}
		}
		if got := texts(q); !slices.ContainsFunc(got, func(w string) bool { return strings.HasPrefix(w, "LLaMA") || strings.HasPrefix(w, "GPT-2") }) {
			t.Errorf("%q: items %q lack the model", q, got)
		}
	}
	if got := texts("Is meta-learning used to pre-train REALM?"); !slices.Contains(got, "meta-learning") {
		t.Errorf("items %q lack meta-learning", got)
	}
}

func TestQuestionItemsContractions(t *testing.T) {
	for _, it := range questionItems("xlnet paper: couldn't BERT just put the real word back, or doesn't that work? They're unsure.") {
		if strings.ContainsAny(it.text, "'’") {
			t.Errorf("item %q is a contraction", it.text)
		}
	}
}

// TestGateTable: a question on a table names its row, column and figure further apart
// than a window. When the best passage holds two of three names together and its paper
// uses the third elsewhere, the gate passes; when the paper never names the third, it
// refuses, naming it.
func TestGateTable(t *testing.T) {
	table := Chunk{ID: "tab", DocID: "bert", Title: "BERT: Pre-training of Deep Bidirectional Transformers",
		Text: "Table 5: Ablation over the pre-training tasks. Dev Set: MNLI-m QNLI MRPC SST-2 SQuAD 1.1 (F1). " +
			strings.Repeat("Scores for each task are reported in the columns below. ", 4) +
			"LTR & No NSP 82.1 84.3 77.5 92.1 77.8; + BiLSTM 82.1 84.1 75.7 91.6 84.9."}
	other := Chunk{ID: "gpt", DocID: "gpt", Title: "Improving Language Understanding by Generative Pre-Training",
		Text: "We evaluate on RACE and on the Story Cloze Test, and report accuracy."}
	corpus := []Chunk{table, other}
	p := gatePipeline(t, corpus)
	runGateCases(t, p, corpus, []gateCase{
		{"third name elsewhere in the paper", "What SQuAD 1.1 score does the LTR model get with a BiLSTM on top?", []Chunk{table, other}, nil, ""},
		{"third name nowhere in the paper", "What RACE score does the LTR model get with a BiLSTM on top?", []Chunk{table, other}, []string{"RACE"}, "do not mention RACE"},
		{"two names are not a table", "What does the BiLSTM reach on RACE?", []Chunk{table, other}, []string{"RACE"}, "do not mention RACE"},
	})
	// A column's metric and a row's model, two names far apart in one table, are on the
	// question; the same two names far apart in prose are not.
	bleu := Chunk{ID: "bleu", DocID: "transformer", Title: "Attention Is All You Need",
		Text: "Table 2: The Transformer achieves better BLEU scores than previous state-of-the-art models. Model BLEU Training Cost (FLOPs) " +
			"EN-DE EN-FR EN-DE EN-FR ByteNet [18] 23.75 Deep-Att + PosUnk [39] 39.2 1.0 · 1020 GNMT + RL [38] 24.6 39.92 2.3 · 1019 1.4 · 1020 " +
			"ConvS2S [9] 25.16 40.46 9.6 · 1018 1.5 · 1020 MoE [32] 26.03 40.56 2.0 · 1019 1.2 · 1020"}
	prose := Chunk{ID: "prose", DocID: "prose", Title: "Attention Is All You Need",
		Text: "We report BLEU on the test set. " + strings.Repeat("The big model was trained for 3.5 days on eight GPUs. ", 3) +
			"Unlike ConvS2S, the number of operations to relate two positions is constant."}
	// QLoRA's pattern: the metric in prose, the model as a row of another table.
	elo := Chunk{ID: "elo", DocID: "qlora", Title: "QLoRA: Efficient Finetuning of Quantized LLMs",
		Text: "Strong MMLU performance does not imply strong chatbot performance, as measured by the Vicuna benchmark, and the " +
			"suitability of a finetuning dataset matters more than its size for a given task. Table 1: Elo ratings. Model Size Elo GPT-4 - 1348 1 Guanaco 65B 41 GB 1022 1"}
	corpus = []Chunk{bleu, prose, elo}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"a row and a column", "What BLEU does GNMT+RL get in the table?", []Chunk{bleu}, nil, ""},
		{"a row and a column, spaced", "What BLEU does ConvS2S score in the table?", []Chunk{bleu}, nil, ""},
		{"two names apart in prose", "What BLEU does ConvS2S score in the table?", []Chunk{prose}, []string{"ConvS2S"}, "ConvS2S"},
		{"a row of another table", "What accuracy does GPT-4 reach on MMLU?", []Chunk{elo}, []string{"MMLU"}, "MMLU"},
	})
	// Without BM25 the paper cannot be searched: the window decides, as before.
	plain, err := New(Config{Searcher: gateSearcher{corpus}})
	if err != nil {
		t.Fatal(err)
	}
	if g := plain.gate(t.Context(), "What SQuAD 1.1 score does the LTR model get with a BiLSTM on top?", []Chunk{table, other}, corpus); !g.refused() {
		t.Errorf("gate without BM25 passed names a window does not hold together: %+v", g)
	}
}

func TestWithoutReferences(t *testing.T) {
	body := "We store the document index on CPU, requiring 100 GB of CPU memory. Scripts are at https://github.com/x/rag and a demo at https://huggingface.co/rag/."
	// arXiv as a source of data, beside a citation's year, is body text.
	data := "ArXiv [2.5%]. We process arXiv Latex files to add scientific data to our dataset. Following Lewkowycz et al. (2022), we removed everything before the first section."
	refs := []string{
		"Minghao Hu, Yuxing Peng, and Xipeng Qiu. 2017. Reinforced mnemonic reader for machine reading comprehension. ArXiv, abs/1705.02798.",
		"[23] Jeff Johnson, Matthijs Douze, and Hervé Jégou. Billion-scale similarity search with GPUs. arXiv preprint arXiv:1702.08734, 2017.",
		"Claude E Shannon. 1948. A mathematical theory of communication. The Bell system technical journal, 27(3):379–423.",
		"A. Vaswani, N. Shazeer, et al. Attention is all you need. In Advances in Neural Information Processing Systems, 2017. https://arxiv.org/abs/1706.03762",
	}
	text := body + "\n\n" + data + "\n\n" + strings.Join(refs, "\n\n")
	got := withoutReferences(text)
	if !strings.Contains(got, "CPU memory") {
		t.Errorf("a body paragraph with two links was dropped: %q", got)
	}
	if !strings.Contains(got, "Latex files") {
		t.Errorf("a body paragraph on arXiv data was dropped: %q", got)
	}
	for _, r := range refs {
		if strings.Contains(got, r[:30]) {
			t.Errorf("reference %q kept", r[:30])
		}
	}
}

// TestEvidenceIndexPlusNames: a name ending in pluses ("DSI++") is not the name without
// them.
func TestEvidenceIndexPlusNames(t *testing.T) {
	items := map[string]keyItem{}
	for _, it := range questionItems("How does DSI++ compare with DSI on L1?") {
		items[it.text] = it
	}
	for _, name := range []string{"DSI++", "DSI", "L1"} {
		if !items[name].hard {
			t.Fatalf("items %+v lack the hard name %q", items, name)
		}
	}
	for _, c := range []struct {
		text, item string
		want       bool
	}{
		{"DSI++ keeps indexing new documents without forgetting.", "DSI++", true},
		{"DSI models are trained to map documents to their docids.", "DSI++", false},
		{"Unlike DSI, DSI++ keeps indexing new documents.", "DSI", true},
		// A plus between two words is an operator: "L1+L2" holds L1 and L2.
		{"The loss is L1+L2 over the batch.", "L1", true},
	} {
		if got := newEvidenceIndex(c.text).covers(items[c.item]); got != c.want {
			t.Errorf("%q covers %q = %v, want %v", c.text, c.item, got, c.want)
		}
	}
}

// TestQuestionItemsCitationsAndSizes: an author citation's year is the citation's, "-trained"
// makes a name an adjective, and a count of layers or heads is a count (a size table states
// it in a column, never as "3 layers") beside the word for the unit.
func TestQuestionItemsCitationsAndSizes(t *testing.T) {
	for _, c := range []struct {
		q    string
		hard []string
	}{
		{"What accuracy did the original GPT (Radford et al. 2018) reach on SNLI?", []string{"GPT", "SNLI"}},
		{"What did Radford et al., 2018 report on SNLI?", []string{"SNLI"}},
		{"What did the 2018 GPT report on SNLI?", []string{"2018", "GPT", "SNLI"}},
		{"What average does the large NLI-trained model reach?", []string{"NLI"}},
		{"What MNLI accuracy does the 3-layer BERT get?", []string{"MNLI", "3", "BERT"}},
		{"What does QLoRA's 4-bit NormalFloat keep?", []string{"QLoRA", "4-bit", "NormalFloat"}},
		{"Which 5-gram model did LLaMA compare with?", []string{"5-gram", "LLaMA"}},
		// A count made an adjective is the count beside its unit.
		{"What ROUGE does the 4.7M-parameter LoRA get?", []string{"ROUGE", "4.7M", "LoRA"}},
		{"How long did a step take on the 8-GPU machine?", []string{"8", "GPU"}},
		{"Could I run LLaMA on a single GPU or a multi-GPU box?", []string{"LLaMA", "GPU"}},
		{"How many layers did the 2x-bigger T5 have?", []string{"2x", "T5"}},
		// Names joined by "plus" are two names.
		{"Did DistilBERT trail the ELMo-plus-BiLSTM baseline?", []string{"DistilBERT", "ELMo", "BiLSTM"}},
		// The answers a user guesses are not what the question hinges on.
		{"What did DrQA use to tokenize the text? spaCy, or something else?", []string{"DrQA"}},
		{"How were the Transformer's weights initialized, Xavier/Glorot or something else?", nil},
		{"Did SBERT try something like Manhattan or Euclidean distance?", []string{"SBERT"}},
	} {
		var hard []string
		for _, it := range questionItems(c.q) {
			if it.hard {
				hard = append(hard, it.text)
			}
		}
		if !slices.Equal(hard, c.hard) {
			t.Errorf("%q: hard items %q, want %q", c.q, hard, c.hard)
		}
	}
}

// TestGateMixedInitials: a short form keeping a small word's initial in lower case ("FiD")
// is found as the initials of the words the paper writes ("Fusion-in-Decoder"); a longer
// name in mixed case ("SQuAD") is a name, not initials.
func TestGateMixedInitials(t *testing.T) {
	fid := Chunk{ID: "fid", DocID: "fid", Title: "Leveraging Passage Retrieval with Generative Models for Open Domain Question Answering",
		Text: "In Fusion-in-Decoder, each retrieved passage is concatenated with the question and encoded independently; the decoder attends over all of them."}
	corpus := []Chunk{fid, gateFill}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"initials of the paper's words", "How does FiD combine the retrieved passages?", []Chunk{fid}, nil, ""},
		{"other initials", "How does FiT combine the retrieved passages?", []Chunk{fid}, []string{"FiT"}, "FiT"},
	})
	for _, it := range questionItems("What does FiD get on SQuAD?") {
		if want := it.text == "FiD"; it.acro != want {
			t.Errorf("item %q: acro %v, want %v", it.text, it.acro, want)
		}
	}
}

// TestGateUnitsAndMakers: a unit written onto its figure ("76GB") states the unit a
// question names ("how many GB"), a round figure ("79k") the table's "79,168", and
// "GPT-generated" is GPT's, made an adjective.
func TestGateUnitsAndMakers(t *testing.T) {
	ix := newEvidenceIndex("CC-News holds 63 million articles, 76GB after filtering; a query takes 12ms. NQ has 79,168 training questions.")
	checkCovers(t, ix, []coverCase{
		{"GB", true}, {"ms", true}, {"TB", false}, {"76GB", true},
		// The user's round figure.
		{"79k", true}, {"79K", true}, {"80k", false}, {"79M", false}, {"7k", false},
	})
	if hard := hardItems("What share of E5-mistral's GPT-generated data is in English?"); !slices.Equal(hard, []string{"E5-mistral", "GPT"}) {
		t.Errorf("hard items %q, want E5-mistral and GPT", hard)
	}
}

// TestGateFollowUpWords: an elliptical follow-up kept in its thread takes its subject from
// the thread, so a word of its own the corpus never uses is no sign it is about something
// else; the same words asked outside a thread still are.
func TestGateFollowUpWords(t *testing.T) {
	cot := Chunk{ID: "cot", DocID: "cot", Title: "Chain-of-Thought Prompting Elicits Reasoning in Large Language Models",
		Text: "With an external calculator applied to the generated equations, UL2 20B solves 6.9% of GSM8K problems."}
	corpus := []Chunk{cot, gateSBERT, gateFill}
	p := gatePipeline(t, corpus)
	q := "and once they bolt on the calculator?"
	if g := p.gateIn(t.Context(), q, []Chunk{cot}, corpus, true); g.refused() {
		t.Errorf("in its thread, %q refused: %s", q, g.explain)
	}
	if g := p.gateIn(t.Context(), q, []Chunk{cot}, corpus, false); !slices.Equal(g.missing, []string{"bolt"}) {
		t.Errorf("outside a thread, %q missing %q, want bolt", q, g.missing)
	}
}

// TestGateCapitalsOnlyNames: a name a question writes in capitals only ("DROP") is found
// where the evidence writes it so, not in the plain word ("a drop in accuracy"); a model
// size ("XL") is found in lower case too, as QLoRA writes "T5 xl".
func TestGateCapitalsOnlyNames(t *testing.T) {
	xlnet := Chunk{ID: "xlnet", DocID: "xlnet", Title: "XLNet: Generalized Autoregressive Pretraining for Language Understanding",
		Text: "Removing the memory causes a drop in accuracy on RACE; XLNet-Large gets 85.4 F1 there. Drop rates were low."}
	drop := Chunk{ID: "drop", DocID: "drop", Title: "A reading comprehension benchmark",
		Text: "On DROP the model reaches 60.1 F1 after fine-tuning."}
	qlora := Chunk{ID: "qlora", DocID: "qlora", Title: "QLoRA: Efficient Finetuning of Quantized LLMs",
		Text: "We finetune T5 xl and xxl models with 4-bit NF4 and compare their Super-NaturalInstructions RougeL."}
	corpus := []Chunk{xlnet, drop, qlora, gateFill}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"plain word is not the name", "What F1 does XLNet-Large get on DROP?", []Chunk{xlnet}, []string{"DROP"}, "DROP"},
		{"capitals are", "What F1 does the model get on DROP?", []Chunk{drop}, nil, ""},
		{"a size in lower case", "What RougeL do the T5 XL models get with NF4?", []Chunk{qlora}, nil, ""},
	})
	ws, _, plain := segWordsCase("DROP Drop drop DrQA")
	if !slices.Equal(ws, []string{"drop", "drop", "drop", "drqa"}) || !slices.Equal(plain, []bool{false, true, true, false}) {
		t.Errorf("segWordsCase: %q %v", ws, plain)
	}
}

// TestGateCompoundsAndAliases: capitalised hyphenated parts name a method or a language
// pair, which the evidence must hold, in either spelling of a pair; a name in brackets is
// its neighbour's short form; "masked-LM" is "MLM".
func TestGateCompoundsAndAliases(t *testing.T) {
	cot := Chunk{ID: "cot", DocID: "cot", Title: "Chain-of-Thought Prompting Elicits Reasoning in Large Language Models",
		Text: "Chain-of-thought prompting improves GSM8K accuracy for PaLM 540B over standard prompting with exemplars."}
	wmt := Chunk{ID: "wmt", DocID: "transformer", Title: "Attention Is All You Need",
		Text: "On the WMT 2014 English-German task the big model reaches 28.4 BLEU after training."}
	giga := Chunk{ID: "giga", DocID: "xlnet", Title: "XLNet",
		Text: "Pretraining also uses Giga5 (16GB of text), ClueWeb and Common Crawl."}
	mlm := Chunk{ID: "mlm", DocID: "bert", Title: "BERT",
		Text: "The MLM objective masks 15% of the input tokens at random."}
	corpus := []Chunk{cot, wmt, giga, mlm, gateFill}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"a method the papers lack", "Does Plan-and-Solve prompting beat chain-of-thought on GSM8K?", []Chunk{cot}, []string{"Plan-and-Solve"}, "Plan-and-Solve"},
		{"a pair written with to", "What BLEU does the big model reach on English-to-German?", []Chunk{wmt}, nil, ""},
		{"another pair", "What BLEU does the big model reach on English-to-Romanian?", []Chunk{wmt}, []string{"English-to-Romanian"}, "English-to-Romanian"},
		{"a short form in brackets", "How much text does English Gigaword (Giga5) add?", []Chunk{giga}, nil, ""},
		{"initials of word and acronym", "What share of tokens does the masked-LM objective mask?", []Chunk{mlm}, nil, ""},
	})
	for q, want := range map[string][]string{
		"How does Step-Back prompting work?":                     {"Step-Back"},
		"Is Self-Attention cheaper than recurrence?":             {"Self-Attention"},
		"What does RAG-Sequence (RAG-Seq) get on NQ?":            {"RAG-Sequence", "NQ"},
		"How many parameters does RoBERTa (RoBERTa-large) have?": {"RoBERTa", "RoBERTa-large"},
		"What did LLaMA (65B) score?":                            {"LLaMA", "65B"},
		// An author after "of" is a citation, not part of the name.
		"What does the Graph Retriever of Min et al. get on TriviaQA?": {"Graph Retriever", "TriviaQA"},
		"What BLEU does the 11-billion-parameter T5 get?":              {"BLEU", "11B", "T5"},
	} {
		if got := hardItems(q); !slices.Equal(got, want) {
			t.Errorf("hard items of %q = %q, want %q", q, got, want)
		}
	}
}

// TestEvidenceIndexTitleInitials: a capitalised name is found as its initials where a
// table writes them in capitals ("NQ"), not in the plain words they spell ("et al.").
func TestEvidenceIndexTitleInitials(t *testing.T) {
	ix := newEvidenceIndex("As in Vaswani et al. (2017), exact match on NQ and TQA is reported.")
	checkCovers(t, ix, []coverCase{{"Natural Questions", true}, {"Evolved Transformer", false}})
}

// TestExplainMissingVariants: a variant the explanation offers is one the papers hold, not
// another missing name; "TL;DR" is one name in the evidence as in the question.
func TestExplainMissingVariants(t *testing.T) {
	adam := Chunk{ID: "b2", DocID: "x", Title: "X", Text: "Adam with beta2 = 0.98 and GPT-3 as a judge."}
	items := []keyItem{{text: "beta1", key: "beta1", hard: true}, {text: "beta2", key: "beta2", hard: true}}
	if got, want := explainMissing(items, []Chunk{adam}), "The papers do not mention beta1 or beta2."; got != want {
		t.Errorf("explain %q, want %q", got, want)
	}
	if got, want := explainMissing([]keyItem{{text: "GPT-4", key: "gpt4", hard: true}}, []Chunk{adam}), "The papers mention GPT-3, but not GPT-4."; got != want {
		t.Errorf("explain %q, want %q", got, want)
	}
	checkCovers(t, newEvidenceIndex("On the TL;DR summarization dataset; the model wins."), []coverCase{{"TL;DR", true}, {"TLDR", true}})
}

// TestGateRelatedWorkIsNoResult: a benchmark a paper names only in its related work has no
// result there; asked for one, the gate refuses saying where the name stands, and a
// question not asking for a result is still answered from that passage.
func TestGateRelatedWorkIsNoResult(t *testing.T) {
	survey := Chunk{ID: "rw", DocID: "drqa", Title: "Reading Wikipedia to Answer Open-Domain Questions", Section: []string{"2 Related Work"},
		Text: "Bordes et al. combined WebQuestions and SimpleQuestions using distant supervision with Freebase as the KB."}
	results := Chunk{ID: "res", DocID: "drqa", Title: "Reading Wikipedia to Answer Open-Domain Questions", Section: []string{"5 Experiments"},
		Text: "DrQA reaches 20.7 exact match on WebQuestions and 25.4 on CuratedTREC with distant supervision."}
	// A results table the PDF's layout put among the related-work pages.
	floated := Chunk{ID: "table", DocID: "drqa", Title: "Reading Wikipedia to Answer Open-Domain Questions", Section: []string{"2 Related Work"},
		Text: "Table 6: DrQA on WikiMovies reaches 34.2 exact match, against 70.9 for a KB-based system."}
	corpus := []Chunk{survey, results, floated, gateFill}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"a result in a table floated into the related work", "What exact match does DrQA get on WikiMovies?", []Chunk{floated}, nil, ""},
		{"a result on a surveyed benchmark", "What accuracy does DrQA get on SimpleQuestions?", []Chunk{results, survey}, []string{"SimpleQuestions"}, "The papers name SimpleQuestions only in their related work, with no result."},
		{"a result on an evaluated benchmark", "What exact match does DrQA get on WebQuestions?", []Chunk{results, survey}, nil, ""},
		{"no result asked", "Which knowledge base did Bordes et al. use for SimpleQuestions?", []Chunk{survey}, nil, ""},
	})
}

// TestEvidenceIndexSizeInWords: "the 11-billion-parameter T5" is found where a paper
// writes "11B" and where it writes "11 billion".
func TestEvidenceIndexSizeInWords(t *testing.T) {
	var size keyItem
	for _, it := range questionItems("How many passes over its 3.3-billion-word corpus did BERT make?") {
		if it.text == "3.3B" {
			size = it
		}
	}
	if size.text == "" {
		t.Fatalf("no 3.3B among %+v", questionItems("How many passes over its 3.3-billion-word corpus did BERT make?"))
	}
	for text, want := range map[string]bool{
		"about 40 epochs over the 3.3 billion word corpus": true,
		"T5-3.3B was trained longer":                       true,
		"the 3.3 million word corpus":                      false,
	} {
		if got := newEvidenceIndex(text).covers(size); got != want {
			t.Errorf("%q covers 3.3B = %v, want %v", text, got, want)
		}
	}
}

// TestGateTwoPapersOwnPassages: a question on two papers is answered by a passage of each,
// holding its part, when the question names the paper of the second; a passage of a paper
// the question does not name does not answer for the first paper's part.
func TestGateTwoPapersOwnPassages(t *testing.T) {
	igpt := Chunk{ID: "igpt", DocID: "igpt", Title: "Training language models to follow instructions with human feedback",
		Text: "Table 14: zero-shot results of InstructGPT PPO-ptx 175B: SST accuracy 90.6, RTE 61.4."}
	lora := Chunk{ID: "lora", DocID: "lora", Title: "LoRA: Low-Rank Adaptation of Large Language Models",
		Text: "We evaluate if LoRA can still match a fully fine-tuned DeBERTa XXL (1.5B) on GLUE."}
	llama := Chunk{ID: "llama", DocID: "llama", Title: "LLaMA: Open and Efficient Foundation Language Models",
		Text: "Zero-shot results: LLaMA-65B reaches 85.3 on BoolQ, beside Chinchilla and PaLM."}
	intro := Chunk{ID: "igpt0", DocID: "igpt", Title: igpt.Title, Text: "We call the resulting models InstructGPT."}
	t5 := Chunk{ID: "t5", DocID: "t5", Title: "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer",
		Text: "On CNN/Daily Mail the model reaches 21.55 ROUGE-2 and 40.69 ROUGE-L."}
	lora175 := Chunk{ID: "lora175", DocID: "lora", Title: lora.Title, Text: "LoRA adapts GPT-3 175B with 4.7M trainable parameters."}
	corpus := []Chunk{igpt, intro, lora, lora175, llama, t5, gateFill}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"each paper's passage holds its part", "How accurate is InstructGPT PPO-ptx on SST zero-shot, and what does DeBERTa XXL get on GLUE with LoRA?", []Chunk{igpt, lora}, nil, ""},
		{"another paper's passage", "What zero-shot accuracy does InstructGPT PPO-ptx get on BoolQ?", []Chunk{igpt, llama}, []string{"BoolQ"}, "BoolQ"},
		// The passage holding most is T5's, which the question does not name.
		{"the best passage's paper unnamed", "What ROUGE-2 and ROUGE-L does LoRA get with GPT-3 175B on CNN/Daily Mail?", []Chunk{t5, lora175}, []string{"GPT-3", "175B"}, "GPT-3"},
	})
}
