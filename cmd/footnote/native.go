package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/footnote-dev/footnote/adapters/httpapi"
	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/pdf"
	"github.com/footnote-dev/footnote/rag"
)

// Wiring of issue #14 for `footnote serve`: routes (per-channel corpora, privacy, method,
// generator), the cited page's picture for Show source n and GET
// /documents/{id}/pages/{n}.png, and the corpus overview behind Slack App Home and Discord
// /footnote docs|stats.

// nativeBot adds routes, their corpora, page pictures and page links to the bot's config.
func (a *app) nativeBot(ctx context.Context, cfg *bot.Config) error {
	if err := validateRoutes(a.cfg.Routes); err != nil {
		return err
	}
	if len(a.cfg.Routes) > 0 {
		cfg.Route = routeFunc(a.cfg.Routes, a.cfg.Corpus)
		cfg.Corpora = map[string]bot.Asker{}
		for _, r := range a.cfg.Routes {
			key := r.askerKey(a.cfg.Corpus)
			if key == "" || cfg.Corpora[key] != nil {
				continue
			}
			p, st, err := a.routePipeline(ctx, r)
			if err != nil {
				return fmt.Errorf("config routes (line %d): corpus %q: %w", r.Line, r.Corpus, err)
			}
			cfg.Corpora[key] = bot.WithPapers(p, a.paperRefs(st))
		}
	}
	if cfg.Asker != nil && a.comp != nil {
		cfg.Asker = bot.WithPapers(cfg.Asker, a.paperRefs(a.comp.store))
	}
	pg := a.pageRenderer()
	if pg == nil {
		return nil
	}
	cfg.Figure = pg.figure
	if base := strings.TrimRight(a.cfg.PublicURL, "/"); base != "" {
		token := a.getenv("FOOTNOTE_API_TOKEN")
		cfg.PageURL = func(s bot.Source) string {
			page, _ := bot.SourcePage(s)
			path := httpapi.PagePath(s.DocID, page)
			if token != "" {
				path += "?sig=" + httpapi.PageSignature(token, path)
			}
			return base + path
		}
	}
	return nil
}

// routePipeline builds the pipeline for a route's corpus and generator, sharing the main
// pipeline's models (and its store when the corpus is the default one).
func (a *app) routePipeline(ctx context.Context, r RouteConfig) (*rag.Pipeline, index.Store, error) {
	if _, err := a.pipeline(ctx); err != nil {
		return nil, nil, err
	}
	main := a.comp
	sub := &app{out: a.out, errOut: a.errOut, getenv: a.getenv, cfg: a.cfg, log: a.log.With("corpus", r.Corpus)}
	if r.Generator != "" {
		sub.cfg.LLM = r.Generator
	}
	// The reranker is the main pipeline's: "none" keeps buildReranker from loading another.
	sub.cfg.Reranker = "none"
	sub.comp = &components{embedders: main.embedders, countTokens: main.countTokens, reranker: main.reranker,
		local: main.local, store: main.store}
	if r.Corpus != "" && r.Corpus != a.cfg.Corpus {
		sub.cfg.Corpus = r.Corpus
		models := make([]rag.ModelInfo, len(main.embedders))
		for i, e := range main.embedders {
			models[i] = e.Info()
		}
		st, err := sub.openStore(ctx, models, false)
		if err != nil {
			return nil, nil, err
		}
		a.onClose(st.Close)
		sub.comp.store = st
		if s, err := index.Counts(ctx, st); err == nil && s.Documents == 0 {
			a.log.Warn("a route's corpus holds no documents: its questions will be answered \"Not found\" until it is indexed",
				"corpus", r.Corpus, "line", r.Line, "index_with", "FOOTNOTE_CORPUS="+r.Corpus+" footnote index <folder>")
		}
	}
	p, err := sub.pipeline(ctx)
	a.onClose(func() error { sub.close(); return nil })
	return p, sub.comp.store, err
}

// paperRefs finds the documents of st a message names, for "Ask about this message".
func (a *app) paperRefs(st index.Store) bot.PaperRefs {
	return bot.DocRefs(func(ctx context.Context) []bot.DocSummary {
		docs, err := st.Documents(ctx)
		if err != nil {
			a.log.Warn("list documents for a message's paper references", "err", err)
			return nil
		}
		out := make([]bot.DocSummary, len(docs))
		for i, d := range docs {
			out[i] = bot.DocSummary{ID: d.ID, Name: d.Name, Title: d.Title}
		}
		return out
	})
}

