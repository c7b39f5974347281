package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/bot"
)

const testSecret = "test-signing-secret"

// harness runs an Adapter in HTTP mode against the fake Slack Web API.
type harness struct {
	t     *testing.T
	core  *fakeCore
	slack *fakeSlack
	a     *Adapter
	srv   *httptest.Server
	now   time.Time
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, core: newFakeCore(), slack: newFakeSlack(t), now: time.Unix(1_763_000_000, 0)}
	cfg := Config{
		BotToken:       "xoxb-test",
		AppToken:       "xapp-1-test",
		SigningSecret:  testSecret,
		APIURL:         h.slack.srv.GetAPIURL(),
		Core:           h.core,
		Logger:         testLogger(t),
		Now:            func() time.Time { return h.now },
		UpdateInterval: 5 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.a = a
	h.srv = httptest.NewServer(a.Handler())
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Wait(ctx); err != nil {
			t.Error(err)
		}
	})
	return h
}

// send posts a request signed the way Slack signs it, at the harness clock's time.
func (h *harness) send(path, contentType, body string, header http.Header) *http.Response {
	h.t.Helper()
	ts := strconv.FormatInt(h.now.Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", Signature(testSecret, ts, []byte(body)))
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { res.Body.Close() })
	return res
}

func (h *harness) event(body string, header http.Header) *http.Response {
	h.t.Helper()
	return h.send("/slack/events", "application/json", body, header)
}

func (h *harness) command(text string) (*http.Response, time.Duration) {
	h.t.Helper()
	return h.commandIn("C1", text)
}

func (h *harness) commandIn(channel, text string) (*http.Response, time.Duration) {
	h.t.Helper()
	form := url.Values{
		"token": {"legacy"}, "team_id": {"T1"}, "team_domain": {"lab"}, "channel_id": {channel},
		"channel_name": {"papers"}, "user_id": {"U1"}, "user_name": {"ada"}, "command": {"/ask"},
		"text": {text}, "response_url": {h.slack.srv.GetAPIURL() + "respond"},
		"trigger_id": {"trig-" + strconv.FormatInt(time.Now().UnixNano(), 36)},
	}
	start := time.Now()
	res := h.send("/slack/commands", "application/x-www-form-urlencoded", form.Encode(), nil)
	return res, time.Since(start)
}

func (h *harness) interaction(payload any) *http.Response {
	h.t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.send("/slack/interactions", "application/x-www-form-urlencoded", url.Values{"payload": {string(raw)}}.Encode(), nil)
}

func wantStatus(t *testing.T, res *http.Response, want int) {
	t.Helper()
	if res.StatusCode != want {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d (%s), want %d", res.StatusCode, body, want)
	}
}

// eventCallback is an Events API event_callback envelope as Slack posts it.
func eventCallback(eventID string, inner map[string]any) string {
	raw, _ := json.Marshal(map[string]any{
		"token": "legacy", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
		"event_id": eventID, "event_time": 1763000000, "event": inner,
		"authorizations": []map[string]any{{"team_id": "T1", "user_id": "UBOT", "is_bot": true}},
	})
	return string(raw)
}

func mention(channel, ts, threadTS, text string) map[string]any {
	m := map[string]any{"type": "app_mention", "user": "U1", "text": text, "ts": ts, "channel": channel, "event_ts": ts}
	if threadTS != "" {
		m["thread_ts"] = threadTS
	}
	return m
}

func channelMessage(channel, channelType, ts, threadTS, text string) map[string]any {
	m := map[string]any{"type": "message", "user": "U1", "text": text, "ts": ts, "channel": channel, "channel_type": channelType, "event_ts": ts}
	if threadTS != "" {
		m["thread_ts"] = threadTS
	}
	return m
}

