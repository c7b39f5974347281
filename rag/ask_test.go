package rag_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
	"github.com/footnote-dev/footnote/rag/generate"
	"github.com/footnote-dev/footnote/rag/generate/generatetest"
)

// The fakes of this file carry an "ak" prefix so they cannot collide with other test
// files of package rag_test.

// Passages adapted from "Attention Is All You Need" (arXiv 1706.03762).
var (
	akEncoder = rag.Chunk{
		ID: "enc", DocID: "d1", Title: "Attention Is All You Need", Name: "1706.03762",
		Section: []string{"3 Model Architecture", "3.1 Encoder and Decoder Stacks"}, PageStart: 3, PageEnd: 3,
		Text: "Encoder: The encoder is composed of a stack of N = 6 identical layers. Each layer has two sub-layers. The first is a multi-head self-attention mechanism, and the second is a simple, position-wise fully connected feed-forward network. We employ a residual connection [11] around each of the two sub-layers, followed by layer normalization [1].",
	}
	akHeads = rag.Chunk{
		ID: "heads", DocID: "d1", Title: "Attention Is All You Need", Name: "1706.03762",
		Section: []string{"3 Model Architecture", "3.2 Attention", "3.2.2 Multi-Head Attention"}, PageStart: 4, PageEnd: 5,
		Text: "Multi-head attention allows the model to jointly attend to information from different representation subspaces at different positions. In this work we employ h = 8 parallel attention layers, or heads. Due to the reduced dimension of each head, the total computational cost is similar to that of single-head attention with full dimensionality.",
	}
	akTraining = rag.Chunk{
		ID: "train", DocID: "d1", Title: "Attention Is All You Need", Name: "1706.03762",
		Section: []string{"5 Training", "5.1 Training Data and Batching"}, PageStart: 7, PageEnd: 7,
		Text: "We trained on the standard WMT 2014 English-German dataset consisting of about 4.5 million sentence pairs. Sentences were encoded using byte-pair encoding, which has a shared source-target vocabulary of about 37000 tokens.",
	}
	akBERT = rag.Chunk{
		ID: "bert", DocID: "d2", Title: "BERT: Pre-training of Deep Bidirectional Transformers", Name: "1810.04805",
		Section: []string{"3 BERT"}, PageStart: 3, PageEnd: 3,
		Text: "BERT uses a masked language model pre-training objective. The masked language model randomly masks some of the tokens from the input, and the objective is to predict the original vocabulary id of the masked word.",
	}
	akCorpus = []rag.Chunk{akEncoder, akHeads, akTraining, akBERT}
)

// akSearcher returns the corpus in a fixed fused order and counts searches.
type akSearcher struct {
	mu       sync.Mutex
	searches int
}

func (s *akSearcher) Search(_ context.Context, req rag.SearchRequest) ([]rag.Hit, error) {
	s.mu.Lock()
	s.searches++
	s.mu.Unlock()
	hits := make([]rag.Hit, len(akCorpus))
	for i, c := range akCorpus {
		hits[i] = rag.Hit{Chunk: c, Score: 1 / float64(61+i)}
	}
	return hits, nil
}

func (s *akSearcher) Chunks(context.Context, []string) ([]rag.Chunk, error) {
	return nil, rag.ErrNotFound
}

func (s *akSearcher) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.searches
}

// akSparse encodes queries with BM25 statistics of akCorpus, so the evidence gate reads
// realistic document frequencies ("attention" common, "Claude" unseen).
type akSparse struct{}

var akEncoder2 = func() *bm25.QueryEncoder {
	df := map[uint32]int{}
	for _, c := range akCorpus {
		tf, _ := bm25.Count(c.Text)
		for _, i := range tf.Indices {
			df[i]++
		}
	}
	return bm25.NewQueryEncoder(bm25.Params{}, len(akCorpus), df)
}()

