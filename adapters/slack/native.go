package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/footnote-dev/footnote/bot"
)

// What makes footnote feel like a Slack AI app: the "Ask footnote about this" message
// shortcut, the assistant side panel (suggested prompts, status, thread titles), native
// streaming (chat.startStream/appendStream/stopStream) and App Home.

// NativeConfig configures the Slack AI-app surface.
type NativeConfig struct {
	// Library lists the corpus for App Home and the assistant's suggested prompts. Nil
	// shows general prompts and a Home tab without the document list.
	Library bot.Library
	// DisableStreaming never tries chat.startStream (workspaces where it is not available
	// fall back by themselves: the first error switches to chat.update).
	DisableStreaming bool
}

// Callback ids declared in deploy/slack/manifest*.yaml.
const (
	askMessageCallbackID = "footnote_ask_message" // the message shortcut
	askModalCallbackID   = "footnote_ask_about"   // its modal
	askBlockID           = "footnote_question"
	askActionID          = "question"
	feedbackActionID     = "footnote_feedback" // native feedback_buttons
)

// maxMetaText bounds the message text carried in the modal's private_metadata (3,000
// characters in all, JSON escaping included).
const (
	maxMetadata = 3000
	maxMetaText = 2400
)

// askMeta travels from the shortcut to the modal's submission.
type askMeta struct {
	Channel string `json:"c"`
	TS      string `json:"ts"`
	Thread  string `json:"t"`
	Text    string `json:"x"`
	Author  string `json:"a,omitempty"`
}

// onNativeInteraction handles the shortcut and its modal; false leaves the interaction to
// onInteraction.
func (a *Adapter) onNativeInteraction(ctx context.Context, cb slack.InteractionCallback) bool {
	switch {
	case cb.Type == slack.InteractionTypeMessageAction && cb.CallbackID == askMessageCallbackID:
		a.openAsk(ctx, cb)
		return true
	case cb.Type == slack.InteractionTypeViewSubmission && cb.View.CallbackID == askModalCallbackID:
		a.askAbout(ctx, cb)
		return true
	}
	return false
}

// openAsk opens the one-field modal for "Ask footnote about this".
func (a *Adapter) openAsk(ctx context.Context, cb slack.InteractionCallback) {
	channel := firstNonEmpty(cb.Channel.ID, cb.Container.ChannelID)
	text := strings.TrimSpace(cb.Message.Text)
	if text == "" || cb.TriggerID == "" {
		a.log.Warn("message shortcut without text or trigger", logChannel, channel)
		if text == "" && channel != "" {
			_ = a.ephemeral(ctx, channel, cb.User.ID, "", textMessage("That message has no text I can read, so I can't answer about it.", "No text"))
		}
		return
	}
	meta := askMeta{Channel: channel, TS: firstNonEmpty(cb.Message.Timestamp, cb.MessageTs), Thread: cb.Message.ThreadTimestamp,
		Author: cb.Message.User}
	raw := fitMeta(meta, text)
	input := slack.NewPlainTextInputBlockElement(plainText("What do you want to know about it?"), askActionID)
	input.MaxLength = 3000
	in := slack.NewInputBlock(askBlockID, plainText("Your question"), nil, input)
	preview := truncateWords(strings.Join(strings.Fields(text), " "), 280)
	view := slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plainText("Ask footnote"),
		Submit:          plainText("Ask"),
		Close:           plainText("Cancel"),
		CallbackID:      askModalCallbackID,
		PrivateMetadata: raw,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewContextBlock("", mrkdwnText("_About:_ "+escapeText(preview))),
			in,
		}},
	}
	err := a.retry(ctx, "views.open", func() error {
		_, err := a.api.OpenViewContext(ctx, cb.TriggerID, view)
		return err
	})
	if err != nil {
		a.logAPI(err, channel, "step", "open ask modal")
	}
}

// fitMeta encodes meta with as much of text as fits private_metadata.
func fitMeta(meta askMeta, text string) string {
	n := min(utf8.RuneCountInString(text), maxMetaText)
	for {
		meta.Text = string([]rune(text)[:n])
		raw, _ := json.Marshal(meta)
		if len(raw) <= maxMetadata || n == 0 {
			return string(raw)
		}
		n = n * 9 / 10
	}
}

