package main

// `footnote ask` end to end with FOOTNOTE_LLM=openai against the real local language
// model (llama.cpp's server with SmolLM2-135M, started by deploy/test.sh and named by
// FOOTNOTE_LLM_TEST_URL), on a BM25 index of a few known documents. Answers are capped at
// a few dozen tokens: CI has two cores.

import (
	"encoding/json"
	"io"
	"maps"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/generate/generatetest"
)

func llmEnv(t *testing.T, baseURL string) map[string]string {
	env := bm25Env(t)
	env["FOOTNOTE_LLM"] = "openai"
	env["OPENAI_BASE_URL"] = baseURL
	env["FOOTNOTE_LLM_MAX_TOKENS"] = "48"
	// Two test packages may queue on the server's one slot.
	env["FOOTNOTE_LLM_FIRST_TOKEN_TIMEOUT"] = "3m"
	return env
}

type askJSON struct {
	Answer           string  `json:"answer"`
	Refused          bool    `json:"refused"`
	Generator        string  `json:"generator"`
	Note             string  `json:"note"`
	Confidence       float64 `json:"confidence"`
	Citations        int     `json:"citations"`
	InvalidCitations int     `json:"invalid_citations"`
	Sources          []struct {
		N     int  `json:"n"`
		Cited bool `json:"cited"`
		Chunk struct {
			Name string `json:"name"`
		} `json:"chunk"`
	} `json:"sources"`
}

func askLLM(t *testing.T, env map[string]string, question string) askJSON {
	t.Helper()
	code, out, errOut := run(t, env, "ask", question, "--json")
	if code != 0 {
		t.Fatalf("ask: exit %d\n%s%s", code, out, errOut)
	}
	var a askJSON
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("ask --json: %v\n%s", err, out)
	}
	return a
}

var markerRE = regexp.MustCompile(`\[(\d+)\]`)

// checkCitations holds whatever the model wrote: a refusal has no sources; otherwise every
// marker left in the text names a listed, cited source, the counts agree with the text,
// and an answer citing nothing has confidence 0.
func checkCitations(t *testing.T, a askJSON) {
	t.Helper()
	if a.Refused {
		if !strings.HasPrefix(a.Answer, rag.Refusal) || len(a.Sources) != 0 {
			t.Errorf("refusal = %q with %d sources, want it to start with %q and cite none", a.Answer, len(a.Sources), rag.Refusal)
		}
		return
	}
	if strings.TrimSpace(a.Answer) == "" {
		t.Fatal("empty answer")
	}
	markers := markerRE.FindAllStringSubmatch(a.Answer, -1)
	for _, m := range markers {
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > len(a.Sources) || !a.Sources[n-1].Cited {
			t.Errorf("marker [%d] in %q names no cited source (%d sources)", n, a.Answer, len(a.Sources))
		}
	}
	if a.Citations != len(markers) {
		t.Errorf("citations = %d, but the text carries %d markers: %q", a.Citations, len(markers), a.Answer)
	}
	cited := 0
	for _, s := range a.Sources {
		if s.Cited {
			cited++
		}
	}
	if a.Confidence < 0 || a.Confidence > 1 || (cited == 0 && a.Confidence != 0) {
		t.Errorf("confidence %.2f with %d cited sources", a.Confidence, cited)
	}
}

func TestAskWithLocalLLM(t *testing.T) {
	url := generatetest.RealServer(t)
	env := llmEnv(t, url)
	if code, out, errOut := run(t, env, "index", docsFolder(t)); code != 0 {
		t.Fatalf("index: exit %d\n%s%s", code, out, errOut)
	}
	a := askLLM(t, env, "What are the two sub-layers of an encoder layer?")
	t.Logf("answer by %s: %q (citations %d, invalid %d, confidence %.2f, note %q)", a.Generator, a.Answer, a.Citations, a.InvalidCitations, a.Confidence, a.Note)
	// The model answered under the name the server lists, or its answer cited nothing its
	// sources support and grounding replaced it with a visible note: a 135M model sometimes
	// echoes the prompt. A timeout, a refused connection or a silent swap fail.
	own := strings.HasPrefix(a.Generator, "openai:") && a.Generator != "openai:gpt-4o-mini" && a.Note == ""
	if !own && !strings.Contains(a.Note, groundingNote) {
		t.Fatalf("generator %q, note %q: want the local model's answer, or grounding's fallback note", a.Generator, a.Note)
	}
	checkCitations(t, a)
	if !a.Refused && (len(a.Sources) == 0 || a.Sources[0].Chunk.Name != "transformer") {
		t.Errorf("sources = %+v, want the transformer document first", a.Sources)
	}

	// The terminal form streams the same kind of answer, then the sources and the footer.
	code, out, errOut := run(t, env, "ask", "What does low-rank adaptation freeze?")
	if code != 0 {
		t.Fatalf("ask: exit %d\n%s%s", code, out, errOut)
	}
	// The answer as streamed; when grounding changed it (a claim dropped, or nothing held and
	// it became the refusal), the checked answer follows it.
	footer := strings.Contains(out, "· openai:")
	checked := strings.Contains(out, "Checked against the sources:\n"+rag.Refusal)
	if strings.Contains(out, "did not answer") || !(footer || checked || strings.Contains(out, groundingNote)) {
		t.Errorf("streamed ask output lacks the local model's footer, grounding's note or the checked refusal:\n%s", out)
	}
	if !own && !footer {
		t.Errorf("neither answer of the local model survived grounding:\n%s", out)
	}
}

// groundingNote is what an answer says when grounding replaced a generated answer that cited
// nothing its sources support (rag.fallbackNote).
const groundingNote = "cited no source that supports it"

