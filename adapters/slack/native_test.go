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
	"time"

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
	h.slack.erroring["files.getUploadURLExternal"] = "missing_scope"
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

// TestMessageShortcutAnswersInThread: "Ask footnote about this" opens a one-field modal; its
// submission answers in the message's thread, in selected-text mode over the message.
func TestMessageShortcutAnswersInThread(t *testing.T) {
	h := newHarness(t, nil)
	msgText := "Transformers drop recurrence entirely & rely on self-attention <see 1706.03762>."
	wantStatus(t, h.interaction(map[string]any{
		"type": "message_action", "callback_id": askMessageCallbackID, "trigger_id": "trig-sc",
		"user": map[string]any{"id": "U2", "team_id": "T1"}, "team": map[string]any{"id": "T1"},
		"channel":    map[string]any{"id": "C1"},
		"message_ts": "1700000000.000050",
		"message":    map[string]any{"type": "message", "user": "U9", "ts": "1700000000.000050", "text": msgText},
	}), http.StatusOK)
	open := h.slack.waitCalls(t, "views.open", 1)
	view, _ := open[0].JSON["view"].(map[string]any)
	if view["callback_id"] != askModalCallbackID {
		t.Fatalf("opened view %v", view)
	}
	meta, _ := view["private_metadata"].(string)
	if len(meta) > maxMetadata || !strings.Contains(meta, "rely on self-attention") {
		t.Fatalf("private_metadata %q", meta)
	}
	raw, _ := json.Marshal(view["blocks"])
	if !strings.Contains(string(raw), `"action_id":"`+askActionID+`"`) {
		t.Fatalf("modal has no question field: %s", raw)
	}

	wantStatus(t, h.interaction(map[string]any{
		"type": "view_submission", "user": map[string]any{"id": "U2", "team_id": "T1"}, "team": map[string]any{"id": "T1"},
		"view": map[string]any{"id": "V9", "hash": "h9", "type": "modal", "callback_id": askModalCallbackID, "private_metadata": meta,
			"state": map[string]any{"values": map[string]any{askBlockID: map[string]any{askActionID: map[string]any{"type": "plain_text_input", "value": "What does it replace recurrence with?"}}}}},
	}), http.StatusOK)
	updates := h.slack.waitCalls(t, "chat.update", 1)
	h.a.Wait(t.Context())
	reqs := h.core.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d questions asked", len(reqs))
	}
	r := reqs[0]
	if r.Selected != msgText || r.Text != "What does it replace recurrence with?" || r.Thread != "1700000000.000050" || r.Channel != "C1" || r.User != "U2" {
		t.Fatalf("request %+v, want the question about the message, in its thread", r)
	}
	posts := h.slack.callsOf("chat.postMessage")
	if len(posts) < 2 || posts[0].Form.Get("thread_ts") != "1700000000.000050" || !strings.Contains(posts[0].text(t), "asked about this message") {
		t.Fatalf("posts %+v: want the question then the answer in the message's thread", posts)
	}
	final := h.slack.callsOf("chat.update")
	if !strings.Contains(final[len(final)-1].text(t), "two sub-layers") || len(updates) == 0 {
		t.Fatalf("answer not delivered: %q", final[len(final)-1].text(t))
	}
	// A long message is cut to fit private_metadata, never over it.
	if got := fitMeta(askMeta{Channel: "C1", TS: "1"}, strings.Repeat("\"<&>\" ", 2000)); len(got) > maxMetadata {
		t.Fatalf("metadata %d bytes", len(got))
	}
}

type fakeLibrary struct{ ov bot.Overview }

func (f fakeLibrary) Overview(context.Context) (bot.Overview, error) { return f.ov, nil }

var testLibrary = fakeLibrary{bot.Overview{Chunks: 420, Stats: bot.Stats{Questions: 9, Answered: 7, FeedbackUp: 3, FeedbackDown: 1},
	Documents: []bot.DocSummary{
		{ID: "d1", Name: "1706.03762", Title: "Attention Is All You Need", Pages: 15, IndexedAt: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)},
		{ID: "d2", Name: "1810.04805", Title: "BERT: Pre-training of Deep Bidirectional Transformers", Pages: 16, IndexedAt: time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)},
	}}}