func TestSlackSigningExample(t *testing.T) {
	// Slack's published request-signing example (PLATFORMS.md): a 2018 timestamp, so the
	// clock is set to it.
	const (
		secret = "8f742231b10e8888abcd99yyyzzz85a5"
		ts     = "1531420618"
		body   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
		want   = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
	)
	if got := Signature(secret, ts, []byte(body)); got != want {
		t.Fatalf("Signature = %s, want %s", got, want)
	}
	h := newHarness(t, func(c *Config) { c.SigningSecret = secret })
	h.now = time.Unix(1531420618, 0).Add(30 * time.Second)
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/slack/commands", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", want)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	wantStatus(t, res, http.StatusOK)
	// The command has no text: the usage reply goes to the user alone.
	eph := h.slack.waitCalls(t, "chat.postEphemeral", 1)
	if got := eph[0].Form.Get("user"); got != "U2CERLKJA" {
		t.Errorf("usage shown to %q, want U2CERLKJA", got)
	}
	if len(h.slack.callsOf("chat.postMessage")) != 0 {
		t.Error("an empty /ask posted to the channel")
	}
}

func TestSignatureRejected(t *testing.T) {
	h := newHarness(t, nil)
	body := eventCallback("Ev1", mention("C1", "1.1", "", "<@UBOT> hi"))
	now := h.now
	sign := func(ts time.Time, secret string) http.Header {
		s := strconv.FormatInt(ts.Unix(), 10)
		return http.Header{"X-Slack-Request-Timestamp": {s}, "X-Slack-Signature": {Signature(secret, s, []byte(body))}}
	}
	tests := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"valid", sign(now, testSecret), http.StatusOK},
		{"wrong secret", sign(now, "other"), http.StatusUnauthorized},
		{"six minutes old", sign(now.Add(-6*time.Minute), testSecret), http.StatusUnauthorized},
		{"six minutes ahead", sign(now.Add(6*time.Minute), testSecret), http.StatusUnauthorized},
		{"four minutes old", sign(now.Add(-4*time.Minute), testSecret), http.StatusOK},
		{"no signature", http.Header{"X-Slack-Request-Timestamp": {strconv.FormatInt(now.Unix(), 10)}}, http.StatusUnauthorized},
		{"no timestamp", http.Header{"X-Slack-Signature": {Signature(testSecret, "", []byte(body))}}, http.StatusUnauthorized},
		{"not v0", http.Header{"X-Slack-Request-Timestamp": {strconv.FormatInt(now.Unix(), 10)}, "X-Slack-Signature": {"v1=" + Signature(testSecret, strconv.FormatInt(now.Unix(), 10), []byte(body))[3:]}}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/slack/events", strings.NewReader(body))
			req.Header = tt.header.Clone()
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tt.want {
				t.Errorf("status %d, want %d", res.StatusCode, tt.want)
			}
		})
	}
	// A tampered body with a valid-looking signature for the original is rejected too.
	ts := strconv.FormatInt(now.Unix(), 10)
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/slack/commands", strings.NewReader("text=evil"))
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", Signature(testSecret, ts, []byte("text=good")))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("tampered body: status %d, want 401", res.StatusCode)
	}
}

func TestNoSigningSecretRejectsEverything(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SigningSecret = "" })
	res := h.event(eventCallback("Ev1", mention("C1", "1.1", "", "hi")), nil)
	wantStatus(t, res, http.StatusUnauthorized)
}

func TestURLVerification(t *testing.T) {
	h := newHarness(t, nil)
	res := h.event(`{"token":"legacy","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`, nil)
	wantStatus(t, res, http.StatusOK)
	body, _ := io.ReadAll(res.Body)
	if got, want := string(body), "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"; got != want {
		t.Errorf("challenge reply %q, want %q", got, want)
	}
}