// A question that makes the prompt longer than the server's context window: the server
// refuses it, and footnote answers extractively with a note saying why.
func TestAskLLMPromptOverContext(t *testing.T) {
	url := generatetest.RealServer(t)
	env := llmEnv(t, url)
	if code, out, errOut := run(t, env, "index", docsFolder(t)); code != 0 {
		t.Fatalf("index: exit %d\n%s%s", code, out, errOut)
	}
	q := "What are the two sub-layers of an encoder layer? Consider the encoder sub-layers " + strings.Repeat("encoder sub-layers attention ", 3000)
	a := askLLM(t, env, q)
	if a.Generator != "extractive" || !strings.Contains(a.Note, "did not answer") || !strings.Contains(a.Note, "HTTP 400") {
		t.Fatalf("generator %q, note %q: want the extractive fallback with a note naming the server's refusal", a.Generator, a.Note)
	}
	checkCitations(t, a)
	if a.Refused || a.Citations == 0 {
		t.Errorf("fallback answer %q: want a cited extractive answer", a.Answer)
	}
}

// The server is down: the answer falls back to extractive with a note; the command still
// succeeds. Needs no server.
func TestAskLLMServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	env := llmEnv(t, down)
	if code, out, errOut := run(t, env, "index", docsFolder(t)); code != 0 {
		t.Fatalf("index: exit %d\n%s%s", code, out, errOut)
	}
	a := askLLM(t, env, "What are the two sub-layers of an encoder layer?")
	if a.Generator != "extractive" || !strings.Contains(a.Note, "connection refused") {
		t.Fatalf("generator %q, note %q: want the extractive fallback naming the refused connection", a.Generator, a.Note)
	}
	checkCitations(t, a)
	if a.Refused || a.Citations == 0 {
		t.Errorf("fallback answer %q: want a cited extractive answer", a.Answer)
	}
}

// firstWrite records when the first answer text reaches the terminal.
type firstWrite struct {
	start time.Time
	first time.Duration
	buf   strings.Builder
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.first == 0 && len(p) > 0 {
		w.first = time.Since(w.start)
	}
	return w.buf.Write(p)
}

// BenchmarkAskLocalLLM times `footnote ask` on the research-paper corpus answered by the
// local model: time to the first answer text on the terminal and total time, against the
// extractive answer of the same question in the same run (the retrieval floor). It needs
// an indexed data dir, e.g.
//
//	bin/footnote index ../shared/corpus/papers --data-dir /tmp/fn-bench
//	bash deploy/llm.sh start 18181
//	FOOTNOTE_BENCH_DATA_DIR=/tmp/fn-bench FOOTNOTE_LLM_TEST_URL=http://127.0.0.1:18181/v1 \
//	  go test -run '^$' -bench AskLocalLLM -benchtime 5x ./cmd/footnote/
//
// Set FOOTNOTE_EMBEDDERS to what the data dir was indexed with.
func BenchmarkAskLocalLLM(b *testing.B) {
	url := generatetest.RealServer(b)
	data := os.Getenv("FOOTNOTE_BENCH_DATA_DIR")
	if data == "" {
		b.Skip("FOOTNOTE_BENCH_DATA_DIR (an indexed corpus) is not set")
	}
	qs := benchQuestions(b)
	base := map[string]string{
		"FOOTNOTE_DATA_DIR":   data,
		"FOOTNOTE_MODELS_DIR": corpustest.ModelsDir(),
		"FOOTNOTE_EMBEDDERS":  os.Getenv("FOOTNOTE_EMBEDDERS"),
	}
	llm := maps.Clone(base)
	llm["FOOTNOTE_LLM"], llm["OPENAI_BASE_URL"] = "openai", url
	ask := func(env map[string]string, q string) (first, total time.Duration, out string) {
		w := &firstWrite{start: time.Now()}
		a := &app{out: w, errOut: io.Discard, getenv: func(k string) string { return env[k] }}
		root := a.rootCommand()
		root.SetArgs([]string{"ask", q})
		root.SetOut(w)
		if err := root.ExecuteContext(b.Context()); err != nil {
			b.Fatal(err)
		}
		a.close()
		return w.first, time.Since(w.start), w.buf.String()
	}
	var llmFirst, llmTotal, extTotal time.Duration
	fallbacks := 0
	for i := 0; b.Loop(); i++ {
		q := qs[i%len(qs)]
		_, t, _ := ask(base, q)
		extTotal += t
		f, t, out := ask(llm, q)
		llmFirst += f
		llmTotal += t
		if strings.Contains(out, "did not answer") {
			fallbacks++
		}
		if i == 0 {
			b.Logf("%s\n%s(first text after %s, all in %s)", q, out, f.Round(time.Millisecond), t.Round(time.Millisecond))
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(llmFirst.Milliseconds())/n, "llm-first-ms")
	b.ReportMetric(float64(llmTotal.Milliseconds())/n, "llm-total-ms")
	b.ReportMetric(float64(extTotal.Milliseconds())/n, "extractive-total-ms")
	b.ReportMetric(float64(llmTotal)/float64(extTotal), "llm/extractive")
	b.ReportMetric(float64(fallbacks), "fallbacks")
}

func benchQuestions(b *testing.B) []string {
	f, err := os.Open(corpustest.Questions(b))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var qs []string
	dec := json.NewDecoder(f)
	for {
		var q struct {
			Question   string `json:"question"`
			Answerable bool   `json:"answerable"`
		}
		if err := dec.Decode(&q); err != nil {
			break
		}
		if q.Answerable {
			qs = append(qs, q.Question)
		}
	}
	if len(qs) == 0 {
		b.Fatal("no answerable questions")
	}
	return qs
}
