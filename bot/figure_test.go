package bot_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
)

// TestShowSourceFigure: Show source n carries the picture Config.Figure draws for the
// source's own document and page, links use Config.PageURL, and a failing Figure leaves the
// text with a note instead of an error.
func TestShowSourceFigure(t *testing.T) {
	var asked []bot.Source
	fail := false
	b := newBot(t, bot.Config{
		Figure: func(ctx context.Context, s bot.Source) (bot.Attachment, error) {
			asked = append(asked, s)
			if fail {
				return bot.Attachment{}, errors.New("mupdf exploded")
			}
			return bot.Attachment{Name: "p.png", MIME: "image/png", Data: []byte("PNG")}, nil
		},
		PageURL: func(s bot.Source) string { return "https://fn.example/documents/" + s.DocID + "/pages/x.png" },
	})
	a := &bottest.Adapter{Bot: b}
	r := a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: "what is attention"})
	if r.Kind != bot.KindAnswer || len(r.Sources) == 0 {
		t.Fatalf("answer: %q with %d sources", r.Kind, len(r.Sources))
	}
	want := chunkByID(t, r.Sources[0].ChunkID)
	if s := r.Sources[0]; s.DocID != want.DocID || s.PageStart != want.PageStart || !strings.Contains(s.Link, want.DocID) {
		t.Fatalf("answer source %+v lacks the location or link of chunk %+v", s, want)
	}
	src := mustPress(t, a, r, bot.ActShowSource, 1, "")
	if len(src.Attachments) != 1 || string(src.Attachments[0].Data) != "PNG" || src.Note != "" {
		t.Fatalf("show source 1: attachments %+v note %q", src.Attachments, src.Note)
	}
	if len(asked) != 1 || asked[0].DocID != want.DocID || asked[0].Text != want.Text {
		t.Fatalf("Figure got %+v, want the full source of chunk %s", asked, want.ID)
	}
	fail = true
	src = mustPress(t, a, r, bot.ActShowSource, 1, "")
	if src.Kind != bot.KindSource || len(src.Attachments) != 0 || src.Note == "" || src.Sources[0].Text == "" {
		t.Fatalf("failed figure: kind %q, %d attachments, note %q", src.Kind, len(src.Attachments), src.Note)
	}
}

func TestSourcePage(t *testing.T) {
	s := bot.Source{PageStart: 3, Text: "aaaa|bbbbbbbbbb|cc", PageBreaks: []int{5, 16}}
	if p, text := bot.SourcePage(s); p != 4 || text != "bbbbbbbbbb|" {
		t.Fatalf("got page %d %q, want page 4 with the longest part", p, text)
	}
	s.PageBreaks = nil
	if p, text := bot.SourcePage(s); p != 3 || text != s.Text {
		t.Fatalf("one page: got %d %q", p, text)
	}
}
