package slack

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/footnote-dev/footnote/bot"
)

// The behaviour below is shared by Socket Mode and HTTP mode: onEvent classifies a delivery
// before it is acknowledged (it must stay quick), and questions are worked on in the
// background through the core (intake.go).

// question is one human message footnote answers.
type question struct {
	team, channel, user, text string
	ts                        string // the message itself
	thread                    string // where the answer goes and the conversation key
	eventID                   string
}

// onEvent handles an Events API callback.
func (a *Adapter) onEvent(ctx context.Context, ev slackevents.EventsAPIEvent) {
	if a.onNativeEvent(ctx, ev) { // hook (native, #14): assistant threads, App Home
		return
	}
	eventID := ""
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok {
		eventID = cb.EventID
	}
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		// Bots (including footnote itself) and edits re-send app_mention: answer humans' new
		// messages only.
		if e.BotID != "" || e.Edited != nil || e.User == "" {
			return
		}
		a.ask(ctx, question{team: ev.TeamID, channel: e.Channel, user: e.User, text: e.Text,
			ts: e.TimeStamp, thread: firstNonEmpty(e.ThreadTimeStamp, e.TimeStamp), eventID: eventID})
	case *slackevents.MessageEvent:
		if !humanMessage(e) {
			return
		}
		q := question{team: ev.TeamID, channel: e.Channel, user: e.User, text: e.Text,
			ts: e.TimeStamp, thread: firstNonEmpty(e.ThreadTimeStamp, e.TimeStamp), eventID: eventID}
		switch {
		case e.ChannelType == "im":
			// In a DM every message is a question; its thread keeps the conversation.
			a.ask(ctx, q)
		case e.ThreadTimeStamp != "" && e.ThreadTimeStamp != e.TimeStamp:
			if a.policy(ev.TeamID, e.Channel).MentionFollowUps {
				return // the app_mention event answers tagged messages
			}
			if !a.core.Following(ctx, Platform, e.Channel, e.ThreadTimeStamp) {
				return
			}
			a.ask(ctx, q)
		default:
			if a.policy(ev.TeamID, e.Channel).RequireMention {
				return // the app_mention event answers tagged messages
			}
			a.ask(ctx, q)
		}
	}
}

// humanMessage reports whether a message event is a new message written by a person.
func humanMessage(e *slackevents.MessageEvent) bool {
	if e.BotID != "" || e.User == "" {
		return false // bot messages, footnote's own answers among them
	}
	switch e.SubType {
	case "", "thread_broadcast", "file_share":
		return true
	default: // message_changed, message_deleted, bot_message, channel_join …
		return false
	}
}

// ask records a message as a question and has it answered in its thread, once. A message
// that mentions footnote arrives twice, as app_mention and as message, with different event
// ids: the message's own ts is the key, so either delivery (or a redelivery) finds it.
func (a *Adapter) ask(ctx context.Context, q question) {
	p := pending{Kind: kindMessage, Team: q.team, Channel: q.channel, User: q.user, Text: q.text, TS: q.ts, Thread: q.thread}
	if t := a.accept(ctx, "slack:msg:"+q.channel+":"+q.ts, p); t != nil {
		a.busyInThread(ctx, t, p)
	}
}

// command records /ask and has it answered; when the core has no room it returns the
// acknowledgement body that tells the asker so.
func (a *Adapter) command(ctx context.Context, cmd slack.SlashCommand) any {
	key := "slack:cmd:" + cmd.TriggerID
	if cmd.TriggerID == "" {
		key = "slack:cmd:" + cmd.ChannelID + ":" + cmd.UserID + ":" + strconv.FormatInt(receivedAt(ctx).UnixNano(), 10)
	}
	p := pending{Kind: kindCommand, Team: cmd.TeamID, Channel: cmd.ChannelID, User: cmd.UserID,
		Text: strings.TrimSpace(cmd.Text), ResponseURL: cmd.ResponseURL}
	t := a.accept(ctx, key, p)
	if t == nil {
		return nil
	}
	t.Done(ctx, "busy")
	return busyCommand()
}

