// Package httpapi is footnote's JSON HTTP API: /health, /query, /retrieve, /compare,
// /documents and /stats, described by the OpenAPI document it serves at /openapi.json.
// It validates requests, calls the question pipeline and renders JSON; validation errors are
// 4xx with a body naming the field.
package httpapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/footnote-dev/footnote/rag"
)

// Asker answers a question (satisfied by *rag.Pipeline).
type Asker interface {
	Ask(ctx context.Context, q rag.Question, fn func(delta string) error) (rag.Answer, error)
}

// Retriever runs retrieval only (satisfied by *rag.Pipeline).
type Retriever interface {
	Retrieve(ctx context.Context, q rag.Question) (rag.Retrieval, error)
	Compare(ctx context.Context, q rag.Question, methods []string) ([]rag.MethodResult, error)
}

// Catalog lists the indexed documents (satisfied by the stores).
type Catalog interface {
	Documents(ctx context.Context) ([]rag.Document, error)
}

// Config wires the API. Asker, Retriever and Catalog are required.
type Config struct {
	Asker     Asker
	Retriever Retriever
	Catalog   Catalog
	// Health reports component status ("ok" or a short problem) by component name; nil
	// reports only the API itself. Any value other than "ok" makes /health answer 503.
	Health func(ctx context.Context) map[string]string
	// Stats returns the document for GET /stats; nil answers 404.
	Stats func(ctx context.Context) (any, error)
	// OnAnswer is called after every /query (for the query log and metrics); may be nil.
	OnAnswer func(ctx context.Context, q rag.Question, a rag.Answer, err error)
	// Timeout bounds each request; zero means 60s.
	Timeout time.Duration
	// MaxBody bounds request bodies; zero means 1 MiB.
	MaxBody int64
	Logger  *slog.Logger // nil discards
}

// API is the HTTP handler.
type API struct {
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	paths []string
}

//go:embed openapi.json
var openAPI []byte

// New validates cfg and builds the routes.
func New(cfg Config) (*API, error) {
	if cfg.Asker == nil || cfg.Retriever == nil || cfg.Catalog == nil {
		return nil, errors.New("httpapi: Asker, Retriever and Catalog are required")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 1 << 20
	}
	a := &API{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.route("GET", "/health", a.health)
	a.route("POST", "/query", a.query)
	a.route("POST", "/retrieve", a.retrieve)
	a.route("POST", "/compare", a.compare)
	a.route("GET", "/documents", a.documents)
	a.route("GET", "/stats", a.stats)
	a.route("GET", "/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openAPI)
	})
	return a, nil
}

// route registers a path for one method; other methods get a JSON 405 rather than
// ServeMux's plain-text one, so API clients always receive JSON.
func (a *API) route(method, path string, h http.HandlerFunc) {
	a.paths = append(a.paths, path)
	a.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == "GET" && r.Method == "HEAD") {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, Error{Code: "method_not_allowed", Message: "use " + method + " " + path})
			return
		}
		h(w, r)
	})
}

