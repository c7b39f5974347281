package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/rag"
	"github.com/google/go-cmp/cmp"
)

// fakePipeline answers from function fields so each test injects the behaviour it needs.
type fakePipeline struct {
	ask      func(rag.Question) (rag.Answer, error)
	retrieve func(rag.Question) (rag.Retrieval, error)
	compare  func(rag.Question, []string) ([]rag.MethodResult, error)
	asked    []rag.Question
}

func (f *fakePipeline) Ask(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
	f.asked = append(f.asked, q)
	return f.ask(q)
}

func (f *fakePipeline) Retrieve(ctx context.Context, q rag.Question) (rag.Retrieval, error) {
	return f.retrieve(q)
}

func (f *fakePipeline) Compare(ctx context.Context, q rag.Question, methods []string) ([]rag.MethodResult, error) {
	return f.compare(q, methods)
}

type fakeCatalog []rag.Document

func (c fakeCatalog) Documents(context.Context) ([]rag.Document, error) { return c, nil }

var chunk = rag.Chunk{ID: "c1", DocID: "d1", Text: "The encoder has two sub-layers.", PageStart: 3, PageEnd: 3,
	Section: []string{"3 Model Architecture"}, Name: "1706.03762", Title: "Attention Is All You Need"}

func newTestAPI(t *testing.T, p *fakePipeline, opts ...func(*Config)) *httptest.Server {
	t.Helper()
	cfg := Config{Asker: p, Retriever: p, Catalog: fakeCatalog{{ID: "d1", Name: "1706.03762", Title: "Attention Is All You Need", Pages: 15}}}
	for _, o := range opts {
		o(&cfg)
	}
	api, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %v\n%s", method, path, err, b)
	}
	return resp.StatusCode, m
}

func TestQuery(t *testing.T) {
	p := &fakePipeline{ask: func(q rag.Question) (rag.Answer, error) {
		return rag.Answer{Question: q.Text, Text: "Two sub-layers [1].", Sources: []rag.Source{{N: 1, Chunk: chunk, Score: 0.9, Cited: true}}, Citations: 1, Confidence: 0.8}, nil
	}}
	srv := newTestAPI(t, p)
	code, body := do(t, srv, "POST", "/query", `{"question":"  What are the sub-layers? ","method":"bm25","top_k":3,"history":[{"question":"q0","answer":"a0"}]}`)
	if code != 200 {
		t.Fatalf("status %d, want 200: %v", code, body)
	}
	if got := body["answer"]; got != "Two sub-layers [1]." {
		t.Errorf("answer = %v", got)
	}
	if srcs, _ := body["sources"].([]any); len(srcs) != 1 {
		t.Errorf("sources = %v, want 1", body["sources"])
	}
	want := rag.Question{Text: "What are the sub-layers?", Method: "bm25", TopK: 3, History: []rag.Turn{{Question: "q0", Answer: "a0"}}}
	if diff := cmp.Diff(want, p.asked[0]); diff != "" {
		t.Errorf("question passed to the pipeline (-want +got):\n%s", diff)
	}

	_, body = do(t, srv, "POST", "/query", `{"question":"x","include_sources":false}`)
	if _, ok := body["sources"]; ok && body["sources"] != nil {
		t.Errorf("include_sources=false still returned sources: %v", body["sources"])
	}
}

func TestQueryErrors(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		err       error
		wantCode  int
		wantField string
	}{
		{"missing question", `{"method":"bm25"}`, nil, 400, "question"},
		{"blank question", `{"question":"   "}`, nil, 400, "question"},
		{"wrong type", `{"question":42}`, nil, 400, "question"},
		{"unknown field", `{"question":"q","k":3}`, nil, 400, "k"},
		{"top_k range", `{"question":"q","top_k":500}`, nil, 400, "top_k"},
		{"malformed", `{"question":`, nil, 400, ""},
		{"empty body", ``, nil, 400, ""},
		{"too long", `{"question":"` + strings.Repeat("a", 5000) + `"}`, nil, 400, "question"},
		{"unknown method", `{"question":"q","method":"magic"}`, fmt.Errorf("method magic: %w", rag.ErrUnknownMethod), 400, "method"},
		{"model missing", `{"question":"q","method":"dense"}`, fmt.Errorf("run footnote models pull: %w", rag.ErrModelMissing), 503, "method"},
		{"timeout", `{"question":"q"}`, context.DeadlineExceeded, 504, ""},
		{"internal", `{"question":"q"}`, errors.New("milvus: connection refused at 10.0.0.1"), 500, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakePipeline{ask: func(rag.Question) (rag.Answer, error) { return rag.Answer{}, tt.err }}
			srv := newTestAPI(t, p)
			code, body := do(t, srv, "POST", "/query", tt.body)
			if code != tt.wantCode {
				t.Fatalf("status %d, want %d: %v", code, tt.wantCode, body)
			}
			e, _ := body["error"].(map[string]any)
			if e == nil || e["message"] == "" {
				t.Fatalf("no error body: %v", body)
			}
			if got, _ := e["field"].(string); got != tt.wantField {
				t.Errorf("error.field = %q, want %q", got, tt.wantField)
			}
			if strings.Contains(fmt.Sprint(e["message"]), "10.0.0.1") {
				t.Errorf("internal error details leaked to the client: %v", e["message"])
			}
		})
	}
}

