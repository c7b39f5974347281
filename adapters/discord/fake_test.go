package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
)

// Ids used by the fixtures in testdata/gateway (Discord snowflakes are decimal strings).
const (
	appID     = "1300000000000000001"
	botID     = "1300000000000000001" // a bot user shares its application's id
	guildID   = "1300000000000000100"
	channelID = "1300000000000000200" // a text channel
	userID    = "1300000000000000300"
	dmID      = "1300000000000000400"
)

// fakeCore stands in for *bot.Bot: it records calls, dedups claims and follows the threads
// it answered in.
type fakeCore struct {
	mu        sync.Mutex
	asks      []bot.Request
	clicks    []bot.Click
	claimed   map[string]bool
	following map[string]bool
	ask       func(req bot.Request) bot.Reply

	// Delivery side, standing in for the core's gate and lifecycle.
	bottest.Delivery
	slots chan struct{} // when set, bounds Ask like the core's MaxConcurrent
}

var _ Core = (*fakeCore)(nil)

func newFakeCore() *fakeCore {
	return &fakeCore{claimed: map[string]bool{}, following: map[string]bool{}}
}

func (f *fakeCore) Ask(_ context.Context, req bot.Request, _ func(string)) bot.Reply {
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
	ask := f.ask
	f.mu.Unlock()
	if ask != nil {
		return ask(req)
	}
	r := sampleAnswer()
	r.Question = bot.Clean(req.Text)
	r.Private = req.Private
	return r
}

func (f *fakeCore) Act(_ context.Context, c bot.Click) bot.Reply {
	f.mu.Lock()
	f.clicks = append(f.clicks, c)
	f.mu.Unlock()
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
	default:
		return bot.Reply{Kind: bot.KindNotice, RequestID: "r-fb", Private: true, Paragraphs: []string{"Thanks for the feedback."}}
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

func (f *fakeCore) Documents(context.Context) int { return 12 }

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
			"* residual connections around each\n* followed by `LayerNorm(x + Sublayer(x))` [2]",
		},
		Sources: []bot.Source{
			{N: 1, ChunkID: "c1", Title: "Attention Is All You Need", Name: "attention", Section: []string{"3 Model Architecture", "3.1 Encoder and Decoder Stacks"}, Pages: "3", Score: 0.87, Excerpt: "The encoder is composed of a stack of N = 6 identical layers. Each layer has two sub-layers.", Cited: true},
			{N: 2, ChunkID: "c2", Title: "Attention Is All You Need", Name: "attention", Section: []string{"3 Model Architecture"}, Pages: "3–4", Score: 0.63, Excerpt: "We employ a residual connection around each of the two sub-layers, followed by layer normalization.", Cited: true},
			{N: 3, ChunkID: "c3", Title: "", Name: "layer_norm", Pages: "lines 10–42", Score: 0.31, Excerpt: "Layer normalization <LN> & *friends*.", Cited: false},
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

// apiCall is one REST call the fake Discord received.
type apiCall struct {
	Method, Path string // path after /api/v9
	Query        string
	Body         map[string]any // JSON object bodies
	Raw          []byte
	Seq          int64
	At           time.Time
}

// fakeDiscord speaks Discord's REST API (under /api/v9) and gateway (a websocket at /ws) on
// one local httptest server, built from the documented payloads.
type fakeDiscord struct {
	t   *testing.T
	srv *httptest.Server
	seq atomic.Int64

	mu       sync.Mutex
	calls    []apiCall
	channels map[string]map[string]any // GET /channels/{id}
	msgSeq   int
	original map[string]string           // interaction token → id of the original response
	deleted  map[string]bool             // interaction tokens whose original response was deleted
	posted   map[string][]map[string]any // channel → messages posted there, for listing
	// fail, when set, may answer a call with an error status and JSON body.
	fail func(method, path string) (int, string, bool)
	// unauthorized makes every REST call answer 401.
	unauthorized bool

	// gateway
	closeWith  int           // close code sent after IDENTIFY instead of READY (0: none)
	identify   chan gwPacket // IDENTIFY and RESUME packets received
	connMu     sync.Mutex
	conn       *websocket.Conn
	gwSeq      int64
	dispatched map[string]time.Time
}

type gwPacket struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
}

func newFakeDiscord(t *testing.T) *fakeDiscord {
	t.Helper()
	f := &fakeDiscord{t: t, channels: map[string]map[string]any{}, identify: make(chan gwPacket, 8), original: map[string]string{}, deleted: map[string]bool{}, posted: map[string][]map[string]any{}, dispatched: map[string]time.Time{}}
	f.channels[channelID] = map[string]any{"id": channelID, "type": 0, "guild_id": guildID, "name": "papers"}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v9/", f.serveREST)
	mux.HandleFunc("/ws/", f.serveGateway) // discordgo adds a trailing slash
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeDiscord) record(r *http.Request, path string) apiCall {
	raw, _ := io.ReadAll(r.Body)
	c := apiCall{Method: r.Method, Path: path, Query: r.URL.RawQuery, Raw: raw, Seq: f.seq.Add(1), At: time.Now()}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &c.Body); err != nil {
			f.t.Errorf("%s %s: body is not a JSON object: %v: %s", r.Method, path, err, raw)
		}
	}
	if r.Header.Get("Authorization") != "Bot test-token" {
		f.t.Errorf("%s %s: authorization %q, want the bot token", r.Method, path, r.Header.Get("Authorization"))
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeDiscord) nextMessageID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgSeq++
	// Later than every fixture's message, as Discord's snowflakes grow with time.
	return fmt.Sprintf("19000000000000%05d", f.msgSeq)
}