func TestAskCommandFlow(t *testing.T) {
	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	h := newHarness(t, nil)
	h.core.ask = func(ctx context.Context, req bot.Request, onDelta func(string)) bot.Reply {
		asked <- struct{}{}
		<-release // the answer is generated only after the test saw the acknowledgement
		onDelta("Each encoder layer has **two")
		time.Sleep(20 * time.Millisecond)
		onDelta("Each encoder layer has **two sub-layers** [1]")
		time.Sleep(20 * time.Millisecond)
		r := sampleAnswer()
		r.Question = req.Text
		return r
	}
	res, ackTime := h.command("  what are the two sub-layers of a Transformer encoder layer?  ")
	wantStatus(t, res, http.StatusOK)
	body, _ := io.ReadAll(res.Body)
	if len(body) != 0 {
		t.Errorf("ack body %q, want empty", body)
	}
	t.Logf("/ask acknowledged in %v (Slack allows 3 s)", ackTime)
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("core was never asked")
	}
	// Acknowledged while the answer was still being generated.
	if n := len(h.slack.callsOf("chat.update")); n != 0 {
		t.Fatalf("%d chat.update calls before the answer was released", n)
	}
	close(release)
	h.a.Wait(t.Context())

	posts := h.slack.callsOf("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("got %d chat.postMessage calls, want question + placeholder", len(posts))
	}
	q, ph := posts[0], posts[1]
	if got, want := q.text(t), "*<@U1> asked:* what are the two sub-layers of a Transformer encoder layer?"; got != want {
		t.Errorf("question message %q, want %q", got, want)
	}
	if q.Form.Get("channel") != "C1" || q.Form.Get("thread_ts") != "" {
		t.Errorf("question posted to %q thread %q, want C1 top level", q.Form.Get("channel"), q.Form.Get("thread_ts"))
	}
	qts := "1700000000.000001"
	if got := ph.Form.Get("thread_ts"); got != qts {
		t.Errorf("placeholder thread_ts %q, want the question's ts %q", got, qts)
	}
	if got, want := ph.Form.Get("text"), "Searching 3 papers…"; got != want {
		t.Errorf("placeholder %q, want %q", got, want)
	}
	reqs := h.core.requests()
	if len(reqs) != 1 {
		t.Fatalf("core asked %d times, want 1", len(reqs))
	}
	want := bot.Request{Platform: "slack", Tenant: "T1", Channel: "C1", Thread: qts, User: "U1", Text: "what are the two sub-layers of a Transformer encoder layer?"}
	if diff := cmp.Diff(want, reqs[0]); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	updates := h.slack.callsOf("chat.update")
	if len(updates) < 2 {
		t.Fatalf("got %d chat.update calls, want progressive updates and the final answer", len(updates))
	}
	phTS := "1700000000.000002"
	for _, u := range updates {
		if u.Form.Get("ts") != phTS || u.Form.Get("channel") != "C1" {
			t.Errorf("update of %s/%s, want C1/%s", u.Form.Get("channel"), u.Form.Get("ts"), phTS)
		}
	}
	if got := updates[0].text(t); !strings.HasPrefix(got, "Each encoder layer has") || !strings.HasSuffix(got, "…") {
		t.Errorf("progressive update %q, want partial answer ending in …", got)
	}
	final := updates[len(updates)-1]
	text := final.text(t)
	for _, want := range []string{"*two sub-layers* [1]", "*Sources*", "[1] *Attention Is All You Need*", "Show source 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("final answer lacks %q:\n%s", want, text)
		}
	}
	if final.Form.Get("text") == "" {
		t.Error("final answer has no fallback text")
	}
}

func TestAskCommandEmptyShowsUsage(t *testing.T) {
	h := newHarness(t, nil)
	res, _ := h.command("   ")
	wantStatus(t, res, http.StatusOK)
	h.a.Wait(t.Context())
	eph := h.slack.callsOf("chat.postEphemeral")
	if len(eph) != 1 {
		t.Fatalf("got %d ephemeral messages, want 1", len(eph))
	}
	if got := eph[0].text(t); !strings.Contains(got, "/ask what is attention?") {
		t.Errorf("usage %q", got)
	}
	if n := len(h.slack.callsOf("chat.postMessage")); n != 0 {
		t.Errorf("%d public messages for an empty /ask", n)
	}
}

