package discord

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/bot"
)

const askQuestion = "what are the two sub-layers of a Transformer encoder layer?"

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// messageOf decodes the content and embeds of a call's message body.
func messageOf(t *testing.T, c apiCall) message {
	t.Helper()
	var w struct {
		Content string                    `json:"content"`
		Embeds  []*discordgo.MessageEmbed `json:"embeds"`
	}
	if err := json.Unmarshal(c.Raw, &w); err != nil {
		t.Fatalf("%s %s: %v", c.Method, c.Path, err)
	}
	return message{Content: w.Content, Embeds: w.Embeds}
}

// buttonsOf lists the custom ids of a call's buttons, row by row.
func buttonsOf(t *testing.T, c apiCall) [][]string {
	t.Helper()
	var body struct {
		Components []struct {
			Type       int `json:"type"`
			Components []struct {
				Type     int    `json:"type"`
				Label    string `json:"label"`
				CustomID string `json:"custom_id"`
			} `json:"components"`
		} `json:"components"`
	}
	if err := json.Unmarshal(c.Raw, &body); err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, r := range body.Components {
		if r.Type != 1 {
			t.Errorf("top-level component type %d, want action row (1)", r.Type)
		}
		var row []string
		for _, b := range r.Components {
			row = append(row, b.Label+"="+b.CustomID)
		}
		rows = append(rows, row)
	}
	return rows
}

