package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack/slacktest"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
)

// fakeCore stands in for *bot.Bot: it records calls, dedups claims and follows the threads
// it answered in.
type fakeCore struct {
	mu        sync.Mutex
	asks      []bot.Request
	clicks    []bot.Click
	claimed   map[string]bool
	following map[string]bool
	docs      int
	gate      chan struct{} // when set, Ask waits for it to close before answering

	ask func(ctx context.Context, req bot.Request, onDelta func(string)) bot.Reply
	act func(ctx context.Context, c bot.Click) bot.Reply

	// Delivery side, standing in for the core's gate and lifecycle.
	bottest.Delivery
	slots chan struct{} // when set, bounds Ask like the core's MaxConcurrent
}

var _ Core = (*fakeCore)(nil)

func newFakeCore() *fakeCore {
	return &fakeCore{claimed: map[string]bool{}, following: map[string]bool{}, docs: 3}
}

func (f *fakeCore) Ask(ctx context.Context, req bot.Request, onDelta func(string)) bot.Reply {
	f.mu.Lock()
	slots := f.slots
	f.mu.Unlock()
	if slots != nil {
		slots <- struct{}{}
		defer func() { <-slots }()
	}
	f.mu.Lock()
	f.asks = append(f.asks, req)
	if req.Thread != "" {
		f.following[req.Channel+"/"+req.Thread] = true
	}
	ask, gate := f.ask, f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return bot.Reply{Kind: bot.KindError, ErrorRef: "timeout"}
		}
	}
	if ask != nil {
		return ask(ctx, req, onDelta)
	}
	if strings.TrimSpace(req.Text) == "" {
		return bot.Reply{Kind: bot.KindUsage, RequestID: "r-usage", Private: true, Paragraphs: []string{"Ask me about the papers: `/ask what is attention?`"}}
	}
	if onDelta != nil {
		onDelta("The encoder has **two")
		onDelta("The encoder has **two sub-layers** [1]")
	}
	r := sampleAnswer()
	r.Question = req.Text
	r.Private = req.Private
	return r
}

func (f *fakeCore) Act(ctx context.Context, c bot.Click) bot.Reply {
	f.mu.Lock()
	f.clicks = append(f.clicks, c)
	act := f.act
	f.mu.Unlock()
	if act != nil {
		return act(ctx, c)
	}
	a := sampleAnswer()
	switch c.Action.Kind {
	case bot.ActShowSource:
		s := a.Sources[c.Action.Source-1]
		s.Text = fmt.Sprintf("Full text of source %d: each layer has two sub-layers.", s.N)
		return bot.Reply{Kind: bot.KindSource, AnswerID: a.AnswerID, RequestID: "r-src", Sources: []bot.Source{s}}
	case bot.ActMoreSources:
		more := bot.Source{N: 4, Title: "BERT", Section: []string{"3 BERT"}, Pages: "4", Score: 0.41, Excerpt: "We introduce BERT."}
		return bot.Reply{Kind: bot.KindSources, AnswerID: a.AnswerID, RequestID: "r-more", Sources: []bot.Source{more},
			Actions: []bot.Action{{Kind: bot.ActShowSource, AnswerID: a.AnswerID, Source: 4}}}
	case bot.ActShare:
		a.Question = "shared question"
		return a
	default:
		return bot.Reply{Kind: bot.KindNotice, RequestID: "r-fb", Paragraphs: []string{"Thanks for the feedback."}}
	}
}

func (f *fakeCore) Following(_ context.Context, platform, channel, thread string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return platform == Platform && f.following[channel+"/"+thread]
}

func (f *fakeCore) Claim(_ context.Context, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed[key] {
		return false
	}
	f.claimed[key] = true
	return true
}

func (f *fakeCore) Documents(context.Context) int { return f.docs }

func (f *fakeCore) requests() []bot.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bot.Request(nil), f.asks...)
}

func (f *fakeCore) clickList() []bot.Click {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bot.Click(nil), f.clicks...)
}

