package discord

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/footnote-dev/footnote/bot"
)

// The behaviour below is shared by the gateway and the HTTP interactions endpoint: each
// transport hands a decoded event to these functions, which acknowledge first and work in
// the background through the core (intake.go).

// deliverTimeout bounds posting a finished reply, even when answering used up the event's time.
const deliverTimeout = 30 * time.Second

// noMentions keeps answers from pinging anyone: answer text can quote "@everyone".
var noMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}

// channelInfo is what the adapter needs to know about a channel; MESSAGE_CREATE does not say
// whether its channel is a thread.
type channelInfo struct {
	typ    discordgo.ChannelType
	parent string
}

func (c channelInfo) thread() bool {
	return c.typ == discordgo.ChannelTypeGuildPublicThread || c.typ == discordgo.ChannelTypeGuildPrivateThread ||
		c.typ == discordgo.ChannelTypeGuildNewsThread
}

// threadable reports whether a thread can be started from a message in the channel.
func (c channelInfo) threadable() bool {
	return c.typ == discordgo.ChannelTypeGuildText || c.typ == discordgo.ChannelTypeGuildNews
}

// maxChannelCache bounds the channel cache; channel types never change, parents rarely.
const maxChannelCache = 10000

func (a *Adapter) cacheChannel(id string, info channelInfo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.channels) >= maxChannelCache {
		a.channels = map[string]channelInfo{}
	}
	a.channels[id] = info
}

// channelInfo looks a channel up, once per channel and process.
func (a *Adapter) channelInfo(ctx context.Context, id string) (channelInfo, error) {
	a.mu.Lock()
	info, ok := a.channels[id]
	a.mu.Unlock()
	if ok {
		return info, nil
	}
	var ch *discordgo.Channel
	err := a.call(ctx, "get channel", func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = a.s.Channel(id, opts...)
		return err
	})
	if err != nil {
		return channelInfo{}, err
	}
	info = channelInfo{typ: ch.Type, parent: ch.ParentID}
	a.cacheChannel(id, info)
	return info, nil
}

// interaction is an interaction with the fields discordgo's struct lacks.
type interaction struct {
	*discordgo.Interaction
	channel *channelInfo // the partial channel Discord sends along; nil when absent
}

func parseInteraction(raw []byte) (*interaction, error) {
	var in discordgo.Interaction
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	var extra struct {
		Channel *struct {
			Type     discordgo.ChannelType `json:"type"`
			ParentID string                `json:"parent_id"`
		} `json:"channel"`
	}
	out := &interaction{Interaction: &in}
	if err := json.Unmarshal(raw, &extra); err == nil && extra.Channel != nil {
		out.channel = &channelInfo{typ: extra.Channel.Type, parent: extra.Channel.ParentID}
	}
	return out, nil
}

func (in *interaction) user() string {
	if in.Member != nil && in.Member.User != nil {
		return in.Member.User.ID
	}
	if in.User != nil {
		return in.User.ID
	}
	return ""
}

// info is what is known about the interaction's channel, looking it up when Discord did not
// send it.
func (a *Adapter) info(ctx context.Context, in *interaction) channelInfo {
	if in.GuildID == "" {
		return channelInfo{typ: discordgo.ChannelTypeDM}
	}
	if in.channel != nil {
		a.cacheChannel(in.ChannelID, *in.channel)
		return *in.channel
	}
	info, err := a.channelInfo(ctx, in.ChannelID)
	if err != nil {
		a.logAPI(err, in.ChannelID, "get channel", "View Channel")
		return channelInfo{typ: discordgo.ChannelTypeGuildText}
	}
	return info
}

// policyChannel is the channel whose policy applies: a thread's parent.
func (in *interaction) policyChannel() string {
	if in.channel != nil && in.channel.thread() && in.channel.parent != "" {
		return in.channel.parent
	}
	return in.ChannelID
}

func ephemeral(private bool) discordgo.MessageFlags {
	if private {
		return discordgo.MessageFlagsEphemeral
	}
	return 0
}

