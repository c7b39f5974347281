package faultload

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// ledger records every question the askers sent and every visible reply the fakes saw, by
// question id. A reply is counted once per message: a placeholder edited into an answer (or
// edited again by a resumed attempt) is one reply; a second message is a second reply.
type ledger struct {
	mu sync.Mutex
	qs map[string]*question
}

type question struct {
	id       string
	platform string
	sent     time.Time
	ack      time.Duration // 0 when the platform has no acknowledgement
	replies  map[string]reply
}

type reply struct {
	at   time.Time
	text string
}

func newLedger() *ledger { return &ledger{qs: map[string]*question{}} }

func (l *ledger) sent(id, platform string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.qs[id] = &question{id: id, platform: platform, sent: time.Now(), replies: map[string]reply{}}
}

func (l *ledger) acked(id string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.qs[id]; q != nil && q.ack == 0 {
		q.ack = d
	}
}

// reply records (or, for an edit of the same message, updates) a visible reply.
func (l *ledger) reply(id, msg, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.qs[id]
	if q == nil {
		return // not a question of the test (or a placeholder of one we never sent)
	}
	r, ok := q.replies[msg]
	if !ok {
		r.at = time.Now()
	}
	r.text = text
	q.replies[msg] = r
}

// retract removes a reply whose message was deleted.
func (l *ledger) retract(id, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.qs[id]; q != nil {
		delete(q.replies, msg)
	}
}

func (l *ledger) answered(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.qs[id]
	return q != nil && len(q.replies) > 0
}

func (l *ledger) snapshot() []question {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]question, 0, len(l.qs))
	for _, q := range l.qs {
		c := *q
		c.replies = map[string]reply{}
		for k, v := range q.replies {
			c.replies[k] = v
		}
		out = append(out, c)
	}
	return out
}

// faults injects 429s and 500s into a share of the platform calls that deliver replies.
type faults struct {
	rate429, rate500 float64
	n429, n500       atomic.Int64
}

// inject decides whether this call fails, and how: 0 for not at all.
func (f *faults) inject() int {
	x := rand.Float64()
	switch {
	case x < f.rate429:
		f.n429.Add(1)
		return http.StatusTooManyRequests
	case x < f.rate429+f.rate500:
		f.n500.Add(1)
		return http.StatusInternalServerError
	}
	return 0
}

// isPlaceholder reports footnote's "Searching…" placeholder.
func isPlaceholder(text string) bool {
	return strings.Contains(text, "Searching")
}

// fakeSlack is the Slack Web API and Socket Mode endpoint footnote talks to.
type fakeSlack struct {
	srv    *httptest.Server
	led    *ledger
	faults *faults
	seq    atomic.Int64

	mu   sync.Mutex
	msgs map[string]slackMsg // ts → message

	// Socket Mode: envelopes wait in out until a connection takes them; an envelope sent on a
	// connection that dies before acknowledging it is sent again (Slack retries it).
	sockMu   sync.Mutex
	out      []envelope
	unacked  map[string]envelope
	sockWake chan struct{}
}

type slackMsg struct {
	channel, thread, text string
	deleted               bool
}

type envelope struct {
	id, qid string
	body    []byte
	sent    time.Time
}