func (akSparse) EncodeQuery(text string) rag.SparseVector {
	return akEncoder2.EncodeQuery(text)
}

// akReranker is a deterministic stand-in for a cross-encoder: the probability is the
// share of the query's content words found in the passage. It records the queries.
type akReranker struct {
	mu      sync.Mutex
	queries []string
}

var akStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields("what are the of an a is does do how many it its use in and to which for was were by with this that there much") {
		akStop[w] = true
	}
}

func akTerms(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
		if akStop[w] {
			continue
		}
		m[strings.TrimSuffix(w, "s")] = true
	}
	return m
}

func (r *akReranker) Score(_ context.Context, query string, passages []string) ([]float64, error) {
	r.mu.Lock()
	r.queries = append(r.queries, query)
	r.mu.Unlock()
	q := akTerms(query)
	out := make([]float64, len(passages))
	for i, p := range passages {
		pt := akTerms(p)
		n := 0
		for t := range q {
			if pt[t] {
				n++
			}
		}
		if len(q) > 0 {
			out[i] = float64(n) / float64(len(q))
		}
	}
	return out, nil
}

func (r *akReranker) firstQuery() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queries) == 0 {
		return ""
	}
	return r.queries[0]
}

type akEnv struct {
	p        *rag.Pipeline
	searcher *akSearcher
	reranker *akReranker
}

func akPipeline(t *testing.T, gen rag.Generator) akEnv {
	t.Helper()
	env := akEnv{searcher: &akSearcher{}, reranker: &akReranker{}}
	p, err := rag.New(rag.Config{
		Searcher:  env.searcher,
		Sparse:    func(context.Context) (rag.SparseEncoder, error) { return akSparse{}, nil },
		Reranker:  env.reranker,
		Generator: gen,
	})
	if err != nil {
		t.Fatal(err)
	}
	env.p = p
	return env
}

// akAsk asks and returns the answer and the concatenated stream.
func akAsk(t *testing.T, p *rag.Pipeline, q rag.Question) (rag.Answer, string) {
	t.Helper()
	var streamed strings.Builder
	ans, err := p.Ask(t.Context(), q, func(d string) error {
		streamed.WriteString(d)
		return nil
	})
	if err != nil {
		t.Fatalf("Ask(%q): %v", q.Text, err)
	}
	return ans, streamed.String()
}

var akMarker = regexp.MustCompile(`\[(\d+)\]`)

// checkCitations verifies an answer's citations point at real, cited sources numbered
// 1..n in citation order, that the uncited sources follow, and that counts agree.
func checkCitations(t *testing.T, ans rag.Answer) {
	t.Helper()
	next := 1
	markers := 0
	for _, m := range akMarker.FindAllStringSubmatch(ans.Text, -1) {
		markers++
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > len(ans.Sources) {
			t.Errorf("answer cites [%d] with %d sources: %q", n, len(ans.Sources), ans.Text)
			continue
		}
		if !ans.Sources[n-1].Cited {
			t.Errorf("answer cites [%d], which is marked uncited", n)
		}
		if n > next {
			t.Errorf("[%d] cited before [%d]: sources are not in citation order", n, next)
		}
		if n == next {
			next++
		}
	}
	if markers != ans.Citations {
		t.Errorf("Citations = %d, but the text has %d markers", ans.Citations, markers)
	}
	seenUncited := false
	for i, s := range ans.Sources {
		if s.N != i+1 {
			t.Errorf("source %d numbered %d", i, s.N)
		}
		if s.Excerpt == "" || !strings.Contains(s.Chunk.Text, strings.Fields(strings.Trim(s.Excerpt, "… "))[0]) {
			t.Errorf("source %d excerpt %q not from its chunk", s.N, s.Excerpt)
		}
		if !s.Cited {
			seenUncited = true
		} else if seenUncited {
			t.Errorf("cited source %d after an uncited one", s.N)
		}
	}
	if ans.Confidence < 0 || ans.Confidence > 1 {
		t.Errorf("confidence %v outside [0, 1]", ans.Confidence)
	}
}

