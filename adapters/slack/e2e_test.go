package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/time/rate"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
)

var _ Core = (*bot.Bot)(nil)

// TestEndToEndWithBot runs HTTP mode against the real core (bot.Bot with its SQLite state)
// and bottest's fake pipeline.
func TestEndToEndWithBot(t *testing.T) {
	asker := &bottest.Asker{}
	b, err := bot.New(bot.Config{
		Asker:       asker,
		StatePath:   filepath.Join(t.TempDir(), "state.db"),
		Docs:        func(context.Context) int { return 12 },
		UserRate:    rate.Inf,
		ChannelRate: rate.Inf,
		Logger:      testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	h := newHarness(t, func(c *Config) {
		c.Core = b
		c.Policy = func(team, channel string) Policy {
			r := b.Route(Platform, team, channel)
			return Policy{Private: r.Private, RequireMention: r.RequireMention}
		}
	})
	const mentionTS = "1763000000.000100"

	// A mention, delivered twice (Slack retry): one answer in the thread.
	body := eventCallback("Ev1", mention("C1", mentionTS, "", "<@UBOT> what are the sub-layers of an encoder layer?"))
	wantStatus(t, h.event(body, nil), http.StatusOK)
	wantStatus(t, h.event(body, http.Header{"X-Slack-Retry-Num": {"1"}, "X-Slack-Retry-Reason": {"http_timeout"}}), http.StatusOK)
	h.a.Wait(t.Context())
	if n := len(asker.Calls()); n != 1 {
		t.Fatalf("pipeline asked %d times, want 1", n)
	}
	posts := h.slack.callsOf("chat.postMessage")
	if len(posts) != 1 || posts[0].Form.Get("thread_ts") != mentionTS {
		t.Fatalf("posts %+v, want one placeholder in the mention's thread", posts)
	}
	if got := posts[0].Form.Get("text"); got != "Searching 12 papers…" {
		t.Errorf("placeholder %q", got)
	}
	updates := h.slack.callsOf("chat.update")
	answer := updates[len(updates)-1]
	text := answer.text(t)
	for _, want := range []string{"[1]", "*Sources*", "[1] *Attention Is All You Need*", "3.1 Encoder and Decoder Stacks", "relevance"} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	t.Logf("answer as Slack shows it:\n%s", text)
	buttons := answer.buttons(t)

	// A follow-up in the thread without a mention continues the conversation.
	wantStatus(t, h.event(eventCallback("Ev2", channelMessage("C1", "channel", "1763000000.000200", mentionTS, "and the decoder?")), nil), http.StatusOK)
	h.a.Wait(t.Context())
	calls := asker.Calls()
	if len(calls) != 2 {
		t.Fatalf("pipeline asked %d times, want 2", len(calls))
	}
	if len(calls[1].History) != 1 {
		t.Errorf("follow-up saw %d earlier turns, want 1", len(calls[1].History))
	}

	// Show source 1 posts the full chunk in the thread.
	src, ok := buttons["footnote_src_1"]
	if !ok {
		t.Fatalf("no Show source 1 button in %v", buttons)
	}
	wantStatus(t, h.interaction(blockAction("trig-1", "C1", "1700000000.000001", mentionTS, false, "footnote_src_1", src)), http.StatusOK)
	h.a.Wait(t.Context())
	posts = h.slack.callsOf("chat.postMessage")
	last := posts[len(posts)-1]
	if last.Form.Get("thread_ts") != mentionTS || !strings.Contains(last.text(t), "composed of a stack of N = 6 identical layers") {
		t.Errorf("Show source 1 posted %q in thread %q", last.text(t), last.Form.Get("thread_ts"))
	}

	// 👎 with a comment is stored as feedback on the answer.
	down := buttons["footnote_down"]
	wantStatus(t, h.interaction(blockAction("trig-2", "C1", "1700000000.000001", mentionTS, false, "footnote_down", down)), http.StatusOK)
	h.a.Wait(t.Context())
	views := h.slack.callsOf("views.open")
	if len(views) != 1 {
		t.Fatalf("got %d views.open calls, want 1", len(views))
	}
	meta := views[0].JSON["view"].(map[string]any)["private_metadata"].(string)
	wantStatus(t, h.interaction(viewSubmission("V1", meta, "Should mention residual connections.")), http.StatusOK)
	h.a.Wait(t.Context())
	act, err := bot.DecodeAction(down)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := b.Feedback(t.Context(), act.AnswerID)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(fb)
	if len(fb) != 1 || !strings.Contains(string(raw), "Should mention residual connections.") {
		t.Errorf("feedback %s, want one vote with the comment", raw)
	}
	eph := h.slack.callsOf("chat.postEphemeral")
	if len(eph) != 1 || !strings.Contains(eph[0].text(t), "Thanks for the feedback") {
		t.Errorf("feedback acknowledgement %+v", eph)
	}
}
