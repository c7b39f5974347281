package discord

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/index/pdf"
	"github.com/footnote-dev/footnote/index/pdf/pdftest"
)

const targetMsg = "1400000000000099999" // the message the context menu was used on

func aboutCommandFixture(t *testing.T, text string) map[string]any {
	return fixture(t, "interaction_ask", map[string]any{
		"id": "1500000000000000050", "token": "tok-about",
		"data": map[string]any{"id": "1600000000000000002", "name": aboutCommand.Name, "type": 3, "target_id": targetMsg,
			"resolved": map[string]any{"messages": map[string]any{targetMsg: map[string]any{
				"id": targetMsg, "channel_id": channelID, "content": text, "type": 0,
				"author": map[string]any{"id": "1300000000000000777", "username": "grace"}}}}},
	})
}

func aboutSubmitFixture(t *testing.T, question string) map[string]any {
	return fixture(t, "interaction_modal", map[string]any{
		"id": "1500000000000000051", "token": "tok-about-submit",
		"data": map[string]any{"custom_id": aboutModalPrefix + targetMsg, "components": []any{
			map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": questionInputID, "value": question}}}}},
	})
}

// TestAskAboutMessage: the message command opens a modal; its submission starts a thread
// from the message and answers there in selected-text mode over the message.
func TestAskAboutMessage(t *testing.T) {
	h := newHarness(t)
	h.run(t)
	text := "BERT is pre-trained with a masked language model objective. See arXiv 1810.04805."
	h.dc.dispatch(t, "INTERACTION_CREATE", aboutCommandFixture(t, text))
	waitFor(t, "modal", func() bool { return len(h.dc.callsOf("POST", "/interactions/1500000000000000050/*/callback")) == 1 })
	modal := h.dc.callsOf("POST", "/interactions/1500000000000000050/*/callback")[0]
	md, _ := modal.Body["data"].(map[string]any)
	if num(modal.Body["type"]) != 9 || md["custom_id"] != aboutModalPrefix+targetMsg {
		t.Fatalf("callback %s, want the question modal", modal.Raw)
	}
	if len(h.core.requests()) != 0 {
		t.Fatal("asked before the modal was submitted")
	}

	h.dc.dispatch(t, "INTERACTION_CREATE", aboutSubmitFixture(t, "What objective is used?"))
	waitFor(t, "answer in thread", func() bool { return len(h.dc.callsOf("POST", "/channels/"+targetMsg+"/messages")) == 2 })
	h.settle(t)
	if th := h.dc.callsOf("POST", "/channels/"+channelID+"/messages/"+targetMsg+"/threads"); len(th) != 1 {
		t.Fatalf("%d threads started from the message", len(th))
	}
	reqs := h.core.requests()
	if len(reqs) != 1 || reqs[0].Selected != text || reqs[0].Text != "What objective is used?" || reqs[0].Thread != targetMsg || reqs[0].Channel != channelID {
		t.Fatalf("requests %+v, want the question about the message in its thread", reqs)
	}
	posts := h.dc.callsOf("POST", "/channels/"+targetMsg+"/messages")
	if !strings.Contains(visibleText(t, posts[0]), "asked about this message") || !strings.Contains(visibleText(t, posts[1]), "**two sub-layers** [1]") {
		t.Errorf("thread posts %q / %q", visibleText(t, posts[0]), visibleText(t, posts[1]))
	}
	cb := h.dc.callsOf("POST", "/interactions/1500000000000000051/*/callback")
	if len(cb) != 1 || num(cb[0].Body["type"]) != 5 || num(cb[0].Body["data"].(map[string]any)["flags"]) != 1<<6 {
		t.Fatalf("submit callback %+v, want a deferred ephemeral response", cb)
	}
	edits := h.dc.callsOf("PATCH", "/webhooks/"+appID+"/tok-about-submit/messages/@original")
	if len(edits) != 1 || !strings.Contains(visibleText(t, edits[0]), "<#"+targetMsg+">") {
		t.Errorf("the response does not point to the thread: %+v", edits)
	}
}

// TestAskAboutMessageExistingThread: when the message already has a thread (Discord answers
// 160004), the answer goes into it.
func TestAskAboutMessageExistingThread(t *testing.T) {
	h := newHarness(t)
	h.dc.fail = func(method, path string) (int, string, bool) {
		if method == "POST" && strings.HasSuffix(path, "/threads") {
			return 400, `{"message":"A thread has already been created for this message","code":160004}`, true
		}
		return 0, "", false
	}
	h.run(t)
	h.dc.dispatch(t, "INTERACTION_CREATE", aboutCommandFixture(t, "Some claim about attention."))
	waitFor(t, "modal", func() bool { return len(h.dc.callsOf("POST", "/interactions/1500000000000000050/*/callback")) == 1 })
	h.dc.dispatch(t, "INTERACTION_CREATE", aboutSubmitFixture(t, "Is it right?"))
	waitFor(t, "answer in thread", func() bool { return len(h.dc.callsOf("POST", "/channels/"+targetMsg+"/messages")) == 2 })
	h.settle(t)
	if r := h.core.requests(); len(r) != 1 || r[0].Thread != targetMsg {
		t.Fatalf("requests %+v", r)
	}
}

// pictureCore answers Show source with a rendered page.
type pictureCore struct {
	*fakeCore
	png []byte
}

func (p *pictureCore) Act(ctx context.Context, c bot.Click) bot.Reply {
	r := p.fakeCore.Act(ctx, c)
	if r.Kind == bot.KindSource {
		r.Attachments = []bot.Attachment{{Name: "attention-p3.png", MIME: "image/png", Title: "Attention Is All You Need, p. 3", Data: p.png}}
	}
	return r
}

// TestShowSourceAttachesPage: Show source n's ephemeral reply is followed by the page
// picture as an attachment: a PNG with the rendered dimensions and the highlight.
func TestShowSourceAttachesPage(t *testing.T) {
	quote := "Each layer has two sub-layers: a multi-head self-attention mechanism and a position-wise feed-forward network."
	para, _ := pdftest.Paragraph(72, 300, 14, 60, quote)
	rendered, err := pdf.RenderPage(context.Background(), pdftest.Build([]pdftest.Page{{Texts: para}}, pdftest.Options{}), 1, quote, pdf.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Core = &pictureCore{fakeCore: c.Core.(*fakeCore), png: rendered.PNG} })
	h.run(t)
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_button", nil))
	waitFor(t, "file", func() bool { return len(h.dc.callsOf("POST", "/webhooks/"+appID+"/*")) == 1 })
	h.settle(t)
	up := h.dc.callsOf("POST", "/webhooks/"+appID+"/*")[0]
	if !strings.Contains(string(up.Raw), `filename="attention-p3.png"`) || !strings.Contains(string(up.Raw), `"flags":64`) {
		t.Fatalf("follow-up is not an ephemeral upload of the page: %.300s", up.Raw)
	}
	i := bytes.Index(up.Raw, []byte("\x89PNG"))
	if i < 0 {
		t.Fatal("no PNG in the upload")
	}
	data := up.Raw[i:]
	if j := bytes.LastIndex(data, []byte("\r\n--")); j >= 0 {
		data = data[:j]
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != rendered.Width || img.Bounds().Dy() != rendered.Height || !highlightIn(img) {
		t.Errorf("uploaded %v (highlight %v), rendered %dx%d", img.Bounds(), highlightIn(img), rendered.Width, rendered.Height)
	}
	// The text reply came first.
	if e := h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original"); len(e) != 1 || e[0].Seq > up.Seq {
		t.Error("source text not shown before the picture")
	}
}

func highlightIn(img image.Image) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == pdf.HighlightColor.R && uint8(g>>8) == pdf.HighlightColor.G && uint8(bl>>8) == pdf.HighlightColor.B {
				return true
			}
		}
	}
	return false
}

