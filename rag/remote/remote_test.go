package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/rag"
)

var (
	_ rag.Embedder = (*OpenAI)(nil)
	_ rag.Embedder = (*Ollama)(nil)
)

// vectorOf is the fake servers' embedding: dim values derived from the text, so a test can
// tell which text a vector belongs to.
func vectorOf(text string, dim int) []float32 {
	v := make([]float32, dim)
	v[0] = float32(len(text))
	for i := 1; i < dim; i++ {
		v[i] = float32(i)
	}
	return v
}

// fakeAPI is an httptest server that scripts its responses: each request takes the next
// reply (status, Retry-After) while there are any, then succeeds.
type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	auth   []string
	fail   []failure
}

type failure struct {
	status     int
	retryAfter string
	body       string
}

func (f *fakeAPI) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

// record records the request and returns the scripted failure, if any is left.
func (f *fakeAPI) record(r *http.Request) (map[string]any, *failure) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("request body: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bodies = append(f.bodies, body)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	if len(f.fail) == 0 {
		return body, nil
	}
	fl := f.fail[0]
	f.fail = f.fail[1:]
	return body, &fl
}

func writeFailure(w http.ResponseWriter, fl *failure) {
	if fl.retryAfter != "" {
		w.Header().Set("Retry-After", fl.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(fl.status)
	fmt.Fprint(w, fl.body)
}

func inputStrings(v any) []string {
	var out []string
	switch v := v.(type) {
	case []any:
		for _, s := range v {
			out = append(out, s.(string))
		}
	case string:
		out = append(out, v)
	}
	return out
}

// newOpenAIServer speaks POST /v1/embeddings as OpenAI documents it, returning the data
// in reverse order (the index field, not the position, says which input a vector is for).
func newOpenAIServer(t *testing.T, dim int, fail ...failure) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, fail: fail}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		body, fl := f.record(r)
		if fl != nil {
			writeFailure(w, fl)
			return
		}
		inputs := inputStrings(body["input"])
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		d := dim
		if n, ok := body["dimensions"].(float64); ok {
			d = int(n)
		}
		var data []datum
		for i := len(inputs) - 1; i >= 0; i-- {
			data = append(data, datum{"embedding", i, vectorOf(inputs[i], d)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"object": "list", "data": data, "model": body["model"],
			"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1},
		})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func newOpenAI(t *testing.T, f *fakeAPI, cfg OpenAIConfig) *OpenAI {
	t.Helper()
	cfg.BaseURL = f.srv.URL + "/v1"
	cfg.APIKey = "sk-test"
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 5 * time.Millisecond
	}
	o, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatalf("NewOpenAI: %v", err)
	}
	return o
}

