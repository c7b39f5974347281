package slack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/bot"
)

// socketHarness runs an Adapter over Socket Mode against slacktest with a scripted websocket.
type socketHarness struct {
	t     *testing.T
	core  *fakeCore
	slack *fakeSlack
	a     *Adapter
}

func newSocketHarness(t *testing.T) *socketHarness {
	t.Helper()
	h := &socketHarness{t: t, core: newFakeCore(), slack: newFakeSlack(t)}
	a, err := New(Config{
		BotToken:       "xoxb-test",
		AppToken:       "xapp-1-test",
		APIURL:         h.slack.srv.GetAPIURL(),
		Core:           h.core,
		Logger:         testLogger(t),
		UpdateInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.a = a
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		if err := a.Wait(wctx); err != nil {
			t.Error(err)
		}
	})
	return h
}

// deliver sends one Socket Mode envelope, waits for its acknowledgement and returns it.
func (h *socketHarness) deliver(envelopeID, typ string, payload any) ack {
	h.t.Helper()
	raw, err := json.Marshal(map[string]any{
		"envelope_id": envelopeID, "type": typ, "payload": payload, "accepts_response_payload": typ != "events_api",
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.slack.envelopes <- string(raw)
	select {
	case a := <-h.slack.acks:
		if a.EnvelopeID != envelopeID {
			h.t.Fatalf("acknowledged %q, want %q", a.EnvelopeID, envelopeID)
		}
		return a
	case <-time.After(10 * time.Second):
		h.t.Fatalf("envelope %s never acknowledged", envelopeID)
	}
	return ack{}
}

func (h *socketHarness) event(envelopeID, eventID string, inner map[string]any) ack {
	h.t.Helper()
	return h.deliver(envelopeID, "events_api", json.RawMessage(eventCallback(eventID, inner)))
}

// settle waits for the adapter's background work to finish.
func (h *socketHarness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.a.Wait(ctx); err != nil {
		h.t.Fatal(err)
	}
}

func TestSocketModeMentionThreadFlow(t *testing.T) {
	h := newSocketHarness(t)
	const mentionTS = "1763000000.000100"

	// 1. A mention in a channel: acknowledged, then answered in a thread under it. The answer
	// is held back until the test has seen the acknowledgement.
	gate := make(chan struct{})
	h.core.gate = gate
	ack1 := h.event("env-1", "Ev1", mention("C1", mentionTS, "", "<@UBOT> what are the two sub-layers of an encoder layer?"))
	if n := len(h.slack.callsOf("chat.update")); n != 0 {
		t.Fatalf("%d chat.update calls before the acknowledgement", n)
	}
	close(gate)
	h.slack.waitCalls(t, "chat.update", 1)
	h.settle()
	posts := h.slack.callsOf("chat.postMessage")
	if len(posts) != 1 {
		t.Fatalf("got %d posts, want the placeholder", len(posts))
	}
	if first := h.slack.callsOf("chat.update")[0]; ack1.Seq > first.Seq {
		t.Errorf("envelope acknowledged after the answer (ack #%d, update #%d)", ack1.Seq, first.Seq)
	}
	if got := posts[0].Form.Get("thread_ts"); got != mentionTS {
		t.Errorf("answer in thread %q, want %q", got, mentionTS)
	}
	updates := h.slack.callsOf("chat.update")
	answer := updates[len(updates)-1]
	buttons := answer.buttons(t)
	if len(buttons) != 6 {
		t.Fatalf("answer buttons %v, want 6", buttons)
	}

	// 2. A follow-up in the thread without a mention is answered in the same conversation.
	h.event("env-2", "Ev2", channelMessage("C1", "channel", "1763000000.000200", mentionTS, "and how many layers are there?"))
	h.settle()
	reqs := h.core.requests()
	if len(reqs) != 2 {
		t.Fatalf("core asked %d times, want 2", len(reqs))
	}
	if reqs[1].Thread != mentionTS || reqs[1].Text != "and how many layers are there?" {
		t.Errorf("follow-up request %+v, want thread %s", reqs[1], mentionTS)
	}
	if got := h.slack.callsOf("chat.postMessage")[1].Form.Get("thread_ts"); got != mentionTS {
		t.Errorf("follow-up answered in thread %q, want %q", got, mentionTS)
	}

	// The message event for the original mention (message.channels) does not answer again.
	h.event("env-3", "Ev3", channelMessage("C1", "channel", mentionTS, "", "<@UBOT> what are the two sub-layers of an encoder layer?"))
	h.settle()
	if n := len(h.core.requests()); n != 2 {
		t.Errorf("core asked %d times after the duplicate message event, want 2", n)
	}

	answerMsgTS := "1700000000.000001"
	click := func(env, trigger, actionID string) {
		t.Helper()
		value, ok := buttons[actionID]
		if !ok {
			t.Fatalf("no %s button in %v", actionID, buttons)
		}
		h.deliver(env, "interactive", blockAction(trigger, "C1", answerMsgTS, mentionTS, false, actionID, value))
		h.settle()
	}

	// 3. Show source 2: the full chunk in the thread.
	before := len(h.slack.callsOf("chat.postMessage"))
	click("env-4", "trig-4", "footnote_src_2")
	posts = h.slack.callsOf("chat.postMessage")
	if len(posts) != before+1 {
		t.Fatalf("Show source posted %d messages, want 1", len(posts)-before)
	}
	src := posts[len(posts)-1]
	if got := src.Form.Get("thread_ts"); got != mentionTS {
		t.Errorf("source shown in thread %q", got)
	}
	if got := src.text(t); !strings.Contains(got, "Full text of source 2") || !strings.Contains(got, "[2] *Attention Is All You Need*") {
		t.Errorf("source message %q", got)
	}

	// 4. More sources.
	click("env-5", "trig-5", "footnote_more")
	posts = h.slack.callsOf("chat.postMessage")
	if got := posts[len(posts)-1].text(t); !strings.Contains(got, "*More sources*") || !strings.Contains(got, "[4] *BERT*") {
		t.Errorf("more sources message %q", got)
	}

	// 5. 👎 opens the feedback modal; its submission is the click, with the comment.
	click("env-6", "trig-6", "footnote_down")
	views := h.slack.callsOf("views.open")
	if len(views) != 1 {
		t.Fatalf("got %d views.open calls, want 1", len(views))
	}
	if got := views[0].JSON["trigger_id"]; got != "trig-6" {
		t.Errorf("modal opened with trigger %v", got)
	}
	view := views[0].JSON["view"].(map[string]any)
	if view["callback_id"] != feedbackCallbackID {
		t.Errorf("modal callback_id %v", view["callback_id"])
	}
	for _, c := range h.core.clickList() {
		if c.Action.Kind == bot.ActFeedbackDown {
			t.Fatal("👎 reached the core before the modal was submitted")
		}
	}
	h.deliver("env-7", "interactive", viewSubmission("V1", view["private_metadata"].(string), "  It missed the feed-forward size.  "))
	h.settle()

	clicks := h.core.clickList()
	var kinds []bot.ActionKind
	for _, c := range clicks {
		kinds = append(kinds, c.Action.Kind)
	}
	if diff := cmp.Diff([]bot.ActionKind{bot.ActShowSource, bot.ActMoreSources, bot.ActFeedbackDown}, kinds); diff != "" {
		t.Fatalf("clicks (-want +got):\n%s", diff)
	}
	want := bot.Click{
		Action:   bot.Action{Kind: bot.ActFeedbackDown, AnswerID: "ans_01", Label: "👎"},
		Platform: "slack", Tenant: "T1", Channel: "C1", User: "U1",
		Comment: "It missed the feed-forward size.",
	}
	if diff := cmp.Diff(want, clicks[2]); diff != "" {
		t.Errorf("feedback click (-want +got):\n%s", diff)
	}
	if clicks[0].Action.Source != 2 {
		t.Errorf("Show source clicked source %d, want 2", clicks[0].Action.Source)
	}
	eph := h.slack.callsOf("chat.postEphemeral")
	if len(eph) != 1 || eph[0].Form.Get("user") != "U1" || !strings.Contains(eph[0].text(t), "Thanks for the feedback.") {
		t.Errorf("feedback acknowledgement: %+v", eph)
	}
}

func TestSocketModeDM(t *testing.T) {
	h := newSocketHarness(t)
	const dmTS = "1763000000.000500"
	h.event("env-1", "Ev1", channelMessage("D1", "im", dmTS, "", "what is multi-head attention?"))
	h.slack.waitCalls(t, "chat.update", 1)
	h.settle()
	h.event("env-2", "Ev2", channelMessage("D1", "im", "1763000000.000600", dmTS, "why several heads?"))
	h.settle()
	reqs := h.core.requests()
	if len(reqs) != 2 {
		t.Fatalf("core asked %d times, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.Channel != "D1" || r.Thread != dmTS {
			t.Errorf("request %d in %s/%s, want D1/%s", i, r.Channel, r.Thread, dmTS)
		}
	}
	for _, p := range h.slack.callsOf("chat.postMessage") {
		if p.Form.Get("channel") != "D1" || p.Form.Get("thread_ts") != dmTS {
			t.Errorf("posted to %s thread %s, want D1 thread %s", p.Form.Get("channel"), p.Form.Get("thread_ts"), dmTS)
		}
	}
	// A new top-level DM starts its own conversation.
	h.event("env-3", "Ev3", channelMessage("D1", "im", "1763000000.000700", "", "what is BLEU?"))
	h.settle()
	if reqs := h.core.requests(); len(reqs) != 3 || reqs[2].Thread != "1763000000.000700" {
		t.Errorf("third DM request %+v", reqs[len(reqs)-1])
	}
}

func TestSocketModeSlashCommand(t *testing.T) {
	h := newSocketHarness(t)
	cmd := map[string]any{
		"token": "legacy", "team_id": "T1", "channel_id": "C1", "user_id": "U1", "command": "/ask",
		"text": "what is attention?", "trigger_id": "trig-cmd", "response_url": "https://hooks.slack.com/x",
	}
	gate := make(chan struct{})
	h.core.gate = gate
	start := time.Now()
	a := h.deliver("env-cmd", "slash_commands", cmd)
	t.Logf("Socket Mode /ask acknowledged %v after the envelope was queued", time.Since(start))
	close(gate)
	h.slack.waitCalls(t, "chat.update", 1)
	h.settle()
	posts := h.slack.callsOf("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("got %d posts, want question + placeholder", len(posts))
	}
	if first := h.slack.callsOf("chat.update")[0]; a.Seq > first.Seq {
		t.Error("slash command acknowledged after the answer was posted")
	}
	if got := posts[0].text(t); got != "*<@U1> asked:* what is attention?" {
		t.Errorf("question %q", got)
	}
	// The same trigger delivered again (a reconnect replay) is not answered twice.
	h.deliver("env-cmd-2", "slash_commands", cmd)
	h.settle()
	if n := len(h.core.requests()); n != 1 {
		t.Errorf("core asked %d times, want 1", n)
	}
}

func TestRunNeedsAppToken(t *testing.T) {
	a, err := New(Config{BotToken: "xoxb-test", Core: newFakeCore()})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(t.Context()); err == nil {
		t.Error("Run without an app token succeeded")
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no bot token", Config{Core: newFakeCore()}},
		{"no core", Config{BotToken: "xoxb-1"}},
		{"bot token as app token", Config{BotToken: "xoxb-1", AppToken: "xoxb-2", Core: newFakeCore()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil {
				t.Error("New succeeded, want error")
			}
		})
	}
}
