package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/footnote-dev/footnote/rag"
)

// PagesConfig wires GET /documents/{id}/pages/{n}.png, the picture of one PDF page.
type PagesConfig struct {
	// Document looks a document up; an unknown id wraps rag.ErrNotFound. Required.
	Document func(ctx context.Context, id string) (rag.Document, error)
	// Render draws page n (1-based) of doc as PNG. Required.
	Render func(ctx context.Context, doc rag.Document, n int) ([]byte, error)
	// Token, when set, is required as "Authorization: Bearer <token>" or as the sig query
	// parameter PageSignature computes, so links in chat work without revealing the token.
	Token string
}

// Pages serves page pictures.
type Pages struct{ cfg PagesConfig }

// NewPages validates cfg.
func NewPages(cfg PagesConfig) (*Pages, error) {
	if cfg.Document == nil || cfg.Render == nil {
		return nil, errors.New("httpapi: pages need Document and Render")
	}
	return &Pages{cfg: cfg}, nil
}

// PagePattern is the route Register mounts.
const PagePattern = "GET /documents/{id}/pages/{page}"

// Register mounts the route on mux.
func (p *Pages) Register(mux *http.ServeMux) { mux.Handle(PagePattern, p) }

// PagePath is the path of a page's picture.
func PagePath(docID string, n int) string {
	return "/documents/" + docID + "/pages/" + strconv.Itoa(n) + ".png"
}

// PageSignature authorises one page path for holders of a link: a truncated HMAC-SHA256
// of the path under the API token.
func PageSignature(token, path string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(path))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

func (p *Pages) authorized(r *http.Request) bool {
	if p.cfg.Token == "" {
		return true
	}
	if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
		subtle.ConstantTimeCompare([]byte(h), []byte(p.cfg.Token)) == 1 {
		return true
	}
	sig := r.URL.Query().Get("sig")
	return sig != "" && hmac.Equal([]byte(sig), []byte(PageSignature(p.cfg.Token, r.URL.Path)))
}

// ServeHTTP answers the PNG, or a JSON error: 401 without the token, 400 for a page that is
// not a positive number ending in .png, 404 for an unknown document or page, 415 for a
// document without pages (text files), 503 when the page cannot be drawn.
func (p *Pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="footnote"`)
		writeError(w, http.StatusUnauthorized, Error{Code: "unauthorized", Message: "this route needs the API token (Authorization: Bearer …) or a signed link"})
		return
	}
	num, ok := strings.CutSuffix(r.PathValue("page"), ".png")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, Error{Code: "bad_request", Field: "page", Message: "want a page number such as 3.png"})
		return
	}
	doc, err := p.cfg.Document(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, rag.ErrNotFound):
		writeError(w, http.StatusNotFound, Error{Code: "not_found", Field: "id", Message: "no such document"})
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, Error{Code: "unavailable", Message: "the document store is not reachable"})
		return
	case doc.Pages == 0:
		writeError(w, http.StatusUnsupportedMediaType, Error{Code: "no_pages", Field: "id", Message: "this document has lines, not pages: see its text instead"})
		return
	case n > doc.Pages:
		writeError(w, http.StatusNotFound, Error{Code: "not_found", Field: "page", Message: "the document has " + strconv.Itoa(doc.Pages) + " pages"})
		return
	}
	png, err := p.cfg.Render(r.Context(), doc, n)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, Error{Code: "render_failed", Message: "the page could not be drawn: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", strconv.Itoa(len(png)))
	w.Header().Set("Cache-Control", "private, max-age=3600")
	if r.Method != http.MethodHead {
		w.Write(png)
	}
}