// askAbout answers the modal's question in the message's thread, in selected-text mode:
// the message is the passage the answer is grounded in.
func (a *Adapter) askAbout(ctx context.Context, cb slack.InteractionCallback) {
	var meta askMeta
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta); err != nil || meta.Channel == "" || meta.TS == "" {
		a.log.Warn("ask modal metadata", logErr, err)
		return
	}
	if !a.core.Claim(ctx, "slack:view:"+cb.View.ID+":"+cb.View.Hash) {
		return
	}
	question := ""
	if v, ok := cb.View.State.Values[askBlockID][askActionID]; ok {
		question = strings.TrimSpace(v.Value)
	}
	team := firstNonEmpty(cb.Team.ID, cb.User.TeamID)
	thread := firstNonEmpty(meta.Thread, meta.TS)
	req := bot.Request{Platform: Platform, Tenant: team, Channel: meta.Channel, Thread: thread, User: cb.User.ID,
		Text: question, Selected: meta.Text}
	if a.policy(team, meta.Channel).Private {
		req.Private = true
		a.sendEphemeral(ctx, meta.Channel, cb.User.ID, thread, withShare(a.core.Ask(ctx, req, nil)))
		return
	}
	body := "*<@" + cb.User.ID + "> asked about this message:* " + escapeText(question)
	if _, err := a.post(ctx, meta.Channel, thread, textMessage(truncate(body, maxSectionText), truncate(question, maxMessageText))); err != nil {
		a.logAPI(err, meta.Channel, "step", "post shortcut question")
		req.Private = true
		a.sendEphemeral(ctx, meta.Channel, cb.User.ID, thread, withShare(a.core.Ask(ctx, req, nil)))
		return
	}
	// Not a recorded delivery (a modal submission is not redelivered); the core's gate
	// still bounds it and answers busy when full.
	a.answer(ctx, nil, meta.Channel, thread, req, "")
}

// onNativeEvent handles the assistant side panel and App Home; false leaves the event to
// onEvent.
func (a *Adapter) onNativeEvent(ctx context.Context, ev slackevents.EventsAPIEvent) bool {
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AssistantThreadStartedEvent:
		// Events run before their acknowledgement: Web API calls go to the background.
		a.background(ctx, "", "", "", func(ctx context.Context) {
			a.suggest(ctx, e.AssistantThread.ChannelID, e.AssistantThread.ThreadTimeStamp)
		})
		return true
	case *slackevents.AssistantThreadContextChangedEvent:
		return true // footnote answers from its corpus, whatever channel the user looks at
	case *slackevents.AppHomeOpenedEvent:
		if e.Tab == "home" {
			a.background(ctx, "", "", "", func(ctx context.Context) { a.publishHome(ctx, e.User) })
		}
		return true
	}
	return false
}

// maxPrompts is how many suggested prompts Slack shows (at most four).
const maxPrompts = 4

// suggest sets the assistant thread's suggested prompts from the corpus: one question per
// paper title, newest papers first.
func (a *Adapter) suggest(ctx context.Context, channel, thread string) {
	prompts := []slack.AssistantThreadsPrompt{{Title: "What can I ask?", Message: "Which papers can you answer questions about?"}}
	if lib := a.cfg.Native.Library; lib != nil {
		if ov, err := lib.Overview(ctx); err != nil {
			a.log.Warn("suggested prompts: corpus overview", logErr, err)
		} else {
			prompts = promptsFrom(ov.Documents)
		}
	}
	err := a.retry(ctx, "assistant.threads.setSuggestedPrompts", func() error {
		return a.api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{
			Title: "Ask about the indexed papers", ChannelID: channel, ThreadTS: thread, Prompts: prompts})
	})
	if err != nil {
		a.logAPI(err, channel, "step", "suggested prompts")
	}
}