func TestAskExtractive(t *testing.T) {
	env := akPipeline(t, nil)
	ans, streamed := akAsk(t, env.p, rag.Question{Text: "What are the two sub-layers of an encoder layer?"})
	if ans.Refused {
		t.Fatalf("refused: %+v", ans)
	}
	if ans.Generator != rag.GeneratorExtractive || ans.Method != "hybrid" {
		t.Errorf("generator, method = %q, %q", ans.Generator, ans.Method)
	}
	if !strings.Contains(ans.Text, "Each layer has two sub-layers. The first is a multi-head self-attention mechanism, and the second is a simple, position-wise fully connected feed-forward network [1].") {
		t.Errorf("answer %q lacks the answering sentence", ans.Text)
	}
	if streamed != ans.Text {
		t.Errorf("streamed %q, answer %q", streamed, ans.Text)
	}
	if len(ans.Sources) == 0 || ans.Sources[0].Chunk.ID != "enc" || !ans.Sources[0].Cited {
		t.Fatalf("sources = %+v, want the encoder passage cited first", ans.Sources)
	}
	if ans.Sources[0].Score != 1 {
		t.Errorf("source score %v, want the reranker's 1", ans.Sources[0].Score)
	}
	if strings.Contains(ans.Text, "[11]") || ans.InvalidCitations != 0 {
		t.Errorf("the paper's own reference numbers leaked: %q (%d invalid)", ans.Text, ans.InvalidCitations)
	}
	checkCitations(t, ans)
	if ans.Confidence < 0.8 {
		t.Errorf("confidence %v for a fully supported answer", ans.Confidence)
	}
	// The cut kept only the encoder passage; the rest backs "More sources".
	if len(ans.More) == 0 {
		t.Error("no More sources")
	}
	for i, m := range ans.More {
		if m.Chunk.ID == "enc" || m.Cited || m.N != len(ans.Sources)+i+1 {
			t.Errorf("more[%d] = %s cited=%v n=%d", i, m.Chunk.ID, m.Cited, m.N)
		}
	}
	if ans.Timings.Total <= 0 || ans.Timings.Generate <= 0 || ans.Timings.Total < ans.Timings.Generate {
		t.Errorf("timings %+v", ans.Timings)
	}
}

func TestAskRefusesWithoutEvidence(t *testing.T) {
	srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{"Paris is the capital [1]."}}))
	ol, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m"})
	for _, gen := range []rag.Generator{nil, ol} {
		env := akPipeline(t, gen)
		ans, streamed := akAsk(t, env.p, rag.Question{Text: "What is the capital of France?"})
		if !ans.Refused || ans.Text != rag.Refusal || len(ans.Sources) != 0 || len(ans.More) != 0 {
			t.Errorf("answer = %+v, want a refusal without sources", ans)
		}
		if streamed != rag.Refusal {
			t.Errorf("streamed %q, want the refusal", streamed)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the generator was asked %d times without evidence", n)
	}
}

// akGenerators returns both real generators pointed at a fake server.
func akGenerators(t *testing.T, srv *generatetest.Server, timeout time.Duration) []rag.Generator {
	t.Helper()
	ol, err := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	oa, err := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: srv.OpenAIBaseURL(), Model: "m", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return []rag.Generator{ol, oa}
}

const akHeadsQ = "How many heads does multi-head attention use, and what does each layer of the encoder have?"