// Register mounts the API's routes on mux, so `footnote serve` can share one server with
// the Slack and Discord endpoints.
func (a *API) Register(mux *http.ServeMux) {
	for _, p := range a.paths {
		mux.Handle(p, a.mux)
	}
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// Error is the JSON error body: {"error": {"code": …, "field": …, "message": …}}.
type Error struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

type errorBody struct {
	Error Error `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, e Error) {
	writeJSON(w, status, errorBody{Error: e})
}

// QueryRequest is the body of POST /query, /retrieve and /compare.
type QueryRequest struct {
	Question       string     `json:"question"`
	Method         string     `json:"method,omitempty"`
	Methods        []string   `json:"methods,omitempty"` // /compare only
	TopK           int        `json:"top_k,omitempty"`
	IncludeSources *bool      `json:"include_sources,omitempty"` // /query; default true
	History        []rag.Turn `json:"history,omitempty"`
	Selected       string     `json:"selected,omitempty"`
	DocIDs         []string   `json:"doc_ids,omitempty"`
}

const maxQuestion = 4000

// decode reads and validates a request body; it writes the error itself and returns false.
func (a *API) decode(w http.ResponseWriter, r *http.Request, needQuestion bool) (QueryRequest, bool) {
	var q QueryRequest
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, Error{Code: "unsupported_media_type", Message: "send application/json"})
		return q, false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, a.cfg.MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		var mbe *http.MaxBytesError
		var ute *json.UnmarshalTypeError
		switch {
		case errors.As(err, &mbe):
			writeError(w, http.StatusRequestEntityTooLarge, Error{Code: "too_large", Message: fmt.Sprintf("body exceeds %d bytes", mbe.Limit)})
		case errors.As(err, &ute):
			writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: ute.Field, Message: fmt.Sprintf("%s must be %s", ute.Field, ute.Type)})
		case errors.Is(err, io.EOF):
			writeError(w, http.StatusBadRequest, Error{Code: "invalid", Message: "empty body: send a JSON object"})
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: f, Message: "unknown field " + f})
		default:
			writeError(w, http.StatusBadRequest, Error{Code: "invalid", Message: "malformed JSON: " + err.Error()})
		}
		return q, false
	}
	q.Question = strings.TrimSpace(q.Question)
	switch {
	case needQuestion && q.Question == "":
		writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: "question", Message: "question is required"})
		return q, false
	case len(q.Question) > maxQuestion:
		writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: "question", Message: fmt.Sprintf("question is longer than %d bytes", maxQuestion)})
		return q, false
	case q.TopK < 0 || q.TopK > 50:
		writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: "top_k", Message: "top_k must be between 1 and 50"})
		return q, false
	}
	return q, true
}

func (q QueryRequest) question() rag.Question {
	return rag.Question{
		Text:     q.Question,
		History:  q.History,
		Selected: q.Selected,
		Method:   q.Method,
		TopK:     q.TopK,
		Filter:   rag.Filter{DocIDs: q.DocIDs},
	}
}

// pipelineError maps pipeline errors to HTTP statuses; unknown errors are logged under a
// reference id and answered generically.
func (a *API) pipelineError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, rag.ErrUnknownMethod):
		writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: "method", Message: err.Error()})
	case errors.Is(err, rag.ErrModelMissing):
		writeError(w, http.StatusServiceUnavailable, Error{Code: "model_missing", Field: "method", Message: err.Error()})
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, Error{Code: "timeout", Message: "the question took too long to answer"})
	case errors.Is(err, context.Canceled):
		writeError(w, 499, Error{Code: "canceled", Message: "request canceled"})
	default:
		ref := fmt.Sprintf("%x", time.Now().UnixNano())
		a.log.Error("api request", "ref", ref, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, Error{Code: "internal", Message: "internal error; reference " + ref})
	}
}

func (a *API) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	status := map[string]string{"api": "ok"}
	if a.cfg.Health != nil {
		for k, v := range a.cfg.Health(ctx) {
			status[k] = v
		}
	}
	code, overall := http.StatusOK, "ok"
	for _, v := range status {
		if v != "ok" {
			code, overall = http.StatusServiceUnavailable, "degraded"
		}
	}
	writeJSON(w, code, map[string]any{"status": overall, "components": status})
}

func (a *API) query(w http.ResponseWriter, r *http.Request) {
	req, ok := a.decode(w, r, true)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Timeout)
	defer cancel()
	q := req.question()
	ans, err := a.cfg.Asker.Ask(ctx, q, nil)
	if a.cfg.OnAnswer != nil {
		a.cfg.OnAnswer(ctx, q, ans, err)
	}
	if err != nil {
		a.pipelineError(w, r, err)
		return
	}
	if req.IncludeSources != nil && !*req.IncludeSources {
		ans.Sources, ans.More = nil, nil
	}
	writeJSON(w, http.StatusOK, ans)
}

func (a *API) retrieve(w http.ResponseWriter, r *http.Request) {
	req, ok := a.decode(w, r, true)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Timeout)
	defer cancel()
	res, err := a.cfg.Retriever.Retrieve(ctx, req.question())
	if err != nil && !errors.Is(err, rag.ErrNoEvidence) {
		a.pipelineError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"query":       res.Query,
		"method":      res.Method,
		"no_evidence": errors.Is(err, rag.ErrNoEvidence),
		"hits":        res.Hits,
		"candidates":  res.Candidates,
		"timings":     res.Timings,
	})
}

func (a *API) compare(w http.ResponseWriter, r *http.Request) {
	req, ok := a.decode(w, r, true)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Timeout)
	defer cancel()
	res, err := a.cfg.Retriever.Compare(ctx, req.question(), req.Methods)
	if err != nil {
		a.pipelineError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"question": req.Question, "results": res})
}

func (a *API) documents(w http.ResponseWriter, r *http.Request) {
	docs, err := a.cfg.Catalog.Documents(r.Context())
	if err != nil {
		a.pipelineError(w, r, err)
		return
	}
	if docs == nil {
		docs = []rag.Document{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(docs), "documents": docs})
}

func (a *API) stats(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Stats == nil {
		writeError(w, http.StatusNotFound, Error{Code: "not_found", Message: "statistics are not enabled"})
		return
	}
	s, err := a.cfg.Stats(r.Context())
	if err != nil {
		a.pipelineError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}