// visibleText is a message's content and embed text, for assertions.
func visibleText(t *testing.T, c apiCall) string {
	t.Helper()
	m := messageOf(t, c)
	parts := []string{m.Content}
	for _, e := range m.Embeds {
		parts = append(parts, e.Title, e.Description)
		for _, f := range e.Fields {
			parts = append(parts, f.Name, f.Value)
		}
		if e.Footer != nil {
			parts = append(parts, e.Footer.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestAskOverGateway(t *testing.T) {
	h := newHarness(t)
	identify := h.run(t)

	// GUILD_MESSAGES | DIRECT_MESSAGES; MESSAGE_CONTENT only with FollowThreads.
	if got, want := num(identify["intents"]), 1<<9|1<<12; got != want {
		t.Errorf("IDENTIFY intents %d, want %d", got, want)
	}
	if identify["token"] != "Bot test-token" {
		t.Errorf("IDENTIFY token %v", identify["token"])
	}
	puts := h.dc.callsOf("PUT", "/applications/"+appID+"/guilds/"+guildID+"/commands")
	if len(puts) != 1 {
		t.Fatalf("got %d command registrations, want one guild bulk overwrite", len(puts))
	}
	var cmds []map[string]any
	if err := json.Unmarshal(puts[0].Raw, &cmds); err != nil {
		t.Fatal(err)
	}
	// /ask, the message command (type 3) and /footnote docs|stats (native_test.go).
	if len(cmds) != 3 || cmds[0]["name"] != "ask" || cmds[1]["name"] != aboutCommand.Name || num(cmds[1]["type"]) != 3 || cmds[2]["name"] != "footnote" {
		t.Fatalf("registered %s, want /ask, the message command and /footnote", puts[0].Raw)
	}
	opt := cmds[0]["options"].([]any)[0].(map[string]any)
	if opt["name"] != "question" || num(opt["type"]) != 3 || opt["required"] != true {
		t.Errorf("/ask option %v, want a required string named question", opt)
	}

	at := h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_ask", nil))
	waitFor(t, "thread started", func() bool { return len(h.dc.callsOf("POST", "/channels/"+channelID+"/messages/*/threads")) == 1 })
	h.settle(t)

	cb := h.dc.callsOf("POST", "/interactions/1500000000000000001/*/callback")
	if len(cb) != 1 {
		t.Fatalf("got %d interaction callbacks, want 1", len(cb))
	}
	if num(cb[0].Body["type"]) != 5 {
		t.Errorf("callback type %v, want 5 (deferred channel message)", cb[0].Body["type"])
	}
	if d, _ := cb[0].Body["data"].(map[string]any); d != nil && num(d["flags"])&(1<<6) != 0 {
		t.Error("public /ask deferred as ephemeral")
	}
	t.Logf("dispatch → deferred response: %s", cb[0].At.Sub(at))

	edits := h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")
	if len(edits) != 2 {
		t.Fatalf("got %d edits of the original response, want placeholder + answer", len(edits))
	}
	if !(cb[0].Seq < edits[0].Seq && edits[0].Seq < edits[1].Seq) {
		t.Errorf("order: callback #%d, edits #%d #%d; the deferred response must come first", cb[0].Seq, edits[0].Seq, edits[1].Seq)
	}
	if got := edits[0].Body["content"]; got != "🔎 Searching 12 papers…" {
		t.Errorf("placeholder %q", got)
	}
	answer := visibleText(t, edits[1])
	for _, want := range []string{askQuestion, "**two sub-layers** [1]", "Sources", "[1] Attention Is All You Need",
		"3 Model Architecture › 3.1 Encoder and Decoder Stacks · p. 3 · relevance 0.87", "[3] layer_norm"} {
		if !strings.Contains(answer, want) {
			t.Errorf("answer lacks %q:\n%s", want, answer)
		}
	}
	if am, ok := edits[1].Body["allowed_mentions"].(map[string]any); !ok || len(am["parse"].([]any)) != 0 {
		t.Errorf("allowed_mentions %v, want no pings", edits[1].Body["allowed_mentions"])
	}
	wantRows := [][]string{
		{"Source 1=fn1:src:ans_01:1", "Source 2=fn1:src:ans_01:2", "Source 3=fn1:src:ans_01:3"},
		{"More sources=fn1:more:ans_01", "👍=fn1:up:ans_01", "👎=fn1:down:ans_01"},
	}
	if diff := cmp.Diff(wantRows, buttonsOf(t, edits[1])); diff != "" {
		t.Errorf("buttons (-want +got):\n%s", diff)
	}

	threads := h.dc.callsOf("POST", "/channels/"+channelID+"/messages/*/threads")
	answerID := h.dc.originalID("aW50ZXJhY3Rpb246MTUwMDAwMDAwMDAwMDAwMDAwMTphc2s")
	if threads[0].Path != "/channels/"+channelID+"/messages/"+answerID+"/threads" {
		t.Errorf("thread started on %s, want the answer message %s", threads[0].Path, answerID)
	}
	if threads[0].Body["name"] != askQuestion || num(threads[0].Body["auto_archive_duration"]) != 1440 {
		t.Errorf("thread %v", threads[0].Body)
	}
	if threads[0].Seq < edits[1].Seq {
		t.Error("thread started before the answer was shown")
	}
	reqs := h.core.requests()
	want := bot.Request{Platform: Platform, Tenant: guildID, Channel: channelID, Thread: answerID, User: userID, Text: askQuestion}
	if len(reqs) != 1 || reqs[0] != want {
		t.Fatalf("requests %+v, want %+v", reqs, want)
	}

	// In the thread: an untagged message is ignored (no Message Content intent), a mention
	// is a follow-up in the same conversation.
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", map[string]any{
		"id": "1700000000000000010", "channel_id": answerID, "content": "and the decoder?", "mentions": []any{}}))
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", map[string]any{
		"id": "1700000000000000011", "channel_id": answerID, "content": "<@" + botID + "> and the decoder?"}))
	waitFor(t, "follow-up posted", func() bool { return len(h.dc.callsOf("POST", "/channels/"+answerID+"/messages")) == 1 })
	h.settle(t)
	reqs = h.core.requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d questions, want 2 (the untagged message ignored)", len(reqs))
	}
	if reqs[1].Channel != channelID || reqs[1].Thread != answerID || reqs[1].Text != "<@"+botID+"> and the decoder?" {
		t.Errorf("follow-up request %+v, want the /ask conversation", reqs[1])
	}
	if len(h.dc.callsOf("POST", "/channels/"+answerID+"/messages/*/threads")) != 0 {
		t.Error("a thread was started inside a thread")
	}
}