// Custom ids of the feedback modal.
const commentInputID = "comment"

// plan decides an interaction's immediate response and the work that follows it.
func (a *Adapter) plan(ctx context.Context, in *interaction) (*discordgo.InteractionResponse, func(context.Context), string) {
	notice := func(text string) *discordgo.InteractionResponse {
		return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions}}
	}
	deferred := func(private bool) *discordgo.InteractionResponse {
		return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Flags: ephemeral(private)}}
	}
	if resp, work, what, ok := a.planNative(ctx, in); ok { // hook (native, #14): message command, /footnote
		return resp, work, what
	}
	switch in.Type {
	case discordgo.InteractionApplicationCommand:
		data := in.ApplicationCommandData()
		if data.Name != askCommand.Name {
			return notice("I don't know that command."), nil, ""
		}
		question := ""
		if opt := data.GetOption("question"); opt != nil {
			question, _ = opt.Value.(string)
		}
		pol := a.policy(in.GuildID, in.policyChannel())
		return deferred(pol.Private), func(ctx context.Context) { a.onAsk(ctx, in, question, pol) }, workQuestion

	case discordgo.InteractionMessageComponent:
		act, err := bot.DecodeAction(in.MessageComponentData().CustomID)
		if err != nil {
			a.log.Warn("undecodable button", "custom_id", in.MessageComponentData().CustomID, logErr, err)
			return notice("That button is not one of mine, or it is outdated."), nil, ""
		}
		onEphemeral := in.Message != nil && in.Message.Flags&discordgo.MessageFlagsEphemeral != 0
		switch act.Kind {
		case bot.ActFeedbackDown:
			// The vote arrives with its comment when the modal is submitted.
			return feedbackModal(act), nil, ""
		case bot.ActMoreSources:
			if !onEphemeral {
				if thread := a.answerThread(ctx, in); thread != "" {
					return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate},
						func(ctx context.Context) { a.onClick(ctx, in, act, "", thread, false) }, workClick
				}
			}
			return deferred(onEphemeral), func(ctx context.Context) { a.onClick(ctx, in, act, "", "", !onEphemeral) }, workClick
		case bot.ActShare:
			return deferred(false), func(ctx context.Context) { a.onClick(ctx, in, act, "", "", true) }, workClick
		default: // Source n, 👍: only the clicking user sees the result
			return deferred(true), func(ctx context.Context) { a.onClick(ctx, in, act, "", "", false) }, workClick
		}

	case discordgo.InteractionModalSubmit:
		data := in.ModalSubmitData()
		act, err := bot.DecodeAction(data.CustomID)
		if err != nil {
			a.log.Warn("undecodable modal", "custom_id", data.CustomID, logErr, err)
			return notice("That form is not one of mine, or it is outdated."), nil, ""
		}
		comment := modalValue(data.Components, commentInputID)
		return deferred(true), func(ctx context.Context) { a.onClick(ctx, in, act, comment, "", false) }, workClick
	}
	return notice("I can't handle that interaction."), nil, ""
}

// answerThread is the thread started from the clicked answer message, if any: Discord gives
// a thread started from a message the message's id.
func (a *Adapter) answerThread(ctx context.Context, in *interaction) string {
	if in.Message == nil || in.GuildID == "" {
		return ""
	}
	if in.Message.Thread != nil && in.Message.Thread.ID != "" {
		return in.Message.Thread.ID
	}
	if a.core.Following(ctx, Platform, in.ChannelID, in.Message.ID) {
		return in.Message.ID
	}
	return ""
}

// feedbackModal asks for an optional comment on a 👎 (modal titles and input labels allow 45
// characters, the input 4,000).
func feedbackModal(act bot.Action) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{
			CustomID: act.Encode(),
			Title:    "Answer feedback",
			Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.TextInput{
					CustomID:    commentInputID,
					Label:       "What was wrong or missing? (optional)",
					Style:       discordgo.TextInputParagraph,
					Placeholder: "A comment helps us fix the answer.",
					Required:    false,
					MaxLength:   4000,
				},
			}}},
		},
	}
}