func TestAskGeneratorStreams(t *testing.T) {
	// Prompt sources by rerank order: [1] encoder, [2] heads. The model cites [2] first,
	// then an invalid [7], and a range.
	srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{
		"Multi-head attention uses 8 heads [", "2]. Each encoder layer has two sub-layers [1",
		"] [7]. Both are parts of the model architecture [1-2].",
	}}))
	for _, gen := range akGenerators(t, srv, 0) {
		t.Run(gen.Name(), func(t *testing.T) {
			env := akPipeline(t, gen)
			ans, streamed := akAsk(t, env.p, rag.Question{Text: akHeadsQ})
			// [2] is cited first and becomes [1]; [7] is dropped with its space.
			want := "Multi-head attention uses 8 heads [1]. Each encoder layer has two sub-layers [2]. Both are parts of the model architecture [1][2]."
			if ans.Text != want {
				t.Errorf("text %q\nwant %q", ans.Text, want)
			}
			if streamed != ans.Text {
				t.Errorf("streamed %q, answer %q", streamed, ans.Text)
			}
			if ans.Generator != gen.Name() || ans.Note != "" {
				t.Errorf("generator %q note %q", ans.Generator, ans.Note)
			}
			if ans.Citations != 4 || ans.InvalidCitations != 1 {
				t.Errorf("citations %d invalid %d, want 4 and 1", ans.Citations, ans.InvalidCitations)
			}
			if len(ans.Sources) < 2 || ans.Sources[0].Chunk.ID != "heads" || ans.Sources[1].Chunk.ID != "enc" {
				t.Fatalf("sources %+v, want heads (prompt [2]) then encoder (prompt [1])", ans.Sources)
			}
			checkCitations(t, ans)
		})
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d generator requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if len(r.Messages) != 2 || r.Messages[0].Role != "system" || !strings.Contains(r.Messages[0].Content, rag.Refusal) {
			t.Fatalf("messages %+v lack the system prompt", r.Messages)
		}
		user := r.Messages[1].Content
		for _, s := range []string{`<source id="1">`, `<source id="2">`, "3.2.2 Multi-Head Attention", "pages: 4-5", "Question: " + akHeadsQ} {
			if !strings.Contains(user, s) {
				t.Errorf("prompt lacks %q:\n%s", s, user)
			}
		}
		if strings.Contains(user, "[11]") {
			t.Error("prompt keeps the paper's own reference numbers")
		}
	}
}

func TestAskFallsBackToExtractive(t *testing.T) {
	hang := generatetest.New(t, generatetest.Static(generatetest.Reply{Hang: true}))
	partial := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{"Each encoder"}, Hang: true}))
	fail := generatetest.New(t, generatetest.Static(generatetest.Reply{Status: http.StatusInternalServerError, Error: "out of memory"}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	cases := []struct {
		name    string
		url     string
		timeout time.Duration
		reason  string
		partial bool
	}{
		{"timeout", hang.URL, 300 * time.Millisecond, "timeout", false},
		{"timeout after partial text", partial.URL, 300 * time.Millisecond, "timeout", true},
		{"500", fail.URL, 0, "HTTP 500", false},
		{"connection refused", refused, 0, "connection refused", false},
	}
	for _, c := range cases {
		ol, _ := generate.NewOllama(generate.OllamaConfig{Host: c.url, Model: "m", Timeout: c.timeout})
		oa, _ := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: c.url + "/v1", Model: "m", Timeout: c.timeout})
		for _, gen := range []rag.Generator{ol, oa} {
			t.Run(c.name+"/"+gen.Name(), func(t *testing.T) {
				env := akPipeline(t, gen)
				ans, streamed := akAsk(t, env.p, rag.Question{Text: "What are the two sub-layers of an encoder layer?"})
				wantNote := "The language model did not answer (" + c.reason + "); showing an extractive answer."
				if ans.Note != wantNote {
					t.Errorf("note %q, want %q", ans.Note, wantNote)
				}
				if ans.Generator != rag.GeneratorExtractive || ans.Refused {
					t.Errorf("generator %q refused %v", ans.Generator, ans.Refused)
				}
				if !strings.Contains(ans.Text, "Each layer has two sub-layers. The first is a multi-head self-attention mechanism, and the second is a simple, position-wise fully connected feed-forward network [1].") {
					t.Errorf("answer %q is not the extractive one", ans.Text)
				}
				if c.partial {
					if want := "Each encoder\n\n" + ans.Text; streamed != want {
						t.Errorf("streamed %q, want the partial text, a break, then %q", streamed, ans.Text)
					}
				} else if streamed != ans.Text {
					t.Errorf("streamed %q, answer %q", streamed, ans.Text)
				}
				checkCitations(t, ans)
			})
		}
	}
}

