package discord

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/time/rate"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
)

var _ Core = (*bot.Bot)(nil)

// TestEndToEndWithBot runs the gateway against the real core (bot.Bot with its SQLite
// state) and bottest's fake pipeline: /ask, a follow-up in the thread, Source 2 and a 👎
// with a comment.
func TestEndToEndWithBot(t *testing.T) {
	asker := &bottest.Asker{}
	b, err := bot.New(bot.Config{
		Asker:       asker,
		StatePath:   filepath.Join(t.TempDir(), "state.db"),
		Docs:        func(context.Context) int { return 12 },
		UserRate:    rate.Inf,
		ChannelRate: rate.Inf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	h := newHarness(t, func(c *Config) {
		c.Core = b
		c.FollowThreads = true
		c.Policy = func(guild, channel string) Policy {
			r := b.Route(Platform, guild, channel)
			return Policy{Private: r.Private, RequireMention: r.RequireMention}
		}
	})
	h.run(t)

	// /ask, delivered twice (a gateway replay): one answer.
	ask := fixture(t, "interaction_ask", nil)
	h.dc.dispatch(t, "INTERACTION_CREATE", ask)
	h.dc.dispatch(t, "INTERACTION_CREATE", ask)
	waitFor(t, "thread", func() bool { return len(h.dc.callsOf("POST", "/channels/"+channelID+"/messages/*/threads")) == 1 })
	h.settle(t)
	if n := len(asker.Calls()); n != 1 {
		t.Fatalf("pipeline asked %d times, want 1", n)
	}
	edits := h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")
	answer := edits[len(edits)-1]
	text := visibleText(t, answer)
	for _, want := range []string{"[1]", "Sources", "[1] Attention Is All You Need", "3.1 Encoder and Decoder Stacks", "p. 3", "relevance"} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	t.Logf("answer as Discord shows it:\n%s", text)
	rows := buttonsOf(t, answer)
	byLabel := map[string]string{}
	for _, r := range rows {
		for _, b := range r {
			label, id, _ := strings.Cut(b, "=")
			byLabel[label] = id
		}
	}

	// A follow-up in the thread without a mention continues the conversation.
	thread := h.dc.originalID(ask["token"].(string))
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", map[string]any{
		"id": "1700000000000000050", "channel_id": thread, "content": "and the decoder?", "mentions": []any{}}))
	waitFor(t, "follow-up", func() bool { return len(h.dc.callsOf("POST", "/channels/"+thread+"/messages")) == 1 })
	h.settle(t)
	calls := asker.Calls()
	if len(calls) != 2 || len(calls[1].History) != 1 {
		t.Fatalf("pipeline calls %+v, want a follow-up seeing 1 earlier turn", calls)
	}
	if !strings.Contains(visibleText(t, h.dc.callsOf("POST", "/channels/"+thread+"/messages")[0]), "decoder") {
		t.Error("follow-up answer does not mention the decoder")
	}

	// Source 2 shows the full chunk to the clicking user.
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_button", map[string]any{"data.custom_id": byLabel["Source 2"]}))
	waitFor(t, "source", func() bool {
		return len(h.dc.callsOf("PATCH", "/webhooks/"+appID+"/aW50ZXJhY3Rpb246MTUwMDAwMDAwMDAwMDAwMDAwMjpidXR0b24/messages/@original")) == 1
	})
	src := h.dc.callsOf("PATCH", "/webhooks/"+appID+"/aW50ZXJhY3Rpb246MTUwMDAwMDAwMDAwMDAwMDAwMjpidXR0b24/messages/@original")[0]
	if !strings.Contains(visibleText(t, src), "[2] ") {
		t.Errorf("Source 2 reply %s", src.Raw)
	}

	// 👎 with a comment is stored as feedback on the answer.
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_modal", map[string]any{"data.custom_id": byLabel["👎"]}))
	waitFor(t, "feedback", func() bool {
		return len(h.dc.callsOf("PATCH", "/webhooks/"+appID+"/aW50ZXJhY3Rpb246MTUwMDAwMDAwMDAwMDAwMDAwMzptb2RhbA/messages/@original")) == 1
	})
	act, err := bot.DecodeAction(byLabel["👎"])
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
}