// library summarises the default corpus and the query log for App Home and /footnote.
func (a *app) library(b *bot.Bot) bot.Library {
	return bot.LibraryFunc(func(ctx context.Context) (bot.Overview, error) {
		if a.comp == nil || a.comp.store == nil {
			return bot.Overview{}, errors.New("no store")
		}
		docs, err := a.comp.store.Documents(ctx)
		if err != nil {
			return bot.Overview{}, err
		}
		var ov bot.Overview
		for _, d := range docs {
			ov.Documents = append(ov.Documents, bot.DocSummary{ID: d.ID, Name: d.Name, Title: d.Title, Kind: d.Kind,
				Pages: d.Pages, Lines: d.Lines, IndexedAt: d.IndexedAt})
		}
		if s, err := index.Counts(ctx, a.comp.store); err == nil {
			ov.Chunks = s.Chunks
		}
		if st, err := b.Stats(ctx); err == nil {
			ov.Stats = st
		}
		return ov, nil
	})
}

// registerPages mounts GET /documents/{id}/pages/{n}.png.
func (a *app) registerPages(mux *http.ServeMux) error {
	pg := a.pageRenderer()
	if pg == nil {
		return nil
	}
	p, err := httpapi.NewPages(httpapi.PagesConfig{
		Document: pg.store.Document,
		Render: func(ctx context.Context, doc rag.Document, n int) ([]byte, error) {
			r, err := pg.render(ctx, doc, n, "")
			return r.PNG, err
		},
		Token: string(a.cfg.APIToken),
	})
	if err != nil {
		return err
	}
	p.Register(mux)
	return nil
}

// Page picture bounds: drawing one page takes tens of milliseconds (see the README), so
// pageTimeout only stops pathological files; pageBytes keeps uploads small next to Slack's
// and Discord's limits (Discord's is 10 MiB).
const (
	pageTimeout    = 15 * time.Second
	pageBytes      = 4 << 20
	pageCacheBytes = 256 << 20
)

type pageRenderer struct {
	store index.Store
	cache *pdf.Cache
}

func (a *app) pageRenderer() *pageRenderer {
	if a.comp == nil || a.comp.store == nil {
		return nil
	}
	limit := int64(pageCacheBytes)
	if a.cfg.PageCacheMB > 0 {
		limit = int64(a.cfg.PageCacheMB) << 20
	}
	return &pageRenderer{store: a.comp.store, cache: &pdf.Cache{Dir: filepath.Join(a.cfg.DataDir, "pages"), MaxBytes: limit}}
}

// figure draws the page a source cites, its lines highlighted, for Show source n.
func (p *pageRenderer) figure(ctx context.Context, s bot.Source) (bot.Attachment, error) {
	doc, err := p.store.Document(ctx, s.DocID)
	if err != nil {
		return bot.Attachment{}, err
	}
	page, text := bot.SourcePage(s)
	r, err := p.render(ctx, doc, page, text)
	if err != nil {
		return bot.Attachment{}, err
	}
	title := strings.TrimSpace(doc.Title)
	if title == "" {
		title = doc.Name
	}
	return bot.Attachment{
		Name:    fmt.Sprintf("%s-p%d.png", safeName(doc.Name), page),
		MIME:    "image/png",
		Title:   fmt.Sprintf("%s, p. %d", title, page),
		AltText: fmt.Sprintf("Page %d of %s with the cited lines highlighted", page, title),
		Data:    r.PNG, Width: r.Width, Height: r.Height,
	}, nil
}

// render draws a page (with quote highlighted when not empty), through the disk cache.
func (p *pageRenderer) render(ctx context.Context, doc rag.Document, page int, quote string) (pdf.Rendered, error) {
	if doc.Kind != "pdf" || doc.Pages == 0 {
		return pdf.Rendered{}, fmt.Errorf("%s is a %s file: it has no pages to draw", doc.Name, doc.Kind)
	}
	sum := sha256.Sum256([]byte(quote))
	key := doc.Hash + "/" + strconv.Itoa(page) + "/" + hex.EncodeToString(sum[:8])
	if data, ok := p.cache.Get(key); ok {
		return pdf.Rendered{PNG: data, Page: page}, nil
	}
	data, err := os.ReadFile(doc.Source)
	if err != nil {
		return pdf.Rendered{}, fmt.Errorf("read %s: %w", doc.Source, err)
	}
	if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != doc.Hash {
		return pdf.Rendered{}, fmt.Errorf("%s changed since it was indexed: re-index it to see its pages", doc.Source)
	}
	ctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	r, err := pdf.RenderPage(ctx, data, page, quote, pdf.RenderOptions{MaxBytes: pageBytes})
	if err != nil {
		return pdf.Rendered{}, err
	}
	_ = p.cache.Put(key, r.PNG) // a full disk costs speed, not the picture
	return r, nil
}

// safeName keeps a file name to letters, digits, dots, dashes and underscores.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
	if s == "" {
		return "page"
	}
	return s
}