func TestAskModelRefusal(t *testing.T) {
	cases := []struct {
		name    string
		deltas  []string
		refused bool
	}{
		{"exact sentence", []string{"Not found", " in indexed", " documents."}, true},
		{"empty reply", []string{" ", "\n"}, true},
		{"exact sentence without period", []string{"Not found in indexed documents"}, true},
		{"exact sentence then chatter", []string{"Not found in indexed documents. The sources discuss other things."}, true},
		{"insufficient in other words", []string{"The provided context is insufficient to answer this question."}, true},
		{"does not mention", []string{"The sources do not mention the number of layers."}, true},
		{"grounded partial answer", []string{"The sources do not mention training time, but the encoder has two sub-layers [2]."}, false},
		{"starts like the refusal", []string{"Not only the encoder but also the decoder has sub-layers [2]."}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: c.deltas}))
			gen, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m"})
			env := akPipeline(t, gen)
			ans, streamed := akAsk(t, env.p, rag.Question{Text: akHeadsQ})
			if ans.Refused != c.refused {
				t.Fatalf("refused = %v, want %v (text %q)", ans.Refused, c.refused, ans.Text)
			}
			if c.refused {
				if ans.Text != rag.Refusal || len(ans.Sources) != 0 || ans.Citations != 0 {
					t.Errorf("refusal answer %+v", ans)
				}
				if (strings.HasPrefix(c.deltas[0], "Not found") || strings.TrimSpace(c.deltas[0]) == "") && streamed != rag.Refusal {
					t.Errorf("streamed %q, want exactly the refusal", streamed)
				}
				return
			}
			if streamed != ans.Text {
				t.Errorf("streamed %q, answer %q", streamed, ans.Text)
			}
			checkCitations(t, ans)
		})
	}
}

var akHistory = []rag.Turn{{
	Question: "What is multi-head attention in the Transformer?",
	Answer:   "Multi-head attention lets the model attend to several representation subspaces [1].",
	Sources:  []rag.Source{{N: 1, Chunk: akHeads, Score: 0.9, Cited: true}},
}}

func TestAskFollowUpRule(t *testing.T) {
	env := akPipeline(t, nil)
	ans, _ := akAsk(t, env.p, rag.Question{Text: "and how many heads does it use?", History: akHistory})
	want := "and how many heads does it use? multi-head attention Transformer"
	if ans.Query != want {
		t.Errorf("query %q, want %q", ans.Query, want)
	}
	if got := env.reranker.firstQuery(); got != want {
		t.Errorf("retrieval searched %q, want the condensed query", got)
	}
	if ans.Refused || !strings.Contains(ans.Text, "h = 8 parallel attention layers, or heads") {
		t.Errorf("answer %q does not answer the follow-up", ans.Text)
	}
	checkCitations(t, ans)
}

