package bot

import (
	"context"
	"log/slog"
	"time"

	"github.com/footnote-dev/footnote/rag"
)

// locate copies where a chunk lies into its Source, so Show source n can draw the page and
// answers can link to it long after the search.
func locate(s Source, c rag.Chunk) Source {
	s.DocID = c.DocID
	s.PageStart, s.PageEnd = c.PageStart, c.PageEnd
	s.LineStart, s.LineEnd = c.LineStart, c.LineEnd
	s.PageBreaks = c.PageBreaks
	return s
}

// link fills Source.Link from Config.PageURL.
func (b *Bot) link(r *Reply) {
	if b.cfg.PageURL == nil {
		return
	}
	for i := range r.Sources {
		if r.Sources[i].DocID != "" && r.Sources[i].PageStart > 0 {
			r.Sources[i].Link = b.cfg.PageURL(r.Sources[i])
		}
	}
}

// figureTimeout bounds drawing one page: the user is waiting for a click's reply.
const figureTimeout = 20 * time.Second

// figureNote is shown small under a source whose picture could not be made.
const figureNote = "I couldn't draw the cited page this time, so here is its text."

// figure attaches the picture of a source's page to a KindSource reply; on failure the reply
// keeps the text and says the picture is missing.
func (b *Bot) figure(ctx context.Context, log *slog.Logger, r *Reply) {
	if b.cfg.Figure == nil || len(r.Sources) != 1 {
		return
	}
	s := r.Sources[0]
	if s.DocID == "" || s.PageStart == 0 {
		return // text and Markdown sources: adapters show the line range as a code block
	}
	ctx, cancel := context.WithTimeout(ctx, figureTimeout)
	defer cancel()
	att, err := b.cfg.Figure(ctx, s)
	if err != nil {
		log.Warn("draw cited page; showing text", "doc_id", s.DocID, "page", s.PageStart, logErr, err)
		b.m.errors.WithLabelValues("figure").Inc()
		r.Note = figureNote
		return
	}
	r.Attachments = append(r.Attachments, att)
}

// SourcePage picks the page of a source to draw and the part of its text on that page: the
// page holding most of the text when the chunk spans pages (PageBreaks), else PageStart.
func SourcePage(s Source) (page int, text string) {
	page, text = s.PageStart, s.Text
	if len(s.PageBreaks) == 0 || s.Text == "" {
		return page, text
	}
	start := 0
	best := -1
	for i := 0; i <= len(s.PageBreaks); i++ {
		end := len(s.Text)
		if i < len(s.PageBreaks) {
			end = min(max(s.PageBreaks[i], start), len(s.Text))
		}
		if end-start > best {
			best, page, text = end-start, s.PageStart+i, s.Text[start:end]
		}
		start = end
	}
	return page, text
}