func TestAskCommandPrivateAndShare(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Policy = func(team, ch string) Policy { return Policy{Private: team == "T1" && ch == "C1", RequireMention: true} }
	})
	res, _ := h.command("what is layer norm?")
	wantStatus(t, res, http.StatusOK)
	h.a.Wait(t.Context())
	if n := len(h.slack.callsOf("chat.postMessage")); n != 0 {
		t.Fatalf("%d public messages in a private channel", n)
	}
	eph := h.slack.callsOf("chat.postEphemeral")
	if len(eph) != 1 {
		t.Fatalf("got %d ephemeral messages, want 1", len(eph))
	}
	if !h.core.requests()[0].Private {
		t.Error("request not marked private")
	}
	share, ok := eph[0].buttons(t)["footnote_share"]
	if !ok {
		t.Fatalf("no Share with channel button in %v", eph[0].buttons(t))
	}
	res = h.interaction(blockAction("trig-share", "C1", "", "", true, "footnote_share", share))
	wantStatus(t, res, http.StatusOK)
	h.a.Wait(t.Context())
	posts := h.slack.callsOf("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("share posted %d messages, want header + answer", len(posts))
	}
	if got := posts[0].text(t); !strings.Contains(got, "<@U1> shared an answer") {
		t.Errorf("share header %q", got)
	}
	if got := posts[1].Form.Get("thread_ts"); got != "1700000000.000002" {
		t.Errorf("shared answer in thread %q, want under the header", got)
	}
	if clicks := h.core.clickList(); len(clicks) != 1 || clicks[0].Action.Kind != bot.ActShare {
		t.Errorf("clicks %+v, want one share", clicks)
	}
}

func TestRetriedEventAnsweredOnce(t *testing.T) {
	h := newHarness(t, nil)
	body := eventCallback("Ev42", mention("C1", "1763000000.000100", "", "<@UBOT> what is attention?"))
	wantStatus(t, h.event(body, nil), http.StatusOK)
	// Slack retries when it did not see the first acknowledgement in time (PLATFORMS.md).
	wantStatus(t, h.event(body, http.Header{"X-Slack-Retry-Num": {"1"}, "X-Slack-Retry-Reason": {"http_timeout"}}), http.StatusOK)
	wantStatus(t, h.event(body, http.Header{"X-Slack-Retry-Num": {"2"}, "X-Slack-Retry-Reason": {"http_timeout"}}), http.StatusOK)
	// The same message delivered as a plain message event (message.channels) is not a second question.
	wantStatus(t, h.event(eventCallback("Ev43", channelMessage("C1", "channel", "1763000000.000100", "", "<@UBOT> what is attention?")), nil), http.StatusOK)
	h.a.Wait(t.Context())
	if n := len(h.core.requests()); n != 1 {
		t.Errorf("core asked %d times, want 1", n)
	}
	posts := h.slack.callsOf("chat.postMessage")
	if len(posts) != 1 {
		t.Fatalf("got %d posts, want one placeholder", len(posts))
	}
	if got := posts[0].Form.Get("thread_ts"); got != "1763000000.000100" {
		t.Errorf("answered in thread %q, want under the mention", got)
	}
}

func TestErrorReplyVisibleInThread(t *testing.T) {
	h := newHarness(t, nil)
	h.core.ask = func(context.Context, bot.Request, func(string)) bot.Reply {
		return bot.Reply{Kind: bot.KindError, RequestID: "r9", ErrorRef: "E-7Q2", Paragraphs: []string{"Sorry, I could not search the papers right now."}}
	}
	wantStatus(t, h.event(eventCallback("Ev1", mention("C1", "1763000000.000200", "", "<@UBOT> hi")), nil), http.StatusOK)
	h.a.Wait(t.Context())
	updates := h.slack.callsOf("chat.update")
	if len(updates) != 1 {
		t.Fatalf("got %d updates, want 1", len(updates))
	}
	got := updates[0].text(t)
	for _, want := range []string{"Sorry, I could not search the papers right now.", "Reference: `E-7Q2`"} {
		if !strings.Contains(got, want) {
			t.Errorf("error reply %q lacks %q", got, want)
		}
	}
	if ph := h.slack.callsOf("chat.postMessage")[0]; ph.Form.Get("thread_ts") != "1763000000.000200" {
		t.Errorf("error reply in thread %q", ph.Form.Get("thread_ts"))
	}
}

func TestRateLimitedCallRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.slack.mu.Lock()
	h.slack.limited["chat.postMessage"] = 1
	h.slack.mu.Unlock()
	start := time.Now()
	wantStatus(t, h.event(eventCallback("Ev1", mention("C1", "1763000000.000300", "", "<@UBOT> hi")), nil), http.StatusOK)
	h.a.Wait(t.Context())
	var methods []string
	for _, c := range h.slack.list() {
		methods = append(methods, c.Method)
	}
	wantMethods := []string{"chat.postMessage (429)", "chat.postMessage"}
	if len(methods) < 2 || !cmp.Equal(methods[:2], wantMethods) {
		t.Fatalf("calls %v, want %v first", methods, wantMethods)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Errorf("retried after %v, before Retry-After: 1", elapsed)
	}
	if n := len(h.slack.callsOf("chat.update")); n == 0 {
		t.Error("the answer never replaced the placeholder")
	}
}

func TestIgnoredMessages(t *testing.T) {
	followed := "1763000000.000001"
	tests := []struct {
		name    string
		event   map[string]any
		mention bool // follow-ups need a mention in the channel
	}{
		{"bot message", func() map[string]any {
			m := channelMessage("C1", "channel", "2.1", followed, "beep")
			m["bot_id"] = "B9"
			return m
		}(), false},
		{"footnote's own answer", func() map[string]any {
			m := channelMessage("C1", "channel", "2.2", followed, "Each layer…")
			m["bot_id"] = "BFOOTNOTE"
			m["user"] = "UBOT"
			return m
		}(), false},
		{"bot_message subtype", func() map[string]any {
			m := channelMessage("C1", "channel", "2.3", followed, "integration")
			m["subtype"] = "bot_message"
			delete(m, "user")
			return m
		}(), false},
		{"edit", func() map[string]any {
			m := channelMessage("C1", "channel", "2.4", followed, "")
			m["subtype"] = "message_changed"
			m["message"] = map[string]any{"type": "message", "user": "U1", "text": "edited", "ts": "2.0"}
			return m
		}(), false},
		{"deletion", func() map[string]any {
			m := channelMessage("C1", "channel", "2.5", followed, "")
			m["subtype"] = "message_deleted"
			m["deleted_ts"] = "2.0"
			return m
		}(), false},
		{"mention by a bot", func() map[string]any {
			m := mention("C1", "2.6", "", "<@UBOT> hi")
			m["bot_id"] = "B9"
			return m
		}(), false},
		{"top-level channel message without mention", channelMessage("C1", "channel", "2.7", "", "what is attention?"), false},
		{"thread footnote does not follow", channelMessage("C1", "channel", "2.8", "9.9", "and then?"), false},
		{"follow-up where follow-ups need a mention", channelMessage("C1", "channel", "2.9", followed, "and then?"), true},
		// The control: the same follow-up where mentions are not required is answered.
		{"control: follow-up answered", channelMessage("C1", "channel", "2.10", followed, "and then?"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Policy = func(string, string) Policy { return Policy{RequireMention: true, MentionFollowUps: tt.mention} }
			})
			h.core.following["C1/"+followed] = true
			wantStatus(t, h.event(eventCallback("Ev-"+tt.name, tt.event), nil), http.StatusOK)
			h.a.Wait(t.Context())
			want := 0
			if strings.HasPrefix(tt.name, "control") {
				want = 1
			}
			if n := len(h.core.requests()); n != want {
				t.Errorf("core asked %d times, want %d", n, want)
			}
			if calls := h.slack.list(); (len(calls) == 0) != (want == 0) {
				t.Errorf("Slack called %d times", len(calls))
			}
		})
	}
}

// blockAction is a block_actions interaction payload for a button press.
func blockAction(trigger, channel, messageTS, threadTS string, ephemeral bool, actionID, value string) map[string]any {
	return map[string]any{
		"type":       "block_actions",
		"trigger_id": trigger,
		"user":       map[string]any{"id": "U1", "team_id": "T1"},
		"team":       map[string]any{"id": "T1"},
		"api_app_id": "A1",
		"container":  map[string]any{"type": "message", "message_ts": messageTS, "thread_ts": threadTS, "channel_id": channel, "is_ephemeral": ephemeral},
		"channel":    map[string]any{"id": channel},
		"message":    map[string]any{"type": "message", "ts": messageTS, "thread_ts": threadTS},
		"actions":    []map[string]any{{"type": "button", "action_id": actionID, "block_id": "footnote_actions", "value": value, "action_ts": "1.0"}},
	}
}