// promptsFrom turns document titles into suggested prompts, newest first.
func promptsFrom(docs []bot.DocSummary) []slack.AssistantThreadsPrompt {
	docs = append([]bot.DocSummary(nil), docs...)
	for i := 1; i < len(docs); i++ {
		for j := i; j > 0 && docs[j].IndexedAt.After(docs[j-1].IndexedAt); j-- {
			docs[j], docs[j-1] = docs[j-1], docs[j]
		}
	}
	var out []slack.AssistantThreadsPrompt
	for _, d := range docs {
		title := strings.TrimSpace(firstNonEmpty(d.Title, d.Name))
		if title == "" {
			continue
		}
		short := truncateWords(title, 60)
		out = append(out, slack.AssistantThreadsPrompt{
			Title:   truncate("Summarise "+short, 75),
			Message: "What is the main contribution of “" + title + "” and how does it work?",
		})
		if len(out) == maxPrompts {
			break
		}
	}
	if len(out) == 0 {
		out = append(out, slack.AssistantThreadsPrompt{Title: "What can I ask?", Message: "Which papers can you answer questions about?"})
	}
	return out
}

// assistantThread reports whether a conversation is an assistant (AI app) thread: a DM
// thread, where the side panel lives and status and titles work.
func assistantThread(channel, thread string) bool {
	return strings.HasPrefix(channel, "D") && thread != ""
}

// status sets the assistant thread's loading status; Slack clears it when footnote posts.
func (a *Adapter) status(ctx context.Context, channel, thread, status string, loading ...string) {
	err := a.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: channel, ThreadTS: thread, Status: status, LoadingMessages: loading})
	if err != nil {
		a.log.Debug("assistant status", logChannel, channel, logErr, err)
	}
}

// title names an assistant thread after its first question.
func (a *Adapter) title(ctx context.Context, channel, thread, question string) {
	if !a.core.Claim(ctx, "slack:title:"+channel+":"+thread) {
		return
	}
	q := strings.Join(strings.Fields(question), " ")
	if q == "" {
		return
	}
	err := a.api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{
		ChannelID: channel, ThreadTS: thread, Title: truncateWords(q, 100)})
	if err != nil {
		a.log.Debug("assistant title", logChannel, channel, logErr, err)
	}
}

// searching is "Searching 25 papers…".
func (a *Adapter) searching(ctx context.Context) string {
	switch n := a.core.Documents(ctx); {
	case n == 1:
		return "Searching 1 paper…"
	case n > 1:
		return "Searching " + strconv.Itoa(n) + " papers…"
	}
	return "Searching…"
}

// answerNative answers in channels whose route is private (ephemerally, nothing streamed)
// and in assistant threads: status and title first, then the answer
// streamed with chat.startStream/appendStream/stopStream and finally replaced by the
// rendered reply (sources, buttons). false means nothing was posted and the caller should
// answer the classic way (placeholder and chat.update): not an assistant thread, streaming
// disabled, or chat.startStream failed.
func (a *Adapter) answerNative(ctx context.Context, t *bot.Ticket, channel, thread string, req bot.Request, prefix string) (string, bool) {
	if !req.Private && a.policy(req.Tenant, channel).Private {
		// A channel whose answers are private: no placeholder and no progressive text for
		// everyone to read, only the finished answer for the asker.
		req.Private = true
		reply := a.core.Ask(ctx, req, nil)
		if !a.sendEphemeral(ctx, channel, req.User, thread, withShare(reply)) {
			return "undeliverable", true
		}
		return bot.Outcome(reply), true
	}
	if !assistantThread(channel, thread) {
		return "", false
	}
	a.title(ctx, channel, thread, bot.Clean(req.Text))
	searching := a.searching(ctx)
	a.status(ctx, channel, thread, searching, searching, "Reading the best sources…", "Writing a cited answer…")
	if a.cfg.Native.DisableStreaming {
		return "", false
	}
	var ts string
	err := a.retry(ctx, "chat.startStream", func() error {
		var err error
		_, ts, err = a.api.StartStreamContext(ctx, channel, slack.MsgOptionTS(thread),
			slack.MsgOptionRecipientTeamID(req.Tenant), slack.MsgOptionRecipientUserID(req.User))
		return err
	})
	if err != nil {
		a.logAPI(err, channel, "step", "start stream; falling back to chat.update")
		return "", false
	}
	// The streamed message is this question's reply: a resumed attempt updates it.
	t.Save(ctx, prefix+ts)
	s := a.nativeStream(ctx, channel, ts)
	reply := a.core.Ask(ctx, req, s.delta)
	s.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bot.DeliverTimeout)
	defer cancel()
	if err := a.retry(ctx, "chat.stopStream", func() error {
		_, _, err := a.api.StopStreamContext(ctx, channel, ts)
		return err
	}); err != nil {
		a.logAPI(err, channel, "step", "stop stream")
	}
	switch {
	case reply.Kind == bot.KindDuplicate:
		a.dropPlaceholder(ctx, t, channel, ts, prefix)
		return "duplicate", true
	case reply.Private:
		a.dropPlaceholder(ctx, t, channel, ts, prefix)
		if !a.sendEphemeral(ctx, channel, req.User, thread, withShare(reply)) {
			return "undeliverable", true
		}
		return bot.Outcome(reply), true
	}
	// The streamed text was the draft; the rendered reply (grounded citations, sources,
	// buttons) replaces it.
	msgs := renderNative(reply)
	if _, err := a.replace(ctx, t, channel, thread, ts, prefix, msgs[0]); err != nil {
		a.logAPI(err, channel, "step", "replace streamed answer", "request_id", reply.RequestID, "key", t.Key())
		return "undeliverable", true
	}
	for _, m := range msgs[1:] {
		if _, err := a.post(ctx, channel, thread, m); err != nil {
			a.logAPI(err, channel, "step", "post continuation", "request_id", reply.RequestID)
			break
		}
	}
	return bot.Outcome(reply), true
}