func modalValue(components []discordgo.MessageComponent, id string) string {
	for _, c := range components {
		switch c := c.(type) {
		case *discordgo.ActionsRow:
			if v := modalValue(c.Components, id); v != "" {
				return v
			}
		case *discordgo.TextInput:
			if c.CustomID == id {
				return strings.TrimSpace(c.Value)
			}
		}
	}
	return ""
}

// onAsk answers /ask after the deferred response: the original response becomes the answer,
// and a thread started from it holds the follow-ups.
func (a *Adapter) onAsk(ctx context.Context, in *interaction, question string, pol Policy) {
	t := ticketFrom(ctx)
	if t.Stale() {
		// In the original response, or after it when that is gone.
		if !a.respondAll(ctx, in, []message{{Content: bot.ApologyText}}, false) {
			t.Done(ctx, "undeliverable")
			return
		}
		t.Done(ctx, "apology")
		return
	}
	info := a.info(ctx, in)
	req := bot.Request{Platform: Platform, Tenant: in.GuildID, Channel: in.ChannelID, User: in.user(),
		Text: question, Private: pol.Private}
	gone := t.Placeholder() == originalDeleted
	startThread := false
	switch {
	case in.GuildID == "":
		req.Thread = in.ChannelID // a DM is one conversation
	case pol.Private:
		// An ephemeral answer cannot start a thread: a one-off.
	case info.thread():
		req.Channel, req.Thread = info.parent, in.ChannelID
	case gone:
		// No original response to start a thread from.
	case info.threadable():
		// The thread started from the answer gets the answer message's id: learn it now, so
		// this turn is stored under the conversation its follow-ups will name.
		m, err := a.editOriginal(ctx, in, a.placeholder(ctx))
		if err != nil {
			a.logAPI(err, in.ChannelID, "edit deferred response", "")
		} else {
			req.Thread, startThread = m.ID, true
		}
	}
	reply := a.core.Ask(ctx, req, nil)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliverTimeout)
	defer cancel()
	a.log.Info("answered", logChannel, in.ChannelID, logKind, reply.Kind, logRequestID, reply.RequestID, "elapsed", reply.Elapsed)
	if reply.Kind == bot.KindDuplicate {
		a.dropOriginal(ctx, t, in)
		t.Done(ctx, "duplicate")
		return
	}
	if reply.Private && !pol.Private {
		// The core made the reply private (usage help, a rate limit): the public deferred
		// response goes, and only the asker sees the reply.
		if !gone {
			a.dropOriginal(ctx, t, in)
		}
		if a.followups(ctx, in, render(reply), true) != nil {
			t.Done(ctx, "undeliverable")
			return
		}
		t.Done(ctx, bot.Outcome(reply))
		return
	}
	if pol.Private {
		reply = withShare(reply)
	}
	shown := false
	if gone {
		shown = a.followups(ctx, in, render(reply), pol.Private) == nil
	} else {
		shown = a.respondAll(ctx, in, render(reply), pol.Private)
	}
	if !shown {
		t.Done(ctx, "undeliverable")
		return
	}
	t.Done(ctx, bot.Outcome(reply))
	if !startThread || reply.Kind != bot.KindAnswer && reply.Kind != bot.KindRefusal {
		return
	}
	if _, err := a.startThread(ctx, in.ChannelID, req.Thread, question); err != nil {
		a.logAPI(err, in.ChannelID, "start thread", "Create Public Threads", logRequestID, reply.RequestID)
		text := "I couldn't open a thread for follow-ups here. Mention me with your next question instead."
		if forbidden(err) {
			text = "I couldn't open a thread for follow-ups here: I lack the **Create Public Threads** permission in this channel. Mention me with your next question, or ask an admin to grant it."
		}
		a.followups(ctx, in, []message{{Content: text}}, true)
	}
}

// withShare makes sure a private answer offers Share in channel.
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

