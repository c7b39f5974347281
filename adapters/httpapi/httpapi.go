// Package httpapi is footnote's JSON HTTP API: /health, /query, /retrieve, /compare,
// /documents and /stats, described by the OpenAPI document it serves at /openapi.json.
// It validates requests, passes questions through the bot core (rate limits, the shared
// concurrency gate, the query log, metrics) and renders JSON; validation errors are 4xx with
// a body naming the field, a full core is 429 with Retry-After.
package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/rag"
)

// Core is the part of *bot.Bot the API calls, so API questions obey the same limits, gate,
// query log and metrics as chat questions.
type Core interface {
	Query(ctx context.Context, req bot.Request, q rag.Question) (rag.Answer, error)
	Within(ctx context.Context, platform string, fn func(ctx context.Context) error) error
}

// Platform is the bot.Request.Platform of API questions.
const Platform = "http"

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
	// Core passes questions through the bot core. Nil calls Asker and Retriever directly,
	// without limits or query log (tests, tools).
	Core Core
	// Token, when set, is required as "Authorization: Bearer <token>" on every route but
	// /health.
	Token string
	// Health reports component status ("ok" or "degraded: reason") by component name; nil
	// reports only the API itself. /health answers 503 only when a component in Essential is
	// not ok: otherwise footnote still answers, in a degraded way.
	Health func(ctx context.Context) map[string]string
	// Essential names the components without which nothing can be answered; nil means
	// "store".
	Essential []string
	// MaxHistoryTurns and MaxHistoryBytes bound a request's history; zero means 20 turns and
	// 64 KiB.
	MaxHistoryTurns int
	MaxHistoryBytes int
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
	if cfg.Essential == nil {
		cfg.Essential = []string{"store"}
	}
	if cfg.MaxHistoryTurns == 0 {
		cfg.MaxHistoryTurns = 20
	}
	if cfg.MaxHistoryBytes == 0 {
		cfg.MaxHistoryBytes = 64 << 10
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
		id := requestID(r)
		w.Header().Set("X-Request-ID", id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		if path != "/health" && !a.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="footnote"`)
			writeError(w, http.StatusUnauthorized, Error{Code: "unauthorized", Message: "send Authorization: Bearer <FOOTNOTE_API_TOKEN>"})
			return
		}
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

type requestIDKey struct{}

// requestID is the client's X-Request-ID when it is a sane token, else a new one; it is
// echoed in the response and follows the question through the logs.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-ID"); id != "" && len(id) <= 64 && saneID.MatchString(id) {
		return id
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "r-" + hex.EncodeToString(b[:])
}

var saneID = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func idOf(r *http.Request) string {
	id, _ := r.Context().Value(requestIDKey{}).(string)
	return id
}

func (a *API) authorized(r *http.Request) bool {
	if a.cfg.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(a.cfg.Token)) == 1
}

// Protect wraps h with the API's bearer token check (for /metrics on the API's address).
func (a *API) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="footnote"`)
			writeError(w, http.StatusUnauthorized, Error{Code: "unauthorized", Message: "send Authorization: Bearer <FOOTNOTE_API_TOKEN>"})
			return
		}
		h.ServeHTTP(w, r)
	})
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
	e.Message = scrubPaths(e.Message)
	writeJSON(w, status, errorBody{Error: e})
}

// pathLike matches absolute and home-relative file-system paths.
var pathLike = regexp.MustCompile(`(?:~|\.{0,2})/[^\s"':;,]*[^\s"':;,.)]`)

