package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/footnote-dev/footnote/rag"
)

func TestPages(t *testing.T) {
	docs := map[string]rag.Document{
		"d1": {ID: "d1", Kind: "pdf", Pages: 15},
		"t1": {ID: "t1", Kind: "text", Lines: 40},
	}
	var drawn []int
	p, err := NewPages(PagesConfig{
		Document: func(_ context.Context, id string) (rag.Document, error) {
			d, ok := docs[id]
			if !ok {
				return rag.Document{}, fmt.Errorf("document %s: %w", id, rag.ErrNotFound)
			}
			return d, nil
		},
		Render: func(_ context.Context, d rag.Document, n int) ([]byte, error) {
			if n == 13 {
				return nil, errors.New("mupdf: broken page")
			}
			drawn = append(drawn, n)
			return []byte("\x89PNG page"), nil
		},
		Token: "s3cret",
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	p.Register(mux)
	get := func(path, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		return w
	}
	signed := PagePath("d1", 3) + "?sig=" + PageSignature("s3cret", PagePath("d1", 3))
	for _, tc := range []struct {
		path, auth string
		status     int
	}{
		{"/documents/d1/pages/3.png", "", 401},
		{"/documents/d1/pages/3.png", "Bearer wrong", 401},
		{"/documents/d1/pages/3.png?sig=0123", "", 401},
		{PagePath("d1", 4) + "?sig=" + PageSignature("s3cret", PagePath("d1", 3)), "", 401}, // a signature is for one page
		{"/documents/d1/pages/3.png", "Bearer s3cret", 200},
		{signed, "", 200},
		{"/documents/d1/pages/0.png", "Bearer s3cret", 400},
		{"/documents/d1/pages/3.jpg", "Bearer s3cret", 400},
		{"/documents/d1/pages/16.png", "Bearer s3cret", 404},
		{"/documents/nope/pages/1.png", "Bearer s3cret", 404},
		{"/documents/t1/pages/1.png", "Bearer s3cret", 415},
		{"/documents/d1/pages/13.png", "Bearer s3cret", 503},
	} {
		w := get(tc.path, tc.auth)
		if w.Code != tc.status {
			t.Errorf("GET %s (%q): %d %s, want %d", tc.path, tc.auth, w.Code, w.Body.String(), tc.status)
		}
		if w.Code == 200 && (w.Header().Get("Content-Type") != "image/png" || w.Body.String() != "\x89PNG page") {
			t.Errorf("GET %s: %s %q", tc.path, w.Header().Get("Content-Type"), w.Body.String())
		}
	}
	if len(drawn) != 2 || drawn[0] != 3 {
		t.Errorf("drew pages %v, want page 3 twice and nothing unauthorised", drawn)
	}
}
