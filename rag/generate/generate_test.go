package generate_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/generate"
	"github.com/footnote-dev/footnote/rag/generate/generatetest"
	"github.com/google/go-cmp/cmp"
)

var (
	_ rag.Generator = (*generate.Ollama)(nil)
	_ rag.Generator = (*generate.OpenAI)(nil)
)

// replay serves a recorded stream file line by line, flushing each, and records the
// request body.
func replay(t *testing.T, path, file, contentType string) (*httptest.Server, *http.Request) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		got = *r.Clone(context.Background())
		w.Header().Set("Content-Type", contentType)
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			w.Write([]byte(sc.Text() + "\n"))
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

var recordedDeltas = []string{"The encoder", " layer has two", " sub-layers: multi-head", " self-attention and a feed-forward network [1", "]."}

var request = rag.GenerateRequest{
	Messages:    []rag.Message{{Role: "system", Content: "Answer from the sources."}, {Role: "user", Content: "What are the sub-layers?"}},
	Temperature: 0.2,
	MaxTokens:   300,
}

func collect(t *testing.T, g rag.Generator, req rag.GenerateRequest) ([]string, error) {
	t.Helper()
	var deltas []string
	err := g.Generate(t.Context(), req, func(d string) error {
		deltas = append(deltas, d)
		return nil
	})
	return deltas, err
}

func TestOllamaRecordedStream(t *testing.T) {
	srv, _ := replay(t, "/api/chat", "testdata/ollama_chat_stream.ndjson", "application/x-ndjson")
	g, err := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "llama3.2"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Name(), "ollama:llama3.2"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	deltas, err := collect(t, g, request)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recordedDeltas, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
}

func TestOpenAIRecordedStream(t *testing.T) {
	srv, got := replay(t, "/v1/chat/completions", "testdata/openai_chat_stream.sse", "text/event-stream")
	g, err := generate.NewOpenAI(generate.OpenAIConfig{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Name(), "openai:gpt-4o-mini"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	deltas, err := collect(t, g, request)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recordedDeltas, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if auth := got.Header.Get("Authorization"); auth != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want the bearer key", auth)
	}
}

// TestRequestBody checks what each generator sends: model, messages, streaming, and the
// temperature and token limit under each protocol's names.
func TestRequestBody(t *testing.T) {
	srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{"ok"}}))
	ol, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "qwen2.5:7b"})
	oa, _ := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: srv.OpenAIBaseURL(), Model: "local-model"})
	for _, g := range []rag.Generator{ol, oa} {
		if _, err := collect(t, g, request); err != nil {
			t.Fatalf("%s: %v", g.Name(), err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	ollama, openai := reqs[0].Body, reqs[1].Body
	opts, _ := ollama["options"].(map[string]any)
	checks := []struct {
		name      string
		got, want any
	}{
		{"ollama model", ollama["model"], "qwen2.5:7b"},
		{"ollama stream", ollama["stream"], true},
		{"ollama temperature", opts["temperature"], 0.2},
		{"ollama num_predict", opts["num_predict"], 300.0},
		{"openai model", openai["model"], "local-model"},
		{"openai stream", openai["stream"], true},
		{"openai temperature", openai["temperature"], 0.2},
		{"openai max_tokens", openai["max_tokens"], 300.0},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 })); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	for i, r := range reqs {
		if diff := cmp.Diff(request.Messages, r.Messages); diff != "" {
			t.Errorf("request %d messages (-want +got):\n%s", i, diff)
		}
	}
}

// generators returns both generators pointed at srv, with the given timeout.
func generators(t *testing.T, srv *generatetest.Server, timeout time.Duration) []rag.Generator {
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

func TestCallbackErrorStopsStream(t *testing.T) {
	srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{"one", "two", "three"}, Hang: true}))
	stop := errors.New("client went away")
	for _, g := range generators(t, srv, 0) {
		t.Run(g.Name(), func(t *testing.T) {
			start := time.Now()
			var got []string
			err := g.Generate(t.Context(), request, func(d string) error {
				got = append(got, d)
				return stop
			})
			if err != stop {
				t.Errorf("err = %v, want the callback's error unchanged", err)
			}
			if len(got) != 1 {
				t.Errorf("callback called %d times, want 1", len(got))
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s: the stream did not stop", d)
			}
		})
	}
}