func TestMentionStartsThread(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FollowThreads = true })
	identify := h.run(t)
	if got, want := num(identify["intents"]), 1<<9|1<<12|1<<15; got != want {
		t.Errorf("IDENTIFY intents %d, want %d with FollowThreads", got, want)
	}
	const msgID = "1700000000000000001"
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", nil))
	waitFor(t, "answer posted", func() bool { return len(h.dc.callsOf("POST", "/channels/"+msgID+"/messages")) == 1 })
	h.settle(t)

	threads := h.dc.callsOf("POST", "/channels/"+channelID+"/messages/"+msgID+"/threads")
	if len(threads) != 1 || threads[0].Body["name"] != askQuestion {
		t.Fatalf("threads %+v, want one named after the question", threads)
	}
	typing := h.dc.callsOf("POST", "/channels/"+msgID+"/typing")
	posts := h.dc.callsOf("POST", "/channels/"+msgID+"/messages")
	if len(typing) == 0 || typing[0].Seq > posts[0].Seq {
		t.Errorf("typing indicator %+v, want one in the thread before the answer", typing)
	}
	if !strings.Contains(visibleText(t, posts[0]), "**two sub-layers** [1]") {
		t.Errorf("answer %s", posts[0].Raw)
	}
	reqs := h.core.requests()
	if len(reqs) != 1 || reqs[0].Channel != channelID || reqs[0].Thread != msgID {
		t.Fatalf("requests %+v, want conversation %s/%s", reqs, channelID, msgID)
	}

	// With the Message Content intent, every human message in the thread is a follow-up;
	// messages in a thread footnote does not follow are not.
	const other = "1300000000000000250"
	h.dc.mu.Lock()
	h.dc.channels[other] = map[string]any{"id": other, "type": 11, "guild_id": guildID, "parent_id": channelID}
	h.dc.mu.Unlock()
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", map[string]any{
		"id": "1700000000000000020", "channel_id": other, "content": "unrelated chat", "mentions": []any{}}))
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", map[string]any{
		"id": "1700000000000000021", "channel_id": msgID, "content": "and the decoder?", "mentions": []any{}}))
	waitFor(t, "follow-up posted", func() bool { return len(h.dc.callsOf("POST", "/channels/"+msgID+"/messages")) == 2 })
	h.settle(t)
	reqs = h.core.requests()
	if len(reqs) != 2 || reqs[1].Text != "and the decoder?" || reqs[1].Thread != msgID {
		t.Fatalf("requests %+v, want the untagged follow-up only", reqs)
	}
	if len(h.dc.callsOf("GET", "/channels/"+msgID)) != 0 {
		t.Error("the thread footnote started was looked up again; it should be cached")
	}
	if len(h.dc.callsOf("POST", "/channels/"+other+"/messages")) != 0 {
		t.Error("answered in a thread footnote does not follow")
	}
}

