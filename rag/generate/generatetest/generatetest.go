// Package generatetest runs a local fake of the two generator wire protocols footnote
// speaks — Ollama's POST /api/chat (NDJSON stream) and the OpenAI-compatible POST
// /v1/chat/completions (server-sent events) — for tests of generators, the pipeline and
// the service. Replies are scripted per request; every request is recorded.
package generatetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/rag"
)

// Request is one recorded chat request.
type Request struct {
	Path     string         // "/api/chat" or "/v1/chat/completions"
	Header   http.Header    // as received
	Body     map[string]any // the decoded JSON body
	Messages []rag.Message  // the body's messages
}

// Reply scripts one response.
type Reply struct {
	Deltas []string // content pieces, streamed one per line/event in order
	// Status, when not 0 or 200, answers with that status and an error body in the
	// protocol's format carrying Error, and streams nothing.
	Status int
	Error  string
	// Hang holds the stream open after the deltas, without finishing it, until the client
	// goes away (at most HangLimit), for timeout and cancellation tests.
	Hang bool
}

// HangLimit bounds how long a hanging reply holds a connection.
const HangLimit = 10 * time.Second

// Server is the fake. Close it with t.Cleanup (New does).
type Server struct {
	*httptest.Server
	reply func(Request) Reply

	mu   sync.Mutex
	reqs []Request
}

// New starts a fake on 127.0.0.1 answering every request with reply(request).
func New(t testing.TB, reply func(Request) Reply) *Server {
	t.Helper()
	s := &Server{reply: reply}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat", s.ollama)
	mux.HandleFunc("POST /v1/chat/completions", s.openai)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Static returns a reply function that always answers r.
func Static(r Reply) func(Request) Reply { return func(Request) Reply { return r } }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// OpenAIBaseURL is the BaseURL for generate.OpenAIConfig.
func (s *Server) OpenAIBaseURL() string { return s.URL + "/v1" }

func (s *Server) record(r *http.Request) (Request, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return Request{}, err
	}
	req := Request{Path: r.URL.Path, Header: r.Header.Clone()}
	if err := json.Unmarshal(body, &req.Body); err != nil {
		return req, err
	}
	var msgs struct {
		Messages []rag.Message `json:"messages"`
	}
	if err := json.Unmarshal(body, &msgs); err != nil {
		return req, err
	}
	req.Messages = msgs.Messages
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	return req, nil
}

func (s *Server) ollama(w http.ResponseWriter, r *http.Request) {
	req, err := s.record(r)
	if err != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	rep := s.reply(req)
	model, _ := req.Body["model"].(string)
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		json.NewEncoder(w).Encode(map[string]string{"error": rep.Error})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, d := range rep.Deltas {
		enc.Encode(map[string]any{
			"model": model, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
			"message": map[string]string{"role": "assistant", "content": d}, "done": false,
		})
		flush(w)
	}
	if rep.Hang {
		hang(r)
		return
	}
	enc.Encode(map[string]any{
		"model": model, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]string{"role": "assistant", "content": ""}, "done": true,
		"done_reason": "stop", "eval_count": len(rep.Deltas),
	})
}

func (s *Server) openai(w http.ResponseWriter, r *http.Request) {
	req, err := s.record(r)
	if err != nil {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	rep := s.reply(req)
	model, _ := req.Body["model"].(string)
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": rep.Error, "type": "server_error", "code": nil}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(),
			"model": model, "choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush(w)
	}
	event(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, d := range rep.Deltas {
		event(map[string]any{"content": d}, nil)
	}
	if rep.Hang {
		hang(r)
		return
	}
	event(map[string]any{}, "stop")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(HangLimit):
	}
}
