package rag

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestIsJunk(t *testing.T) {
	cases := []struct {
		s    string
		junk bool
	}{
		{"Multi-head attention allows the model to jointly attend to information.", false},
		{"In this work we employ h = 8 parallel attention layers, or heads.", false},
		{"The model reaches 28.4 BLEU on the WMT 2014 English-to-German task.", false},
		{"Figure 2: (left) Scaled Dot-Product Attention consists of several layers.", true},
		{"Table 3: Variations on the Transformer architecture are listed here.", true},
		{"[12] Zhouhan Lin, Minwei Feng, and Yoshua Bengio. A structured self-attentive sentence embedding.", true},
		{"Zhouhan Lin, Minwei Feng, and Yoshua Bengio. A structured self-attentive sentence embedding. arXiv preprint arXiv:1703.03130, 2017.", true},
		{"In Proceedings of the Conference on Empirical Methods in Natural Language Processing, pages 1-10, 2016.", true},
		{"Attention(Q, K, V) = softmax(QK^T / sqrt(d_k)) V where Q = XW.", true},
		{"The output is computed as \ufffd\ufffd of the values and more words here.", true},
		{"and the second is a position-wise feed-forward network.", true},
		{"The encoder is composed of a stack of N = 6 identical", true},
		{"Too short here.", true},
		{"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15.", true},
		{"(right) Multi-Head Attention consists of several attention layers running in parallel.", true},
		{"(a) The encoder stacks six identical layers of attention.", true},
		{"(This holds for every layer of the encoder stack.)", false},
		{"The code and models are available at https://github.com/ google-research/bert.", true},
		{"This mimics the typical encoder-decoder attention mechanisms in models such as.", true},
		{"It follows the encoder-decoder structure used by most models of this kind.", false},
	}
	for _, c := range cases {
		if got := isJunk(c.s); got != c.junk {
			t.Errorf("isJunk(%q) = %v, want %v", c.s, got, c.junk)
		}
	}
}

func TestWithCitation(t *testing.T) {
	cases := map[string]string{
		"It works.":       "It works [2].",
		"Does it work?":   "Does it work [2]?",
		`He said "stop."`: `He said "stop [2]."`,
		"No final stop":   "No final stop [2].",
	}
	for in, want := range cases {
		if got := withCitation(in, 2); got != want {
			t.Errorf("withCitation(%q) = %q, want %q", in, got, want)
		}
	}
}

var markerRE = regexp.MustCompile(`\[(\d+)\]`)

