package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
	"github.com/footnote-dev/footnote/rag"
)

// TestBusyIsVisible: when the core has no room, /ask over HTTP gets an ephemeral busy
// message as its HTTP reply, /ask over the gateway gets it through the callback, and a DM
// gets it as a reply; nothing is deferred and left "thinking…".
func TestBusyIsVisible(t *testing.T) {
	t.Run("http interaction", func(t *testing.T) {
		h, post := httpHarness(t)
		h.core.Full.Store(true)
		w := post(mustJSON(t, fixture(t, "interaction_ask", nil)))
		var resp struct {
			Type int `json:"type"`
			Data struct {
				Content string `json:"content"`
				Flags   int    `json:"flags"`
			} `json:"data"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Type != 4 || resp.Data.Flags != 1<<6 || resp.Data.Content != bot.BusyText {
			t.Errorf("HTTP reply %s; want an ephemeral busy message (type 4)", w.Body.String())
		}
		if n := len(h.core.requests()); n != 0 {
			t.Errorf("core asked %d times while full", n)
		}
		for k, v := range h.core.Outcomes() {
			if v != "busy" {
				t.Errorf("question %s ended %q, want busy", k, v)
			}
		}
	})
	t.Run("gateway interaction and DM", func(t *testing.T) {
		h := newHarness(t)
		h.run(t)
		h.core.Full.Store(true)
		h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_ask", nil))
		waitFor(t, "busy callback", func() bool { return len(h.dc.callsOf("POST", "/interactions/*/*/callback")) == 1 })
		cb := h.dc.callsOf("POST", "/interactions/*/*/callback")[0]
		if !strings.Contains(string(cb.Raw), bot.BusyText) || !strings.Contains(string(cb.Raw), `"flags":64`) {
			t.Errorf("callback %s; want the ephemeral busy message", cb.Raw)
		}
		h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_dm", nil))
		waitFor(t, "busy reply in the DM", func() bool { return len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")) == 1 })
		if m := h.dc.callsOf("POST", "/channels/"+dmID+"/messages")[0]; !strings.Contains(string(m.Raw), bot.BusyText) {
			t.Errorf("DM reply %s; want the busy notice", m.Raw)
		}
		h.settle(t)
		if n := len(h.core.requests()); n != 0 {
			t.Errorf("core asked %d times while full", n)
		}
	})
}

// TestServerErrorRetried: a 5xx from the REST API is retried and counted; the answer still
// arrives.
func TestServerErrorRetried(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetryDelay = 10 * time.Millisecond })
	var fails atomic.Int32
	fails.Store(2)
	h.dc.fail = func(method, path string) (int, string, bool) {
		if method == "POST" && path == "/channels/"+dmID+"/messages" && fails.Add(-1) >= 0 {
			return 500, `{"message": "internal"}`, true
		}
		return 0, "", false
	}
	h.run(t)
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_dm", nil))
	waitFor(t, "the answer after two 500s", func() bool { return len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")) >= 3 })
	h.settle(t)
	h.core.mu.Lock()
	defer h.core.mu.Unlock()
	if h.core.APIErrors()[500] != 2 {
		t.Errorf("counted %v, want two 500s", h.core.APIErrors())
	}
	for k, v := range h.core.Outcomes() {
		if v != "answered" {
			t.Errorf("%s ended %q, want answered", k, v)
		}
	}
}

// TestBurstBeyondCapacityWithRealCore: six DMs at once against a core with one slot and one
// queue place: two are answered, four get the busy notice as a reply; none is dropped.
func TestBurstBeyondCapacityWithRealCore(t *testing.T) {
	release := make(chan struct{})
	var asked atomic.Int32
	asker := &bottest.Asker{AskFunc: func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
		asked.Add(1)
		<-release
		return bottest.Answer(ctx, q, fn)
	}}
	b, err := bot.New(bot.Config{StatePath: filepath.Join(t.TempDir(), "state.db"), Asker: asker,
		MaxConcurrent: 1, MaxQueue: 1, UserRate: rate.Inf, ChannelRate: rate.Inf})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := newHarness(t, func(c *Config) { c.Core = b })
	h.run(t)
	for i := range 6 {
		h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_dm", map[string]any{"id": fmt.Sprintf("17000000000000002%02d", i)}))
	}
	waitFor(t, "four busy replies", func() bool {
		n := 0
		for _, c := range h.dc.callsOf("POST", "/channels/"+dmID+"/messages") {
			if strings.Contains(string(c.Raw), bot.BusyText) {
				n++
			}
		}
		return n == 4
	})
	close(release)
	waitFor(t, "six replies", func() bool { return len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")) == 6 })
	h.settle(t)
	if n := asked.Load(); n != 2 {
		t.Errorf("pipeline asked %d times; want 2", n)
	}
}

// TestResumeWithOriginalGone: the Discord side of a question the fault-and-load test lost on
// Slack. /ask's first attempt gets a private reply (a rate limit), so it deletes the public
// deferred response and the process dies before the question is done. The resumed attempt
// must answer with a followup message: editing the deleted original answers 404 Unknown
// Message (10008), and the question would end undeliverable with nothing shown. The same
// holds when the attempt died between deleting the original and recording that.
func TestResumeWithOriginalGone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recorded bool // the first attempt recorded the deletion in its ticket
	}{{"deletion recorded", true}, {"died before recording it", false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.core.mu.Lock()
			resume := h.core.Resumer()
			h.core.ask = func(req bot.Request) bot.Reply {
				return bot.Reply{Kind: bot.KindRateLimited, Private: true, Paragraphs: []string{"You're asking faster than I can answer."}}
			}
			h.core.mu.Unlock()
			raw, _ := json.Marshal(fixture(t, "interaction_ask", nil))
			p, _ := json.Marshal(pending{Kind: kindInteraction, Raw: raw})
			first := bot.NewTicket("discord:interaction:1", p, "", nil)
			resume(t.Context(), first) // the work as the first process ran it, up to its crash
			if n := len(h.dc.callsOf("DELETE", "/webhooks/*/*/messages/@original")); n != 1 {
				t.Fatalf("%d deletions of the original response; want 1", n)
			}
			saved := first.Placeholder()
			if !tc.recorded {
				saved = ""
			}

			h.core.mu.Lock()
			h.core.ask = nil // answered now
			h.core.mu.Unlock()
			before := len(h.dc.allCalls())
			var got string
			resume(t.Context(), bot.NewTicket("discord:interaction:1", p, saved, func(o string) { got = o }))
			if got != "answered" {
				t.Errorf("resumed question ended %q; want answered", got)
			}
			var answers []apiCall
			for _, c := range h.dc.allCalls()[before:] {
				if c.Method == "POST" && strings.HasPrefix(c.Path, "/webhooks/") && strings.Contains(string(c.Raw), "sub-layers") {
					answers = append(answers, c)
				}
			}
			if len(answers) != 1 {
				t.Fatalf("%d followups with the answer; want 1", len(answers))
			}
			if flags, _ := answers[0].Body["flags"].(float64); int(flags)&64 != 0 {
				t.Errorf("the answer went out ephemeral (flags %v); the question was public", flags)
			}
			patches := 0
			for _, c := range h.dc.allCalls()[before:] {
				if c.Method == "PATCH" {
					patches++
				}
			}
			if tc.recorded && patches != 0 {
				t.Errorf("%d edits of the deleted original; the ticket said it is gone", patches)
			}
		})
	}
}

// TestBusyNoticeNotRepeatedAfterCrash: the fault-and-load test once saw a DM get a busy
// notice and then, after footnote was killed and restarted, an answer too: the process died
// between posting the notice and recording it. The notice is now marked before it is
// posted, so the resumed attempt finds it in the channel and posts nothing more.
func TestBusyNoticeNotRepeatedAfterCrash(t *testing.T) {
	h := newHarness(t)
	h.run(t)
	h.core.Full.Store(true)
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_dm", nil))
	waitFor(t, "busy reply in the DM", func() bool { return len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")) == 1 })
	h.settle(t)
	var key string
	for k := range h.core.Outcomes() {
		key = k
	}
	first := h.core.Ticket(key)
	if first == nil || first.Placeholder() != posting {
		t.Fatalf("ticket %q left placeholder %q before posting the notice; want %q", key, first.Placeholder(), posting)
	}

	// The next process resumes the question from what the first one recorded before the
	// notice went out.
	h.core.Full.Store(false)
	var got string
	h.core.Resumer()(t.Context(), bot.NewTicket(key, first.Payload(), first.Placeholder(), func(o string) { got = o }))
	if n := len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")); n != 1 {
		t.Errorf("%d messages in the DM after the resumed attempt; want the one busy notice", n)
	}
	if got != "busy" {
		t.Errorf("resumed question ended %q; want busy (its notice was already shown)", got)
	}
}