// nativeStreamer appends the newly generated text with chat.appendStream, at most once per
// UpdateInterval, never blocking generation.
type nativeStreamer struct {
	mu     sync.Mutex
	text   string // generated so far
	sent   int    // bytes of text already appended
	signal chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

func (a *Adapter) nativeStream(ctx context.Context, channel, ts string) *nativeStreamer {
	s := &nativeStreamer{signal: make(chan struct{}, 1), done: make(chan struct{})}
	interval := max(a.cfg.UpdateInterval, 0)
	flush := func() {
		s.mu.Lock()
		text, sent := s.text, s.sent
		s.mu.Unlock()
		if len(text) <= sent {
			return
		}
		chunk := text[sent:]
		if _, _, err := a.api.AppendStreamContext(ctx, channel, ts, slack.MsgOptionMarkdownText(chunk)); err != nil {
			a.log.Warn("append stream", logChannel, channel, logErr, err)
			return
		}
		s.mu.Lock()
		s.sent = len(text)
		s.mu.Unlock()
	}
	s.wg.Go(func() {
		for {
			select {
			case <-s.done:
				flush()
				return
			case <-s.signal:
			}
			flush()
			t := time.NewTimer(interval)
			select {
			case <-s.done:
				t.Stop()
				flush()
				return
			case <-t.C:
			}
		}
	})
	return s
}

func (s *nativeStreamer) delta(text string) {
	s.mu.Lock()
	// bot passes the whole text so far; a rewrite that does not extend what was sent is
	// left to the final update.
	if strings.HasPrefix(text, s.text[:s.sent]) {
		s.text = text
	}
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

func (s *nativeStreamer) stop() {
	close(s.done)
	s.wg.Wait()
}

// feedbackBlock is the native feedback_buttons element (in a context_actions block) for an
// answer's 👍/👎; its values are the same action encodings the classic buttons carry.
func feedbackBlock(up, down bot.Action) slack.Block {
	fb := slack.NewFeedbackButtonsBlockElement(feedbackActionID,
		slack.NewFeedbackButton(plainText("Good answer"), up.Encode()).WithAccessibilityLabel("Mark this answer as good"),
		slack.NewFeedbackButton(plainText("Bad answer"), down.Encode()).WithAccessibilityLabel("Mark this answer as bad"))
	return slack.NewContextActionsBlock("footnote_feedback", fb)
}

// renderNative renders a reply for an assistant thread: 👍/👎 become the native feedback
// buttons at the end of the last message.
func renderNative(r bot.Reply) []message {
	var up, down *bot.Action
	var rest []bot.Action
	for i, act := range r.Actions {
		switch act.Kind {
		case bot.ActFeedbackUp:
			up = &r.Actions[i]
		case bot.ActFeedbackDown:
			down = &r.Actions[i]
		default:
			rest = append(rest, act)
		}
	}
	if up == nil || down == nil {
		return render(r)
	}
	r2 := r
	r2.Actions = rest
	msgs := render(r2)
	last := &msgs[len(msgs)-1]
	if len(last.Blocks) < maxBlocks {
		last.Blocks = append(last.Blocks, feedbackBlock(*up, *down))
	} else {
		msgs = append(msgs, message{Text: "Was this answer helpful?", Blocks: []slack.Block{feedbackBlock(*up, *down)}})
	}
	return msgs
}

// maxHomeDocs keeps App Home within Slack's 100 blocks per view.
const maxHomeDocs = 80

// publishHome shows the corpus and recent feedback in App Home.
func (a *Adapter) publishHome(ctx context.Context, user string) {
	blocks := []slack.Block{slack.NewHeaderBlock(plainText("footnote: answers from your papers, with citations"))}
	lib := a.cfg.Native.Library
	var ov bot.Overview
	var err error
	if lib != nil {
		ov, err = lib.Overview(ctx)
	}
	switch {
	case lib == nil:
		blocks = append(blocks, mrkdwnSection(fmt.Sprintf("%d documents indexed. Mention me, DM me or use `/ask`.", a.core.Documents(ctx))))
	case err != nil:
		a.log.Warn("app home: corpus overview", logErr, err)
		blocks = append(blocks, mrkdwnSection("_I can't list the documents right now; questions still work._"))
	default:
		blocks = append(blocks, homeBlocks(ov)...)
	}
	err = a.retry(ctx, "views.publish", func() error {
		_, err := a.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user,
			View: slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}})
		return err
	})
	if err != nil {
		a.logAPI(err, "", "step", "publish app home")
	}
}