// onCommand answers /ask: the question is posted for everyone to see and answered in its
// thread. A resumed command reuses the question message its first attempt posted.
func (a *Adapter) onCommand(ctx context.Context, t *bot.Ticket, p pending) {
	req := bot.Request{Platform: Platform, Tenant: p.Team, Channel: p.Channel, User: p.User, Text: p.Text}
	if t.Stale() {
		a.apologize(ctx, t, p)
		return
	}
	private := func(r bot.Reply) {
		if a.sendEphemeral(ctx, p.Channel, p.User, "", r) {
			t.Done(ctx, bot.Outcome(r))
			return
		}
		if p.ResponseURL != "" && a.respond(ctx, p.ResponseURL, r) {
			t.Done(ctx, bot.Outcome(r))
			return
		}
		t.Done(ctx, "undeliverable")
	}
	if p.Text == "" {
		private(a.core.Ask(ctx, req, nil))
		return
	}
	if a.policy(p.Team, p.Channel).Private {
		req.Private = true
		private(withShare(a.core.Ask(ctx, req, nil)))
		return
	}
	qts, _ := splitRef(t.Placeholder())
	if qts == "" {
		var err error
		qts, err = a.post(ctx, p.Channel, "", askedMessage(p.User, p.Text))
		if err != nil {
			a.logAPI(err, p.Channel, "step", "post question")
			if transient(err) {
				t.GiveUp(ctx, err, transient(err))
				return
			}
			// footnote is probably not a member of the channel (not_in_channel): answer the
			// asker alone, through response_url when even an ephemeral message is refused.
			req.Private = true
			private(withShare(a.core.Ask(ctx, req, nil)))
			return
		}
		t.Save(ctx, qts+" ")
	}
	req.Thread = qts
	a.answer(ctx, t, p.Channel, qts, req, qts+" ")
}

// apologize ends a question too old to answer after a restart with ApologyText, in its
// placeholder when it has one.
func (a *Adapter) apologize(ctx context.Context, t *bot.Ticket, p pending) {
	ref := t.Placeholder()
	thread, pts := p.Thread, ref
	if p.Kind == kindCommand {
		thread, pts = splitRef(ref)
	}
	m := textMessage(bot.ApologyText, bot.ApologyText)
	var err error
	switch {
	case pts != "":
		_, err = a.replace(ctx, t, p.Channel, thread, pts, strings.TrimSuffix(ref, pts), m)
	case thread != "":
		_, err = a.post(ctx, p.Channel, thread, m)
	default:
		if !a.sendEphemeral(ctx, p.Channel, p.User, "", bot.Reply{Kind: bot.KindNotice, Paragraphs: []string{bot.ApologyText}}) {
			err = errors.New("ephemeral apology refused")
		}
	}
	if err != nil {
		a.logAPI(err, p.Channel, "step", "post apology")
		t.Done(ctx, "undeliverable")
		return
	}
	t.Done(ctx, "apology")
}

// withShare makes sure a private answer offers Share with channel.
func withShare(r bot.Reply) bot.Reply {
	if r.Kind != bot.KindAnswer || r.AnswerID == "" {
		return r
	}
	for _, act := range r.Actions {
		if act.Kind == bot.ActShare {
			return r
		}
	}
	r.Actions = append(slices.Clone(r.Actions), bot.Action{Kind: bot.ActShare, AnswerID: r.AnswerID})
	return r
}

// askedMessage is "*<@U1> asked:* question", the question /ask posts for everyone to see.
func askedMessage(user, text string) message {
	body := "*<@" + user + "> asked:* " + escapeText(text)
	return textMessage(truncate(body, maxSectionText), truncate(text, maxMessageText))
}