func (a *Adapter) placeholder(ctx context.Context) message {
	n := a.core.Documents(ctx)
	switch {
	case n == 1:
		return message{Content: "🔎 Searching 1 paper…"}
	case n > 1:
		return message{Content: "🔎 Searching " + strconv.Itoa(n) + " papers…"}
	}
	return message{Content: "🔎 Searching…"}
}

// respondAll shows msgs as the interaction's response: the first edits the original (the
// deferred response), the rest follow in order. False when nothing could be shown.
func (a *Adapter) respondAll(ctx context.Context, in *interaction, msgs []message, private bool) bool {
	if _, err := a.editOriginal(ctx, in, msgs[0]); err != nil {
		if unknownMessage(err) {
			// The original response is gone (a moderator deleted it, or an attempt that then
			// died): the reply comes as new messages rather than not at all.
			a.log.Warn("original response gone; answering with a followup message", logChannel, in.ChannelID, logErr, err)
			if err := a.followups(ctx, in, msgs, private); err == nil {
				return true
			}
		}
		a.logAPI(err, in.ChannelID, "edit response", "")
		// Say so rather than leave "thinking…" forever.
		if _, err := a.editOriginal(ctx, in, message{Content: "Sorry, I could not display this answer."}); err != nil {
			a.logAPI(err, in.ChannelID, "edit response with apology", "")
		}
		return false
	}
	a.followups(ctx, in, msgs[1:], private)
	return true
}

// followups posts msgs as followup messages of the interaction, in order; the error is the
// first that stopped them (logged already).
func (a *Adapter) followups(ctx context.Context, in *interaction, msgs []message, private bool) error {
	for _, m := range msgs {
		err := a.call(ctx, "followup message", func(opts ...discordgo.RequestOption) error {
			_, err := a.s.FollowupMessageCreate(in.Interaction, true, &discordgo.WebhookParams{
				Content: m.Content, Embeds: m.Embeds, Components: m.Components,
				Flags: ephemeral(private), AllowedMentions: noMentions,
			}, opts...)
			return err
		})
		if err != nil {
			a.logAPI(err, in.ChannelID, "followup message", "")
			return err
		}
	}
	return nil
}

// editOriginal edits the interaction's original response. In HTTP mode the deferred
// response travels in the HTTP reply and may reach Discord after this call: an unknown
// message or webhook is retried briefly.
func (a *Adapter) editOriginal(ctx context.Context, in *interaction, m message) (*discordgo.Message, error) {
	content, embeds, components := m.Content, m.Embeds, m.Components
	if embeds == nil {
		embeds = []*discordgo.MessageEmbed{}
	}
	if components == nil {
		components = []discordgo.MessageComponent{}
	}
	edit := &discordgo.WebhookEdit{Content: &content, Embeds: &embeds, Components: &components, AllowedMentions: noMentions}
	var out *discordgo.Message
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = a.call(ctx, "edit original response", func(opts ...discordgo.RequestOption) error {
			var err error
			out, err = a.s.InteractionResponseEdit(in.Interaction, edit, opts...)
			return err
		})
		if e, ok := restError(err); !ok || e.status != 404 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(attempt+1) * 300 * time.Millisecond):
		}
	}
	return out, err
}

// deleteOriginal deletes the interaction's original response; false when it is still there.
func (a *Adapter) deleteOriginal(ctx context.Context, in *interaction) bool {
	err := a.call(ctx, "delete original response", func(opts ...discordgo.RequestOption) error {
		return a.s.InteractionResponseDelete(in.Interaction, opts...)
	})
	if err != nil && !unknownMessage(err) {
		a.logAPI(err, in.ChannelID, "delete original response", "")
		return false
	}
	return true
}

// originalDeleted is what an interaction's ticket records once footnote deleted its original
// response: an attempt resumed after a crash answers with followup messages, as editing the
// original would find nothing (Unknown Message).
const originalDeleted = "original-deleted"