func TestDM(t *testing.T) {
	h := newHarness(t)
	h.run(t)
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_dm", nil))
	waitFor(t, "DM answer", func() bool { return len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")) == 1 })
	h.settle(t)
	reqs := h.core.requests()
	want := bot.Request{Platform: Platform, Channel: dmID, Thread: dmID, User: userID, Text: "what optimizer did the Transformer use?"}
	if len(reqs) != 1 || reqs[0] != want {
		t.Fatalf("requests %+v, want %+v", reqs, want)
	}
	if len(h.dc.callsOf("POST", "/channels/*/messages/*/threads")) != 0 {
		t.Error("a thread was started in a DM")
	}
}

func TestIgnoredMessages(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FollowThreads = true })
	h.run(t)
	before := len(h.dc.allCalls())
	botAuthor := map[string]any{"id": "1300000000000000777", "username": "otherbot", "bot": true}
	self := map[string]any{"id": botID, "username": "footnote", "bot": true}
	for i, set := range []map[string]any{
		{"author": botAuthor},                 // another bot mentioning footnote
		{"author": self},                      // footnote's own message
		{"webhook_id": "1300000000000000888"}, // a webhook
		{"type": 7},                           // a member-join system message
		{"guild_id": nil, "channel_id": dmID, "author": self, "mentions": []any{}}, // footnote in a DM
	} {
		set["id"] = fmt.Sprintf("17000000000000009%02d", i)
		h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", set))
	}
	// A human DM afterwards proves the events above were processed (the gateway is ordered).
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_dm", nil))
	waitFor(t, "DM answer", func() bool { return len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")) == 1 })
	h.settle(t)
	if reqs := h.core.requests(); len(reqs) != 1 || reqs[0].Channel != dmID {
		t.Errorf("requests %+v, want only the human DM", reqs)
	}
	for _, c := range h.dc.allCalls()[before:] {
		if !strings.Contains(c.Path, dmID) {
			t.Errorf("unexpected call %s %s for an ignored message", c.Method, c.Path)
		}
	}
}

func TestButtonsAndFeedbackModal(t *testing.T) {
	h := newHarness(t)
	h.run(t)

	// Source 2: an ephemeral reply to the click with the full chunk.
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_button", nil))
	waitFor(t, "source shown", func() bool { return len(h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")) == 1 })
	cb := h.dc.callsOf("POST", "/interactions/1500000000000000002/*/callback")
	if len(cb) != 1 || num(cb[0].Body["type"]) != 5 || num(cb[0].Body["data"].(map[string]any)["flags"]) != 1<<6 {
		t.Fatalf("Source 2 callback %+v, want a deferred ephemeral response", cb)
	}
	src := visibleText(t, h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")[0])
	for _, want := range []string{"[2] Attention Is All You Need", "Full text of source 2: each layer has two sub-layers.", "p. 3–4 · relevance 0.63"} {
		if !strings.Contains(src, want) {
			t.Errorf("source reply lacks %q:\n%s", want, src)
		}
	}

	// More sources on an answer whose thread exists: deferred update, posted in the thread.
	const answerMsg = "1500000000000000900"
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_button", map[string]any{
		"id": "1500000000000000012", "token": "tok-more",
		"data.custom_id": "fn1:more:ans_01",
		"message": map[string]any{"id": answerMsg, "channel_id": channelID, "flags": 0, "type": 20,
			"thread": map[string]any{"id": answerMsg, "type": 11, "parent_id": channelID}},
	}))
	waitFor(t, "more sources in thread", func() bool { return len(h.dc.callsOf("POST", "/channels/"+answerMsg+"/messages")) == 1 })
	cb = h.dc.callsOf("POST", "/interactions/1500000000000000012/*/callback")
	if len(cb) != 1 || num(cb[0].Body["type"]) != 6 {
		t.Fatalf("More sources callback %+v, want a deferred update (6)", cb)
	}
	more := h.dc.callsOf("POST", "/channels/"+answerMsg+"/messages")[0]
	if txt := visibleText(t, more); !strings.Contains(txt, "More sources") || !strings.Contains(txt, "[4] BERT") {
		t.Errorf("more sources %s", txt)
	}
	if diff := cmp.Diff([][]string{{"Source 4=fn1:src:ans_01:4"}}, buttonsOf(t, more)); diff != "" {
		t.Errorf("more sources buttons (-want +got):\n%s", diff)
	}

	// 👎 opens a modal; its submission is the vote with the comment.
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_button", map[string]any{
		"id": "1500000000000000013", "token": "tok-down", "data.custom_id": "fn1:down:ans_01"}))
	waitFor(t, "modal", func() bool { return len(h.dc.callsOf("POST", "/interactions/1500000000000000013/*/callback")) == 1 })
	modal := h.dc.callsOf("POST", "/interactions/1500000000000000013/*/callback")[0]
	if num(modal.Body["type"]) != 9 {
		t.Fatalf("👎 callback %s, want a modal (9)", modal.Raw)
	}
	md := modal.Body["data"].(map[string]any)
	input := md["components"].([]any)[0].(map[string]any)["components"].([]any)[0].(map[string]any)
	if md["custom_id"] != "fn1:down:ans_01" || input["custom_id"] != "comment" || num(input["type"]) != 4 {
		t.Errorf("modal %s", modal.Raw)
	}
	if len(h.core.clickList()) != 2 {
		t.Errorf("clicks %+v: the 👎 must wait for the modal", h.core.clickList())
	}
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_modal", nil))
	waitFor(t, "feedback", func() bool { return len(h.core.clickList()) == 3 })
	h.settle(t)
	clicks := h.core.clickList()
	wantClick := bot.Click{Action: bot.Action{Kind: bot.ActFeedbackDown, AnswerID: "ans_01", Label: "👎"}, Platform: Platform,
		Tenant: guildID, Channel: channelID, User: userID, Comment: "Should mention residual connections."}
	if diff := cmp.Diff(wantClick, clicks[2]); diff != "" {
		t.Errorf("feedback click (-want +got):\n%s", diff)
	}
	cb = h.dc.callsOf("POST", "/interactions/1500000000000000003/*/callback")
	if len(cb) != 1 || num(cb[0].Body["data"].(map[string]any)["flags"]) != 1<<6 {
		t.Errorf("modal submit callback %+v, want deferred ephemeral", cb)
	}
	if c := clicks[0]; c.Action.Kind != bot.ActShowSource || c.Action.Source != 2 || c.User != userID {
		t.Errorf("Source 2 click %+v", c)
	}
}

