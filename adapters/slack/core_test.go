package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

// realCore opens a *bot.Bot on path whose asker blocks until release is closed.
func realCore(t *testing.T, path string, concurrent, queue int, lease time.Duration, release <-chan struct{}, asked *atomic.Int32) *bot.Bot {
	t.Helper()
	asker := &bottest.Asker{AskFunc: func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
		asked.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return rag.Answer{}, ctx.Err()
		}
		return bottest.Answer(ctx, q, fn)
	}}
	b, err := bot.New(bot.Config{StatePath: path, Asker: asker, MaxConcurrent: concurrent, MaxQueue: queue,
		UserRate: rate.Inf, ChannelRate: rate.Inf, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestBurstBeyondCapacityWithRealCore: ten mentions at once against a core with one slot
// and one queue place: two are answered, the eight others get the busy notice in their
// thread at once; none is acknowledged and then dropped.
func TestBurstBeyondCapacityWithRealCore(t *testing.T) {
	release := make(chan struct{})
	var asked atomic.Int32
	b := realCore(t, filepath.Join(t.TempDir(), "state.db"), 1, 1, time.Minute, release, &asked)
	h := newHarness(t, func(c *Config) { c.Core = b })
	for i := range 10 {
		ts := fmt.Sprintf("1763000001.%06d", i)
		wantStatus(t, h.event(eventCallback(fmt.Sprintf("Ev%d", i), mention("C1", ts, "", "<@UBOT> what is attention?")), nil), http.StatusOK)
	}
	busy := h.slack.waitCalls(t, "chat.postEphemeral", 8)
	for _, c := range busy {
		if !strings.Contains(c.text(t), bot.BusyText) || c.Form.Get("thread_ts") == "" {
			t.Errorf("ephemeral %q in thread %q; want the busy notice in the question's thread", c.text(t), c.Form.Get("thread_ts"))
		}
	}
	close(release)
	h.a.Wait(t.Context())
	if n := len(h.slack.callsOf("chat.update")); n < 2 {
		t.Errorf("%d placeholders updated; want the two admitted questions answered", n)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("pipeline asked %d times; want 2", n)
	}
	if n := len(h.slack.callsOf("chat.postEphemeral")); n != 8 {
		t.Errorf("%d busy notices; want 8", n)
	}
}

// TestRedeliveryWithRealCore: Slack redelivers an event while it is being answered (ignored),
// and again after the process answering it died and its lease ran out: a second process on
// the same state answers it, once.
func TestRedeliveryWithRealCore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	const ts = "1763000002.000001"
	body := eventCallback("EvR", mention("C1", ts, "", "<@UBOT> what is attention?"))

	// The first process: accepts the question and hangs answering it.
	hang := make(chan struct{})
	defer close(hang)
	var asked1 atomic.Int32
	b1 := realCore(t, path, 2, 2, 300*time.Millisecond, hang, &asked1)
	h1 := newHarness(t, func(c *Config) { c.Core = b1 })
	wantStatus(t, h1.event(body, nil), http.StatusOK)
	waitFor(t, "the first attempt to reach the pipeline", func() bool { return asked1.Load() == 1 })
	// b1 renews the lease while it answers (Run), as serve does.
	ctx1, stop1 := context.WithCancel(t.Context())
	go b1.Run(ctx1)
	wantStatus(t, h1.event(body, http.Header{"X-Slack-Retry-Num": {"1"}, "X-Slack-Retry-Reason": {"http_timeout"}}), http.StatusOK)
	time.Sleep(time.Second) // three lease periods: renewal keeps the question b1's
	if n := asked1.Load(); n != 1 {
		t.Fatalf("a redelivery during answering was answered again (%d attempts)", n)
	}

	// The crash: b1 stops renewing; its lease runs out.
	stop1()
	time.Sleep(400 * time.Millisecond)
	done := make(chan struct{})
	close(done)
	var asked2 atomic.Int32
	b2 := realCore(t, path, 2, 2, 300*time.Millisecond, done, &asked2)
	h2 := newHarness(t, func(c *Config) { c.Core = b2 })
	wantStatus(t, h2.event(body, http.Header{"X-Slack-Retry-Num": {"2"}, "X-Slack-Retry-Reason": {"http_timeout"}}), http.StatusOK)
	wantStatus(t, h2.event(body, http.Header{"X-Slack-Retry-Num": {"3"}, "X-Slack-Retry-Reason": {"http_timeout"}}), http.StatusOK)
	h2.a.Wait(t.Context())
	if n := asked2.Load(); n != 1 {
		t.Errorf("after the crash the question was answered %d times; want once", n)
	}
	if n, err := b2.Pending(t.Context()); err != nil || n != 0 {
		t.Errorf("pending after the answer: %d, %v; want 0", n, err)
	}
	if n := len(h2.slack.callsOf("chat.update")); n == 0 {
		t.Error("the answer was never posted")
	}
}

// TestResumeAfterRestartWithRealCore: questions accepted by a process that then died are
// taken up by the next one's Run: the recent one is answered in its thread, the one older
// than ResumeMaxAge gets the apology there instead.
func TestResumeAfterRestartWithRealCore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	never := make(chan struct{})
	defer close(never)
	var asked1 atomic.Int32
	b1 := realCore(t, path, 2, 2, 200*time.Millisecond, never, &asked1)
	for _, q := range []struct {
		ts  string
		age time.Duration
	}{{"1763000003.000001", time.Minute}, {"1763000003.000002", time.Hour}} {
		p, _ := json.Marshal(pending{Kind: kindMessage, Team: "T1", Channel: "C1", User: "U1", Text: "what is attention?", TS: q.ts, Thread: q.ts})
		if _, v := b1.Accept(t.Context(), Platform, "slack:msg:C1:"+q.ts, p, time.Now().Add(-q.age)); v != bot.Fresh {
			t.Fatal(v)
		}
	}
	b1.Close() // the crash

	done := make(chan struct{})
	close(done)
	var asked2 atomic.Int32
	b2 := realCore(t, path, 2, 2, 200*time.Millisecond, done, &asked2)
	h := newHarness(t, func(c *Config) { c.Core = b2 })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go b2.Run(ctx)
	waitFor(t, "both questions delivered", func() bool {
		n, err := b2.Pending(t.Context())
		return err == nil && n == 0
	})
	h.a.Wait(t.Context())
	if n := asked2.Load(); n != 1 {
		t.Errorf("pipeline asked %d times; want once, for the recent question", n)
	}
	finals := map[string]string{} // placeholder ts → its last text
	posts := h.slack.callsOf("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("%d messages posted; want one placeholder per question", len(posts))
	}
	for _, c := range h.slack.callsOf("chat.update") {
		finals[c.Form.Get("ts")] = c.Form.Get("text")
	}
	var apologies, answers int
	for _, text := range finals {
		if strings.Contains(text, bot.ApologyText) {
			apologies++
		} else {
			answers++
		}
	}
	if apologies != 1 || answers != 1 {
		t.Errorf("final texts %v; want one answer and one apology", finals)
	}
}