// originalID is the message id of an interaction's original response, fixed per token.
func (f *fakeDiscord) originalID(token string) string {
	f.mu.Lock()
	id, ok := f.original[token]
	f.mu.Unlock()
	if !ok {
		id = f.nextMessageID()
		f.mu.Lock()
		f.original[token] = id
		f.mu.Unlock()
	}
	return id
}

func (f *fakeDiscord) serveREST(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v9")
	c := f.record(r, path)
	f.mu.Lock()
	fail, unauthorized := f.fail, f.unauthorized
	f.mu.Unlock()
	if unauthorized {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
		return
	}
	if fail != nil {
		if status, body, ok := fail(r.Method, path); ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
			return
		}
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	echo := func(id, channel string) map[string]any {
		m := map[string]any{"id": id, "channel_id": channel, "author": map[string]any{"id": botID, "username": "footnote", "bot": true}}
		for k, v := range c.Body {
			m[k] = v
		}
		return m
	}
	switch {
	case r.Method == "GET" && path == "/users/@me":
		writeJSON(w, 200, map[string]any{"id": botID, "username": "footnote", "discriminator": "0", "bot": true})
	case r.Method == "GET" && path == "/gateway":
		writeJSON(w, 200, map[string]any{"url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws"})
	case r.Method == "PUT" && parts[0] == "applications":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(c.Raw)
	case r.Method == "POST" && parts[0] == "interactions":
		w.WriteHeader(http.StatusNoContent)
	case parts[0] == "webhooks" && r.Method == "PATCH":
		f.mu.Lock()
		gone := f.deleted[parts[2]]
		f.mu.Unlock()
		if gone {
			writeJSON(w, 404, map[string]any{"message": "Unknown Message", "code": 10008})
			return
		}
		writeJSON(w, 200, echo(f.originalID(parts[2]), channelID))
	case parts[0] == "webhooks" && r.Method == "DELETE":
		f.mu.Lock()
		f.deleted[parts[2]] = true
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case parts[0] == "webhooks" && r.Method == "POST":
		writeJSON(w, 200, echo(f.nextMessageID(), channelID))
	case parts[0] == "channels" && len(parts) == 2 && r.Method == "GET":
		f.mu.Lock()
		ch, ok := f.channels[parts[1]]
		f.mu.Unlock()
		if !ok {
			writeJSON(w, 404, map[string]any{"message": "Unknown Channel", "code": 10003})
			return
		}
		writeJSON(w, 200, ch)
	case parts[0] == "channels" && len(parts) == 5 && parts[4] == "threads":
		// Discord gives a thread started from a message the message's id.
		th := map[string]any{"id": parts[3], "type": 11, "guild_id": guildID, "parent_id": parts[1], "name": c.Body["name"]}
		f.mu.Lock()
		f.channels[parts[3]] = th
		f.mu.Unlock()
		writeJSON(w, 201, th)
	case parts[0] == "channels" && len(parts) == 3 && parts[2] == "messages" && r.Method == "POST":
		m := echo(f.nextMessageID(), parts[1])
		f.mu.Lock()
		f.posted[parts[1]] = append(f.posted[parts[1]], m)
		f.mu.Unlock()
		writeJSON(w, 200, m)
	case parts[0] == "channels" && len(parts) == 3 && parts[2] == "messages" && r.Method == "GET":
		after := r.URL.Query().Get("after")
		out := []map[string]any{}
		f.mu.Lock()
		for _, m := range f.posted[parts[1]] {
			if id := m["id"].(string); len(id) > len(after) || len(id) == len(after) && id > after {
				out = append(out, m)
			}
		}
		f.mu.Unlock()
		writeJSON(w, 200, out)
	case parts[0] == "channels" && len(parts) == 3 && parts[2] == "typing":
		w.WriteHeader(http.StatusNoContent)
	default:
		f.t.Errorf("fake discord: unexpected %s %s", r.Method, path)
		writeJSON(w, 404, map[string]any{"message": "404: Not Found", "code": 0})
	}
}

// callsOf returns the calls with that method whose path matches (a "*" segment matches any).
func (f *fakeDiscord) callsOf(method, pattern string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	want := strings.Split(strings.Trim(pattern, "/"), "/")
	var out []apiCall
	for _, c := range f.calls {
		got := strings.Split(strings.Trim(c.Path, "/"), "/")
		if c.Method != method || len(got) != len(want) {
			continue
		}
		ok := true
		for i := range want {
			ok = ok && (want[i] == "*" || want[i] == got[i])
		}
		if ok {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeDiscord) allCalls() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...)
}

var upgrader = websocket.Upgrader{}