func TestLongAnswerSplitInOrder(t *testing.T) {
	h := newHarness(t)
	var words []string
	var paras []string
	for p := 0; p < 40; p++ {
		var b strings.Builder
		for w := 0; w < 120; w++ {
			word := fmt.Sprintf("w%d_%d", p, w)
			words = append(words, strings.ReplaceAll(word, "_", `\_`))
			b.WriteString(word + " ")
		}
		paras = append(paras, strings.ReplaceAll(b.String(), "_", `\_`))
	}
	h.core.ask = func(req bot.Request) bot.Reply {
		r := sampleAnswer()
		r.Question = req.Text
		r.Paragraphs = paras
		return r
	}
	h.run(t)
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_ask", nil))
	waitFor(t, "thread", func() bool { return len(h.dc.callsOf("POST", "/channels/"+channelID+"/messages/*/threads")) == 1 })
	h.settle(t)
	msgs := h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original")[1:]
	msgs = append(msgs, h.dc.callsOf("POST", "/webhooks/"+appID+"/*")...)
	if len(msgs) < 3 {
		t.Fatalf("got %d messages, want the ~40k-char answer split over several", len(msgs))
	}
	var got []string
	for i, c := range msgs {
		m := messageOf(t, c)
		checkLimits(t, m)
		for _, e := range m.Embeds {
			if e.Title == "Sources" {
				continue
			}
			got = append(got, strings.Fields(e.Description)...)
		}
		if has := len(buttonsOf(t, c)) > 0; has != (i == len(msgs)-1) {
			t.Errorf("message %d of %d has buttons = %v; they belong on the last", i+1, len(msgs), has)
		}
		if i > 0 && c.Seq < msgs[i-1].Seq {
			t.Error("messages posted out of order")
		}
	}
	if diff := cmp.Diff(words, got); diff != "" {
		t.Errorf("answer words after splitting (-want +got):\n%s", diff)
	}
}

func TestMissingPermissions(t *testing.T) {
	forbid := `{"message": "Missing Permissions", "code": 50013}`
	t.Run("mention without Create Public Threads", func(t *testing.T) {
		h := newHarness(t)
		h.dc.fail = func(method, path string) (int, string, bool) {
			return http.StatusForbidden, forbid, strings.HasSuffix(path, "/threads")
		}
		h.run(t)
		h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", nil))
		waitFor(t, "fallback answer", func() bool { return len(h.dc.callsOf("POST", "/channels/"+channelID+"/messages")) == 1 })
		h.settle(t)
		post := h.dc.callsOf("POST", "/channels/"+channelID+"/messages")[0]
		ref, _ := post.Body["message_reference"].(map[string]any)
		if ref["message_id"] != "1700000000000000001" {
			t.Errorf("fallback answer %s, want a reply to the question in the channel", post.Raw)
		}
		logs := h.logs.String()
		for _, want := range []string{"channel=" + channelID, `permission="Create Public Threads"`, "code=50013"} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %q:\n%s", want, logs)
			}
		}
	})
	t.Run("no Send Messages in Threads", func(t *testing.T) {
		h := newHarness(t)
		const msgID = "1700000000000000001"
		h.dc.fail = func(method, path string) (int, string, bool) {
			return http.StatusForbidden, forbid, method == "POST" && path == "/channels/"+msgID+"/messages"
		}
		h.run(t)
		h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", nil))
		waitFor(t, "notice in channel", func() bool { return len(h.dc.callsOf("POST", "/channels/"+channelID+"/messages")) == 1 })
		h.settle(t)
		notice := h.dc.callsOf("POST", "/channels/"+channelID+"/messages")[0]
		if c, _ := notice.Body["content"].(string); !strings.Contains(c, "<@"+userID+">") || !strings.Contains(c, "Send Messages in Threads") {
			t.Errorf("notice %s", notice.Raw)
		}
		if logs := h.logs.String(); !strings.Contains(logs, "channel="+msgID) || !strings.Contains(logs, `permission="Send Messages in Threads"`) {
			t.Errorf("logs lack the channel and permission:\n%s", logs)
		}
	})
	t.Run("/ask without Create Public Threads", func(t *testing.T) {
		h := newHarness(t)
		h.dc.fail = func(method, path string) (int, string, bool) {
			return http.StatusForbidden, forbid, strings.HasSuffix(path, "/threads")
		}
		h.run(t)
		h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_ask", nil))
		waitFor(t, "notice", func() bool { return len(h.dc.callsOf("POST", "/webhooks/"+appID+"/*")) == 1 })
		h.settle(t)
		f := h.dc.callsOf("POST", "/webhooks/"+appID+"/*")[0]
		if c, _ := f.Body["content"].(string); num(f.Body["flags"]) != 1<<6 || !strings.Contains(c, "Create Public Threads") {
			t.Errorf("followup %s, want an ephemeral notice naming the permission", f.Raw)
		}
		if edits := h.dc.callsOf("PATCH", "/webhooks/"+appID+"/*/messages/@original"); len(edits) != 2 {
			t.Errorf("got %d edits, want the answer shown anyway", len(edits))
		}
		if !strings.Contains(h.logs.String(), `permission="Create Public Threads"`) {
			t.Errorf("logs lack the permission:\n%s", h.logs.String())
		}
	})
}