// TestCrashAfterPlaceholderDeleted reproduces a question the fault-and-load test lost. Its
// placeholder was posted and saved; the core then made the reply private (the channel's
// rate limit), so the placeholder was deleted, and the process died before the question was
// marked done (here: while the ephemeral notice is on its way). The next process resumed the
// question with the deleted placeholder, chat.update answered message_not_found and the
// question ended undeliverable, with nothing in its thread. Resumed, it must get a visible
// answer in its thread.
func TestCrashAfterPlaceholderDeleted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	const lease = 200 * time.Millisecond
	b1, err := bot.New(bot.Config{StatePath: path, Asker: &bottest.Asker{}, MaxConcurrent: 2, MaxQueue: 2,
		UserRate: rate.Inf, ChannelRate: rate.Every(time.Hour), ChannelBurst: 1, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	h1 := newHarness(t, func(c *Config) { c.Core = b1 })
	hold := make(chan struct{})
	h1.slack.mu.Lock()
	h1.slack.hold["chat.postEphemeral"] = hold
	h1.slack.mu.Unlock()
	t.Cleanup(func() { close(hold) }) // lets the dead process's last call return, after the test

	// The channel's one token goes to a first question.
	const ts1, ts2 = "1763000004.000001", "1763000004.000002"
	wantStatus(t, h1.event(eventCallback("Ev1", mention("C1", ts1, "", "<@UBOT> what is attention?")), nil), http.StatusOK)
	waitFor(t, "the first question answered", func() bool {
		n, err := b1.Pending(t.Context())
		return err == nil && n == 0
	})
	wantStatus(t, h1.event(eventCallback("Ev2", mention("C1", ts2, "", "<@UBOT> what is attention?")), nil), http.StatusOK)
	h1.slack.waitCalls(t, "chat.postEphemeral", 1)
	if n := len(h1.slack.callsOf("chat.delete")); n != 1 {
		t.Fatalf("%d placeholders deleted before the rate-limit notice; want 1", n)
	}
	b1.Close() // the crash

	b2, err := bot.New(bot.Config{StatePath: path, Asker: &bottest.Asker{}, MaxConcurrent: 2, MaxQueue: 2,
		UserRate: rate.Inf, ChannelRate: rate.Inf, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b2.Close() })
	h2 := newHarness(t, func(c *Config) { c.Core = b2; c.APIURL = h1.slack.srv.GetAPIURL() })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go b2.Run(ctx)
	waitFor(t, "the question resumed and done", func() bool {
		n, err := b2.Pending(t.Context())
		return err == nil && n == 0
	})
	h2.a.Wait(t.Context())

	// What the thread of ts2 shows now: footnote's messages there that were not deleted,
	// with their last text.
	calls := h1.slack.list()
	shown := map[string]string{}
	for _, c := range calls {
		if c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == ts2 {
			shown[c.TS] = c.Form.Get("text")
		}
	}
	for _, c := range calls {
		switch ts := c.Form.Get("ts"); c.Method {
		case "chat.update":
			if _, ok := shown[ts]; ok {
				shown[ts] = c.Form.Get("text")
			}
		case "chat.delete":
			delete(shown, ts)
		}
	}
	answers := 0
	for _, text := range shown {
		if strings.Contains(text, "Searching") {
			t.Errorf("a placeholder is left in the thread: %q", text)
			continue
		}
		answers++
	}
	if answers != 1 {
		t.Errorf("the resumed question shows %d replies in its thread (%v); want its answer, once", answers, shown)
	}
	if n := len(h1.slack.callsOf("chat.update (message_not_found)")); n != 0 {
		t.Errorf("%d updates of the deleted placeholder; the resumed attempt should know it is gone", n)
	}
}