func TestContextCancel(t *testing.T) {
	srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{"partial"}, Hang: true}))
	for _, g := range generators(t, srv, 0) {
		t.Run(g.Name(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			start := time.Now()
			err := g.Generate(ctx, request, func(string) error {
				cancel() // the caller gives up after the first delta
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s after cancel", d)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	hangSrv := generatetest.New(t, generatetest.Static(generatetest.Reply{Hang: true}))
	errSrv := generatetest.New(t, generatetest.Static(generatetest.Reply{Status: http.StatusInternalServerError, Error: "model crashed"}))
	notFound := generatetest.New(t, generatetest.Static(generatetest.Reply{Status: http.StatusNotFound, Error: "model 'm' not found"}))
	// A closed listener's address: connecting is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	type check func(t *testing.T, err error)
	status := func(code int) check {
		return func(t *testing.T, err error) {
			var he *generate.HTTPError
			if !errors.As(err, &he) || he.StatusCode != code {
				t.Errorf("err = %v, want an HTTPError with status %d", err, code)
			}
		}
	}
	is := func(target error) check {
		return func(t *testing.T, err error) {
			if !errors.Is(err, target) {
				t.Errorf("err = %v, want one wrapping %v", err, target)
			}
		}
	}
	cases := []struct {
		name    string
		url     string
		timeout time.Duration
		check   check
	}{
		{"timeout", hangSrv.URL, 200 * time.Millisecond, is(context.DeadlineExceeded)},
		{"500", errSrv.URL, 0, status(500)},
		{"404", notFound.URL, 0, status(404)},
		{"connection refused", refused, 0, is(syscall.ECONNREFUSED)},
	}
	for _, c := range cases {
		ol, _ := generate.NewOllama(generate.OllamaConfig{Host: c.url, Model: "m", Timeout: c.timeout})
		oa, _ := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: c.url + "/v1", Model: "m", Timeout: c.timeout})
		for _, g := range []rag.Generator{ol, oa} {
			t.Run(c.name+"/"+g.Name(), func(t *testing.T) {
				start := time.Now()
				_, err := collect(t, g, request)
				if err == nil {
					t.Fatal("no error")
				}
				c.check(t, err)
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("took %s", d)
				}
			})
		}
	}
}

// TestOllamaTruncatedStream: a stream that ends without "done" is an incomplete answer.
func TestOllamaTruncatedStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"model":"m","message":{"role":"assistant","content":"The"},"done":false}` + "\n"))
	}))
	t.Cleanup(srv.Close)
	g, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m"})
	if _, err := collect(t, g, request); err == nil || !strings.Contains(err.Error(), "before the answer was done") {
		t.Errorf("err = %v, want an incomplete-stream error", err)
	}
}

func TestOllamaHost(t *testing.T) {
	srv := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{"ok"}}))
	bare := strings.TrimPrefix(srv.URL, "http://") // "127.0.0.1:port", as OLLAMA_HOST is often set
	g, err := generate.NewOllama(generate.OllamaConfig{Host: bare, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(t, g, request); err != nil {
		t.Errorf("host without scheme: %v", err)
	}
	if _, err := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: "127.0.0.1:1/v1"}); err == nil {
		t.Error("NewOpenAI accepted a base URL without scheme")
	}
}

// The progress limits: a server that reads the prompt but never answers hits the
// first-token limit, one that stops mid-answer hits the idle limit, each named in the
// error and wrapping context.DeadlineExceeded, long before the total timeout.
func TestProgressTimeouts(t *testing.T) {
	silent := generatetest.New(t, generatetest.Static(generatetest.Reply{Hang: true}))
	stalls := generatetest.New(t, generatetest.Static(generatetest.Reply{Deltas: []string{"The encoder", " has"}, Hang: true}))
	cases := []struct {
		name string
		srv  *generatetest.Server
		want string
	}{
		{"first token", silent, "no first token within 300ms"},
		{"idle", stalls, "no new token within 300ms"},
	}
	for _, c := range cases {
		ol, _ := generate.NewOllama(generate.OllamaConfig{Host: c.srv.URL, Model: "m", Timeout: time.Minute, FirstTokenTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
		oa, _ := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: c.srv.OpenAIBaseURL(), Model: "m", Timeout: time.Minute, FirstTokenTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
		for _, g := range []rag.Generator{ol, oa} {
			t.Run(c.name+"/"+g.Name(), func(t *testing.T) {
				deltas, err := collect(t, g, request)
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want %q wrapping context.DeadlineExceeded", err, c.want)
				}
				if c.srv == stalls && len(deltas) != 2 {
					t.Errorf("deltas before the stall = %q", deltas)
				}
			})
		}
	}
}

// Limits come from the server's model list (llama.cpp's meta.n_ctx, vLLM's max_model_len)
// and llama.cpp's cumulative prompt counters; a configured window wins; an unnamed model
// is taken from the list.
func TestOpenAILimitsProbe(t *testing.T) {
	for _, c := range []struct {
		name, models, metrics string
		fixed, wantCtx        int
		wantRate              float64
		wantModel             string
	}{
		{"llama.cpp", `{"data":[{"id":"smollm2","meta":{"n_ctx":4096}}]}`, "# HELP x\nllamacpp:prompt_tokens_total 600\nllamacpp:prompt_seconds_total 10\n", 0, 4096, 60, "smollm2"},
		{"vllm", `{"data":[{"id":"Qwen/Qwen2.5-7B-Instruct","max_model_len":32768}]}`, "", 0, 32768, 0, "Qwen/Qwen2.5-7B-Instruct"},
		{"configured", `{"data":[{"id":"m","meta":{"n_ctx":4096}}]}`, "", 2048, 2048, 0, "m"},
		{"nothing", ``, ``, 0, 0, 0, "gpt-4o-mini"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mux := http.NewServeMux()
			if c.models != "" {
				mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(c.models)) })
			}
			if c.metrics != "" {
				mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(c.metrics)) })
			}
			srv := httptest.NewServer(mux)
			defer srv.Close()
			g, err := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: srv.URL + "/v1", ContextTokens: c.fixed})
			if err != nil {
				t.Fatal(err)
			}
			lim := g.Limits(t.Context())
			if lim.ContextTokens != c.wantCtx || lim.PrefillPerSec != c.wantRate || lim.FirstTokenTimeout != generate.DefaultFirstTokenTimeout {
				t.Errorf("Limits() = %+v, want context %d, rate %g", lim, c.wantCtx, c.wantRate)
			}
			if got := g.Name(); got != "openai:"+c.wantModel {
				t.Errorf("Name() = %q, want openai:%s", got, c.wantModel)
			}
		})
	}
}

// A server that did not answer the probe is asked again on the next question, so its
// context window is known as soon as it is back.
func TestOpenAILimitsRetryAfterNoAnswer(t *testing.T) {
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			panic(http.ErrAbortHandler) // the connection drops without a response
		}
		if r.URL.Path == "/v1/models" {
			w.Write([]byte(`{"data":[{"id":"m","meta":{"n_ctx":2048}}]}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	g, err := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if lim := g.Limits(t.Context()); lim.ContextTokens != 0 {
		t.Fatalf("Limits() from a server that does not answer = %+v", lim)
	}
	up.Store(true)
	if lim := g.Limits(t.Context()); lim.ContextTokens != 2048 {
		t.Errorf("Limits() once the server answers = %+v, want context 2048", lim)
	}
}