// homeBlocks renders the corpus overview: totals, feedback, then one line per document.
func homeBlocks(ov bot.Overview) []slack.Block {
	pages := 0
	for _, d := range ov.Documents {
		pages += d.Pages
	}
	st := ov.Stats
	blocks := []slack.Block{
		mrkdwnSection(fmt.Sprintf("*%d documents* · %d pages · %d passages indexed", len(ov.Documents), pages, ov.Chunks)),
		slack.NewContextBlock("", mrkdwnText(fmt.Sprintf("%d questions · %d answered · %d “not found” · feedback 👍 %d  👎 %d (%d with comments)",
			st.Questions, st.Answered, st.Refusals, st.FeedbackUp, st.FeedbackDown, st.Comments))),
		slack.NewDividerBlock(),
	}
	for i, d := range ov.Documents {
		if i == maxHomeDocs {
			blocks = append(blocks, slack.NewContextBlock("", mrkdwnText(fmt.Sprintf("…and %d more.", len(ov.Documents)-i))))
			break
		}
		blocks = append(blocks, mrkdwnSection(docLine(d)))
	}
	return blocks
}

// docLine is "*Title* · 15 pages · indexed 2 Jan 2026".
func docLine(d bot.DocSummary) string {
	parts := []string{"*" + escapeText(strings.ReplaceAll(firstNonEmpty(d.Title, d.Name, d.ID), "*", "")) + "*"}
	switch {
	case d.Pages == 1:
		parts = append(parts, "1 page")
	case d.Pages > 1:
		parts = append(parts, strconv.Itoa(d.Pages)+" pages")
	case d.Lines > 0:
		parts = append(parts, strconv.Itoa(d.Lines)+" lines")
	}
	if d.Name != "" && d.Name != d.Title {
		parts = append(parts, "`"+escapeText(d.Name)+"`")
	}
	if !d.IndexedAt.IsZero() {
		parts = append(parts, "indexed "+d.IndexedAt.UTC().Format("2 Jan 2006"))
	}
	return truncate(strings.Join(parts, " · "), maxSectionText)
}
