package slack

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/bot"
)

// TestBusyIsVisibleOverHTTP: when the core has no room, a mention gets the busy notice in
// its thread (ephemeral, to the asker) and /ask gets it in the acknowledgement itself; no
// question is acknowledged and then dropped in silence.
func TestBusyIsVisibleOverHTTP(t *testing.T) {
	h := newHarness(t, nil)
	h.core.Full.Store(true)
	const ts = "1763000000.000900"
	wantStatus(t, h.event(eventCallback("Ev1", mention("C1", ts, "", "<@UBOT> what is attention?")), nil), http.StatusOK)
	eph := h.slack.waitCalls(t, "chat.postEphemeral", 1)
	if eph[0].Form.Get("thread_ts") != ts || eph[0].Form.Get("user") != "U1" {
		t.Errorf("busy notice in thread %q to %q; want thread %s to U1", eph[0].Form.Get("thread_ts"), eph[0].Form.Get("user"), ts)
	}
	if !strings.Contains(eph[0].text(t), bot.BusyText) {
		t.Errorf("busy notice %q", eph[0].text(t))
	}
	waitFor(t, "the question marked busy", func() bool { return h.core.Outcomes()["slack:msg:C1:"+ts] == "busy" })

	res, _ := h.command("what is attention?")
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	wantStatus(t, res, http.StatusOK)
	var ack map[string]string
	if err := json.Unmarshal(body, &ack); err != nil || ack["response_type"] != "ephemeral" || ack["text"] != bot.BusyText {
		t.Errorf("command acknowledgement %s (%v); want the ephemeral busy notice", body, err)
	}
	if n := len(h.core.requests()); n != 0 {
		t.Errorf("core asked %d times while full", n)
	}
}

// TestBusyNoticeNotAnsweredAfterCrash: the busy notice is marked before it is sent, so an
// attempt resumed after a crash between sending it and recording it sends the notice again
// and does not answer beside it. An ephemeral notice cannot be looked up, so the asker may
// see it twice; an answer next to "busy" would contradict it.
func TestBusyNoticeNotAnsweredAfterCrash(t *testing.T) {
	h := newHarness(t, nil)
	h.core.Full.Store(true)
	const ts = "1763000000.000902"
	key := "slack:msg:C1:" + ts
	wantStatus(t, h.event(eventCallback("Ev1", mention("C1", ts, "", "<@UBOT> what is attention?")), nil), http.StatusOK)
	h.slack.waitCalls(t, "chat.postEphemeral", 1)
	waitFor(t, "the question marked busy", func() bool { return h.core.Outcomes()[key] == "busy" })
	first := h.core.Ticket(key)
	if first == nil || first.Placeholder() != busyNotice {
		t.Fatalf("ticket left placeholder %q; want %q recorded before the notice went out", first.Placeholder(), busyNotice)
	}

	// The next process resumes the question from what the first one recorded.
	h.core.Full.Store(false)
	var got string
	h.core.Resumer()(t.Context(), bot.NewTicket(key, first.Payload(), first.Placeholder(), func(o string) { got = o }))
	if n := len(h.slack.callsOf("chat.postMessage")); n != 0 {
		t.Errorf("resumed question posted %d messages; want no answer beside the busy notice", n)
	}
	if n := len(h.slack.callsOf("chat.postEphemeral")); n != 2 {
		t.Errorf("%d busy notices; want the notice sent again by the resumed attempt", n)
	}
	if got != "busy" {
		t.Errorf("resumed question ended %q; want busy", got)
	}
}

// TestBusyIsVisibleOverSocketMode: the same over Socket Mode, where the command's busy
// notice travels in the envelope's acknowledgement.
func TestBusyIsVisibleOverSocketMode(t *testing.T) {
	h := newSocketHarness(t)
	h.core.Full.Store(true)
	const ts = "1763000000.000901"
	var ev map[string]any
	if err := json.Unmarshal([]byte(eventCallback("Ev9", mention("C1", ts, "", "<@UBOT> what is attention?"))), &ev); err != nil {
		t.Fatal(err)
	}
	h.deliver("env-1", "events_api", ev)
	eph := h.slack.waitCalls(t, "chat.postEphemeral", 1)
	if eph[0].Form.Get("thread_ts") != ts || !strings.Contains(eph[0].text(t), bot.BusyText) {
		t.Errorf("busy notice %q in thread %q", eph[0].text(t), eph[0].Form.Get("thread_ts"))
	}
}