type fakeLibrary struct{ ov bot.Overview }

func (f fakeLibrary) Overview(context.Context) (bot.Overview, error) { return f.ov, nil }

// TestFootnoteDocsAndStats: /footnote docs and /footnote stats answer ephemerally.
func TestFootnoteDocsAndStats(t *testing.T) {
	lib := fakeLibrary{bot.Overview{Chunks: 420, Stats: bot.Stats{Questions: 9, Answered: 7, FeedbackUp: 3, FeedbackDown: 1},
		Documents: []bot.DocSummary{{ID: "d1", Name: "1706.03762", Title: "Attention Is All You Need", Pages: 15, IndexedAt: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)}}}}
	h := newHarness(t, func(c *Config) { c.Native.Library = lib })
	h.run(t)
	for i, sub := range []string{"docs", "stats"} {
		id := "150000000000000007" + string(rune('0'+i))
		h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_ask", map[string]any{
			"id": id, "token": "tok-" + sub,
			"data": map[string]any{"id": "1600000000000000003", "name": "footnote", "type": 1,
				"options": []any{map[string]any{"name": sub, "type": 1}}},
		}))
		waitFor(t, sub, func() bool {
			return len(h.dc.callsOf("PATCH", "/webhooks/"+appID+"/tok-"+sub+"/messages/@original")) == 1
		})
		cb := h.dc.callsOf("POST", "/interactions/"+id+"/*/callback")
		if len(cb) != 1 || num(cb[0].Body["data"].(map[string]any)["flags"]) != 1<<6 {
			t.Fatalf("/footnote %s callback %+v, want deferred ephemeral", sub, cb)
		}
		got := visibleText(t, h.dc.callsOf("PATCH", "/webhooks/"+appID+"/tok-"+sub+"/messages/@original")[0])
		want := map[string][]string{
			"docs":  {"Indexed documents (1)", "**Attention Is All You Need** · 15 pages · `1706.03762` · indexed 2 Nov 2026"},
			"stats": {"Documents\n1", "Passages\n420", "👍\n3", "👎\n1"},
		}[sub]
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("/footnote %s lacks %q:\n%s", sub, w, got)
			}
		}
	}
	if len(h.core.requests()) != 0 {
		t.Error("/footnote asked the pipeline")
	}
}