// serveGateway speaks the gateway handshake: HELLO, then IDENTIFY → READY (or RESUME →
// RESUMED); heartbeats are acknowledged; dispatches come from the test.
func (f *fakeDiscord) serveGateway(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		f.t.Errorf("upgrade: %v", err)
		return
	}
	defer conn.Close()
	// A large heartbeat interval: the test never waits for one.
	if err := conn.WriteJSON(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 45000}}); err != nil {
		return
	}
	var p gwPacket
	for {
		if err := conn.ReadJSON(&p); err != nil {
			return
		}
		if p.Op != 1 { // the first heartbeat may come first
			break
		}
	}
	f.identify <- p
	f.mu.Lock()
	closeWith := f.closeWith
	f.mu.Unlock()
	if closeWith != 0 {
		msg := websocket.FormatCloseMessage(closeWith, "closed by test")
		_ = conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
		return
	}
	f.connMu.Lock()
	f.conn = conn
	f.gwSeq++
	switch p.Op {
	case 2:
		err = conn.WriteJSON(map[string]any{"op": 0, "t": "READY", "s": f.gwSeq, "d": map[string]any{
			"v": 10, "user": map[string]any{"id": botID, "username": "footnote", "bot": true},
			"session_id": "sess-1", "resume_gateway_url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws",
			"guilds": []any{map[string]any{"id": guildID, "unavailable": true}}, "application": map[string]any{"id": appID, "flags": 0},
		}})
	case 6:
		err = conn.WriteJSON(map[string]any{"op": 0, "t": "RESUMED", "s": f.gwSeq, "d": nil})
	default:
		f.t.Errorf("gateway: got op %d, want IDENTIFY (2) or RESUME (6)", p.Op)
	}
	f.connMu.Unlock()
	if err != nil {
		return
	}
	for {
		var p gwPacket // a fresh packet: the IDENTIFY sent to the test must stay intact
		if err := conn.ReadJSON(&p); err != nil {
			return
		}
		if p.Op == 1 {
			f.connMu.Lock()
			_ = conn.WriteJSON(map[string]any{"op": 11})
			f.connMu.Unlock()
		}
	}
}

// dispatch sends an event to the connected adapter and records when.
func (f *fakeDiscord) dispatch(t *testing.T, event string, d any) time.Time {
	t.Helper()
	f.connMu.Lock()
	defer f.connMu.Unlock()
	if f.conn == nil {
		t.Fatal("gateway not connected")
	}
	f.gwSeq++
	at := time.Now()
	if err := f.conn.WriteJSON(map[string]any{"op": 0, "t": event, "s": f.gwSeq, "d": d}); err != nil {
		t.Fatalf("dispatch %s: %v", event, err)
	}
	return at
}

// dropConnection closes the gateway connection as a network failure would.
func (f *fakeDiscord) dropConnection() {
	f.connMu.Lock()
	defer f.connMu.Unlock()
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
}

// fixture reads a gateway payload from testdata/gateway and applies overrides (top-level
// keys; "data.custom_id" style keys one level down).
func fixture(t *testing.T, name string, set map[string]any) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "gateway", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for k, v := range set {
		if outer, inner, ok := strings.Cut(k, "."); ok {
			sub, _ := m[outer].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
				m[outer] = sub
			}
			sub[inner] = v
			continue
		}
		m[k] = v
	}
	return m
}

// logBuffer collects log output for assertions, safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is an Adapter connected to a fake Discord.
type harness struct {
	a    *Adapter
	core *fakeCore
	dc   *fakeDiscord
	logs *logBuffer
	errc chan error
}

func newHarness(t *testing.T, opts ...func(*Config)) *harness {
	t.Helper()
	h := &harness{core: newFakeCore(), dc: newFakeDiscord(t), logs: &logBuffer{}, errc: make(chan error, 1)}
	cfg := Config{
		Token: "test-token", AppID: appID, GuildID: guildID,
		APIURL:         h.dc.srv.URL + "/api/",
		Core:           h.core,
		Logger:         slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		MaxRetries:     2,
		TypingInterval: time.Hour,
	}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.a = a
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter logs:\n%s", h.logs.String())
		}
	})
	return h
}

// run starts Run and waits for the gateway handshake; it returns the IDENTIFY payload.
func (h *harness) run(t *testing.T) map[string]any {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.errc <- h.a.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	var p gwPacket
	select {
	case p = <-h.dc.identify:
	case err := <-h.errc:
		t.Fatalf("Run returned before identifying: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no IDENTIFY within 10s")
	}
	var d map[string]any
	_ = json.Unmarshal(p.D, &d)
	waitFor(t, "gateway ready", func() bool {
		h.dc.connMu.Lock()
		defer h.dc.connMu.Unlock()
		return h.dc.conn != nil
	})
	return d
}

// waitFor polls cond for up to 10 s.
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

// settle waits until the adapter has no work in flight and no REST calls for a moment.
func (h *harness) settle(t *testing.T) {
	t.Helper()
	for i := 0; i < 3; i++ {
		time.Sleep(30 * time.Millisecond)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		if err := h.a.Wait(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
	}
}
