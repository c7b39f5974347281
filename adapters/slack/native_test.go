package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/index/pdf"
	"github.com/footnote-dev/footnote/index/pdf/pdftest"
)

// nativeMethods are the Web API methods of the AI-app surface, file uploads and App Home that
// the fake answers (fake_test.go registers them).
var nativeMethods = []string{
	"files.getUploadURLExternal", "upload", "files.completeUploadExternal",
	"assistant.threads.setStatus", "assistant.threads.setTitle", "assistant.threads.setSuggestedPrompts",
	"chat.startStream", "chat.appendStream", "chat.stopStream", "views.publish",
}

// uploads holds the bytes each fake received at its upload URL.
var uploads sync.Map // *fakeSlack → *[][]byte

func (f *fakeSlack) uploaded() [][]byte {
	v, ok := uploads.Load(f)
	if !ok {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), *v.(*[][]byte)...)
}

// nativeResponse is the body the fake answers for methods beyond chat.*.
func (f *fakeSlack) nativeResponse(method string, c apiCall, ts string, body []byte) string {
	switch method {
	case "files.getUploadURLExternal":
		return fmt.Sprintf(`{"ok":true,"upload_url":%q,"file_id":"F%s"}`, f.srv.GetAPIURL()+"upload", strings.ReplaceAll(ts, ".", ""))
	case "upload":
		// multipart/form-data with one "file" part: keep the PNG inside it.
		if i := bytes.Index(body, []byte("\x89PNG")); i >= 0 {
			data := body[i:]
			if j := bytes.LastIndex(data, []byte("\r\n--")); j >= 0 {
				data = data[:j]
			}
			v, _ := uploads.LoadOrStore(f, &[][]byte{})
			f.mu.Lock()
			*v.(*[][]byte) = append(*v.(*[][]byte), append([]byte(nil), data...))
			f.mu.Unlock()
		}
		return "OK"
	case "files.completeUploadExternal":
		return `{"ok":true,"files":[{"id":"F1","title":"page"}]}`
	case "chat.startStream":
		return fmt.Sprintf(`{"ok":true,"channel":%q,"ts":%q}`, c.Form.Get("channel"), ts)
	case "chat.appendStream", "chat.stopStream":
		return fmt.Sprintf(`{"ok":true,"channel":%q,"ts":%q}`, c.Form.Get("channel"), c.Form.Get("ts"))
	}
	return `{"ok":true}`
}