// TestAssistantThread: the side panel gets prompts from the paper titles; a question there
// titles the thread, sets a status and streams: start, append…, stop, then the rendered
// answer with native feedback buttons replaces the draft.
func TestAssistantThread(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Native.Library = testLibrary })
	wantStatus(t, h.event(eventCallback("EvA", map[string]any{"type": "assistant_thread_started", "event_ts": "1.0",
		"assistant_thread": map[string]any{"user_id": "U1", "channel_id": "D1", "thread_ts": "7.1", "context": map[string]any{}}}), nil), http.StatusOK)
	sp := h.slack.waitCalls(t, "assistant.threads.setSuggestedPrompts", 1)[0]
	if sp.Form.Get("channel_id") != "D1" || sp.Form.Get("thread_ts") != "7.1" {
		t.Fatalf("prompts set on %v", sp.Form)
	}
	prompts := sp.Form.Get("prompts")
	// Newest paper first.
	if i, j := strings.Index(prompts, "BERT"), strings.Index(prompts, "Attention Is All You Need"); i < 0 || j < 0 || i > j {
		t.Fatalf("prompts %s: want both titles, newest first", prompts)
	}

	h.core.ask = func(ctx context.Context, req bot.Request, onDelta func(string)) bot.Reply {
		onDelta("Each layer has")
		time.Sleep(20 * time.Millisecond)
		onDelta("Each layer has two sub-layers [1].")
		return sampleAnswer()
	}
	wantStatus(t, h.event(eventCallback("EvB", channelMessage("D1", "im", "7.2", "7.1", "What are the sub-layers of an encoder layer?")), nil), http.StatusOK)
	h.slack.waitCalls(t, "chat.update", 1)
	h.a.Wait(t.Context())

	var order []string
	for _, c := range h.slack.list() {
		switch c.Method {
		case "assistant.threads.setTitle", "assistant.threads.setStatus", "chat.startStream", "chat.appendStream", "chat.stopStream", "chat.update", "chat.postMessage":
			if len(order) == 0 || order[len(order)-1] != c.Method || c.Method != "chat.appendStream" {
				order = append(order, c.Method)
			}
		}
	}
	want := []string{"assistant.threads.setTitle", "assistant.threads.setStatus", "chat.startStream", "chat.appendStream", "chat.stopStream", "chat.update"}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("calls %v, want %v", order, want)
	}
	if got := h.slack.callsOf("assistant.threads.setTitle")[0].Form.Get("title"); got != "What are the sub-layers of an encoder layer?" {
		t.Errorf("title %q", got)
	}
	if got := h.slack.callsOf("assistant.threads.setStatus")[0].Form.Get("status"); got != "Searching 3 papers…" {
		t.Errorf("status %q", got)
	}
	start := h.slack.callsOf("chat.startStream")[0].Form
	if start.Get("thread_ts") != "7.1" || start.Get("recipient_user_id") != "U1" || start.Get("recipient_team_id") != "T1" {
		t.Errorf("startStream %v", start)
	}
	var streamed string
	for _, c := range h.slack.callsOf("chat.appendStream") {
		streamed += c.Form.Get("markdown_text")
	}
	if streamed != "Each layer has two sub-layers [1]." {
		t.Errorf("appended %q, want the generated text once", streamed)
	}
	upd := h.slack.callsOf("chat.update")
	if !strings.Contains(upd[0].Form.Get("blocks"), `"feedback_buttons"`) || strings.Contains(upd[0].Form.Get("blocks"), "footnote_up") {
		t.Errorf("final answer lacks native feedback buttons: %s", upd[0].Form.Get("blocks"))
	}
	// A second question in the thread keeps the title.
	wantStatus(t, h.event(eventCallback("EvC", channelMessage("D1", "im", "7.3", "7.1", "And the decoder?")), nil), http.StatusOK)
	h.slack.waitCalls(t, "chat.update", 2)
	h.a.Wait(t.Context())
	if n := len(h.slack.callsOf("assistant.threads.setTitle")); n != 1 {
		t.Errorf("title set %d times", n)
	}
}