// answer posts a placeholder in the thread (or reuses the one a previous attempt saved under
// prefix), streams the answer into it and replaces it with the rendered reply (further
// messages follow in the thread when the answer is long). It ends the ticket.
func (a *Adapter) answer(ctx context.Context, t *bot.Ticket, channel, thread string, req bot.Request, prefix string) {
	// hook (native, #14): assistant threads stream natively, private channels answer
	// ephemerally. A resumed attempt with a saved placeholder takes the path below, which
	// updates it instead of posting again.
	if t.Placeholder() == "" && !t.Stale() {
		if result, ok := a.answerNative(ctx, t, channel, thread, req, prefix); ok {
			t.Done(ctx, result)
			return
		}
	}
	pts := strings.TrimPrefix(t.Placeholder(), prefix)
	if pts == "" {
		var err error
		pts, err = a.post(ctx, channel, thread, a.placeholder(ctx))
		if err != nil {
			a.logAPI(err, channel, "step", "post placeholder", "key", t.Key())
			t.GiveUp(ctx, err, transient(err))
			return
		}
		t.Save(ctx, prefix+pts)
	}
	if t.Stale() {
		if _, err := a.replace(ctx, t, channel, thread, pts, prefix, textMessage(bot.ApologyText, bot.ApologyText)); err != nil {
			a.logAPI(err, channel, "step", "post apology", "key", t.Key())
			t.Done(ctx, "undeliverable")
			return
		}
		t.Done(ctx, "apology")
		return
	}
	s := a.stream(ctx, channel, pts)
	reply := a.core.Ask(ctx, req, s.delta)
	s.stop()
	// Deliver the reply even when answering used up the event's time (an error reply about
	// a timeout still has to reach the thread).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bot.DeliverTimeout)
	defer cancel()
	if reply.Kind == bot.KindDuplicate {
		a.dropPlaceholder(ctx, t, channel, pts, prefix)
		t.Done(ctx, "duplicate")
		return
	}
	a.log.Info("answered", logChannel, channel, logKind, reply.Kind, "request_id", reply.RequestID, "elapsed", reply.Elapsed)
	if reply.Private {
		// The core made the reply private (usage help, a private channel): only the asker
		// sees it, and the placeholder goes.
		a.dropPlaceholder(ctx, t, channel, pts, prefix)
		if a.sendEphemeral(ctx, channel, req.User, thread, withShare(reply)) {
			t.Done(ctx, bot.Outcome(reply))
		} else {
			t.Done(ctx, "undeliverable")
		}
		return
	}
	msgs := render(reply)
	if _, err := a.replace(ctx, t, channel, thread, pts, prefix, msgs[0]); err != nil {
		a.logAPI(err, channel, "step", "update placeholder", "request_id", reply.RequestID, "key", t.Key())
		// Say so where the placeholder is rather than leave "Searching…" forever.
		if _, e := a.replace(ctx, t, channel, thread, pts, prefix, textMessage("Sorry, I could not display this answer.", "footnote")); e == nil {
			t.Done(ctx, "failed")
			return
		}
		t.GiveUp(ctx, err, transient(err))
		return
	}
	t.Done(ctx, bot.Outcome(reply))
	for _, m := range msgs[1:] {
		if _, err := a.post(ctx, channel, thread, m); err != nil {
			a.logAPI(err, channel, "step", "post continuation", "request_id", reply.RequestID)
			return
		}
	}
}

// dropPlaceholder deletes the placeholder pts of a reply that goes elsewhere (ephemeral) or
// nowhere, then forgets it in the ticket: an attempt resumed after a crash must post a new
// placeholder, not update a deleted one (chat.update answers message_not_found). Deleting
// first means a crash in between leaves no "Searching…" behind; replace covers that window.
func (a *Adapter) dropPlaceholder(ctx context.Context, t *bot.Ticket, channel, pts, prefix string) {
	if a.deleteMessage(ctx, channel, pts) {
		t.Save(ctx, prefix)
	}
}

// replace shows m in place of the message pts (the placeholder or a streamed answer). When
// that message is gone (a person deleted it, or an attempt that died had deleted it) m is
// posted fresh in the thread and recorded in the ticket under prefix: the question still
// gets its one visible reply, never silence. It returns the ts now holding the reply.
func (a *Adapter) replace(ctx context.Context, t *bot.Ticket, channel, thread, pts, prefix string, m message) (string, error) {
	err := a.update(ctx, channel, pts, m)
	if !messageGone(err) {
		return pts, err
	}
	a.log.Warn("placeholder gone; posting the reply in the thread instead", logChannel, channel, "ts", pts, "key", t.Key(), logErr, err)
	ts, err := a.post(ctx, channel, thread, m)
	if err != nil {
		return "", err
	}
	t.Save(ctx, prefix+ts)
	return ts, nil
}

// messageGone reports Slack's answer to an update of a message that does not exist (any
// more).
func messageGone(err error) bool {
	var se slack.SlackErrorResponse
	return errors.As(err, &se) && se.Err == "message_not_found"
}

// deleteMessage deletes one of footnote's messages; false when it could not (it is still
// there).
func (a *Adapter) deleteMessage(ctx context.Context, channel, ts string) bool {
	err := a.retry(ctx, "chat.delete", func() error {
		_, _, err := a.api.DeleteMessageContext(ctx, channel, ts)
		return err
	})
	if err != nil && !messageGone(err) {
		a.logAPI(err, channel, "step", "delete placeholder")
		return false
	}
	return true
}

