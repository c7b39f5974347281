package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/rag"
)

func answering() *fakePipeline {
	return &fakePipeline{
		ask: func(q rag.Question) (rag.Answer, error) { return rag.Answer{Question: q.Text, Text: "ok"}, nil },
		compare: func(q rag.Question, methods []string) ([]rag.MethodResult, error) {
			return []rag.MethodResult{{Method: "bm25"}}, nil
		},
	}
}

// TestTokenRequired: with a token configured every route but /health needs it.
func TestTokenRequired(t *testing.T) {
	srv := newTestAPI(t, answering(), func(c *Config) { c.Token = "s3cret" })
	code, body := do(t, srv, "POST", "/query", `{"question":"what is attention?"}`)
	if code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d %v; want 401", code, body)
	}
	if code, _ := do(t, srv, "GET", "/health", ""); code != 200 {
		t.Errorf("/health without a token: %d; want 200", code)
	}
	for _, auth := range []string{"Bearer wrong", "s3cret", "Basic s3cret"} {
		req, _ := http.NewRequest("GET", srv.URL+"/documents", nil)
		req.Header.Set("Authorization", auth)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d; want 401", auth, res.StatusCode)
		}
	}
	req, _ := http.NewRequest("POST", srv.URL+"/query", strings.NewReader(`{"question":"what is attention?"}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("X-Request-ID") == "" {
		t.Errorf("with the token: %d, request id %q; want 200 and an id", res.StatusCode, res.Header.Get("X-Request-ID"))
	}
}

// TestOversizedRequestsRefused: /compare runs each method once and at most as many as there
// are; history is bounded in turns and bytes.
func TestOversizedRequestsRefused(t *testing.T) {
	srv := newTestAPI(t, answering(), func(c *Config) { c.MaxHistoryTurns = 3; c.MaxHistoryBytes = 100 })
	methods := make([]string, maxCompare+1)
	for i := range methods {
		methods[i] = fmt.Sprintf("m%d", i)
	}
	raw, _ := json.Marshal(map[string]any{"question": "q", "methods": methods})
	for name, body := range map[string]string{
		"too many methods":  string(raw),
		"repeated method":   `{"question":"q","methods":["bm25","bm25"]}`,
		"too many turns":    `{"question":"q","history":[{"question":"a"},{"question":"b"},{"question":"c"},{"question":"d"}]}`,
		"history too large": `{"question":"q","history":[{"question":"a","answer":"` + strings.Repeat("x", 200) + `"}]}`,
	} {
		path := "/query"
		if strings.Contains(name, "method") {
			path = "/compare"
		}
		code, resp := do(t, srv, "POST", path, body)
		e, _ := resp["error"].(map[string]any)
		if code != 400 || e == nil {
			t.Errorf("%s: %d %v; want 400", name, code, resp)
		}
	}
	if code, resp := do(t, srv, "POST", "/compare", `{"question":"q","methods":["bm25","hybrid"]}`); code != 200 {
		t.Errorf("two distinct methods: %d %v", code, resp)
	}
}

// TestCurlFormContentType: the README's `curl -s localhost:8080/query -d '{…}'` sends a
// form content type with a JSON body; it is answered.
func TestCurlFormContentType(t *testing.T) {
	srv := newTestAPI(t, answering())
	res, err := srv.Client().Post(srv.URL+"/query", "application/x-www-form-urlencoded", strings.NewReader(`{"question":"what is attention?"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `"answer": "ok"`) {
		t.Errorf("curl-style request: %d %s", res.StatusCode, b)
	}
}

// busyCore is a core that is always full or always rate limiting.
type busyCore struct{ err error }

func (c busyCore) Query(context.Context, bot.Request, rag.Question) (rag.Answer, error) {
	return rag.Answer{}, c.err
}

func (c busyCore) Within(context.Context, string, func(context.Context) error) error { return c.err }

// TestBusyIs429: a full core is 429 with Retry-After on every question route.
func TestBusyIs429(t *testing.T) {
	srv := newTestAPI(t, answering(), func(c *Config) { c.Core = busyCore{bot.ErrBusy} })
	for _, path := range []string{"/query", "/retrieve", "/compare"} {
		res, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(`{"question":"q"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s while busy: %d Retry-After %q; want 429 with Retry-After", path, res.StatusCode, res.Header.Get("Retry-After"))
		}
	}
}

// TestErrorBodiesHideFilesystemPaths: a pipeline error naming a models folder reaches the
// client without the path.
func TestErrorBodiesHideFilesystemPaths(t *testing.T) {
	p := &fakePipeline{ask: func(rag.Question) (rag.Answer, error) {
		return rag.Answer{}, fmt.Errorf("no model in /home/ada/.local/share/footnote/models/bge-small: %w", rag.ErrModelMissing)
	}}
	srv := newTestAPI(t, p)
	code, body := do(t, srv, "POST", "/query", `{"question":"q","method":"dense"}`)
	msg := fmt.Sprint(body["error"])
	if code != 503 || strings.Contains(msg, "/home/") || strings.Contains(msg, ".local") {
		t.Errorf("%d %s; want 503 without the path", code, msg)
	}
}