func sampleAnswer() bot.Reply {
	const id = "ans_01"
	return bot.Reply{
		Kind:      bot.KindAnswer,
		AnswerID:  id,
		RequestID: "req_01",
		Question:  "what are the two sub-layers of a Transformer encoder layer?",
		Paragraphs: []string{
			"Each encoder layer has **two sub-layers** [1]: a multi-head *self-attention* mechanism and a position-wise feed-forward network [1][2].",
			"- residual connections around each\n- followed by `LayerNorm(x + Sublayer(x))` [2]",
		},
		Sources: []bot.Source{
			{N: 1, ChunkID: "c1", Title: "Attention Is All You Need", Name: "attention", Section: []string{"3 Model Architecture", "3.1 Encoder and Decoder Stacks"}, Pages: "3", Score: 0.87, Excerpt: "The encoder is composed of a stack of N = 6 identical layers. Each layer has two sub-layers.", Cited: true},
			{N: 2, ChunkID: "c2", Title: "Attention Is All You Need", Name: "attention", Section: []string{"3 Model Architecture"}, Pages: "3–4", Score: 0.63, Excerpt: "We employ a residual connection around each of the two sub-layers, followed by layer normalization.", Cited: true},
			{N: 3, ChunkID: "c3", Title: "", Name: "layer_norm", Pages: "lines 10–42", Score: 0.31, Excerpt: "Layer normalization <LN> & friends.", Cited: false},
		},
		Actions: []bot.Action{
			{Kind: bot.ActShowSource, AnswerID: id, Source: 1},
			{Kind: bot.ActShowSource, AnswerID: id, Source: 2},
			{Kind: bot.ActShowSource, AnswerID: id, Source: 3},
			{Kind: bot.ActMoreSources, AnswerID: id},
			{Kind: bot.ActFeedbackUp, AnswerID: id},
			{Kind: bot.ActFeedbackDown, AnswerID: id},
		},
		Confidence: 0.8,
	}
}

// apiCall is one Web API call the fake Slack received.
type apiCall struct {
	Method string
	Form   url.Values     // form-encoded calls (chat.*)
	JSON   map[string]any // JSON calls (views.open)
	Seq    int64
	TS     string // the ts chat.postMessage answered with
}

// blocks decodes the call's blocks.
func (c apiCall) blocks(t *testing.T) []map[string]any {
	t.Helper()
	raw := c.Form.Get("blocks")
	if raw == "" {
		return nil
	}
	var b []map[string]any
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		t.Fatalf("%s blocks: %v", c.Method, err)
	}
	return b
}

// text is all visible text of the call's blocks, one block per line.
func (c apiCall) text(t *testing.T) string {
	t.Helper()
	var lines []string
	for _, b := range c.blocks(t) {
		lines = append(lines, blockText(b))
	}
	return strings.Join(lines, "\n")
}

func blockText(b map[string]any) string {
	var parts []string
	if txt, ok := b["text"].(map[string]any); ok {
		parts = append(parts, fmt.Sprint(txt["text"]))
	}
	for _, key := range []string{"elements"} {
		if els, ok := b[key].([]any); ok {
			for _, e := range els {
				m, _ := e.(map[string]any)
				if txt, ok := m["text"].(map[string]any); ok {
					parts = append(parts, fmt.Sprint(txt["text"]))
				} else if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
				if ph, ok := m["placeholder"].(map[string]any); ok {
					parts = append(parts, fmt.Sprint(ph["text"]))
				}
			}
		}
	}
	return strings.Join(parts, " | ")
}

// buttons returns action_id → value of every button and select option in the call.
func (c apiCall) buttons(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, b := range c.blocks(t) {
		if b["type"] != "actions" {
			continue
		}
		for _, e := range b["elements"].([]any) {
			m := e.(map[string]any)
			id := fmt.Sprint(m["action_id"])
			if v, ok := m["value"].(string); ok {
				out[id] = v
			}
			if opts, ok := m["options"].([]any); ok {
				for i, o := range opts {
					out[fmt.Sprintf("%s#%d", id, i)] = fmt.Sprint(o.(map[string]any)["value"])
				}
			}
		}
	}
	return out
}

// fakeSlack is slacktest's server with recording handlers for the Web API methods the
// adapter uses and a scripted Socket Mode websocket.
type fakeSlack struct {
	srv *slacktest.Server
	seq atomic.Int64

	mu        sync.Mutex
	calls     []apiCall
	ts        int
	limited   map[string]int           // method → 429 answers still to give
	failing   map[string]int           // method → 500 answers still to give
	erroring  map[string]string        // method → Slack error it answers with (native_test.go)
	outside   map[string]bool          // channels footnote is not a member of
	deleted   map[string]bool          // ts chat.delete removed: chat.update answers message_not_found
	hold      map[string]chan struct{} // method → recorded, then answered once the channel closes
	envelopes chan string              // sent to the socket mode client
	acks      chan ack                 // envelope ids the client acknowledged
	conns     atomic.Int32
}

type ack struct {
	EnvelopeID string
	Seq        int64
}