// TestStreamingFallsBack: when chat.startStream fails, the answer comes the classic way
// (placeholder, then chat.update).
func TestStreamingFallsBack(t *testing.T) {
	h := newHarness(t, nil)
	h.slack.erroring["chat.startStream"] = "not_allowed_token_type"
	wantStatus(t, h.event(eventCallback("EvD", channelMessage("D1", "im", "8.2", "8.1", "What is attention?")), nil), http.StatusOK)
	h.slack.waitCalls(t, "chat.update", 1)
	h.a.Wait(t.Context())
	var order []string
	for _, c := range h.slack.list() {
		if strings.HasPrefix(c.Method, "chat.") {
			order = append(order, c.Method)
		}
	}
	if len(order) < 3 || order[0] != "chat.startStream (not_allowed_token_type)" || order[1] != "chat.postMessage" || order[len(order)-1] != "chat.update" {
		t.Fatalf("calls %v: want the failed start, a placeholder, then the update", order)
	}
	if len(h.slack.callsOf("chat.appendStream"))+len(h.slack.callsOf("chat.stopStream")) != 0 {
		t.Error("streamed after chat.startStream failed")
	}
	if !strings.Contains(h.slack.callsOf("chat.update")[0].text(t)+h.slack.callsOf("chat.update")[len(h.slack.callsOf("chat.update"))-1].text(t), "two sub-layers") {
		t.Error("answer not delivered")
	}
}

// TestAppHome lists the documents and the feedback counts.
func TestAppHome(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Native.Library = testLibrary })
	wantStatus(t, h.event(eventCallback("EvH", map[string]any{"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "home", "event_ts": "1.0"}), nil), http.StatusOK)
	pub := h.slack.waitCalls(t, "views.publish", 1)[0]
	raw, _ := json.Marshal(pub.JSON)
	for _, want := range []string{"Attention Is All You Need", "15 pages", "indexed 2 Nov 2026", "*2 documents* · 31 pages · 420 passages", "👍 3", "👎 1", `"user_id":"U1"`, `"type":"home"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("home view lacks %q: %s", want, raw)
		}
	}
}

// TestPrivateChannelMentionNeverStreams: in a channel whose answers are private, a mention
// gets an ephemeral answer and nothing of it is ever posted for the channel, not even
// while it is generated.
func TestPrivateChannelMentionNeverStreams(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Policy = func(team, channel string) Policy { return Policy{Private: channel == "CPRIV", RequireMention: true} }
	})
	wantStatus(t, h.event(eventCallback("EvP", mention("CPRIV", "9.1", "", "<@UBOT> secret question")), nil), http.StatusOK)
	eph := h.slack.waitCalls(t, "chat.postEphemeral", 1)
	h.a.Wait(t.Context())
	if n := len(h.slack.callsOf("chat.postMessage")) + len(h.slack.callsOf("chat.update")); n != 0 {
		t.Errorf("%d public posts or updates in a private channel", n)
	}
	if r := h.core.requests(); len(r) != 1 || !r[0].Private {
		t.Errorf("requests %+v, want one private", r)
	}
	if !strings.Contains(eph[0].text(t), "two sub-layers") || eph[0].Form.Get("user") != "U1" {
		t.Errorf("ephemeral %v", eph[0].Form)
	}
}

// TestNativeFeedbackButtons: a click on the native feedback buttons is a vote like the
// classic 👍 button (and 👎 still opens the comment modal).
func TestNativeFeedbackButtons(t *testing.T) {
	h := newHarness(t, nil)
	up := bot.Action{Kind: bot.ActFeedbackUp, AnswerID: "ans_01"}.Encode()
	payload := blockAction("trig-fb", "D1", "7.5", "7.1", false, feedbackActionID, up)
	payload["actions"] = []map[string]any{{"type": "feedback_buttons", "action_id": feedbackActionID, "block_id": "footnote_feedback", "value": up, "action_ts": "1.0"}}
	wantStatus(t, h.interaction(payload), http.StatusOK)
	h.slack.waitCalls(t, "chat.postEphemeral", 1)
	h.a.Wait(t.Context())
	if c := h.core.clickList(); len(c) != 1 || c[0].Action.Kind != bot.ActFeedbackUp || c[0].Action.AnswerID != "ans_01" {
		t.Fatalf("clicks %+v, want one 👍 on ans_01", c)
	}
	down := bot.Action{Kind: bot.ActFeedbackDown, AnswerID: "ans_01"}.Encode()
	payload = blockAction("trig-fb2", "D1", "7.5", "7.1", false, feedbackActionID, down)
	payload["actions"] = []map[string]any{{"type": "feedback_buttons", "action_id": feedbackActionID, "block_id": "footnote_feedback", "value": down, "action_ts": "1.0"}}
	wantStatus(t, h.interaction(payload), http.StatusOK)
	h.slack.waitCalls(t, "views.open", 1)
}
