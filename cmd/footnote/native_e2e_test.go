package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/footnote-dev/footnote/adapters/slack"
	"github.com/footnote-dev/footnote/index/pdf"
	"github.com/footnote-dev/footnote/internal/corpustest"
)

// fakeAPI records every call to a fake Slack Web API or Discord REST API and answers with
// the minimal successful bodies the adapters read.
type fakeAPI struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	calls []fakeCall
	seq   int
	reply func(f *fakeAPI, c fakeCall) (int, string)
}

type fakeCall struct {
	Method, Path string
	Form         url.Values
	JSON         map[string]any
	Raw          []byte
}

func newFakeAPI(t *testing.T, reply func(f *fakeAPI, c fakeCall) (int, string)) *fakeAPI {
	f := &fakeAPI{t: t, reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		c := fakeCall{Method: r.Method, Path: r.URL.Path, Raw: raw}
		switch ct := r.Header.Get("Content-Type"); {
		case strings.HasPrefix(ct, "application/json"):
			_ = json.Unmarshal(raw, &c.JSON)
		case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
			c.Form, _ = url.ParseQuery(string(raw))
		}
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		status, body := f.reply(f, c)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) next() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	return strconv.Itoa(f.seq)
}

func (f *fakeAPI) find(method, pathSuffix string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if (method == "" || c.Method == method) && strings.HasSuffix(c.Path, pathSuffix) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeAPI) wait(t *testing.T, method, pathSuffix string, n int) []fakeCall {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for len(f.find(method, pathSuffix)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d %s %s calls", n, method, pathSuffix)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return f.find(method, pathSuffix)
}

func slackReply(f *fakeAPI, c fakeCall) (int, string) {
	ts := "1763000000." + fmt.Sprintf("%06s", f.next())
	switch {
	case strings.HasSuffix(c.Path, "/files.getUploadURLExternal"):
		return 200, fmt.Sprintf(`{"ok":true,"upload_url":%q,"file_id":"F1"}`, f.srv.URL+"/api/upload")
	case strings.HasSuffix(c.Path, "/files.completeUploadExternal"):
		return 200, `{"ok":true,"files":[{"id":"F1","title":"page"}]}`
	case strings.HasSuffix(c.Path, "/views.open"):
		return 200, `{"ok":true,"view":{"id":"V1","type":"modal"}}`
	case strings.HasSuffix(c.Path, "/chat.update"):
		return 200, fmt.Sprintf(`{"ok":true,"channel":%q,"ts":%q}`, c.Form.Get("channel"), c.Form.Get("ts"))
	}
	return 200, fmt.Sprintf(`{"ok":true,"channel":%q,"ts":%q}`, c.Form.Get("channel"), ts)
}

func discordReply(f *fakeAPI, c fakeCall) (int, string) {
	parts := strings.Split(strings.Trim(strings.TrimPrefix(c.Path, "/api/v9"), "/"), "/")
	switch {
	case parts[0] == "channels" && len(parts) == 5 && parts[4] == "threads":
		return 201, fmt.Sprintf(`{"id":%q,"type":11,"parent_id":%q,"name":"t"}`, parts[3], parts[1])
	case parts[0] == "channels" && len(parts) == 3 && parts[2] == "messages":
		return 200, fmt.Sprintf(`{"id":"14000000000000%05s","channel_id":%q}`, f.next(), parts[1])
	case parts[0] == "webhooks":
		return 200, fmt.Sprintf(`{"id":"14000000000000%05s","channel_id":"1"}`, f.next())
	}
	return 200, `{}`
}

// TestNativeAcceptance runs `footnote serve` over 1706.03762 with local Slack and Discord
// fakes: a Slack message shortcut and a Discord message command each get a cited answer in
// the message's thread, and Show source 1 on an answer about the Transformer's encoder
// uploads a picture of page 3 with the cited lines highlighted.
func TestNativeAcceptance(t *testing.T) {
	paper := filepath.Join(corpustest.Papers(t), "1706.03762.pdf")
	docs := t.TempDir()
	if err := os.Symlink(paper, filepath.Join(docs, "1706.03762.pdf")); err != nil {
		t.Fatal(err)
	}
	env := bm25Env(t)
	if code, out, errOut := run(t, env, "index", docs); code != 0 {
		t.Fatalf("index: %d\n%s%s", code, out, errOut)
	}
	sl := newFakeAPI(t, slackReply)
	dc := newFakeAPI(t, discordReply)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	const secret = "test-signing-secret"
	for k, v := range map[string]string{
		"FOOTNOTE_HTTP_ADDR": "127.0.0.1:0", "FOOTNOTE_SLACK_BOT_TOKEN": "xoxb-test", "FOOTNOTE_SLACK_SIGNING_SECRET": secret,
		"FOOTNOTE_SLACK_API_URL": sl.srv.URL + "/api/", "FOOTNOTE_DISCORD_TOKEN": "test-token", "FOOTNOTE_DISCORD_APP_ID": "1300000000000000001",
		"FOOTNOTE_DISCORD_PUBLIC_KEY": hex.EncodeToString(pub), "FOOTNOTE_DISCORD_API_URL": dc.srv.URL + "/api/",
		"FOOTNOTE_PUBLIC_URL": "https://footnote.example",
	} {
		env[k] = v
	}
	a := &app{out: io.Discard, errOut: io.Discard, getenv: func(k string) string { return env[k] }}
	root := a.rootCommand()
	var m *Main
	root.AddCommand(&cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) (err error) {
		m, err = a.newMain(cmd.Context())
		return err
	}})
	root.SetArgs([]string{"probe"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer a.close()
	// HTTP only: the Discord gateway (a runner) is not needed for HTTP interactions.
	go m.srv.Serve(m.ln)
	defer m.srv.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, w := range m.waiters {
			w(ctx)
		}
	}()
	base := "http://" + m.Addr()

	slackPost := func(path, contentType, body string) {
		t.Helper()
		postSignedAs(t, base+path, secret, contentType, body)
	}
	interaction := func(payload map[string]any) {
		raw, _ := json.Marshal(payload)
		slackPost("/slack/interactions", "application/x-www-form-urlencoded", url.Values{"payload": {string(raw)}}.Encode())
	}

	// 1. Slack message shortcut → modal → cited answer in the message's thread.
	msg := "The Transformer's encoder uses multi-head self-attention followed by a position-wise feed-forward network in every layer (https://arxiv.org/abs/1706.03762)."
	interaction(map[string]any{"type": "message_action", "callback_id": "footnote_ask_message", "trigger_id": "trig-1",
		"user": map[string]any{"id": "U1", "team_id": "T1"}, "team": map[string]any{"id": "T1"}, "channel": map[string]any{"id": "C1"},
		"message": map[string]any{"type": "message", "user": "U9", "ts": "1763000000.000500", "text": msg}})
	view := sl.wait(t, "POST", "/views.open", 1)[0].JSON["view"].(map[string]any)
	interaction(map[string]any{"type": "view_submission", "user": map[string]any{"id": "U1", "team_id": "T1"}, "team": map[string]any{"id": "T1"},
		"view": map[string]any{"id": "V1", "hash": "h1", "type": "modal", "callback_id": view["callback_id"], "private_metadata": view["private_metadata"],
			"state": map[string]any{"values": map[string]any{"footnote_question": map[string]any{"question": map[string]any{"type": "plain_text_input", "value": "What follows the self-attention in each layer?"}}}}}})
	var answer url.Values
	for deadline := time.Now().Add(60 * time.Second); answer == nil; time.Sleep(20 * time.Millisecond) {
		for _, c := range sl.find("POST", "/chat.update") {
			if strings.Contains(c.Form.Get("blocks"), "*Sources*") {
				answer = c.Form
			}
		}
		if time.Now().After(deadline) {
			for _, c := range sl.calls {
				t.Logf("%s %s %.400s", c.Method, c.Path, c.Form.Get("blocks"))
			}
			t.Fatal("no answer to the shortcut's question")
		}
	}
	if !strings.Contains(answer.Get("blocks"), "[1]") || !strings.Contains(answer.Get("blocks"), "feed-forward") {
		t.Errorf("shortcut answer is not cited from the message: %s", answer.Get("blocks"))
	}
	// The message links the paper: its passages are cited after the message.
	if !strings.Contains(answer.Get("blocks"), "[2] *Attention Is All You Need*") {
		t.Errorf("shortcut answer does not cite the linked paper: %s", answer.Get("blocks"))
	}
	for _, p := range sl.find("POST", "/chat.postMessage") {
		if p.Form.Get("thread_ts") != "1763000000.000500" {
			t.Errorf("shortcut posted outside the message's thread: %v", p.Form)
		}
	}

	// 2. A question about the encoder; Show source 1 uploads page 3 of 1706.03762.
	answered := len(sl.find("POST", "/chat.update"))
	event, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_mention", "user": "U1", "channel": "C1", "ts": "1763000001.000100", "event_ts": "1763000001.000100",
			"text": "<@UBOT> What is the encoder composed of? How many identical layers and sub-layers?"}})
	slackPost("/slack/events", "application/json", string(event))
	var blocks string
	deadline := time.Now().Add(60 * time.Second)
	for blocks == "" {
		for _, c := range sl.find("POST", "/chat.update")[answered:] {
			if b := c.Form.Get("blocks"); strings.Contains(b, "footnote_src_1") && strings.Contains(b, "Attention Is All You Need") {
				blocks = b
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer to the encoder question")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(blocks, "footnote.example/documents/") {
		t.Errorf("sources do not link to the page picture: %s", blocks)
	}
	var bs []map[string]any
	_ = json.Unmarshal([]byte(blocks), &bs)
	src1 := ""
	for _, b := range bs {
		els, _ := b["elements"].([]any)
		for _, e := range els {
			if em, _ := e.(map[string]any); em["action_id"] == "footnote_src_1" {
				src1, _ = em["value"].(string)
			}
		}
	}
	if src1 == "" {
		t.Fatalf("no Show source 1 button: %s", blocks)
	}
	interaction(map[string]any{"type": "block_actions", "trigger_id": "trig-2", "user": map[string]any{"id": "U1", "team_id": "T1"},
		"team": map[string]any{"id": "T1"}, "channel": map[string]any{"id": "C1"},
		"container": map[string]any{"type": "message", "message_ts": "1763000001.000200", "thread_ts": "1763000001.000100", "channel_id": "C1"},
		"message":   map[string]any{"type": "message", "ts": "1763000001.000200", "thread_ts": "1763000001.000100"},
		"actions":   []map[string]any{{"type": "button", "action_id": "footnote_src_1", "block_id": "footnote_actions", "value": src1, "action_ts": "1.0"}}})
	done := sl.wait(t, "POST", "/files.completeUploadExternal", 1)
	if done[0].Form.Get("thread_ts") != "1763000001.000100" {
		t.Errorf("page shared in thread %q", done[0].Form.Get("thread_ts"))
	}
	get := sl.find("POST", "/files.getUploadURLExternal")
	if len(get) != 1 || get[0].Form.Get("filename") != "1706.03762-p3.png" {
		t.Fatalf("uploaded %v, want page 3 of 1706.03762", get)
	}
	up := sl.find("POST", "/upload")
	if len(up) != 1 {
		t.Fatal("no upload")
	}
	i := bytes.Index(up[0].Raw, []byte("\x89PNG"))
	data := up[0].Raw[max(i, 0):]
	if j := bytes.LastIndex(data, []byte("\r\n--")); j >= 0 {
		data = data[:j]
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("upload is not a PNG: %v", err)
	}
	hl := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == pdf.HighlightColor.R && uint8(g>>8) == pdf.HighlightColor.G && uint8(b>>8) == pdf.HighlightColor.B {
				hl++
			}
		}
	}
	if hl < 1000 || img.Bounds().Dx() < 300 {
		t.Errorf("page image %v with %d highlight pixels", img.Bounds(), hl)
	}
	t.Logf("Show source 1: page 3, %v, %d bytes, %d highlight pixels", img.Bounds(), len(data), hl)

	// The link under a source serves the page picture over HTTP.
	i = strings.Index(blocks, "https://footnote.example/documents/")
	link := blocks[i+len("https://footnote.example"):]
	link = link[:strings.Index(link, "|")]
	resp, err := http.Get(base + link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("GET %s: %d %s %.200s", link, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	} else if _, err := png.Decode(bytes.NewReader(body)); err != nil {
		t.Errorf("GET %s: not a PNG: %v", link, err)
	}

	// The file changes after indexing: Show source 2 falls back to the text, with a note.
	if err := os.Remove(filepath.Join(docs, "1706.03762.pdf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(filepath.Dir(paper), "1810.04805.pdf"), filepath.Join(docs, "1706.03762.pdf")); err != nil {
		t.Fatal(err)
	}
	src2 := strings.TrimSuffix(src1, ":1") + ":2"
	posted := len(sl.find("POST", "/chat.postMessage"))
	interaction(map[string]any{"type": "block_actions", "trigger_id": "trig-3", "user": map[string]any{"id": "U1", "team_id": "T1"},
		"team": map[string]any{"id": "T1"}, "channel": map[string]any{"id": "C1"},
		"container": map[string]any{"type": "message", "message_ts": "1763000001.000200", "thread_ts": "1763000001.000100", "channel_id": "C1"},
		"message":   map[string]any{"type": "message", "ts": "1763000001.000200", "thread_ts": "1763000001.000100"},
		"actions":   []map[string]any{{"type": "button", "action_id": "footnote_src_2", "block_id": "footnote_actions", "value": src2, "action_ts": "1.0"}}})
	fallback := sl.wait(t, "POST", "/chat.postMessage", posted+1)[posted].Form.Get("blocks")
	if !strings.Contains(fallback, "couldn't draw the cited page") || !strings.Contains(fallback, "[2]") {
		t.Errorf("Show source 2 with a changed file: %s", fallback)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(sl.find("POST", "/files.getUploadURLExternal")); n != 1 {
		t.Errorf("%d uploads; the failed page must not be uploaded", n)
	}

	// 3. Discord message command → modal → cited answer in the message's thread.
	discordPost := func(v any) map[string]any {
		t.Helper()
		body, _ := json.Marshal(v)
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest("POST", base+"/discord/interactions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Signature-Timestamp", ts)
		req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(priv, append([]byte(ts), body...))))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != 200 {
			t.Fatalf("discord interaction: status %d %v", resp.StatusCode, out)
		}
		return out
	}
	const guild, channel, target = "1300000000000000100", "1300000000000000200", "1400000000000099999"
	common := func(id, token string, typ int, data map[string]any) map[string]any {
		return map[string]any{"id": id, "application_id": "1300000000000000001", "type": typ, "token": token, "version": 1,
			"guild_id": guild, "channel_id": channel, "channel": map[string]any{"id": channel, "type": 0, "guild_id": guild},
			"member": map[string]any{"user": map[string]any{"id": "1300000000000000300", "username": "ada"}}, "data": data}
	}
	modal := discordPost(common("1500000000000000001", "tok-1", 2, map[string]any{"id": "1600000000000000002", "name": "Ask footnote about this", "type": 3,
		"target_id": target, "resolved": map[string]any{"messages": map[string]any{target: map[string]any{"id": target, "channel_id": channel, "content": msg,
			"author": map[string]any{"id": "1300000000000000777", "username": "grace"}}}}}))
	md, _ := modal["data"].(map[string]any)
	if modal["type"] != float64(9) || md == nil {
		t.Fatalf("message command answered %v, want a modal", modal)
	}
	discordPost(common("1500000000000000002", "tok-2", 5, map[string]any{"custom_id": md["custom_id"], "components": []any{
		map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "question", "value": "What follows the self-attention in each layer?"}}}}}))
	posts := dc.wait(t, "POST", "/channels/"+target+"/messages", 2)
	if !strings.Contains(string(posts[1].Raw), "[1]") || !strings.Contains(string(posts[1].Raw), "feed-forward") {
		t.Errorf("Discord answer is not cited from the message: %s", posts[1].Raw)
	}
}

// postSigned posts an Events API body to footnote the way Slack signs it.
func postSigned(t *testing.T, url, secret, body string) {
	t.Helper()
	postSignedAs(t, url, secret, "application/json", body)
}

func postSignedAs(t *testing.T, url, secret, contentType, body string) {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", slack.Signature(secret, ts, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: status %d", url, resp.StatusCode)
	}
}