// pagePNG renders a synthetic page with the quoted paragraph highlighted, as bot's Figure
// would.
func pagePNG(t *testing.T) pdf.Rendered {
	t.Helper()
	quote := "Each layer has two sub-layers: a multi-head self-attention mechanism and a position-wise feed-forward network."
	para, _ := pdftest.Paragraph(72, 300, 14, 60, quote)
	data := pdftest.Build([]pdftest.Page{{Texts: para}}, pdftest.Options{})
	r, err := pdf.RenderPage(context.Background(), data, 1, quote, pdf.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func hasHighlight(img image.Image) bool {
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

// TestShowSourceUploadsPage: Show source n posts the source's text in the thread and uploads
// the page picture there with files.uploadV2; the bytes Slack receives are the PNG, with its
// dimensions and highlight intact.
func TestShowSourceUploadsPage(t *testing.T) {
	rendered := pagePNG(t)
	h := newHarness(t, nil)
	h.core.act = func(ctx context.Context, c bot.Click) bot.Reply {
		a := sampleAnswer()
		s := a.Sources[0]
		s.Text = "Each layer has two sub-layers."
		return bot.Reply{Kind: bot.KindSource, AnswerID: a.AnswerID, Sources: []bot.Source{s},
			Attachments: []bot.Attachment{{Name: "paper-p3.png", MIME: "image/png", Title: "p. 3", Data: rendered.PNG}}}
	}
	act := bot.Action{Kind: bot.ActShowSource, AnswerID: "k3v9x2m7qp", Source: 1}
	wantStatus(t, h.interaction(blockAction("trig-1", "C1", "1700000000.000002", "1700000000.000001", false, "footnote_src_1", act.Encode())), http.StatusOK)

	done := h.slack.waitCalls(t, "files.completeUploadExternal", 1)
	if got := done[0].Form.Get("channel_id"); got != "C1" {
		t.Errorf("shared to channel %q, want C1", got)
	}
	if got := done[0].Form.Get("thread_ts"); got != "1700000000.000001" {
		t.Errorf("shared to thread %q, want the answer's thread", got)
	}
	get := h.slack.callsOf("files.getUploadURLExternal")
	if len(get) != 1 || get[0].Form.Get("filename") != "paper-p3.png" || get[0].Form.Get("length") != fmt.Sprint(len(rendered.PNG)) {
		t.Fatalf("getUploadURLExternal calls %+v", get)
	}
	// The text comes first, so the thread reads source, then its picture.
	if posts := h.slack.callsOf("chat.postMessage"); len(posts) == 0 || posts[0].Seq > done[0].Seq {
		t.Error("source text not posted before the upload")
	}
	ups := h.slack.uploaded()
	if len(ups) != 1 {
		t.Fatalf("%d uploads reached the upload URL", len(ups))
	}
	img, err := png.Decode(bytes.NewReader(ups[0]))
	if err != nil {
		t.Fatalf("uploaded bytes are not a PNG: %v", err)
	}
	if img.Bounds().Dx() != rendered.Width || img.Bounds().Dy() != rendered.Height {
		t.Errorf("uploaded %v, rendered %dx%d", img.Bounds(), rendered.Width, rendered.Height)
	}
	if !hasHighlight(img) {
		t.Error("uploaded page has no highlighted lines")
	}
}

// TestShowSourceUploadFailsVisibly: when Slack refuses the upload, the thread says so under
// the source text instead of staying silent.
func TestShowSourceUploadFailsVisibly(t *testing.T) {
	h := newHarness(t, nil)
	h.slack.failing["files.getUploadURLExternal"] = "missing_scope"
	h.core.act = func(ctx context.Context, c bot.Click) bot.Reply {
		a := sampleAnswer()
		return bot.Reply{Kind: bot.KindSource, AnswerID: a.AnswerID, Sources: a.Sources[:1],
			Attachments: []bot.Attachment{{Name: "p.png", Data: []byte("\x89PNG fake")}}}
	}
	act := bot.Action{Kind: bot.ActShowSource, AnswerID: "k3v9x2m7qp", Source: 1}
	wantStatus(t, h.interaction(blockAction("trig-2", "C1", "1700000000.000002", "1700000000.000001", false, "footnote_src_1", act.Encode())), http.StatusOK)
	posts := h.slack.waitCalls(t, "chat.postMessage", 2)
	if !strings.Contains(posts[1].text(t), "couldn't upload") {
		t.Errorf("second post %q, want the failed-upload notice", posts[1].text(t))
	}
}

// TestTextSourceShowsLineRange: a text file's source shows its lines as a code block.
func TestTextSourceShowsLineRange(t *testing.T) {
	r := bot.Reply{Kind: bot.KindSource, Sources: []bot.Source{{N: 1, Title: "notes", Pages: "lines 10–12", LineStart: 10, LineEnd: 12,
		Text: "func main() {\n\tfmt.Println(1 < 2)\n}"}}}
	body := messageText(t, render(r)[0])
	if !strings.Contains(body, "```\nfunc main() {\n\tfmt.Println(1 &lt; 2)\n}\n```") || !strings.Contains(body, "lines 10–12") {
		t.Errorf("text source rendered as %q", body)
	}
}

// messageText joins the texts of a message's blocks.
func messageText(t *testing.T, m message) string {
	t.Helper()
	raw, err := json.Marshal(m.Blocks)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []map[string]any
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, b := range blocks {
		parts = append(parts, blockText(b))
	}
	return strings.Join(parts, "\n")
}