func newFakeSlack(t *testing.T) *fakeSlack {
	t.Helper()
	f := &fakeSlack{limited: map[string]int{}, failing: map[string]int{}, erroring: map[string]string{}, outside: map[string]bool{}, deleted: map[string]bool{}, hold: map[string]chan struct{}{}, envelopes: make(chan string, 16), acks: make(chan ack, 16)}
	f.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		for _, m := range append([]string{"chat.postMessage", "chat.update", "chat.postEphemeral", "chat.delete", "views.open", "respond"}, nativeMethods...) {
			c.Handle("/"+m, f.record(m))
		}
		c.Handle("/ws", slacktest.Websocket(f.socket))
	})
	f.srv.Start()
	t.Cleanup(f.srv.Stop)
	return f
}

func (f *fakeSlack) record(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := apiCall{Method: method, Seq: f.seq.Add(1)}
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			_ = json.Unmarshal(body, &c.JSON)
		} else {
			c.Form, _ = url.ParseQuery(string(body))
		}
		f.mu.Lock()
		if f.limited[method] > 0 {
			f.limited[method]--
			f.calls = append(f.calls, apiCall{Method: method + " (429)", Form: c.Form, Seq: c.Seq})
			f.mu.Unlock()
			// Slack's rate-limit response: HTTP 429 with Retry-After in seconds.
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		if f.failing[method] > 0 {
			f.failing[method]--
			f.calls = append(f.calls, apiCall{Method: method + " (500)", Form: c.Form, Seq: c.Seq})
			f.mu.Unlock()
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if f.outside[c.Form.Get("channel")] {
			f.calls = append(f.calls, apiCall{Method: method + " (not_in_channel)", Form: c.Form, Seq: c.Seq})
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok":false,"error":"not_in_channel"}`)
			return
		}
		if e := f.erroring[method]; e != "" {
			f.calls = append(f.calls, apiCall{Method: method + " (" + e + ")", Form: c.Form, JSON: c.JSON, Seq: c.Seq})
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"ok":false,"error":%q}`, e)
			return
		}
		if method == "chat.update" && f.deleted[c.Form.Get("ts")] {
			f.calls = append(f.calls, apiCall{Method: method + " (message_not_found)", Form: c.Form, Seq: c.Seq})
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok":false,"error":"message_not_found"}`)
			return
		}
		if method == "chat.delete" {
			f.deleted[c.Form.Get("ts")] = true
		}
		f.ts++
		ts := fmt.Sprintf("1700000000.%06d", f.ts)
		if method == "chat.postMessage" {
			c.TS = ts
		}
		f.calls = append(f.calls, c)
		hold := f.hold[method]
		f.mu.Unlock()
		if hold != nil {
			<-hold
		}
		w.Header().Set("Content-Type", "application/json")
		channel := c.Form.Get("channel")
		switch method {
		case "chat.postMessage":
			fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, channel, ts)
		case "chat.update":
			fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q,"text":""}`, channel, c.Form.Get("ts"))
		case "chat.postEphemeral":
			fmt.Fprintf(w, `{"ok":true,"message_ts":%q}`, ts)
		case "views.open":
			fmt.Fprint(w, `{"ok":true,"view":{"id":"V1","type":"modal"}}`)
		default:
			fmt.Fprint(w, f.nativeResponse(method, c, ts, body))
		}
	}
}

// socket plays Slack's side of Socket Mode: hello, then the queued envelopes, collecting acks.
func (f *fakeSlack) socket(c *websocket.Conn) {
	f.conns.Add(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			var res struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if json.Unmarshal(msg, &res) == nil && res.EnvelopeID != "" {
				f.acks <- ack{EnvelopeID: res.EnvelopeID, Seq: f.seq.Add(1)}
			}
		}
	}()
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1,"debug_info":{"host":"test"},"connection_info":{"app_id":"A1"}}`)); err != nil {
		return
	}
	for {
		select {
		case env := <-f.envelopes:
			if err := c.WriteMessage(websocket.TextMessage, []byte(env)); err != nil {
				return
			}
		case <-done:
			return
		}
	}
}

func (f *fakeSlack) list() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...)
}

// callsOf returns the successful calls of one method.
func (f *fakeSlack) callsOf(method string) []apiCall {
	var out []apiCall
	for _, c := range f.list() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// waitFor polls until cond holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitCalls waits until the fake has seen at least n successful calls of method.
func (f *fakeSlack) waitCalls(t *testing.T, method string, n int) []apiCall {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d %s calls", n, method), func() bool { return len(f.callsOf(method)) >= n })
	return f.callsOf(method)
}

// testLogger collects the adapter's logs and prints them when the test fails (goroutines may
// still log after the test returned, when t.Log would panic).
func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	buf := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