func TestRateLimitRetriesAreBounded(t *testing.T) {
	h := newHarness(t) // MaxRetries 2
	h.dc.fail = func(method, path string) (int, string, bool) {
		return http.StatusTooManyRequests, `{"message": "You are being rate limited.", "retry_after": 0.01, "global": false}`,
			method == "POST" && path == "/channels/"+dmID+"/messages"
	}
	h.run(t)
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_dm", nil))
	waitFor(t, "retries", func() bool { return len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")) >= 3 })
	h.settle(t)
	time.Sleep(100 * time.Millisecond)
	if n := len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")); n != 3 {
		t.Errorf("got %d attempts, want 1 + MaxRetries (2)", n)
	}
	if !strings.Contains(h.logs.String(), "discord rate limited, retrying") {
		t.Error("retries not logged")
	}
}

func TestStartupErrors(t *testing.T) {
	t.Run("bad token 401", func(t *testing.T) {
		h := newHarness(t)
		h.dc.unauthorized = true
		err := h.a.Run(t.Context())
		if !errors.Is(err, ErrBadToken) || !strings.Contains(err.Error(), "FOOTNOTE_DISCORD_TOKEN") || !strings.Contains(err.Error(), "401") {
			t.Errorf("Run = %v, want ErrBadToken naming 401 and FOOTNOTE_DISCORD_TOKEN", err)
		}
	})
	for code, want := range map[int]string{4004: "FOOTNOTE_DISCORD_TOKEN", 4014: "Message Content Intent"} {
		t.Run(fmt.Sprint("close ", code), func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.FollowThreads = true })
			h.dc.closeWith = code
			done := make(chan error, 1)
			go func() { done <- h.a.Run(t.Context()) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprint(code)) {
					t.Errorf("Run = %v, want an error naming %d and %q", err, code, want)
				}
				if code == 4004 && !errors.Is(err, ErrBadToken) {
					t.Errorf("Run = %v, want ErrBadToken", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return")
			}
		})
	}
}

func TestReconnectResumes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ReconnectDelay = 10 * time.Millisecond })
	h.run(t)
	h.dc.dropConnection()
	var p gwPacket
	select {
	case p = <-h.dc.identify:
	case <-time.After(10 * time.Second):
		t.Fatal("no reconnect within 10s")
	}
	var d map[string]any
	_ = json.Unmarshal(p.D, &d)
	if p.Op != 6 || d["session_id"] != "sess-1" {
		t.Fatalf("reconnect sent op %d %s, want RESUME (6) of sess-1", p.Op, p.D)
	}
	waitFor(t, "resumed", func() bool {
		h.dc.connMu.Lock()
		defer h.dc.connMu.Unlock()
		return h.dc.conn != nil
	})
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_dm", nil))
	waitFor(t, "DM answer after resume", func() bool { return len(h.dc.callsOf("POST", "/channels/"+dmID+"/messages")) == 1 })
}