// sendEphemeral shows a reply to one user only; false when Slack refused it.
func (a *Adapter) sendEphemeral(ctx context.Context, channel, user, thread string, r bot.Reply) bool {
	if r.Kind == bot.KindDuplicate {
		return true
	}
	for _, m := range render(r) {
		if err := a.ephemeral(ctx, channel, user, thread, m); err != nil {
			a.logAPI(err, channel, "step", "post ephemeral", "request_id", r.RequestID)
			return false
		}
	}
	return true
}

// respond answers a slash command through its response_url (5 uses in 30 minutes), which
// works in channels footnote is not a member of; false when it failed.
func (a *Adapter) respond(ctx context.Context, responseURL string, r bot.Reply) bool {
	for _, m := range render(r) {
		err := a.retry(ctx, "response_url", func() error {
			_, _, err := a.api.PostMessageContext(ctx, "", slack.MsgOptionResponseURL(responseURL, slack.ResponseTypeEphemeral),
				slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...))
			return err
		})
		if err != nil {
			a.log.Error("slack response_url", "request_id", r.RequestID, logErr, err)
			return false
		}
	}
	return true
}

// streamer shows the answer as it is generated, with at most one chat.update per
// UpdateInterval; updates never block generation.
type streamer struct {
	mu     sync.Mutex
	text   string
	signal chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

func (a *Adapter) stream(ctx context.Context, channel, ts string) *streamer {
	s := &streamer{signal: make(chan struct{}, 1), done: make(chan struct{})}
	if a.cfg.UpdateInterval < 0 {
		return s
	}
	s.wg.Go(func() {
		for {
			select {
			case <-s.done:
				return
			case <-s.signal:
			}
			s.mu.Lock()
			text := s.text
			s.mu.Unlock()
			m := textMessage(truncateWords(Mrkdwn(text), sectionBudget-2)+" …", text)
			// A progressive update is best effort: no 429 retries, the final update follows.
			if _, _, _, err := a.api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...)); err != nil {
				a.log.Warn("progressive update", logChannel, channel, logErr, err)
				if messageGone(err) {
					return // nothing to update; the final reply is posted fresh (replace)
				}
			}
			t := time.NewTimer(a.cfg.UpdateInterval)
			select {
			case <-s.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
	})
	return s
}

func (s *streamer) delta(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	s.mu.Lock()
	s.text = text
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// stop ends progressive updates and waits for one in flight, so the final update comes last.
func (s *streamer) stop() {
	close(s.done)
	s.wg.Wait()
}

// Interactions.

const (
	feedbackCallbackID = "footnote_feedback"
	commentBlockID     = "footnote_comment"
	commentActionID    = "comment"
)

// feedbackMeta travels in the modal's private_metadata (3,000 chars at most) from the 👎 click
// to the view submission.
type feedbackMeta struct {
	Value     string `json:"v"`
	Channel   string `json:"c"`
	Thread    string `json:"t,omitempty"`
	Ephemeral bool   `json:"e,omitempty"`
}

// target is where an interaction's reply goes.
type target struct {
	channel, thread, user, team string
	ephemeral                   bool
}

func interactionTarget(cb slack.InteractionCallback) target {
	t := target{
		channel:   firstNonEmpty(cb.Container.ChannelID, cb.Channel.ID),
		thread:    firstNonEmpty(cb.Container.ThreadTs, cb.Message.ThreadTimestamp, cb.Container.MessageTs, cb.Message.Timestamp),
		user:      cb.User.ID,
		team:      firstNonEmpty(cb.Team.ID, cb.User.TeamID),
		ephemeral: cb.Container.IsEphemeral,
	}
	return t
}

// onInteraction handles button clicks and the feedback modal's submission.
func (a *Adapter) onInteraction(ctx context.Context, cb slack.InteractionCallback) {
	if a.onNativeInteraction(ctx, cb) { // hook (native, #14): message shortcut and its modal
		return
	}
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		t := interactionTarget(cb)
		for _, ba := range cb.ActionCallback.BlockActions {
			if !strings.HasPrefix(ba.ActionID, "footnote_") {
				continue
			}
			value := ba.Value
			if value == "" {
				value = ba.SelectedOption.Value
			}
			act, err := bot.DecodeAction(value)
			if err != nil {
				a.log.Warn("undecodable action", "action_id", ba.ActionID, logErr, err)
				continue
			}
			if cb.TriggerID != "" && !a.core.Claim(ctx, "slack:act:"+cb.TriggerID+":"+ba.ActionID) {
				continue
			}
			if act.Kind == bot.ActFeedbackDown && a.openFeedback(ctx, cb.TriggerID, value, t) {
				continue // the click arrives with its comment when the modal is submitted
			}
			a.click(ctx, t, bot.Click{Action: act, Platform: Platform, Tenant: t.team, Channel: t.channel, User: t.user})
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID != feedbackCallbackID {
			return
		}
		var meta feedbackMeta
		if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta); err != nil {
			a.log.Warn("feedback modal metadata", logErr, err)
			return
		}
		act, err := bot.DecodeAction(meta.Value)
		if err != nil {
			a.log.Warn("feedback modal action", logErr, err)
			return
		}
		if !a.core.Claim(ctx, "slack:view:"+cb.View.ID+":"+cb.View.Hash) {
			return
		}
		comment := ""
		if v, ok := cb.View.State.Values[commentBlockID][commentActionID]; ok {
			comment = strings.TrimSpace(v.Value)
		}
		t := target{channel: meta.Channel, thread: meta.Thread, user: cb.User.ID, team: firstNonEmpty(cb.Team.ID, cb.User.TeamID), ephemeral: meta.Ephemeral}
		a.click(ctx, t, bot.Click{Action: act, Platform: Platform, Tenant: t.team, Channel: t.channel, User: t.user, Comment: comment})
	}
}

// click passes a click to the core and shows its reply: sources in the thread, notices (such as
// "thanks for the feedback") to the clicking user only, shared answers to the channel.
func (a *Adapter) click(ctx context.Context, t target, c bot.Click) {
	r := a.core.Act(ctx, c)
	switch {
	case r.Kind == bot.KindDuplicate:
		return
	case c.Action.Kind == bot.ActShare && !r.Private && (r.Kind == bot.KindAnswer || r.Kind == bot.KindRefusal):
		qts, err := a.post(ctx, t.channel, "", sharedMessage(t.user, r.Question))
		if err != nil {
			a.logAPI(err, t.channel, "step", "post shared question")
			return
		}
		for _, m := range render(r) {
			if _, err := a.post(ctx, t.channel, qts, m); err != nil {
				a.logAPI(err, t.channel, "step", "post shared answer")
				return
			}
		}
	case t.ephemeral || r.Private || r.Kind != bot.KindSource && r.Kind != bot.KindSources && r.Kind != bot.KindAnswer:
		a.sendEphemeral(ctx, t.channel, t.user, t.thread, r)
	default:
		for _, m := range render(r) {
			if _, err := a.post(ctx, t.channel, t.thread, m); err != nil {
				a.logAPI(err, t.channel, "step", "post click reply", "request_id", r.RequestID)
				return
			}
		}
		a.upload(ctx, t, r) // hook (native, #14): the cited page's picture
	}
}

func sharedMessage(user, question string) message {
	body := "*<@" + user + "> shared an answer*"
	if question != "" {
		body += ": " + escapeText(question)
	}
	return textMessage(truncate(body, maxSectionText), truncate(firstNonEmpty(question, "Shared answer"), maxMessageText))
}

// openFeedback opens the 👎 modal; false when it could not be opened (the trigger id lives 3 s).
func (a *Adapter) openFeedback(ctx context.Context, triggerID, value string, t target) bool {
	if triggerID == "" {
		return false
	}
	meta, _ := json.Marshal(feedbackMeta{Value: value, Channel: t.channel, Thread: t.thread, Ephemeral: t.ephemeral})
	input := slack.NewPlainTextInputBlockElement(plainText("What was wrong or missing?"), commentActionID)
	input.Multiline = true
	input.MaxLength = 2000
	in := slack.NewInputBlock(commentBlockID, plainText("Comment (optional)"), nil, input)
	in.Optional = true
	view := slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plainText("Answer feedback"),
		Submit:          plainText("Send"),
		Close:           plainText("Cancel"),
		CallbackID:      feedbackCallbackID,
		PrivateMetadata: string(meta),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			mrkdwnSection("Thanks for flagging this answer. A comment helps us fix it."),
			in,
		}},
	}
	err := a.retry(ctx, "views.open", func() error {
		_, err := a.api.OpenViewContext(ctx, triggerID, view)
		return err
	})
	if err != nil {
		a.logAPI(err, t.channel, "step", "open feedback modal")
		return false
	}
	return true
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