func TestAskFollowUpLLM(t *testing.T) {
	rewritten := "How many heads does multi-head attention in the Transformer use?"
	srv := generatetest.New(t, func(r generatetest.Request) generatetest.Reply {
		if strings.HasPrefix(r.Messages[0].Content, "Rewrite") {
			return generatetest.Reply{Deltas: []string{"Standalone question: ", rewritten}}
		}
		return generatetest.Reply{Deltas: []string{"It uses 8 heads [1]."}}
	})
	for _, gen := range akGenerators(t, srv, 0) {
		t.Run(gen.Name(), func(t *testing.T) {
			env := akPipeline(t, gen)
			ans, _ := akAsk(t, env.p, rag.Question{Text: "and how many heads does it use?", History: akHistory})
			if ans.Query != rewritten {
				t.Errorf("query %q, want the model's rewrite", ans.Query)
			}
			if got := env.reranker.firstQuery(); got != rewritten {
				t.Errorf("retrieval searched %q", got)
			}
			if ans.Text != "It uses 8 heads [1]." || !ans.Sources[0].Cited {
				t.Errorf("answer %q sources %+v", ans.Text, ans.Sources)
			}
			if ans.Timings.Condense <= 0 {
				t.Error("no condense time")
			}
		})
	}
	// The condense prompt carries the conversation.
	cond := srv.Requests()[0].Messages[1].Content
	if !strings.Contains(cond, akHistory[0].Question) || !strings.Contains(cond, "and how many heads does it use?") {
		t.Errorf("condense prompt lacks the conversation:\n%s", cond)
	}
}

// TestAskFollowUpLLMDown: when the model fails while condensing, the rule condenses, the
// model is not asked again, and the answer is extractive with a note.
func TestAskFollowUpLLMDown(t *testing.T) {
	srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Status: http.StatusInternalServerError, Error: "boom"}))
	gen, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m"})
	env := akPipeline(t, gen)
	ans, _ := akAsk(t, env.p, rag.Question{Text: "and how many heads does it use?", History: akHistory})
	if want := "and how many heads does it use? multi-head attention Transformer"; ans.Query != want {
		t.Errorf("query %q, want the rule's %q", ans.Query, want)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d generator requests, want 1", n)
	}
	if ans.Generator != rag.GeneratorExtractive || !strings.Contains(ans.Note, "HTTP 500") {
		t.Errorf("generator %q note %q", ans.Generator, ans.Note)
	}
}

// TestAskHistorySources: sources cited by earlier turns are offered to the generator and
// listed when the answer cites them.
func TestAskHistorySources(t *testing.T) {
	history := []rag.Turn{{
		Question: "What data was the Transformer trained on?",
		Answer:   "WMT 2014 English-German [1].",
		Sources:  []rag.Source{{N: 1, Chunk: akTraining, Score: 0.8, Cited: true}},
	}}
	// Evidence for this question: the encoder passage only (prompt [1]); the history
	// source is prompt [2].
	// (The question names nothing the fake corpus lacks, which the evidence gate would refuse.)
	q := "What are the two sub-layers of an encoder layer?"
	srv := generatetest.New(t, func(r generatetest.Request) generatetest.Reply {
		if strings.HasPrefix(r.Messages[0].Content, "Rewrite") {
			return generatetest.Reply{Deltas: []string{q}}
		}
		return generatetest.Reply{Deltas: []string{"It was trained on WMT 2014 data [2], and each encoder layer has two sub-layers [1]."}}
	})
	gen, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m"})
	env := akPipeline(t, gen)
	ans, _ := akAsk(t, env.p, rag.Question{Text: q, History: history})
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d generator requests, want condense and answer", len(reqs))
	}
	prompt := reqs[1].Messages[1].Content
	if !strings.Contains(prompt, `<source id="2">`) || !strings.Contains(prompt, "WMT 2014") {
		t.Fatalf("prompt lacks the earlier turn's source:\n%s", prompt)
	}
	if len(ans.Sources) != 2 || ans.Sources[0].Chunk.ID != "train" || ans.Sources[1].Chunk.ID != "enc" {
		t.Fatalf("sources %+v, want train then enc", ans.Sources)
	}
	if ans.Text != "It was trained on WMT 2014 data [1], and each encoder layer has two sub-layers [2]." {
		t.Errorf("text %q", ans.Text)
	}
	checkCitations(t, ans)
}