// dropOriginal deletes the original response of a reply that goes elsewhere or nowhere, and
// records that in the ticket.
func (a *Adapter) dropOriginal(ctx context.Context, t *bot.Ticket, in *interaction) {
	if a.deleteOriginal(ctx, in) {
		t.Save(ctx, originalDeleted)
	}
}

// unknownMessage reports Discord's answer about a message that does not exist (any more).
func unknownMessage(err error) bool {
	e, ok := restError(err)
	return ok && e.code == codeUnknownMessage
}

// startThread starts a public thread from a message; its id is the message's. Auto-archive
// after a day without activity (allowed: 60, 1440, 4320, 10080 minutes).
func (a *Adapter) startThread(ctx context.Context, channel, messageID, question string) (string, error) {
	var ch *discordgo.Channel
	err := a.call(ctx, "start thread", func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = a.s.MessageThreadStartComplex(channel, messageID, &discordgo.ThreadStart{
			Name: threadName(question), AutoArchiveDuration: 1440,
		}, opts...)
		return err
	})
	if err != nil {
		return "", err
	}
	a.cacheChannel(ch.ID, channelInfo{typ: discordgo.ChannelTypeGuildPublicThread, parent: channel})
	return ch.ID, nil
}

// onClick passes a click to the core and shows its reply: as the deferred response (public
// when public is set), or, when thread is set, in the answer's thread; notices and other
// private replies reach the clicking user only.
func (a *Adapter) onClick(ctx context.Context, in *interaction, act bot.Action, comment, thread string, public bool) {
	r := a.core.Act(ctx, bot.Click{Action: act, Platform: Platform, Tenant: in.GuildID, Channel: in.ChannelID,
		User: in.user(), Comment: comment})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliverTimeout)
	defer cancel()
	if r.Kind == bot.KindDuplicate {
		if thread == "" {
			a.deleteOriginal(ctx, in)
		}
		return
	}
	msgs := render(r)
	switch {
	case thread != "" && !r.Private && r.Kind == bot.KindSources:
		if err := a.postAll(ctx, thread, "", msgs); err != nil {
			a.logAPI(err, thread, "post more sources", "Send Messages in Threads", logRequestID, r.RequestID)
			a.followups(ctx, in, msgs, true)
		}
	case thread != "":
		a.followups(ctx, in, msgs, true)
	case public && r.Private:
		// "That's all", an expired answer: not for the whole channel.
		a.deleteOriginal(ctx, in)
		a.followups(ctx, in, msgs, true)
	default:
		a.respondAll(ctx, in, msgs, !public)
	}
	if r.Kind == bot.KindSource {
		a.attach(ctx, in, r, !public || r.Private) // hook (native, #14): the cited page's picture
	}
}

// Messages.

// question is one human message footnote answers.
type question struct {
	guild, channel, thread string // conversation: channel (a thread's parent), thread key
	target                 string // where the answer is posted
	replyTo                string // message the first part replies to, "" for none
	user, text             string
	messageID              string // the question's own message
}

// onMessage classifies a MESSAGE_CREATE on the gateway goroutine: cheap checks only, the
// rest in the background.
func (a *Adapter) onMessage(ctx context.Context, m *discordgo.Message, raw []byte) {
	self := a.selfID()
	// Bots (footnote among them), webhooks and system messages are not questions; edits
	// arrive as MESSAGE_UPDATE, which footnote does not handle.
	if m.Author == nil || m.Author.Bot || m.Author.System || m.WebhookID != "" || m.Author.ID == self {
		return
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return
	}
	mentioned := self != "" && slices.ContainsFunc(m.Mentions, func(u *discordgo.User) bool { return u != nil && u.ID == self })
	if m.GuildID != "" && !mentioned && !a.cfg.FollowThreads {
		return // without the Message Content intent such messages arrive empty
	}
	a.question(ctx, m, raw, mentioned)
}