func TestRetrieveAndCompare(t *testing.T) {
	p := &fakePipeline{
		retrieve: func(q rag.Question) (rag.Retrieval, error) {
			if strings.Contains(q.Text, "weather") {
				return rag.Retrieval{Query: q.Text, Method: "hybrid"}, fmt.Errorf("cut: %w", rag.ErrNoEvidence)
			}
			return rag.Retrieval{Query: q.Text, Method: "hybrid", Hits: []rag.Scored{{Hit: rag.Hit{Chunk: chunk, Score: 0.03}, Rerank: 0.9}}}, nil
		},
		compare: func(q rag.Question, methods []string) ([]rag.MethodResult, error) {
			if len(methods) == 1 && methods[0] == "nope" {
				return nil, rag.ErrUnknownMethod
			}
			return []rag.MethodResult{{Method: "bm25"}, {Method: "hybrid"}}, nil
		},
	}
	srv := newTestAPI(t, p)
	code, body := do(t, srv, "POST", "/retrieve", `{"question":"sub-layers"}`)
	if code != 200 || body["no_evidence"] != false || len(body["hits"].([]any)) != 1 {
		t.Errorf("retrieve: %d %v", code, body)
	}
	code, body = do(t, srv, "POST", "/retrieve", `{"question":"what is the weather"}`)
	if code != 200 || body["no_evidence"] != true {
		t.Errorf("retrieve without evidence: %d %v", code, body)
	}
	code, body = do(t, srv, "POST", "/compare", `{"question":"sub-layers"}`)
	if code != 200 || len(body["results"].([]any)) != 2 {
		t.Errorf("compare: %d %v", code, body)
	}
	code, _ = do(t, srv, "POST", "/compare", `{"question":"sub-layers","methods":["nope"]}`)
	if code != 400 {
		t.Errorf("compare with an unknown method: status %d, want 400", code)
	}
	code, _ = do(t, srv, "GET", "/retrieve", "")
	if code != http.StatusMethodNotAllowed {
		t.Errorf("GET /retrieve: status %d, want 405", code)
	}
}

func TestDocumentsHealthStats(t *testing.T) {
	p := &fakePipeline{}
	healthy := true
	srv := newTestAPI(t, p, func(c *Config) {
		c.Health = func(context.Context) map[string]string {
			if healthy {
				return map[string]string{"store": "ok"}
			}
			return map[string]string{"store": "unreachable"}
		}
		c.Stats = func(context.Context) (any, error) { return map[string]int{"documents": 1}, nil }
	})
	code, body := do(t, srv, "GET", "/documents", "")
	if code != 200 || body["count"] != float64(1) {
		t.Errorf("documents: %d %v", code, body)
	}
	code, body = do(t, srv, "GET", "/health", "")
	if code != 200 || body["status"] != "ok" {
		t.Errorf("health: %d %v", code, body)
	}
	healthy = false
	code, body = do(t, srv, "GET", "/health", "")
	if code != 503 || body["status"] != "degraded" {
		t.Errorf("degraded health: %d %v", code, body)
	}
	code, body = do(t, srv, "GET", "/stats", "")
	if code != 200 || body["documents"] != float64(1) {
		t.Errorf("stats: %d %v", code, body)
	}
	code, body = do(t, srv, "GET", "/openapi.json", "")
	if code != 200 || body["openapi"] == nil {
		t.Errorf("openapi: %d", code)
	}
}

// TestOpenAPIDescribesAnswer keeps the OpenAPI document honest: every field of the JSON the
// API returns for an answer and a document must be declared in its schema.
func TestOpenAPIDescribesAnswer(t *testing.T) {
	var doc struct {
		Paths      map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/health", "/query", "/retrieve", "/compare", "/documents", "/stats", "/metrics"} {
		if doc.Paths[p] == nil {
			t.Errorf("OpenAPI lacks %s", p)
		}
	}
	check := func(schema string, v any) {
		b, _ := json.Marshal(v)
		var m map[string]any
		json.Unmarshal(b, &m)
		for k := range m {
			if _, ok := doc.Components.Schemas[schema].Properties[k]; !ok {
				t.Errorf("schema %s lacks field %q", schema, k)
			}
		}
	}
	check("Answer", rag.Answer{More: []rag.Source{{}}, Note: "n"})
	check("Document", rag.Document{Authors: []string{"a"}, Pages: 1, Lines: 1})
	check("Source", rag.Source{})
	check("Chunk", rag.Chunk{Section: []string{"s"}, PageStart: 1, PageEnd: 1, LineStart: 1, LineEnd: 1})
	check("QueryRequest", QueryRequest{Method: "m", Methods: []string{"m"}, TopK: 1, IncludeSources: new(bool), History: []rag.Turn{{}}, Selected: "s", DocIDs: []string{"d"}})
}