// scrubPaths keeps file-system paths (models folders, data directories) out of error bodies:
// they tell a client about the server's layout and help it none.
func scrubPaths(s string) string {
	return pathLike.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Count(m, "/") < 2 && !strings.HasPrefix(m, "/") && !strings.HasPrefix(m, "~") {
			return m // "a/b" in prose
		}
		return "[path]"
	})
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
	// curl -d sends application/x-www-form-urlencoded whatever the body is: a JSON body
	// under that type (or text/plain) is read as JSON, so `curl -d '{…}'` works as written.
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") &&
		!strings.HasPrefix(ct, "application/x-www-form-urlencoded") && !strings.HasPrefix(ct, "text/plain") {
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
	case len(q.History) > a.cfg.MaxHistoryTurns:
		writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: "history", Message: fmt.Sprintf("history has %d turns; at most %d are allowed", len(q.History), a.cfg.MaxHistoryTurns)})
		return q, false
	}
	n := 0
	for _, t := range q.History {
		n += len(t.Question) + len(t.Answer)
		for _, s := range t.Sources {
			n += len(s.Chunk.Text) + len(s.Excerpt)
		}
	}
	if n > a.cfg.MaxHistoryBytes {
		writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: "history", Message: fmt.Sprintf("history holds %d bytes of text; at most %d are allowed", n, a.cfg.MaxHistoryBytes)})
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
	var le *bot.LimitError
	switch {
	case errors.Is(err, bot.ErrBusy):
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusTooManyRequests, Error{Code: "busy", Message: bot.BusyText})
	case errors.As(err, &le):
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(le.Wait.Seconds()))))
		writeError(w, http.StatusTooManyRequests, Error{Code: "rate_limited", Message: le.Error()})
	case errors.Is(err, rag.ErrUnknownMethod):
		writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: "method", Message: err.Error()})
	case errors.Is(err, rag.ErrModelMissing):
		writeError(w, http.StatusServiceUnavailable, Error{Code: "model_missing", Field: "method", Message: err.Error()})
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, Error{Code: "timeout", Message: "the question took too long to answer"})
	case errors.Is(err, context.Canceled):
		writeError(w, 499, Error{Code: "canceled", Message: "request canceled"})
	default:
		ref := idOf(r)
		a.log.Error("api request", "request_id", ref, "path", r.URL.Path, "err", err)
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
			overall = "degraded"
		}
	}
	for _, k := range a.cfg.Essential {
		if v, ok := status[k]; ok && v != "ok" {
			code, overall = http.StatusServiceUnavailable, "unavailable"
		}
	}
	if code == http.StatusServiceUnavailable {
		overall = "degraded"
	}
	writeJSON(w, code, map[string]any{"status": overall, "components": status})
}

// caller is the Request that identifies an API question to the core: the client address is
// the "user" its rate limit applies to.
func caller(r *http.Request) bot.Request {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return bot.Request{ID: idOf(r), Platform: Platform, User: "ip:" + host}
}

func (a *API) query(w http.ResponseWriter, r *http.Request) {
	req, ok := a.decode(w, r, true)
	if !ok {
		return
	}
	q := req.question()
	var ans rag.Answer
	var err error
	if a.cfg.Core != nil {
		ans, err = a.cfg.Core.Query(r.Context(), caller(r), q)
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Timeout)
		ans, err = a.cfg.Asker.Ask(ctx, q, nil)
		cancel()
		if a.cfg.OnAnswer != nil {
			a.cfg.OnAnswer(r.Context(), q, ans, err)
		}
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

// within runs heavy work under the core's gate when there is a core.
func (a *API) within(r *http.Request, fn func(ctx context.Context) error) error {
	if a.cfg.Core != nil {
		return a.cfg.Core.Within(r.Context(), Platform, fn)
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Timeout)
	defer cancel()
	return fn(ctx)
}

func (a *API) retrieve(w http.ResponseWriter, r *http.Request) {
	req, ok := a.decode(w, r, true)
	if !ok {
		return
	}
	var res rag.Retrieval
	err := a.within(r, func(ctx context.Context) error {
		var err error
		res, err = a.cfg.Retriever.Retrieve(ctx, req.question())
		return err
	})
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

// methodResolver is implemented by *rag.Pipeline: it names the methods it knows and
// resolves aliases, so /compare can refuse running one method twice.
type methodResolver interface {
	Methods() []string
	ResolveMethod(method string) (string, error)
}

// maxCompare bounds /compare when the retriever cannot say which methods it knows.
const maxCompare = 8

func (a *API) compare(w http.ResponseWriter, r *http.Request) {
	req, ok := a.decode(w, r, true)
	if !ok {
		return
	}
	limit := maxCompare
	mr, canResolve := a.cfg.Retriever.(methodResolver)
	if canResolve {
		limit = len(mr.Methods())
	}
	if len(req.Methods) > limit {
		writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: "methods", Message: fmt.Sprintf("at most %d methods, one run each", limit)})
		return
	}
	seen := map[string]bool{}
	for _, m := range req.Methods {
		name := m
		if canResolve {
			var err error
			if name, err = mr.ResolveMethod(m); err != nil {
				a.pipelineError(w, r, err)
				return
			}
		}
		if seen[name] {
			writeError(w, http.StatusBadRequest, Error{Code: "invalid", Field: "methods", Message: fmt.Sprintf("method %q is listed twice: each method runs once", m)})
			return
		}
		seen[name] = true
	}
	var res []rag.MethodResult
	err := a.within(r, func(ctx context.Context) error {
		var err error
		res, err = a.cfg.Retriever.Compare(ctx, req.question(), req.Methods)
		return err
	})
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