// message classifies and answers a message; a message that turns out not to be a question
// ends its ticket as ignored.
func (a *Adapter) message(ctx context.Context, m *discordgo.Message, mentioned bool) {
	defer ticketFrom(ctx).Done(ctx, "ignored")
	q := question{guild: m.GuildID, user: m.Author.ID, text: m.Content, messageID: m.ID}
	if m.GuildID == "" {
		// In a DM every message is a question and the DM is one conversation. The answer
		// replies to its question: after a busy spell or a restart it may come late.
		q.channel, q.thread, q.target, q.replyTo = m.ChannelID, m.ChannelID, m.ChannelID, m.ID
		a.answer(ctx, q)
		return
	}
	info, err := a.channelInfo(ctx, m.ChannelID)
	if err != nil {
		if !mentioned {
			return
		}
		a.logAPI(err, m.ChannelID, "get channel", "View Channel")
		info = channelInfo{typ: discordgo.ChannelTypeGuildText}
	}
	switch {
	case info.thread():
		if !mentioned && !a.core.Following(ctx, Platform, info.parent, m.ChannelID) {
			return
		}
		q.channel, q.thread, q.target = info.parent, m.ChannelID, m.ChannelID
		if a.privateChannel(ctx, m, info.parent) {
			return
		}
		a.answer(ctx, q)
	case info.threadable():
		if !mentioned && a.policy(m.GuildID, m.ChannelID).RequireMention {
			return
		}
		if a.privateChannel(ctx, m, m.ChannelID) {
			return
		}
		q.channel = m.ChannelID
		if bot.Clean(m.Content) == "" {
			// A bare mention gets usage help in place: no thread for it.
			q.target, q.replyTo = m.ChannelID, m.ID
			a.answer(ctx, q)
			return
		}
		thread, err := a.startThread(ctx, m.ChannelID, m.ID, m.Content)
		if err != nil {
			a.logAPI(err, m.ChannelID, "start thread", "Create Public Threads")
			// Answer in the channel as a reply instead; follow-ups then need a new mention.
			q.target, q.replyTo = m.ChannelID, m.ID
		} else {
			q.thread, q.target = thread, thread
		}
		a.answer(ctx, q)
	default:
		// Channels without threads (voice channel chat, a forum itself): answer in place.
		if !mentioned {
			return
		}
		q.channel, q.target, q.replyTo = m.ChannelID, m.ChannelID, m.ID
		a.answer(ctx, q)
	}
}

// privateChannel answers a mention in a channel whose answers must be private: Discord
// cannot show a message to one user except as a response to an interaction.
func (a *Adapter) privateChannel(ctx context.Context, m *discordgo.Message, channel string) bool {
	if !a.policy(m.GuildID, channel).Private {
		return false
	}
	t := ticketFrom(ctx)
	if err := a.postAll(ctx, m.ChannelID, m.ID, []message{{Content: "In this channel I answer privately: use `/ask` and only you will see the answer."}}); err != nil {
		a.logAPI(err, m.ChannelID, "post private-channel notice", "Send Messages")
		t.GiveUp(ctx, err, transient(err))
		return true
	}
	t.Done(ctx, "answered")
	return true
}