// TestServerErrorRetried: a 5xx from the Web API is retried (after a backoff) and counted;
// the answer still replaces the placeholder.
func TestServerErrorRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.slack.mu.Lock()
	h.slack.failing["chat.postMessage"] = 2
	h.slack.mu.Unlock()
	wantStatus(t, h.event(eventCallback("Ev1", mention("C1", "1763000000.000950", "", "<@UBOT> hi")), nil), http.StatusOK)
	h.a.Wait(t.Context())
	if n := len(h.slack.callsOf("chat.postMessage (500)")); n != 2 {
		t.Errorf("%d failed posts, want 2", n)
	}
	if n := len(h.slack.callsOf("chat.update")); n == 0 {
		t.Error("the answer never replaced the placeholder")
	}
	h.core.mu.Lock()
	defer h.core.mu.Unlock()
	if h.core.APIErrors()[500] != 2 {
		t.Errorf("counted API errors %v, want two 500s", h.core.APIErrors())
	}
}

// TestResumeUpdatesPlaceholder: a question whose first attempt died after posting its
// placeholder is answered by updating that placeholder, never by a second post; one older
// than the resume age gets the apology there instead.
func TestResumeUpdatesPlaceholder(t *testing.T) {
	h := newHarness(t, nil)
	h.core.mu.Lock()
	resume := h.core.Resumer()
	h.core.mu.Unlock()
	if resume == nil {
		t.Fatal("the adapter registered no resumer")
	}
	p, _ := json.Marshal(pending{Kind: kindMessage, Team: "T1", Channel: "C1", User: "U1", Text: "what is attention?", TS: "1.0", Thread: "1.0"})
	var got string
	tk := bot.NewTicket("slack:msg:C1:1.0", p, "1700000000.000077", func(o string) { got = o })
	resume(t.Context(), tk)
	if n := len(h.slack.callsOf("chat.postMessage")); n != 0 {
		t.Errorf("resumed question posted %d messages; want the placeholder updated", n)
	}
	ups := h.slack.callsOf("chat.update")
	if len(ups) == 0 || ups[len(ups)-1].Form.Get("ts") != "1700000000.000077" {
		t.Fatalf("updates %v; want the saved placeholder updated", ups)
	}
	if got != "answered" {
		t.Errorf("outcome %q, want answered", got)
	}
}

// TestResumeWithPlaceholderGone: the placeholder a previous attempt saved no longer exists
// (someone deleted it, or the attempt died between deleting it and recording that), so
// chat.update answers message_not_found. The reply is posted fresh in the thread and recorded
// for the next attempt, instead of the question ending undeliverable with nothing shown.
func TestResumeWithPlaceholderGone(t *testing.T) {
	h := newHarness(t, nil)
	h.core.mu.Lock()
	resume := h.core.Resumer()
	h.core.mu.Unlock()
	const gone = "1700000000.000077"
	h.slack.mu.Lock()
	h.slack.deleted[gone] = true
	h.slack.mu.Unlock()
	p, _ := json.Marshal(pending{Kind: kindMessage, Team: "T1", Channel: "C1", User: "U1", Text: "what is attention?", TS: "1.0", Thread: "1.0"})
	var got string
	tk := bot.NewTicket("slack:msg:C1:1.0", p, gone, func(o string) { got = o })
	resume(t.Context(), tk)
	if n := len(h.slack.callsOf("chat.update (message_not_found)")); n == 0 {
		t.Fatal("the deleted placeholder was never tried: the test does not test the fallback")
	}
	posts := h.slack.callsOf("chat.postMessage")
	if len(posts) != 1 || posts[0].Form.Get("thread_ts") != "1.0" || strings.Contains(posts[0].text(t), "Searching") {
		t.Fatalf("posts %v; want the answer posted once in the thread", posts)
	}
	if !strings.Contains(posts[0].text(t), "sub-layers") {
		t.Errorf("posted %q; want the answer", posts[0].text(t))
	}
	if got != "answered" {
		t.Errorf("outcome %q, want answered", got)
	}
	if tk.Placeholder() != posts[0].TS {
		t.Errorf("ticket records %q; want the new message %s, so a later attempt updates it", tk.Placeholder(), posts[0].TS)
	}
}