// TestExtractiveScorers checks each scorer picks the answering sentences, cites only the
// sources given, skips junk and composes 1–4 sentences.
func TestExtractiveScorers(t *testing.T) {
	junk := Chunk{ID: "c-junk", Text: "Figure 2: Multi-head attention heads consist of several attention layers running in parallel.\n\n[12] A. Heads, B. Attention. Multi-head attention heads. arXiv preprint arXiv:1703.03130, 2017.\n\nheads = 8 \ufffd\ufffd multi-head attention heads (h = 8) dk = dv = 64."}
	sources := sourcesOf(junk, pHeads, pEncoder, pTraining)
	query := "How many heads does multi-head attention use?"
	want := "In this work we employ h = 8 parallel attention layers, or heads"

	overlapScore := func(q string, passages []string) []float64 { return overlapScores(q, passages) }
	cases := []struct {
		name string
		cfg  Config
	}{
		{"overlap", Config{}},
		{"reranker", Config{Reranker: fnReranker(overlapScore)}},
		{"embedder", Config{Embedders: []Embedder{bowEmbedder{}}}},
		{"failing reranker falls back", Config{Reranker: fnReranker(nil)}},
		{"failing reranker falls back to the embedder", Config{Reranker: fnReranker(nil), Embedders: []Embedder{bowEmbedder{}}}},
		{"failing embedder falls back to overlap", Config{Embedders: []Embedder{failingEmbedder{}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := testPipeline(t, c.cfg)
			got := p.extractive(t.Context(), query, sources)
			if !strings.Contains(got, want) {
				t.Errorf("answer %q lacks %q", got, want)
			}
			n := len(splitSentences(got))
			if n < 1 || n > extractiveMax {
				t.Errorf("answer has %d sentences: %q", n, got)
			}
			for _, m := range markerRE.FindAllStringSubmatch(got, -1) {
				k, _ := strconv.Atoi(m[1])
				if k < 1 || k > extractiveChunks {
					t.Errorf("answer cites [%d], beyond the %d sources used: %q", k, extractiveChunks, got)
				}
				if k == 1 {
					t.Errorf("answer cites the junk-only source: %q", got)
				}
			}
			for _, s := range splitSentences(got) {
				if !markerRE.MatchString(s) {
					t.Errorf("sentence without citation: %q", s)
				}
			}
		})
	}
}

func TestExtractiveNothingUsable(t *testing.T) {
	p := testPipeline(t, Config{})
	if got := p.extractive(t.Context(), "heads", sourcesOf(Chunk{Text: "Figure 1: The Transformer model architecture overview here."})); got != "" {
		t.Errorf("got %q, want no answer from junk", got)
	}
}

func TestPickSentencesDeduplicates(t *testing.T) {
	mk := func(text string, score float64) sentence {
		return sentence{text: text, score: score, terms: termSet(text)}
	}
	got := pickSentences([]sentence{
		mk("The model uses eight parallel attention heads in every layer.", 0.9),
		mk("The model uses eight parallel attention heads in each layer.", 0.88),
		mk("Each head has a reduced dimension of sixty-four values.", 0.8),
		mk("Training used the WMT 2014 English-German dataset here.", 0.01),
	})
	var texts []string
	for _, s := range got {
		texts = append(texts, s.text)
	}
	want := []string{"The model uses eight parallel attention heads in every layer.", "Each head has a reduced dimension of sixty-four values."}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("picked %q, want %q", texts, want)
	}
}

// fnReranker scores with f; a nil f fails, so the next scorer must take over.
type fnReranker func(q string, passages []string) []float64

func (f fnReranker) Score(_ context.Context, q string, passages []string) ([]float64, error) {
	if f == nil {
		return nil, context.DeadlineExceeded
	}
	return f(q, passages), nil
}

// scoredBy is a reranker scoring each passage by its text in scores (0 when absent); the
// map is read at each call, so a test may change a score between answers.
func scoredBy(scores map[string]float64) fnReranker {
	return func(_ string, ps []string) []float64 {
		out := make([]float64, len(ps))
		for i, s := range ps {
			out[i] = scores[s]
		}
		return out
	}
}

// bowEmbedder embeds text as a hashed bag of stemmed terms, enough for cosine to prefer
// sentences sharing the query's words.
type bowEmbedder struct{}

func (bowEmbedder) Info() ModelInfo { return ModelInfo{Name: "bow", Dim: 64, Metric: Cosine} }
func (e bowEmbedder) EmbedQuery(_ context.Context, s string) ([]float32, error) {
	return bow(s), nil
}
func (e bowEmbedder) EmbedDocuments(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		out[i] = bow(s)
	}
	return out, nil
}

// failingEmbedder fails every call, so the next scorer must take over.
type failingEmbedder struct{}

func (failingEmbedder) Info() ModelInfo { return ModelInfo{Name: "failing", Dim: 64, Metric: Cosine} }
func (failingEmbedder) EmbedQuery(context.Context, string) ([]float32, error) {
	return nil, context.DeadlineExceeded
}
func (failingEmbedder) EmbedDocuments(context.Context, []string) ([][]float32, error) {
	return nil, context.DeadlineExceeded
}

func bow(s string) []float32 {
	v := make([]float32, 64)
	for _, t := range terms(s) {
		h := 0
		for _, r := range t {
			h = h*31 + int(r)
		}
		v[(h%64+64)%64]++
	}
	return v
}