func TestPrivateRepliesAndUsage(t *testing.T) {
	t.Run("/ask with a blank question", func(t *testing.T) {
		h := newHarness(t)
		h.core.ask = func(req bot.Request) bot.Reply {
			return bot.Reply{Kind: bot.KindUsage, RequestID: "r-usage", Private: true, Paragraphs: []string{"Ask me a question about the indexed documents."}}
		}
		h.run(t)
		h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_ask", map[string]any{
			"data.options": []any{map[string]any{"name": "question", "type": 3, "value": "  "}}}))
		waitFor(t, "usage", func() bool { return len(h.dc.callsOf("POST", "/webhooks/"+appID+"/*")) == 1 })
		h.settle(t)
		if len(h.dc.callsOf("DELETE", "/webhooks/"+appID+"/*/messages/@original")) != 1 {
			t.Error("the public deferred response was not removed")
		}
		f := h.dc.callsOf("POST", "/webhooks/"+appID+"/*")[0]
		if num(f.Body["flags"]) != 1<<6 || !strings.Contains(f.Body["content"].(string), "Ask me a question") {
			t.Errorf("usage followup %s, want ephemeral help", f.Raw)
		}
		if len(h.dc.callsOf("POST", "/channels/*/messages/*/threads")) != 0 {
			t.Error("a thread was started for usage help")
		}
	})
	t.Run("mention in a private channel", func(t *testing.T) {
		h := newHarness(t, func(c *Config) {
			c.Policy = func(guild, channel string) Policy { return Policy{Private: true, RequireMention: true} }
		})
		h.run(t)
		h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", nil))
		waitFor(t, "pointer", func() bool { return len(h.dc.callsOf("POST", "/channels/"+channelID+"/messages")) == 1 })
		h.settle(t)
		if c := h.dc.callsOf("POST", "/channels/"+channelID+"/messages")[0].Body["content"].(string); !strings.Contains(c, "/ask") {
			t.Errorf("reply %q, want a pointer to /ask", c)
		}
		if len(h.core.requests()) != 0 {
			t.Error("a private channel's mention was answered in public")
		}
	})
	t.Run("bare mention", func(t *testing.T) {
		h := newHarness(t)
		h.run(t)
		h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_mention", map[string]any{"content": "<@" + botID + ">"}))
		waitFor(t, "reply", func() bool { return len(h.dc.callsOf("POST", "/channels/"+channelID+"/messages")) == 1 })
		h.settle(t)
		if len(h.dc.callsOf("POST", "/channels/*/messages/*/threads")) != 0 {
			t.Error("a thread was started for a bare mention")
		}
	})
}

// TestConcurrencyBounded: answers never block the gateway reader, and at most MaxConcurrent
// questions are worked on at once.
func TestConcurrencyBounded(t *testing.T) {
	h := newHarness(t)
	h.core.slots = make(chan struct{}, 1)
	release := make(chan struct{})
	var mu sync.Mutex
	running, peak := 0, 0
	h.core.ask = func(req bot.Request) bot.Reply {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return sampleAnswer()
	}
	h.run(t)
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_ask", nil))
	h.dc.dispatch(t, "MESSAGE_CREATE", fixture(t, "message_dm", nil))
	// While both questions wait, a click is still acknowledged and answered.
	h.dc.dispatch(t, "INTERACTION_CREATE", fixture(t, "interaction_button", nil))
	waitFor(t, "click answered while questions block", func() bool {
		return len(h.dc.callsOf("PATCH", "/webhooks/"+appID+"/aW50ZXJhY3Rpb246MTUwMDAwMDAwMDAwMDAwMDAwMjpidXR0b24/messages/@original")) == 1
	})
	// The questions reach the core after their acknowledgements (deferred response, typing,
	// thread): wait for the first, then make sure the second stays queued behind it.
	waitFor(t, "first question started", func() bool { return len(h.core.requests()) >= 1 })
	time.Sleep(200 * time.Millisecond) // room for a second question to start if it could
	if n := len(h.core.requests()); n != 1 {
		t.Errorf("%d questions started with MaxConcurrent 1, want 1", n)
	}
	close(release)
	waitFor(t, "both answered", func() bool { return len(h.core.requests()) == 2 })
	h.settle(t)
	mu.Lock()
	defer mu.Unlock()
	if peak != 1 {
		t.Errorf("peak concurrency %d, want 1", peak)
	}
}