// answer shows the typing indicator while the core answers, then posts the reply.
func (a *Adapter) answer(ctx context.Context, q question) {
	t := ticketFrom(ctx)
	if t.Stale() {
		if a.postedBefore(ctx, t, q) {
			return
		}
		if err := a.postAll(ctx, q.target, q.replyTo, []message{{Content: bot.ApologyText}}); err != nil {
			a.logAPI(err, q.target, "post apology", "Send Messages")
			t.Done(ctx, "undeliverable")
			return
		}
		t.Done(ctx, "apology")
		return
	}
	stop := a.typing(ctx, q.target)
	reply := a.core.Ask(ctx, bot.Request{Platform: Platform, Tenant: q.guild, Channel: q.channel, Thread: q.thread,
		User: q.user, Text: q.text}, nil)
	stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliverTimeout)
	defer cancel()
	if reply.Kind == bot.KindDuplicate {
		t.Done(ctx, "duplicate")
		return
	}
	a.log.Info("answered", logChannel, q.target, logKind, reply.Kind, logRequestID, reply.RequestID, "elapsed", reply.Elapsed)
	if a.postedBefore(ctx, t, q) {
		return
	}
	err := a.postAll(ctx, q.target, q.replyTo, render(reply))
	if err == nil {
		t.Done(ctx, bot.Outcome(reply))
		return
	}
	if !forbidden(err) {
		a.logAPI(err, q.target, "post answer", "", logRequestID, reply.RequestID)
		t.GiveUp(ctx, err, transient(err))
		return
	}
	t.Done(ctx, "undeliverable")
	permission := "Send Messages"
	if q.thread != "" && q.target == q.thread && q.guild != "" {
		permission = "Send Messages in Threads"
	}
	a.logAPI(err, q.target, "post answer", permission, logRequestID, reply.RequestID)
	if forbidden(err) && q.target != q.channel && q.guild != "" {
		// Tell the asker where footnote can still write: the parent channel.
		note := "I can't post in this thread: I lack the **" + permission + "** permission. Please ask an admin to grant it."
		if err := a.postAll(ctx, q.channel, "", []message{{Content: "<@" + q.user + "> " + note}}); err != nil {
			a.logAPI(err, q.channel, "post permission notice", "Send Messages")
		}
	}
}

// postAll posts messages in order in a channel; the first replies to replyTo when set.
func (a *Adapter) postAll(ctx context.Context, channel, replyTo string, msgs []message) error {
	for i, m := range msgs {
		send := &discordgo.MessageSend{Content: m.Content, Embeds: m.Embeds, Components: m.Components, AllowedMentions: noMentions}
		if i == 0 && replyTo != "" {
			fail := false
			send.Reference = &discordgo.MessageReference{MessageID: replyTo, ChannelID: channel, FailIfNotExists: &fail}
		}
		var sent *discordgo.Message
		err := a.call(ctx, "create message", func(opts ...discordgo.RequestOption) error {
			var err error
			sent, err = a.s.ChannelMessageSendComplex(channel, send, opts...)
			return err
		})
		if err != nil {
			return err
		}
		if len(m.Embeds) > 0 && sent != nil && len(sent.Embeds) == 0 {
			// Without Embed Links Discord drops embeds silently: post the text instead.
			a.log.Error("discord dropped footnote's embeds: footnote lacks a permission in this channel",
				logChannel, channel, logPermission, "Embed Links")
			for _, t := range textMessages(embedsText(m.Embeds)) {
				if _, err := a.s.ChannelMessageSendComplex(channel, &discordgo.MessageSend{Content: t.Content, AllowedMentions: noMentions}, discordgo.WithContext(ctx)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// embedsText is the plain-text form of embeds, for channels where embeds are not shown.
func embedsText(embeds []*discordgo.MessageEmbed) string {
	var parts []string
	for _, e := range embeds {
		if e.Title != "" {
			parts = append(parts, "**"+e.Title+"**")
		}
		if e.Description != "" {
			parts = append(parts, e.Description)
		}
		for _, f := range e.Fields {
			parts = append(parts, "**"+f.Name+"** "+f.Value)
		}
		if e.Footer != nil && e.Footer.Text != "" {
			parts = append(parts, "-# "+e.Footer.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// typing shows "footnote is typing…" in channel until the returned func is called. Discord
// shows it for 10 s or until footnote posts, so it is renewed every TypingInterval.
func (a *Adapter) typing(ctx context.Context, channel string) func() {
	if a.cfg.TypingInterval < 0 {
		return func() {}
	}
	// The first indicator is sent before answering starts, so it shows even for quick answers.
	// Best effort, never retried: the answer matters, the indicator does not.
	if err := a.s.ChannelTyping(channel, discordgo.WithContext(ctx)); err != nil {
		a.logAPI(err, channel, "typing indicator", "Send Messages")
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(a.cfg.TypingInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := a.s.ChannelTyping(channel, discordgo.WithContext(ctx)); err != nil {
				if ctx.Err() == nil {
					a.logAPI(err, channel, "typing indicator", "Send Messages")
				}
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