func TestAsksQuantity(t *testing.T) {
	for q, want := range map[string]bool{
		"How many Wikipedia articles remain after filtering?":      true,
		"And what batch size did they use?":                        true,
		"For how many epochs?":                                     true,
		"How long did the biggest model take to train?":            true,
		"What learning rate was used for fine-tuning?":             true,
		"Which loss terms are combined when training the student?": false,
		"What sources make up LLaMA's pre-training data?":          false,
		"How does the model pool its encoder outputs?":             false,
	} {
		if got := asksQuantity(q); got != want {
			t.Errorf("asksQuantity(%q) = %v, want %v", q, got, want)
		}
	}
	for s, want := range map[string]bool{
		"After discarding list pages, we retain 5,075,182 articles.": true,
		"We use a batch size of 16 and train for one epoch.":         true,
		"The dump of English Wikipedia from 2016 is the source.":     false,
		"As shown in Table 2 and Section 3.1, it is better.":         false,
		"BERT (Devlin et al., 2019a) is a pre-trained network.":      false,
		"It has (1) a retriever and (2) a reader of articles.":       false,
	} {
		if got := statesQuantity(s); got != want {
			t.Errorf("statesQuantity(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestExtractivePrefersQuantity checks that a question asking for a number is answered
// with the sentence stating one when the scorer rates it nearly as high as a sentence
// that only names the subject, and that another question keeps the scorer's order.
func TestExtractivePrefersQuantity(t *testing.T) {
	about := "We use the English Wikipedia dump as the knowledge source for all experiments."
	count := "After discarding list and index pages, we retain 5,075,182 articles."
	other := "The reader is a recurrent network trained to find answer spans in paragraphs."
	scores := map[string]float64{about: 0.9, count: 0.8, other: 0.1}
	p := testPipeline(t, Config{Reranker: scoredBy(scores)})
	src := Chunk{ID: "wiki", Name: "drqa", PageStart: 5, Text: about + " " + count + " " + other}
	first := func(q string) string { return splitSentences(p.extractive(t.Context(), q, sourcesOf(src)))[0] }
	if got := first("How many Wikipedia articles remain after filtering?"); !strings.HasPrefix(got, "After discarding") {
		t.Errorf("a question asking for a number starts with %q, want the sentence counting the articles", got)
	}
	if got := first("Which knowledge source does the system read?"); !strings.HasPrefix(got, "We use the English") {
		t.Errorf("a question asking for no number starts with %q, want the scorer's best", got)
	}
}

// TestExtractiveQuotesEveryKeptSource checks that the answering sentence is quoted from
// the last of five kept sources, cited with its number and the page it is on.
func TestExtractiveQuotesEveryKeptSource(t *testing.T) {
	filler := func(id string, page int) Chunk {
		return Chunk{ID: id, Name: "paper", PageStart: page, Text: "The encoder maps an input sequence to continuous representations of every token."}
	}
	last := Chunk{ID: "warmup", Name: "paper", PageStart: 6, PageEnd: 7,
		Text: "Training ran on eight GPUs for twelve hours in total. We used warmup_steps = 4000 for the learning rate schedule of the optimizer."}
	last.PageBreaks = []int{strings.Index(last.Text, "We used")}
	sources := sourcesOf(filler("a", 1), filler("b", 2), filler("c", 3), filler("d", 4), last)
	p := testPipeline(t, Config{})
	got := p.extractive(t.Context(), "How many warmup steps does the learning rate schedule use?", sources)
	if !strings.Contains(got, "warmup_steps = 4000 for the learning rate schedule of the optimizer [5]") {
		t.Fatalf("answer %q does not quote the fifth source's sentence", got)
	}
	if !slices.Equal(sources[4].Pages, []int{7}) {
		t.Errorf("fifth source cited on pages %v, want [7], the page of the quoted sentence", sources[4].Pages)
	}
}

// TestBlendOverlap: a summary sentence the similarity scorer rates a little higher loses to
// the sentence sharing the question's own words, which states the fact.
func TestBlendOverlap(t *testing.T) {
	q := "How many Wikipedia articles does the Document Retriever return for each question?"
	cands := func() []sentence {
		return []sentence{
			{text: "We develop DrQA, a strong system for question answering from Wikipedia.", score: 0.82},
			{text: "The Document Retriever returns 5 Wikipedia articles for each question.", score: 0.78},
			{text: "Training uses 3-layer bidirectional LSTMs with 128 hidden units.", score: 0.40},
		}
	}
	c := cands()
	blendOverlap(q, c, sentenceOverlapWeight)
	if c[1].score <= c[0].score {
		t.Errorf("scores %.3f (summary) and %.3f (fact): the fact should win", c[0].score, c[1].score)
	}
	if c[2].score >= c[1].score {
		t.Errorf("an unrelated sentence scores %.3f, the fact %.3f", c[2].score, c[1].score)
	}
	c = cands()
	blendOverlap(q, c, 0)
	if c[0].score <= c[1].score {
		t.Errorf("without overlap the summary should still win (%.3f vs %.3f): the test no longer shows the problem", c[0].score, c[1].score)
	}
}

// TestExtractiveTableCaption: asked a number a paper gives only in a table, the answer
// quotes the prose and adds the table's caption, cited on the table's page; a question
// asking for no number, or a caption the scorer rates far below the prose, adds none.
func TestExtractiveTableCaption(t *testing.T) {
	prose := "We fine-tune every model on the GLUE benchmark with the same recipe."
	other := "The tokenizer splits words into subword units before training starts."
	caption := "Table 9: Hyperparameters used for fine-tuning on the GLUE benchmark."
	rows := "MNLI 1e-4 32 10 SST-2 2e-4 32 20 MRPC 3e-4 16 30"
	scores := map[string]float64{prose: 0.9, other: 0.1, caption: 0.6}
	p := testPipeline(t, Config{Reranker: scoredBy(scores)})
	text := prose + " " + other + "\n\n" + rows + "\n\n" + caption
	src := Chunk{ID: "glue", Name: "paper", PageStart: 5, PageEnd: 6, Text: text}
	src.PageBreaks = []int{strings.Index(text, rows)}

	sources := sourcesOf(src)
	got := p.extractive(t.Context(), "What learning rate did they use for MRPC?", sources)
	if !strings.Contains(got, "Table 9: Hyperparameters used for fine-tuning on the GLUE benchmark [1].") {
		t.Errorf("numeric question: answer %q does not point at the table", got)
	}
	if !strings.HasPrefix(got, "We fine-tune") {
		t.Errorf("numeric question: answer %q does not start with the prose sentence", got)
	}
	if !slices.Equal(sources[0].Pages, []int{5, 6}) {
		t.Errorf("numeric question: cited on pages %v, want [5 6], the prose's and the table's", sources[0].Pages)
	}

	sources = sourcesOf(src)
	if got := p.extractive(t.Context(), "Which benchmark did they fine-tune on?", sources); strings.Contains(got, "Table 9") {
		t.Errorf("question asking for no number: answer %q quotes a caption", got)
	}

	scores[caption] = 0.2
	sources = sourcesOf(src)
	if got := p.extractive(t.Context(), "What learning rate did they use for MRPC?", sources); strings.Contains(got, "Table 9") {
		t.Errorf("weak caption: answer %q quotes it", got)
	}
}

// TestExtractiveCaptionLeavesProse pins that a table's caption, weak or strong, does not
// change which prose sentences answer: every ranking step rescales between the weakest and
// the best candidate, so a caption scoring under all the prose would otherwise lift the
// weakest sentence off 0 and into the answer.
func TestExtractiveCaptionLeavesProse(t *testing.T) {
	lead := "They tuned the learning rate for MRPC on the development set."
	weak := "The tokenizer splits words into subword units before training starts."
	caption := "Table 9: Hyperparameters used for fine-tuning on the GLUE benchmark."
	scores := map[string]float64{lead: 0.9, weak: 0.5, caption: 0.1}
	p := testPipeline(t, Config{Reranker: scoredBy(scores)})
	const q = "What learning rate did they use for MRPC?"
	answer := func(text string) string {
		c := Chunk{ID: "glue", Name: "paper", PageStart: 5, PageEnd: 5, Text: text}
		if i := strings.Index(text, caption); i > 0 {
			c.PageEnd, c.PageBreaks = 6, []int{i} // the table stands on the next page
		}
		return p.extractive(t.Context(), q, sourcesOf(c))
	}
	without := answer(lead + " " + weak)
	if strings.Contains(without, "tokenizer") {
		t.Fatalf("the weakest sentence %q is answered without a caption: %q", weak, without)
	}
	if got := answer(lead + " " + weak + "\n\n" + caption); got != without {
		t.Errorf("a weak caption changed the answer:\n got %q\nwant %q", got, without)
	}
	scores[caption] = 0.8
	got := answer(lead + " " + weak + "\n\n" + caption)
	if want := without + " Table 9: Hyperparameters used for fine-tuning on the GLUE benchmark [1]."; got != want {
		t.Errorf("a strong caption: answer\n got %q\nwant %q", got, want)
	}
}

func TestIsTableCaption(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"Table 9: Hyperparameters used for fine-tuning on the GLUE benchmark.", true},
		{"Table 3. results of the ablation on the development set of SQuAD.", true},
		{"Figure 2: The model architecture with its two encoder towers.", false},
		{"Table 4: 12 24 768 1024 3072 4096 110M 340M.", false},
		{"Table 5: Results", false},
		{"As Table 5 shows, the larger model wins on every task we tried.", false},
	} {
		if got := isTableCaption(c.s); got != c.want {
			t.Errorf("isTableCaption(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

func TestThreadAsksQuantity(t *testing.T) {
	turns := func(qs ...string) []Turn {
		var h []Turn
		for _, q := range qs {
			h = append(h, Turn{Question: q})
		}
		return h
	}
	for _, c := range []struct {
		history []Turn
		want    bool
	}{
		{nil, false},
		{turns("What accuracy does RoBERTa reach on QNLI?"), true},
		{turns("What accuracy does RoBERTa reach on QNLI?", "and MNLI?"), true},
		{turns("Which objective replaced next sentence prediction in the final RoBERTa configuration?"), false},
		// A question standing on its own sets the thread's topic anew.
		{turns("What accuracy does RoBERTa reach on QNLI?", "Which objective replaced next sentence prediction in the final RoBERTa configuration?"), false},
	} {
		if got := threadAsksQuantity(c.history); got != c.want {
			t.Errorf("threadAsksQuantity(%v) = %v, want %v", c.history, got, c.want)
		}
	}
}

// TestReferencePieces: a reference-list entry split at its periods leaves a title or an
// author list that reads as a sentence; its neighbours (a bare year, a venue) give it away.
// Body text citing a venue in its own sentence stays quotable.
func TestReferencePieces(t *testing.T) {
	text := "We compare against the mnemonic reader on SQuAD. " +
		"Minghao Hu, Yuxing Peng, and Xipeng Qiu. 2017. Reinforced mnemonic reader for machine reading comprehension. arXiv preprint arXiv:1705.02798.\n\n" +
		"Nils Reimers and Iryna Gurevych. 2019. Sentence-BERT: Sentence embeddings using siamese BERT-networks. In Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing."
	spans := sentenceSpans(text)
	pieces := referencePieces(spans)
	got := map[string]bool{}
	for j, s := range spans {
		got[s.text] = pieces[j]
	}
	for s, want := range map[string]bool{
		"We compare against the mnemonic reader on SQuAD.":                                               false,
		"Reinforced mnemonic reader for machine reading comprehension. arXiv preprint arXiv:1705.02798.": true,
		"Nils Reimers and Iryna Gurevych.":                                                               true,
		"Sentence-BERT: Sentence embeddings using siamese BERT-networks.":                                true,
	} {
		if v, ok := got[s]; !ok {
			t.Errorf("sentence %q not split out: %v", s, spans)
		} else if v != want {
			t.Errorf("referencePieces: %q is %v, want %v", s, v, want)
		}
	}
}
