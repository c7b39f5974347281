// Package faultload holds the delivery acceptance test: the real `footnote serve` binary
// under load from 50 concurrent askers spread over Slack HTTP, Slack Socket Mode, the
// Discord gateway, Discord interactions and the JSON API, with the platform fakes injecting
// 429s and 500s, and serve killed with SIGKILL once in the middle and restarted on the same
// data directory. Every question must end with exactly one visible reply.
package faultload

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	askers       = 50
	loadFor      = 60 * time.Second
	killAfter    = 30 * time.Second
	drainFor     = 120 * time.Second
	waitPerReply = 8 * time.Second

	slackSecret = "fault-signing-secret"
	appID       = "1300000000000000001"
)

var platforms = []string{"slack-http", "slack-socket", "discord-gateway", "discord-interaction", "api"}

// corpus is a handful of short documents: BM25 and extractive answers keep the test cheap.
var corpus = map[string]string{
	"transformer.md": "# The Transformer\n\n## Encoder\n\nThe encoder is a stack of six identical layers. Each layer has two sub-layers: " +
		"a multi-head self-attention mechanism and a position-wise feed-forward network.\n\n## Training\n\nThe Transformer was trained with the Adam optimizer and a warmup schedule.\n",
	"bm25.txt":      "BM25 is a ranking function used by search engines. It scores documents by term frequency saturation and document length normalisation.\n",
	"lora.md":       "# LoRA\n\nLow-rank adaptation freezes the pretrained weights and injects trainable rank decomposition matrices into each layer.\n",
	"resnet.md":     "# Residual networks\n\nResidual learning lets stacked layers fit a residual mapping; shortcut connections perform identity mapping.\n",
	"attention.txt": "Scaled dot-product attention divides the dot products of queries and keys by the square root of their dimension before the softmax.\n",
}

var questions = []string{
	"What does LoRA freeze?",
	"How many sub-layers does an encoder layer have?",
	"Which optimizer trained the Transformer?",
	"What does BM25 score documents by?",
	"What do shortcut connections perform?",
	"Why divide by the square root of the key dimension?",
}

// serveProc runs the footnote binary.
type serveProc struct {
	bin, log string
	env      []string
	cmd      *exec.Cmd
}

func (p *serveProc) start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(p.bin, "serve")
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func (p *serveProc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHealthy(t *testing.T, base string, p *serveProc) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("serve not healthy within 60s:\n%s", p.tail())
}

func TestFaultAndLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("fault-and-load test: 50 askers for 60 s against the real serve binary; skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "footnote")
	build := exec.Command("go", "build", "-o", bin, "github.com/footnote-dev/footnote/cmd/footnote")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build footnote: %v\n%s", err, out)
	}
	docs := filepath.Join(dir, "docs")
	for name, body := range corpus {
		if err := os.MkdirAll(docs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(docs, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	led := newLedger()
	fl := &faults{rate429: 0.03, rate500: 0.03}
	slack := newFakeSlack(led, fl)
	defer slack.srv.Close()
	discord := newFakeDiscord(led, fl, appID)
	defer discord.srv.Close()

	addr := freePort(t)
	base := "http://" + addr
	env := []string{
		"HOME=" + dir, "PATH=" + os.Getenv("PATH"),
		"FOOTNOTE_DATA_DIR=" + filepath.Join(dir, "data"),
		"FOOTNOTE_MODELS_DIR=" + filepath.Join(dir, "models"),
		"FOOTNOTE_EMBEDDERS=none", "FOOTNOTE_RERANKER=none",
		"FOOTNOTE_HTTP_ADDR=" + addr,
		"FOOTNOTE_LOG_FORMAT=text", "FOOTNOTE_LOG_LEVEL=warn",
		"FOOTNOTE_MAX_CONCURRENT=2", "FOOTNOTE_QUEUE_SIZE=12", "FOOTNOTE_USER_RATE=0",
		"FOOTNOTE_SLACK_BOT_TOKEN=xoxb-fault", "FOOTNOTE_SLACK_APP_TOKEN=xapp-1-fault",
		"FOOTNOTE_SLACK_SIGNING_SECRET=" + slackSecret, "FOOTNOTE_SLACK_API_URL=" + slack.srv.URL + "/api/",
		"FOOTNOTE_DISCORD_TOKEN=fault-token", "FOOTNOTE_DISCORD_APP_ID=" + appID,
		"FOOTNOTE_DISCORD_PUBLIC_KEY=" + hex.EncodeToString(pub), "FOOTNOTE_DISCORD_API_URL=" + discord.srv.URL + "/api/",
	}
	idx := exec.Command(bin, "index", docs)
	idx.Env = env
	if out, err := idx.CombinedOutput(); err != nil {
		t.Fatalf("index: %v\n%s", err, out)
	}
	p := &serveProc{bin: bin, log: filepath.Join(dir, "serve.log"), env: env}
	p.start(t)
	defer func() {
		if p.cmd != nil && p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { p.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(40 * time.Second):
				_ = p.cmd.Process.Kill()
			}
		}
	}()
	waitHealthy(t, base, p)

	client := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	stop := start.Add(loadFor)
	var wg sync.WaitGroup
	for i := range askers {
		wg.Go(func() {
			platform := platforms[i%len(platforms)]
			for n := 0; time.Now().Before(stop); n++ {
				q := questions[(i+n)%len(questions)]
				id := ask(t, client, base, platform, i, n, q, priv, led, slack, discord)
				deadline := time.Now().Add(waitPerReply)
				for !led.answered(id) && time.Now().Before(deadline) && time.Now().Before(stop) {
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(time.Duration(200+(i*37+n*53)%600) * time.Millisecond)
			}
		})
	}

	time.Sleep(time.Until(start.Add(killAfter)))
	t.Logf("SIGKILL serve after %s", time.Since(start).Round(time.Second))
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p.start(t)
	waitHealthy(t, base, p)
	t.Logf("serve restarted after %s", time.Since(start).Round(100*time.Millisecond))
	wg.Wait()

	// Drain: questions accepted before the kill are resumed when their lease runs out.
	deadline := time.Now().Add(drainFor)
	for time.Now().Before(deadline) {
		pending := 0
		for _, q := range led.snapshot() {
			if len(q.replies) == 0 {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // room for a late second reply to show

	report(t, led.snapshot(), fl)
	// What the restarted process saw of the crash, from its own metrics.
	if resp, err := http.Get(base + "/metrics"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			for _, m := range []string{"footnote_bot_resumed_total", "footnote_bot_redeliveries_total", `outcome="undeliverable"`} {
				if strings.HasPrefix(line, m) || (strings.HasPrefix(line, "footnote_bot_deliveries_total") && strings.Contains(line, m)) {
					t.Logf("after restart: %s", line)
				}
			}
		}
	}
	if t.Failed() {
		t.Logf("serve log (tail):\n%s", p.tail())
	}
}

// ask sends one question over a platform and returns its id in the ledger.
func ask(t *testing.T, client *http.Client, base, platform string, asker, n int, text string, priv ed25519.PrivateKey, led *ledger, slack *fakeSlack, discord *fakeDiscord) string {
	switch platform {
	case "slack-http", "slack-socket":
		channel := fmt.Sprintf("C%03d", asker)
		ts := fmt.Sprintf("1700000000.%03d%03d", asker, n)
		id := channel + ":" + ts
		event := map[string]any{
			"token": "x", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
			"event_id": fmt.Sprintf("Ev%03d%04d", asker, n), "event_time": time.Now().Unix(),
			"event": map[string]any{"type": "app_mention", "user": fmt.Sprintf("U%03d", asker), "text": "<@UBOT> " + text,
				"ts": ts, "channel": channel, "event_ts": ts},
		}
		led.sent(id, platform)
		if platform == "slack-socket" {
			slack.push(id, event)
			return id
		}
		body, _ := json.Marshal(event)
		go slackHTTP(client, base, id, body, led)
		return id
	case "discord-gateway":
		id := fmt.Sprintf("17%05d%010d", asker, n)
		led.sent(id, platform)
		discord.dispatch(id, map[string]any{
			"id": id, "type": 0, "channel_id": fmt.Sprintf("14%017d", asker),
			"author":  map[string]any{"id": fmt.Sprintf("15%017d", asker), "username": "asker"},
			"content": text, "mentions": []any{}, "timestamp": time.Now().Format(time.RFC3339),
		})
		return id
	case "discord-interaction":
		id := fmt.Sprintf("16%05d%010d", asker, n)
		token := "tok-" + id
		discord.interaction(token, id)
		led.sent(id, platform)
		body, _ := json.Marshal(map[string]any{
			"id": id, "application_id": appID, "type": 2, "token": token, "version": 1,
			"channel_id": fmt.Sprintf("14%017d", 100+asker),
			"user":       map[string]any{"id": fmt.Sprintf("15%017d", asker), "username": "asker"},
			"data": map[string]any{"id": "1600000000000000001", "name": "ask", "type": 1,
				"options": []any{map[string]any{"name": "question", "type": 3, "value": text}}},
		})
		go discordHTTP(client, base, id, token, body, priv, led)
		return id
	default:
		id := fmt.Sprintf("api-%d-%d", asker, n)
		led.sent(id, platform)
		go func() {
			sent := time.Now()
			resp, err := client.Post(base+"/query", "application/json", strings.NewReader(`{"question":`+strconv.Quote(text)+`}`))
			if err != nil {
				led.reply(id, "err", "connection failed: "+err.Error())
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			led.acked(id, time.Since(sent))
			led.reply(id, "resp", fmt.Sprintf("%d %s", resp.StatusCode, b))
		}()
		return id
	}
}

// slackHTTP delivers an event like Slack does: signed, and retried (X-Slack-Retry-Num)
// while footnote does not acknowledge it.
func slackHTTP(client *http.Client, base, id string, body []byte, led *ledger) {
	for attempt := 0; attempt < 60; attempt++ {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		m := hmac.New(sha256.New, []byte(slackSecret))
		m.Write([]byte("v0:" + ts + ":"))
		m.Write(body)
		req, _ := http.NewRequest("POST", base+"/slack/events", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
		if attempt > 0 {
			req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(attempt))
			req.Header.Set("X-Slack-Retry-Reason", "http_error")
		}
		sent := time.Now()
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				led.acked(id, time.Since(sent))
				return
			}
		}
		time.Sleep(time.Second)
	}
}

// discordHTTP posts an interaction like Discord does: signed, never retried; a failed
// request is what the user sees as "This interaction failed".
func discordHTTP(client *http.Client, base, id, token string, body []byte, priv ed25519.PrivateKey, led *ledger) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest("POST", base+"/discord/interactions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Signature-Timestamp", ts)
	req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(priv, append([]byte(ts), body...))))
	sent := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		led.reply(id, "failed-"+token, "This interaction failed")
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	led.acked(id, time.Since(sent))
	var r struct {
		Type int `json:"type"`
		Data struct {
			Content string `json:"content"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil {
		led.reply(id, "failed-"+token, "This interaction failed")
		return
	}
	if r.Type == 4 {
		led.reply(id, "resp-"+token, r.Data.Content)
	}
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(p * float64(len(d)-1))
	return d[i]
}

func report(t *testing.T, qs []question, fl *faults) {
	var firstSent time.Time
	for _, q := range qs {
		if firstSent.IsZero() || q.sent.Before(firstSent) {
			firstSent = q.sent
		}
	}
	var acks, answers []time.Duration
	type counts struct{ total, answers, busy, apology, failed, lost, twice int }
	by := map[string]*counts{}
	for _, pl := range platforms {
		by[pl] = &counts{}
	}
	var lost, twice []string
	// Rate-limit notices (the channel bucket: 1 a second, burst 20) count as answers above;
	// they are listed apart because they take the path that deletes the placeholder, the one
	// a crash mid-way used to turn into a lost question.
	var limited []time.Duration
	for _, q := range qs {
		c := by[q.platform]
		c.total++
		if q.ack > 0 {
			acks = append(acks, q.ack)
		}
		switch len(distinctReplies(q.replies)) {
		case 0:
			c.lost++
			lost = append(lost, q.platform+" "+q.id)
			continue
		case 1:
		default:
			c.twice++
			var texts []string
			for k, r := range q.replies {
				texts = append(texts, k+"="+truncate(r.text, 60))
			}
			twice = append(twice, q.platform+" "+q.id+": "+strings.Join(texts, " | "))
		}
		first := time.Time{}
		for _, r := range distinctReplies(q.replies) {
			if first.IsZero() || r.at.Before(first) {
				first = r.at
			}
			switch {
			case isBusy(r.text) || strings.HasPrefix(r.text, "429"):
				c.busy++
			case strings.Contains(r.text, "faster than I can answer"):
				limited = append(limited, q.sent.Sub(firstSent))
				c.answers++
			case strings.Contains(r.text, "restarting"):
				c.apology++
			case strings.Contains(r.text, "failed") || strings.Contains(r.text, "Sorry") || strings.HasPrefix(r.text, "5") || strings.HasPrefix(r.text, "connection"):
				c.failed++
			default:
				c.answers++
			}
		}
		answers = append(answers, first.Sub(q.sent))
	}
	if len(limited) > 0 {
		t.Logf("rate-limit notices (among the answers): %d, the first asked %s after the load began",
			len(limited), slices.Min(limited).Round(time.Second))
	}
	for _, pl := range platforms {
		c := by[pl]
		t.Logf("%-20s questions %4d  answered %4d  busy %3d  apology %3d  failed %3d  lost %d  replied twice %d",
			pl, c.total, c.answers, c.busy, c.apology, c.failed, c.lost, c.twice)
	}
	fmt.Printf("faultload: %d questions, injected %d x 429 and %d x 500; ack latency p50 %s p99 %s; answer latency p50 %s p95 %s max %s\n",
		len(qs), fl.n429.Load(), fl.n500.Load(), pct(acks, 0.50).Round(time.Millisecond), pct(acks, 0.99).Round(time.Millisecond),
		pct(answers, 0.50).Round(time.Millisecond), pct(answers, 0.95).Round(time.Millisecond), pct(answers, 1).Round(time.Millisecond))
	if len(qs) < askers {
		t.Errorf("only %d questions asked", len(qs))
	}
	if len(lost) > 0 {
		t.Errorf("%d questions got no visible reply, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	if len(twice) > 0 {
		t.Errorf("%d questions got more than one reply, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// distinctReplies folds a busy notice only the asker sees (ephemeral) sent again by an
// attempt resumed after a crash: such a notice cannot be looked up, and the README's
// exactly-once paragraph allows it to come twice. A busy notice beside an answer, or any
// other reply twice, still counts twice.
func distinctReplies(replies map[string]reply) map[string]reply {
	out := map[string]reply{}
	busy := false
	for k, r := range replies {
		if strings.HasPrefix(k, "eph-") && isBusy(r.text) {
			if busy {
				continue
			}
			busy = true
		}
		out[k] = r
	}
	return out
}

// isBusy reports footnote's busy notice, as the platforms show it.
func isBusy(text string) bool { return strings.Contains(text, "answering a lot of questions") }

func TestDistinctReplies(t *testing.T) {
	const busy = "I'm answering a lot of questions right now. Please try again in a minute."
	cases := []struct {
		name    string
		replies map[string]reply
		want    int
	}{
		{"a busy notice sent again", map[string]reply{"eph-1": {text: busy}, "eph-2": {text: busy}}, 1},
		{"a busy notice beside an answer", map[string]reply{"eph-1": {text: busy}, "1.1": {text: "Attention [1]."}}, 2},
		{"two answers", map[string]reply{"1.1": {text: "Attention [1]."}, "1.2": {text: "Attention [1]."}}, 2},
		{"a public busy notice twice", map[string]reply{"1.1": {text: busy}, "1.2": {text: busy}}, 2},
	}
	for _, c := range cases {
		if got := len(distinctReplies(c.replies)); got != c.want {
			t.Errorf("%s: %d replies, want %d", c.name, got, c.want)
		}
	}
}