func newFakeSlack(led *ledger, f *faults) *fakeSlack {
	s := &fakeSlack{led: led, faults: f, msgs: map[string]slackMsg{}, unacked: map[string]envelope{}, sockWake: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/ws", s.serveSocket)
	// Started after the assignment: handlers read s.srv.URL.
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Start()
	return s
}

func (s *fakeSlack) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	w.Header().Set("Content-Type", "application/json")
	if method == "apps.connections.open" {
		fmt.Fprintf(w, `{"ok":true,"url":"ws%s/ws"}`, strings.TrimPrefix(s.srv.URL, "http"))
		return
	}
	switch s.faults.inject() {
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	case http.StatusInternalServerError:
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	channel, text := form.Get("channel"), form.Get("text")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "chat.postMessage":
		ts := fmt.Sprintf("1800000000.%06d", s.seq.Add(1))
		m := slackMsg{channel: channel, thread: form.Get("thread_ts"), text: text}
		s.msgs[ts] = m
		if m.thread != "" && !isPlaceholder(text) {
			s.led.reply(channel+":"+m.thread, ts, text)
		}
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, channel, ts)
	case "chat.update":
		ts := form.Get("ts")
		m, ok := s.msgs[ts]
		if !ok || m.deleted {
			fmt.Fprint(w, `{"ok":false,"error":"message_not_found"}`)
			return
		}
		m.text = text
		s.msgs[ts] = m
		if !isPlaceholder(text) {
			s.led.reply(channel+":"+m.thread, ts, text)
		}
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q,"text":""}`, channel, ts)
	case "chat.delete":
		ts := form.Get("ts")
		m := s.msgs[ts]
		m.deleted = true
		s.msgs[ts] = m
		s.led.retract(channel+":"+m.thread, ts)
		fmt.Fprint(w, `{"ok":true}`)
	case "chat.postEphemeral":
		id := fmt.Sprintf("eph-%d", s.seq.Add(1))
		s.led.reply(channel+":"+form.Get("thread_ts"), id, text)
		fmt.Fprintf(w, `{"ok":true,"message_ts":%q}`, id)
	default:
		fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

// push queues an events_api envelope for the Socket Mode connection.
func (s *fakeSlack) push(qid string, event map[string]any) {
	id := fmt.Sprintf("env-%d", s.seq.Add(1))
	raw, _ := json.Marshal(map[string]any{"envelope_id": id, "type": "events_api", "payload": event,
		"accepts_response_payload": false, "retry_attempt": 0, "retry_reason": ""})
	s.sockMu.Lock()
	s.out = append(s.out, envelope{id: id, qid: qid, body: raw})
	s.sockMu.Unlock()
	select {
	case s.sockWake <- struct{}{}:
	default:
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *fakeSlack) serveSocket(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	var wmu sync.Mutex
	write := func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return c.WriteMessage(websocket.TextMessage, b)
	}
	if write([]byte(`{"type":"hello","num_connections":1,"debug_info":{"host":"fault"},"connection_info":{"app_id":"A1"}}`)) != nil {
		return
	}
	done := make(chan struct{})
	mine := map[string]bool{}
	var mineMu sync.Mutex
	go func() {
		defer close(done)
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			var a struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if json.Unmarshal(msg, &a) != nil || a.EnvelopeID == "" {
				continue
			}
			s.sockMu.Lock()
			e, ok := s.unacked[a.EnvelopeID]
			delete(s.unacked, a.EnvelopeID)
			s.sockMu.Unlock()
			if ok {
				s.led.acked(e.qid, time.Since(e.sent))
			}
		}
	}()
	defer func() {
		// The connection died: what it did not acknowledge is delivered again.
		mineMu.Lock()
		defer mineMu.Unlock()
		s.sockMu.Lock()
		for id := range mine {
			if e, ok := s.unacked[id]; ok {
				delete(s.unacked, id)
				s.out = append(s.out, e)
			}
		}
		s.sockMu.Unlock()
	}()
	for {
		s.sockMu.Lock()
		batch := s.out
		s.out = nil
		now := time.Now()
		for i := range batch {
			batch[i].sent = now
			s.unacked[batch[i].id] = batch[i]
		}
		s.sockMu.Unlock()
		mineMu.Lock()
		for _, e := range batch {
			mine[e.id] = true
		}
		mineMu.Unlock()
		for _, e := range batch {
			if write(e.body) != nil {
				return
			}
		}
		select {
		case <-done:
			return
		case <-s.sockWake:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fakeDiscord is Discord's REST API and gateway.
type fakeDiscord struct {
	srv    *httptest.Server
	led    *ledger
	faults *faults
	seq    atomic.Int64
	appID  string

	mu     sync.Mutex
	tokens map[string]string           // interaction token → question id
	posted map[string][]map[string]any // channel → messages footnote posted, oldest first

	gwMu    sync.Mutex
	gwOut   []gwEvent
	gwWake  chan struct{}
	gwConns atomic.Int32
}

type gwEvent struct {
	qid  string
	body map[string]any
	sent time.Time
}

func newFakeDiscord(led *ledger, f *faults, appID string) *fakeDiscord {
	d := &fakeDiscord{led: led, faults: f, appID: appID, tokens: map[string]string{}, posted: map[string][]map[string]any{}, gwWake: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v9/", d.serveREST)
	mux.HandleFunc("/ws/", d.serveGateway)
	d.srv = httptest.NewUnstartedServer(mux)
	d.srv.Start()
	return d
}

const discordBotID = "1300000000000000001"

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (d *fakeDiscord) serveREST(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v9")
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	parts := strings.Split(strings.Trim(path, "/"), "/")
	delivers := parts[0] == "webhooks" || (parts[0] == "channels" && len(parts) == 3 && parts[2] == "messages")
	if delivers {
		switch d.faults.inject() {
		case http.StatusTooManyRequests:
			writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": 0.2, "global": false})
			return
		case http.StatusInternalServerError:
			writeJSON(w, 500, map[string]any{"message": "500: Internal Server Error", "code": 0})
			return
		}
	}
	content, _ := body["content"].(string)
	if embeds, ok := body["embeds"].([]any); ok && len(embeds) > 0 {
		e, _ := json.Marshal(embeds)
		content += string(e)
	}
	switch {
	case r.Method == "GET" && path == "/users/@me":
		writeJSON(w, 200, map[string]any{"id": discordBotID, "username": "footnote", "discriminator": "0", "bot": true})
	case r.Method == "GET" && path == "/gateway":
		writeJSON(w, 200, map[string]any{"url": "ws" + strings.TrimPrefix(d.srv.URL, "http") + "/ws"})
	case r.Method == "PUT" && parts[0] == "applications":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	case parts[0] == "channels" && len(parts) == 3 && parts[2] == "typing":
		w.WriteHeader(http.StatusNoContent)
	case parts[0] == "channels" && len(parts) == 3 && parts[2] == "messages" && r.Method == "GET":
		after := r.URL.Query().Get("after")
		d.mu.Lock()
		var out []map[string]any
		for _, m := range d.posted[parts[1]] {
			if id := m["id"].(string); len(id) > len(after) || len(id) == len(after) && id > after {
				out = append(out, m)
			}
		}
		d.mu.Unlock()
		if out == nil {
			out = []map[string]any{}
		}
		writeJSON(w, 200, out)
	case parts[0] == "channels" && len(parts) == 3 && parts[2] == "messages" && r.Method == "POST":
		id := fmt.Sprintf("19%017d", d.seq.Add(1))
		if ref, ok := body["message_reference"].(map[string]any); ok {
			if qid, _ := ref["message_id"].(string); qid != "" {
				d.led.reply(qid, id, content)
			}
		}
		m := map[string]any{"id": id, "channel_id": parts[1], "content": body["content"], "embeds": body["embeds"],
			"message_reference": body["message_reference"],
			"author":            map[string]any{"id": discordBotID, "username": "footnote", "bot": true}}
		d.mu.Lock()
		d.posted[parts[1]] = append(d.posted[parts[1]], m)
		d.mu.Unlock()
		writeJSON(w, 200, m)
	case parts[0] == "webhooks" && len(parts) >= 3:
		token := parts[2]
		d.mu.Lock()
		qid := d.tokens[token]
		d.mu.Unlock()
		id := "orig-" + token
		switch r.Method {
		case "PATCH":
			if !isPlaceholder(content) {
				d.led.reply(qid, id, content)
			}
		case "DELETE":
			d.led.retract(qid, id)
			w.WriteHeader(http.StatusNoContent)
			return
		case "POST":
			id = fmt.Sprintf("19%017d", d.seq.Add(1))
			d.led.reply(qid, id, content)
		}
		writeJSON(w, 200, map[string]any{"id": id, "channel_id": "0", "content": content,
			"author": map[string]any{"id": discordBotID, "username": "footnote", "bot": true}})
	default:
		writeJSON(w, 404, map[string]any{"message": "404: Not Found", "code": 0})
	}
}

// interaction remembers which question an interaction token belongs to.
func (d *fakeDiscord) interaction(token, qid string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tokens[token] = qid
}

// dispatch queues a gateway event for the connected (or next) session.
func (d *fakeDiscord) dispatch(qid string, event map[string]any) {
	d.gwMu.Lock()
	d.gwOut = append(d.gwOut, gwEvent{qid: qid, body: event})
	d.gwMu.Unlock()
	select {
	case d.gwWake <- struct{}{}:
	default:
	}
}

// serveGateway speaks the gateway handshake (HELLO, IDENTIFY → READY, heartbeats) and sends
// the queued MESSAGE_CREATE events. When a connection dies, events sent on it in its last
// seconds that got no reply are sent again, as Discord replays them to a resumed session.
func (d *fakeDiscord) serveGateway(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	var wmu sync.Mutex
	write := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		return c.WriteJSON(v)
	}
	if write(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 5000}}) != nil {
		return
	}
	type packet struct {
		Op int `json:"op"`
	}
	for {
		var p packet
		if err := c.ReadJSON(&p); err != nil {
			return
		}
		if p.Op == 1 {
			_ = write(map[string]any{"op": 11})
			continue
		}
		break
	}
	var seq int64 = 1
	if write(map[string]any{"op": 0, "t": "READY", "s": seq, "d": map[string]any{
		"v": 10, "user": map[string]any{"id": discordBotID, "username": "footnote", "bot": true},
		"session_id": fmt.Sprintf("sess-%d", d.gwConns.Add(1)), "resume_gateway_url": "ws" + strings.TrimPrefix(d.srv.URL, "http") + "/ws",
		"guilds": []any{}, "application": map[string]any{"id": d.appID, "flags": 0},
	}}) != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var p packet
			if err := c.ReadJSON(&p); err != nil {
				return
			}
			if p.Op == 1 {
				_ = write(map[string]any{"op": 11})
			}
		}
	}()
	var sent []gwEvent
	defer func() {
		cut := time.Now().Add(-5 * time.Second)
		d.gwMu.Lock()
		defer d.gwMu.Unlock()
		for _, e := range sent {
			if e.sent.After(cut) && !d.led.answered(e.qid) {
				d.gwOut = append(d.gwOut, e)
			}
		}
	}()
	for {
		d.gwMu.Lock()
		batch := d.gwOut
		d.gwOut = nil
		d.gwMu.Unlock()
		for i, e := range batch {
			seq++
			e.sent = time.Now()
			if write(map[string]any{"op": 0, "t": "MESSAGE_CREATE", "s": seq, "d": e.body}) != nil {
				d.gwMu.Lock()
				d.gwOut = append(batch[i:], d.gwOut...)
				d.gwMu.Unlock()
				return
			}
			sent = append(sent, e)
		}
		if len(sent) > 4096 {
			sent = sent[len(sent)-1024:]
		}
		select {
		case <-done:
			return
		case <-d.gwWake:
		case <-time.After(50 * time.Millisecond):
		}
	}
}