func viewSubmission(viewID, privateMetadata, comment string) map[string]any {
	return map[string]any{
		"type":    "view_submission",
		"user":    map[string]any{"id": "U1", "team_id": "T1"},
		"team":    map[string]any{"id": "T1"},
		"trigger": "trig-view",
		"view": map[string]any{
			"id": viewID, "hash": "h1", "type": "modal", "callback_id": feedbackCallbackID,
			"private_metadata": privateMetadata,
			"state": map[string]any{"values": map[string]any{
				commentBlockID: map[string]any{commentActionID: map[string]any{"type": "plain_text_input", "value": comment}},
			}},
		},
	}
}

func TestAmbientChannel(t *testing.T) {
	// A channel without RequireMention: every top-level message is a question.
	h := newHarness(t, func(c *Config) {
		c.Policy = func(_, ch string) Policy { return Policy{RequireMention: ch != "C-QA"} }
	})
	wantStatus(t, h.event(eventCallback("Ev1", channelMessage("C-QA", "channel", "3.1", "", "what is dropout?")), nil), http.StatusOK)
	wantStatus(t, h.event(eventCallback("Ev2", channelMessage("C-general", "channel", "3.2", "", "lunch?")), nil), http.StatusOK)
	h.a.Wait(t.Context())
	reqs := h.core.requests()
	if len(reqs) != 1 || reqs[0].Channel != "C-QA" || reqs[0].Thread != "3.1" {
		t.Fatalf("requests %+v, want one from C-QA in thread 3.1", reqs)
	}
}

func TestPrivateReplyFromCore(t *testing.T) {
	// The core may make a reply private on its own (usage help for a bare mention): the
	// placeholder goes and only the asker sees the reply.
	h := newHarness(t, nil)
	h.core.ask = func(context.Context, bot.Request, func(string)) bot.Reply {
		return bot.Reply{Kind: bot.KindUsage, Private: true, Paragraphs: []string{"Ask me a question about the papers."}}
	}
	wantStatus(t, h.event(eventCallback("Ev1", mention("C1", "4.1", "", "<@UBOT>")), nil), http.StatusOK)
	h.a.Wait(t.Context())
	if n := len(h.slack.callsOf("chat.delete")); n != 1 {
		t.Errorf("placeholder deleted %d times, want 1", n)
	}
	eph := h.slack.callsOf("chat.postEphemeral")
	if len(eph) != 1 || eph[0].Form.Get("user") != "U1" || eph[0].Form.Get("thread_ts") != "4.1" {
		t.Fatalf("ephemeral replies %+v, want one to U1 in thread 4.1", eph)
	}
	if n := len(h.slack.callsOf("chat.update")); n != 0 {
		t.Errorf("%d chat.update calls, want none", n)
	}
}

func TestAskCommandOutsideChannel(t *testing.T) {
	// footnote is not in the channel: chat.postMessage and chat.postEphemeral fail with
	// not_in_channel, and the answer reaches the asker through response_url.
	h := newHarness(t, nil)
	h.slack.mu.Lock()
	h.slack.outside["C-out"] = true
	h.slack.mu.Unlock()
	res, _ := h.commandIn("C-out", "what is attention?")
	wantStatus(t, res, http.StatusOK)
	h.a.Wait(t.Context())
	got := h.slack.callsOf("respond")
	if len(got) != 1 {
		t.Fatalf("got %d response_url posts, want 1; calls: %v", len(got), h.slack.list())
	}
	if got[0].JSON["response_type"] != "ephemeral" {
		t.Errorf("response_type %v, want ephemeral", got[0].JSON["response_type"])
	}
	raw, _ := json.Marshal(got[0].JSON["blocks"])
	if !strings.Contains(string(raw), "Attention Is All You Need") {
		t.Errorf("response_url blocks lack the answer: %s", raw)
	}
}