func TestOpenAIInfo(t *testing.T) {
	tests := []struct {
		cfg     OpenAIConfig
		want    rag.ModelInfo
		wantErr string
	}{
		{OpenAIConfig{}, rag.ModelInfo{Name: "openai_text_embedding_3_small", Dim: 1536, Metric: rag.Cosine}, ""},
		{OpenAIConfig{Model: "text-embedding-3-large"}, rag.ModelInfo{Name: "openai_text_embedding_3_large", Dim: 3072, Metric: rag.Cosine}, ""},
		{OpenAIConfig{Dim: 256}, rag.ModelInfo{Name: "openai_text_embedding_3_small_256", Dim: 256, Metric: rag.Cosine}, ""},
		{OpenAIConfig{Model: "my-embed", Dim: 8}, rag.ModelInfo{Name: "openai_my_embed", Dim: 8, Metric: rag.Cosine}, ""},
		{OpenAIConfig{Model: "my-embed"}, rag.ModelInfo{}, "set its dimension"},
		{OpenAIConfig{Dim: 2000}, rag.ModelInfo{}, "has 1536 dimensions"},
		{OpenAIConfig{Model: "text-embedding-ada-002", Dim: 512}, rag.ModelInfo{}, "cannot shorten"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.cfg.Model, tt.cfg.Dim), func(t *testing.T) {
			o, err := NewOpenAI(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewOpenAI: %v", err)
			}
			if diff := cmp.Diff(tt.want, o.Info()); diff != "" {
				t.Errorf("Info (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAIBatchesAndOrders(t *testing.T) {
	f := newOpenAIServer(t, 4)
	o := newOpenAI(t, f, OpenAIConfig{Model: "test-embed", Dim: 4})
	texts := make([]string, 250)
	for i := range texts {
		texts[i] = strings.Repeat("x", i+1)
	}
	texts[7] = "" // the API rejects empty inputs; the embedder sends a space
	vs, err := o.EmbedDocuments(t.Context(), texts)
	if err != nil {
		t.Fatalf("EmbedDocuments: %v", err)
	}
	if len(vs) != len(texts) {
		t.Fatalf("got %d vectors, want %d", len(vs), len(texts))
	}
	for i, v := range vs {
		want := len(texts[i])
		if i == 7 {
			want = 1
		}
		if int(v[0]) != want {
			t.Fatalf("vector %d belongs to a text of length %v, want %d", i, v[0], want)
		}
	}
	reqs := f.requests()
	var sizes []int
	for _, r := range reqs {
		sizes = append(sizes, len(inputStrings(r["input"])))
		if r["model"] != "test-embed" || r["encoding_format"] != "float" {
			t.Errorf("request model %v format %v", r["model"], r["encoding_format"])
		}
		if _, ok := r["dimensions"]; ok {
			t.Errorf("dimensions sent for a native-size model: %v", r["dimensions"])
		}
	}
	if diff := cmp.Diff([]int{100, 100, 50}, sizes); diff != "" {
		t.Errorf("batch sizes (-want +got):\n%s", diff)
	}
	if f.auth[0] != "Bearer sk-test" {
		t.Errorf("Authorization = %q", f.auth[0])
	}
}

func TestOpenAIQueryAndDimensions(t *testing.T) {
	f := newOpenAIServer(t, 1536)
	o := newOpenAI(t, f, OpenAIConfig{Dim: 256})
	v, err := o.EmbedQuery(t.Context(), "what is attention")
	if err != nil {
		t.Fatalf("EmbedQuery: %v", err)
	}
	if len(v) != 256 || v[0] != float32(len("what is attention")) {
		t.Errorf("vector len %d first %v", len(v), v[0])
	}
	req := f.requests()[0]
	if req["dimensions"] != float64(256) || req["model"] != "text-embedding-3-small" {
		t.Errorf("request %v, want model text-embedding-3-small dimensions 256", req)
	}
}

func TestOpenAIWrongDimension(t *testing.T) {
	f := newOpenAIServer(t, 3)
	o := newOpenAI(t, f, OpenAIConfig{Model: "test-embed", Dim: 4})
	if _, err := o.EmbedQuery(t.Context(), "q"); err == nil || !strings.Contains(err.Error(), "returned 3 dimensions, want 4") {
		t.Errorf("err = %v, want a dimension error", err)
	}
}

const rateLimited = `{"error":{"message":"Rate limit reached for text-embedding-3-small","type":"requests","param":null,"code":"rate_limit_exceeded"}}`

func TestOpenAIRetriesRateLimit(t *testing.T) {
	f := newOpenAIServer(t, 4, failure{status: 429, retryAfter: "1", body: rateLimited})
	o := newOpenAI(t, f, OpenAIConfig{Model: "test-embed", Dim: 4})
	start := time.Now()
	v, err := o.EmbedQuery(t.Context(), "attention")
	if err != nil {
		t.Fatalf("EmbedQuery after one 429: %v", err)
	}
	if v[0] != 9 {
		t.Errorf("vector %v", v)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	// The backoff alone is at most 5ms here; the wait comes from Retry-After: 1.
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Errorf("retried after %v, want Retry-After's 1s honoured", el)
	}
}

func TestOpenAIServerErrorExhaustsRetries(t *testing.T) {
	boom := failure{status: 500, body: `{"error":{"message":"The server had an error","type":"server_error"}}`}
	f := newOpenAIServer(t, 4, boom, boom, boom, boom)
	o := newOpenAI(t, f, OpenAIConfig{Model: "test-embed", Dim: 4, MaxRetries: 2})
	_, err := o.EmbedDocuments(t.Context(), []string{"a", "b"})
	if err == nil {
		t.Fatal("no error after three 500s")
	}
	for _, want := range []string{"HTTP 500", "The server had an error", "gave up after 3 attempts", "embed texts 1-2 of 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (1 + MaxRetries)", n)
	}
}

func TestOpenAIClientErrorNotRetried(t *testing.T) {
	f := newOpenAIServer(t, 4, failure{status: 401, body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`})
	o := newOpenAI(t, f, OpenAIConfig{Model: "test-embed", Dim: 4})
	_, err := o.EmbedQuery(t.Context(), "q")
	if err == nil || !strings.Contains(err.Error(), "HTTP 401: Incorrect API key provided") {
		t.Errorf("err = %v", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests, want 1: a 401 is not retried", n)
	}
}

func TestOpenAIDeadlineDuringBackoff(t *testing.T) {
	f := newOpenAIServer(t, 4, failure{status: 429, retryAfter: "30", body: rateLimited})
	o := newOpenAI(t, f, OpenAIConfig{Model: "test-embed", Dim: 4})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := o.EmbedQuery(ctx, "q")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("waited %v despite the deadline", el)
	}
}

func TestOpenAITransportErrorRetried(t *testing.T) {
	f := newOpenAIServer(t, 4)
	url := f.srv.URL
	f.srv.Close() // nothing listens: every attempt is a connection error
	o, err := NewOpenAI(OpenAIConfig{BaseURL: url + "/v1", Model: "test-embed", Dim: 4, MaxRetries: 1, MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.EmbedQuery(t.Context(), "q")
	if err == nil || !strings.Contains(err.Error(), "gave up after 2 attempts") {
		t.Errorf("err = %v, want a retried connection error", err)
	}
}

// newOllamaServer speaks POST /api/embed as Ollama documents it.
func newOllamaServer(t *testing.T, dim int, fail ...failure) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, fail: fail}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/embed", func(w http.ResponseWriter, r *http.Request) {
		body, fl := f.record(r)
		if fl != nil {
			writeFailure(w, fl)
			return
		}
		var embs [][]float32
		for _, in := range inputStrings(body["input"]) {
			embs = append(embs, vectorOf(in, dim))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"model": body["model"], "embeddings": embs})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func newOllama(t *testing.T, f *fakeAPI, cfg OllamaConfig) *Ollama {
	t.Helper()
	cfg.Host = strings.TrimPrefix(f.srv.URL, "http://") // as OLLAMA_HOST is often given
	cfg.MinBackoff, cfg.MaxBackoff = time.Millisecond, 5*time.Millisecond
	o, err := NewOllama(t.Context(), cfg)
	if err != nil {
		t.Fatalf("NewOllama: %v", err)
	}
	return o
}

func TestOllamaProbesDimensionAndPrefixes(t *testing.T) {
	f := newOllamaServer(t, 768)
	o := newOllama(t, f, OllamaConfig{})
	want := rag.ModelInfo{Name: "ollama_nomic_embed_text", Dim: 768, Metric: rag.Cosine}
	if diff := cmp.Diff(want, o.Info()); diff != "" {
		t.Errorf("Info (-want +got):\n%s", diff)
	}
	if _, err := o.EmbedQuery(t.Context(), "what is LoRA"); err != nil {
		t.Fatalf("EmbedQuery: %v", err)
	}
	if _, err := o.EmbedDocuments(t.Context(), []string{"LoRA freezes the weights"}); err != nil {
		t.Fatalf("EmbedDocuments: %v", err)
	}
	var inputs []string
	for _, r := range f.requests() {
		if r["model"] != "nomic-embed-text" {
			t.Errorf("model %v", r["model"])
		}
		inputs = append(inputs, inputStrings(r["input"])...)
	}
	wantInputs := []string{"search_query: dimension probe", "search_query: what is LoRA", "search_document: LoRA freezes the weights"}
	if diff := cmp.Diff(wantInputs, inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
}

func TestOllamaBatches(t *testing.T) {
	f := newOllamaServer(t, 3)
	o := newOllama(t, f, OllamaConfig{Model: "all-minilm:latest", Dim: 3, BatchSize: 2})
	if o.Info().Name != "ollama_all_minilm" {
		t.Errorf("name %q", o.Info().Name)
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vs, err := o.EmbedDocuments(t.Context(), texts)
	if err != nil {
		t.Fatalf("EmbedDocuments: %v", err)
	}
	for i, v := range vs {
		if int(v[0]) != len(texts[i]) { // no prefix for this model
			t.Errorf("vector %d first %v, want %d", i, v[0], len(texts[i]))
		}
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (no probe with Dim set, batches of 2)", n)
	}
}

func TestOllamaRetriesWhileLoading(t *testing.T) {
	f := newOllamaServer(t, 3, failure{status: 503, body: `{"error":"server busy, please try again. maximum pending requests exceeded"}`})
	o := newOllama(t, f, OllamaConfig{Model: "m", Dim: 3})
	if _, err := o.EmbedQuery(t.Context(), "q"); err != nil {
		t.Fatalf("EmbedQuery after one 503: %v", err)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestOllamaErrors(t *testing.T) {
	boom := failure{status: 500, body: `{"error":"llama runner process has terminated"}`}
	f := newOllamaServer(t, 3, boom, boom, boom, boom, boom, boom)
	o := newOllama(t, f, OllamaConfig{Model: "m", Dim: 3, MaxRetries: 3})
	_, err := o.EmbedQuery(t.Context(), "q")
	if err == nil || !strings.Contains(err.Error(), "ollama: HTTP 500: llama runner process has terminated (gave up after 4 attempts)") {
		t.Errorf("err = %v", err)
	}

	f = newOllamaServer(t, 3, failure{status: 404, body: `{"error":"model \"m\" not found, try pulling it first"}`})
	o = newOllama(t, f, OllamaConfig{Model: "m", Dim: 3})
	_, err = o.EmbedQuery(t.Context(), "q")
	if err == nil || !strings.Contains(err.Error(), "not found, try pulling it first") || len(f.requests()) != 1 {
		t.Errorf("err = %v after %d requests, want one unretried 404", err, len(f.requests()))
	}

	f = newOllamaServer(t, 5)
	o = newOllama(t, f, OllamaConfig{Model: "m", Dim: 3})
	if _, err := o.EmbedQuery(t.Context(), "q"); err == nil || !strings.Contains(err.Error(), "returned 5 dimensions, want 3") {
		t.Errorf("err = %v, want a dimension error", err)
	}
}

func TestOllamaProbeFails(t *testing.T) {
	f := newOllamaServer(t, 3, failure{status: 404, body: `{"error":"model not found"}`})
	_, err := NewOllama(t.Context(), OllamaConfig{Host: f.srv.URL, Model: "missing"})
	if err == nil || !strings.Contains(err.Error(), "probe missing dimension") {
		t.Errorf("err = %v", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"7", 7 * time.Second},
		{"-3", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	b := newBackoff(0, 100*time.Millisecond, time.Second, nil)
	if b.retries != defaultMaxRetries {
		t.Errorf("retries %d, want default %d", b.retries, defaultMaxRetries)
	}
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{0, 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 0, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 0, 400 * time.Millisecond, 800 * time.Millisecond},
		{10, 0, 500 * time.Millisecond, time.Second}, // capped at max
		{62, 0, 500 * time.Millisecond, time.Second}, // no overflow
		{0, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		{0, time.Hour, time.Minute, time.Minute}, // Retry-After bounded
	}
	for _, tt := range tests {
		for range 50 {
			if got := b.delay(tt.attempt, tt.retryAfter); got < tt.lo || got > tt.hi {
				t.Fatalf("delay(%d, %v) = %v, want in [%v, %v]", tt.attempt, tt.retryAfter, got, tt.lo, tt.hi)
			}
		}
	}
	if b := newBackoff(-1, 0, 0, nil); b.retries != 0 {
		t.Errorf("negative MaxRetries gives %d retries, want 0", b.retries)
	}
}

func TestConcurrentUse(t *testing.T) {
	oa := newOpenAI(t, newOpenAIServer(t, 4, failure{status: 429, body: rateLimited}), OpenAIConfig{Model: "test-embed", Dim: 4})
	ol := newOllama(t, newOllamaServer(t, 4, failure{status: 503, body: `{"error":"busy"}`}), OllamaConfig{Model: "m", Dim: 4})
	for _, e := range []rag.Embedder{oa, ol} {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Go(func() {
				q := strings.Repeat("q", i+1)
				v, err := e.EmbedQuery(t.Context(), q)
				if err == nil && int(v[0]) != len(q) {
					err = fmt.Errorf("vector of %q has first %v", q, v[0])
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("%s: %v", e.Info().Name, err)
			}
		}
	}
}