func TestAskSelectedText(t *testing.T) {
	passage := "Self-attention, sometimes called intra-attention, is an attention mechanism relating different positions of a single sequence in order to compute a representation of the sequence. Self-attention has been used successfully in a variety of tasks including reading comprehension and abstractive summarization."
	t.Run("extractive", func(t *testing.T) {
		env := akPipeline(t, nil)
		ans, streamed := akAsk(t, env.p, rag.Question{Text: "What is self-attention?", Selected: passage})
		if env.searcher.count() != 0 {
			t.Errorf("%d searches in selected-text mode", env.searcher.count())
		}
		if ans.Method != rag.MethodSelected || ans.Refused {
			t.Errorf("method %q refused %v", ans.Method, ans.Refused)
		}
		if len(ans.Sources) != 1 || ans.Sources[0].Chunk.Text != passage || !ans.Sources[0].Cited || ans.Sources[0].N != 1 {
			t.Fatalf("sources %+v, want the passage as [1]", ans.Sources)
		}
		if !strings.Contains(ans.Text, "Self-attention, sometimes called intra-attention, is an attention mechanism") {
			t.Errorf("answer %q", ans.Text)
		}
		for _, m := range akMarker.FindAllString(ans.Text, -1) {
			if m != "[1]" {
				t.Errorf("answer cites %s", m)
			}
		}
		if streamed != ans.Text {
			t.Errorf("streamed %q", streamed)
		}
	})
	t.Run("generator", func(t *testing.T) {
		srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{"It relates positions of one sequence [1]."}}))
		gen, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m"})
		env := akPipeline(t, gen)
		ans, _ := akAsk(t, env.p, rag.Question{Text: "What is self-attention?", Selected: passage, History: akHistory})
		if env.searcher.count() != 0 {
			t.Errorf("%d searches in selected-text mode", env.searcher.count())
		}
		prompt := srv.Requests()[0].Messages[1].Content
		if !strings.Contains(prompt, `<source id="1">`) || strings.Contains(prompt, `<source id="2">`) || !strings.Contains(prompt, "intra-attention") {
			t.Errorf("prompt is not about the passage only:\n%s", prompt)
		}
		if ans.Text != "It relates positions of one sequence [1]." || len(ans.Sources) != 1 {
			t.Errorf("answer %+v", ans)
		}
	})
}

func TestAskCallbackError(t *testing.T) {
	stop := errors.New("client gone")
	srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{"Each layer has ", "two sub-layers [1]."}}))
	ol, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m"})
	for _, gen := range []rag.Generator{nil, ol} {
		env := akPipeline(t, gen)
		_, err := env.p.Ask(t.Context(), rag.Question{Text: "What are the two sub-layers of an encoder layer?"}, func(string) error { return stop })
		if !errors.Is(err, stop) {
			t.Errorf("generator %v: err = %v, want the callback's", gen, err)
		}
	}
}

func TestAskEmptyQuestion(t *testing.T) {
	env := akPipeline(t, nil)
	if _, err := env.p.Ask(t.Context(), rag.Question{Text: "  "}, nil); err == nil {
		t.Error("no error for an empty question")
	}
}

// BenchmarkAskExtractive measures the pipeline's own cost around fake retrieval: condense,
// cut, sentence scoring, composition, citation validation and excerpts.
func BenchmarkAskExtractive(b *testing.B) {
	env := akEnv{searcher: &akSearcher{}, reranker: &akReranker{}}
	p, err := rag.New(rag.Config{
		Searcher: env.searcher,
		Sparse:   func(context.Context) (rag.SparseEncoder, error) { return akSparse{}, nil },
		Reranker: env.reranker,
	})
	if err != nil {
		b.Fatal(err)
	}
	q := rag.Question{Text: "and how many heads does it use?", History: akHistory}
	for b.Loop() {
		if _, err := p.Ask(b.Context(), q, nil); err != nil {
			b.Fatal(err)
		}
	}
}