func TestLongAnswerContinuesInThread(t *testing.T) {
	h := newHarness(t, nil)
	var paras []string
	for p := range 40 {
		paras = append(paras, fmt.Sprintf("Paragraph %d: %s", p, strings.Repeat("attention weights values ", 40)))
	}
	h.core.ask = func(context.Context, bot.Request, func(string)) bot.Reply {
		r := sampleAnswer()
		r.Paragraphs = paras
		return r
	}
	wantStatus(t, h.event(eventCallback("Ev1", mention("C1", "5.1", "", "<@UBOT> explain everything")), nil), http.StatusOK)
	h.a.Wait(t.Context())
	want := render(bot.Reply{Kind: bot.KindAnswer, Paragraphs: paras, Sources: sampleAnswer().Sources, Actions: sampleAnswer().Actions})
	if len(want) < 3 {
		t.Fatalf("test answer renders to %d messages; make it longer", len(want))
	}
	updates := h.slack.callsOf("chat.update")
	posts := h.slack.callsOf("chat.postMessage")
	// The placeholder becomes part 1; parts 2… follow in the thread, in order.
	if len(posts) != len(want) {
		t.Fatalf("got %d posts, want placeholder + %d continuations", len(posts), len(want)-1)
	}
	got := []apiCall{updates[len(updates)-1]}
	got = append(got, posts[1:]...)
	for i, c := range got {
		if i > 0 && c.Form.Get("thread_ts") != "5.1" {
			t.Errorf("part %d in thread %q, want 5.1", i+1, c.Form.Get("thread_ts"))
		}
		wantBlocks, _ := json.Marshal(want[i].Blocks)
		if c.Form.Get("blocks") != string(wantBlocks) {
			t.Errorf("part %d blocks differ from render's part %d", i+1, i+1)
		}
		if c.Form.Get("text") != want[i].Text {
			t.Errorf("part %d text %.60q, want %.60q", i+1, c.Form.Get("text"), want[i].Text)
		}
		if len(c.Form.Get("blocks")) > maxMessageBlocks {
			t.Errorf("part %d has %d bytes of blocks", i+1, len(c.Form.Get("blocks")))
		}
	}
	if _, ok := got[len(got)-1].buttons(t)["footnote_src_1"]; !ok {
		t.Error("the buttons are not on the last part")
	}
	if !strings.HasPrefix(got[0].Form.Get("text"), "Paragraph 0:") || !strings.HasPrefix(got[1].Form.Get("text"), "Paragraph ") {
		t.Error("parts are out of order")
	}
}

func TestSSLCheck(t *testing.T) {
	h := newHarness(t, nil)
	res, err := http.Post(h.srv.URL+"/slack/commands", "application/x-www-form-urlencoded", strings.NewReader("ssl_check=1&token=legacy"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	wantStatus(t, res, http.StatusOK)
	// An unsigned real command is still refused.
	res, err = http.Post(h.srv.URL+"/slack/commands", "application/x-www-form-urlencoded", strings.NewReader("ssl_check=1&command=%2Fask&text=hi"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	wantStatus(t, res, http.StatusUnauthorized)
	h.a.Wait(t.Context())
	if n := len(h.core.requests()); n != 0 {
		t.Errorf("core asked %d times", n)
	}
}

func TestClicksDoNotQueueBehindAnswers(t *testing.T) {
	// One answer slot, taken by a slow question: a 👎 click must still open its modal at
	// once, because its trigger id expires after 3 s.
	h := newHarness(t, nil)
	h.core.slots = make(chan struct{}, 1)
	gate := make(chan struct{})
	h.core.gate = gate
	defer close(gate)
	wantStatus(t, h.event(eventCallback("Ev1", mention("C1", "6.1", "", "<@UBOT> slow question")), nil), http.StatusOK)
	waitFor(t, "the question to reach the core", func() bool { return len(h.core.requests()) == 1 })
	value := bot.Action{Kind: bot.ActFeedbackDown, AnswerID: "ans_01"}.Encode()
	wantStatus(t, h.interaction(blockAction("trig-9", "C1", "5.0", "5.0", false, "footnote_down", value)), http.StatusOK)
	h.slack.waitCalls(t, "views.open", 1)
}
