package discord

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/footnote-dev/footnote/bot"
)

// The Discord side of issue #14: the "Ask footnote about this" message command and its
// modal, /footnote docs and /footnote stats, and the cited page attached to Show source n.

// NativeConfig configures those features.
type NativeConfig struct {
	// Library lists the corpus for /footnote docs and /footnote stats. Nil makes them
	// answer that the listing is not available.
	Library bot.Library
}

// aboutCommand is the message context-menu command (Apps → Ask footnote about this);
// message command names may hold spaces and capitals, at most 32 characters.
var aboutCommand = &discordgo.ApplicationCommand{
	Name: "Ask footnote about this",
	Type: discordgo.MessageApplicationCommand,
}

// footnoteCommand is /footnote docs and /footnote stats.
var footnoteCommand = &discordgo.ApplicationCommand{
	Name:        "footnote",
	Description: "About footnote's indexed papers",
	Options: []*discordgo.ApplicationCommandOption{
		{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "docs", Description: "List the indexed documents (only you see it)"},
		{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "stats", Description: "Corpus size and answer feedback (only you see it)"},
	},
}

// commands is every command footnote registers.
func commands() []*discordgo.ApplicationCommand {
	return []*discordgo.ApplicationCommand{askCommand, aboutCommand, footnoteCommand}
}

// Custom ids of the "ask about this" modal: the prefix plus the target message id (a
// snowflake, so well under Discord's 100 characters).
const (
	aboutModalPrefix = "fnabout:"
	questionInputID  = "question"
)

// maxAttachment bounds an uploaded file: Discord's default upload limit is 10 MiB.
const maxAttachment = 8 << 20

// aboutTexts remembers the text of a message between the context-menu command (where
// Discord sends it) and the modal's submission (where it does not). Reading it again over
// REST needs the privileged Message Content intent, so that is only the fallback.
var aboutTexts = struct {
	sync.Mutex
	m map[string]aboutText
}{m: map[string]aboutText{}}

type aboutText struct {
	text string
	at   time.Time
}

// aboutTTL is how long a remembered message waits for its modal (users type slowly).
const aboutTTL = 30 * time.Minute

func rememberAbout(key, text string, now time.Time) {
	aboutTexts.Lock()
	defer aboutTexts.Unlock()
	for k, v := range aboutTexts.m {
		if now.Sub(v.at) > aboutTTL {
			delete(aboutTexts.m, k)
		}
	}
	if len(aboutTexts.m) >= maxChannelCache {
		aboutTexts.m = map[string]aboutText{}
	}
	aboutTexts.m[key] = aboutText{text, now}
}

func recallAbout(key string) (string, bool) {
	aboutTexts.Lock()
	defer aboutTexts.Unlock()
	v, ok := aboutTexts.m[key]
	return v.text, ok
}

// planNative plans the interactions of this file; ok is false for the others.
func (a *Adapter) planNative(ctx context.Context, in *interaction) (resp *discordgo.InteractionResponse, work func(context.Context), what string, ok bool) {
	notice := func(text string) *discordgo.InteractionResponse {
		return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions}}
	}
	deferredPrivate := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}}
	switch in.Type {
	case discordgo.InteractionApplicationCommand:
		data := in.ApplicationCommandData()
		switch data.Name {
		case aboutCommand.Name:
			var text string
			if data.Resolved != nil {
				if m := data.Resolved.Messages[data.TargetID]; m != nil {
					text = messageText(m)
				}
			}
			if strings.TrimSpace(text) == "" {
				return notice("That message has no text I can read, so I can't answer about it."), nil, "", true
			}
			rememberAbout(in.ChannelID+"/"+data.TargetID, text, a.now())
			return aboutModal(data.TargetID, text), nil, "", true
		case footnoteCommand.Name:
			sub := ""
			if len(data.Options) > 0 {
				sub = data.Options[0].Name
			}
			return deferredPrivate, func(ctx context.Context) { a.onFootnote(ctx, in, sub) }, workClick, true
		}
	case discordgo.InteractionModalSubmit:
		data := in.ModalSubmitData()
		msgID, found := strings.CutPrefix(data.CustomID, aboutModalPrefix)
		if !found {
			return nil, nil, "", false
		}
		question := modalValue(data.Components, questionInputID)
		return deferredPrivate, func(ctx context.Context) { a.onAbout(ctx, in, msgID, question) }, workQuestion, true
	}
	return nil, nil, "", false
}

// messageText is a message's content, or its embeds' text for messages that are all embed
// (footnote's own answers among them).
func messageText(m *discordgo.Message) string {
	if t := strings.TrimSpace(m.Content); t != "" {
		return t
	}
	return strings.TrimSpace(embedsText(m.Embeds))
}

// aboutModal asks for the question (modal titles and labels allow 45 characters).
func aboutModal(messageID, text string) *discordgo.InteractionResponse {
	preview := truncateWords(oneLine(text), 95)
	return &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{
			CustomID: aboutModalPrefix + messageID,
			Title:    "Ask footnote about this message",
			Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.TextInput{
					CustomID:    questionInputID,
					Label:       "Your question",
					Style:       discordgo.TextInputParagraph,
					Placeholder: truncate("About: "+preview, 100),
					Required:    true,
					MaxLength:   1000,
				},
			}}},
		},
	}
}

// onAbout answers a question about a message in that message's thread, in selected-text
// mode over the message. The deferred (ephemeral) response then points to the thread; in a
// private channel, or where no thread can be had, the answer is the response itself.
func (a *Adapter) onAbout(ctx context.Context, in *interaction, messageID, question string) {
	text, ok := recallAbout(in.ChannelID + "/" + messageID)
	if !ok {
		var m *discordgo.Message
		err := a.call(ctx, "get message", func(opts ...discordgo.RequestOption) error {
			var err error
			m, err = a.s.ChannelMessage(in.ChannelID, messageID, opts...)
			return err
		})
		if err == nil {
			text = messageText(m)
		} else {
			a.logAPI(err, in.ChannelID, "get message", "Read Message History")
		}
	}
	if strings.TrimSpace(text) == "" {
		a.respondAll(ctx, in, []message{{Content: "I couldn't read that message any more. Please use **Ask footnote about this** again."}}, true)
		return
	}
	pol := a.policy(in.GuildID, in.policyChannel())
	info := a.info(ctx, in)
	req := bot.Request{Platform: Platform, Tenant: in.GuildID, Channel: in.ChannelID, User: in.user(),
		Text: question, Selected: text, Private: pol.Private}
	thread := ""
	switch {
	case in.GuildID == "":
		req.Thread = in.ChannelID
	case pol.Private:
	case info.thread():
		req.Channel, thread = info.parent, in.ChannelID
	case info.threadable():
		id, err := a.startThread(ctx, in.ChannelID, messageID, question)
		if e, isREST := restError(err); err != nil && isREST && e.code == threadExists {
			// Discord gives a thread started from a message the message's id.
			id, err = messageID, nil
		}
		if err != nil {
			a.logAPI(err, in.ChannelID, "start thread", "Create Public Threads")
		} else {
			thread = id
		}
	}
	if thread != "" {
		req.Thread = thread
	}
	reply := a.core.Ask(ctx, req, nil)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliverTimeout)
	defer cancel()
	if reply.Kind == bot.KindDuplicate {
		a.deleteOriginal(ctx, in)
		return
	}
	a.log.Info("answered about a message", logChannel, in.ChannelID, logKind, reply.Kind, logRequestID, reply.RequestID)
	if thread == "" || reply.Private {
		a.respondAll(ctx, in, render(withShare(reply)), true)
		return
	}
	asked := message{Content: truncate("**<@"+in.user()+"> asked about this message:** "+escapeMarkdown(oneLine(question)), maxContent)}
	if err := a.postAll(ctx, thread, "", append([]message{asked}, render(reply)...)); err != nil {
		a.logAPI(err, thread, "post answer about a message", "Send Messages in Threads", logRequestID, reply.RequestID)
		a.respondAll(ctx, in, render(reply), true)
		return
	}
	a.respondAll(ctx, in, []message{{Content: "Answered in <#" + thread + ">."}}, true)
}

// threadExists is Discord's error code for "A thread has already been created for this
// message".
const threadExists = 160004

// onFootnote answers /footnote docs and /footnote stats ephemerally.
func (a *Adapter) onFootnote(ctx context.Context, in *interaction, sub string) {
	lib := a.cfg.Native.Library
	if lib == nil {
		a.respondAll(ctx, in, []message{{Content: "The document list is not available on this footnote."}}, true)
		return
	}
	ov, err := lib.Overview(ctx)
	if err != nil {
		a.log.Warn("/footnote: corpus overview", logErr, err)
		a.respondAll(ctx, in, []message{{Content: "I can't read the document list right now; questions still work."}}, true)
		return
	}
	var msgs []message
	switch sub {
	case "docs":
		msgs = docsMessages(ov)
	default:
		msgs = []message{{Embeds: []*discordgo.MessageEmbed{statsEmbed(ov)}}}
	}
	a.respondAll(ctx, in, msgs, true)
}

// docsMessages lists the documents, one line each, in embeds within Discord's limits.
func docsMessages(ov bot.Overview) []message {
	var lines []string
	for _, d := range ov.Documents {
		lines = append(lines, docLine(d))
	}
	if len(lines) == 0 {
		return []message{{Content: "No documents are indexed yet."}}
	}
	var embeds []*discordgo.MessageEmbed
	for i, part := range bot.SplitText(strings.Join(lines, "\n"), maxEmbedDescription, nil) {
		e := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Description: part, Color: colorSources}
		if i == 0 {
			e.Title = fmt.Sprintf("Indexed documents (%d)", len(ov.Documents))
		}
		embeds = append(embeds, e)
	}
	return packEmbeds(embeds)
}

// docLine is "**Title** · 15 pages · `1706.03762` · indexed 2 Nov 2026".
func docLine(d bot.DocSummary) string {
	title := strings.TrimSpace(d.Title)
	if title == "" {
		title = d.Name
	}
	parts := []string{"**" + escapeMarkdown(truncateWords(oneLine(title), 200)) + "**"}
	switch {
	case d.Pages == 1:
		parts = append(parts, "1 page")
	case d.Pages > 1:
		parts = append(parts, strconv.Itoa(d.Pages)+" pages")
	case d.Lines > 0:
		parts = append(parts, strconv.Itoa(d.Lines)+" lines")
	}
	if d.Name != "" && d.Name != d.Title {
		parts = append(parts, "`"+strings.ReplaceAll(d.Name, "`", "")+"`")
	}
	if !d.IndexedAt.IsZero() {
		parts = append(parts, "indexed "+d.IndexedAt.UTC().Format("2 Jan 2006"))
	}
	return strings.Join(parts, " · ")
}

func statsEmbed(ov bot.Overview) *discordgo.MessageEmbed {
	pages := 0
	for _, d := range ov.Documents {
		pages += d.Pages
	}
	st := ov.Stats
	field := func(name string, v any) *discordgo.MessageEmbedField {
		return &discordgo.MessageEmbedField{Name: name, Value: fmt.Sprint(v), Inline: true}
	}
	e := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Title: "footnote statistics", Color: colorAnswer,
		Fields: []*discordgo.MessageEmbedField{
			field("Documents", len(ov.Documents)), field("Pages", pages), field("Passages", ov.Chunks),
			field("Questions", st.Questions), field("Answered", st.Answered), field("Not found", st.Refusals),
			field("👍", st.FeedbackUp), field("👎", st.FeedbackDown), field("Comments", st.Comments),
		}}
	if st.LatencyP50 > 0 {
		e.Footer = &discordgo.MessageEmbedFooter{Text: fmt.Sprintf("Answer time: median %.1f s, 95th percentile %.1f s",
			st.LatencyP50.Seconds(), st.LatencyP95.Seconds())}
	}
	return e
}

// attach sends a reply's files (the cited page of Show source n) as a follow-up to the
// interaction, ephemeral like the reply it belongs to. Too large a file, or a failed upload,
// is said in a follow-up: the source's text is already shown.
func (a *Adapter) attach(ctx context.Context, in *interaction, r bot.Reply, private bool) {
	for _, att := range r.Attachments {
		if len(att.Data) == 0 {
			continue
		}
		params := &discordgo.WebhookParams{Flags: ephemeral(private), AllowedMentions: noMentions}
		if len(att.Data) > maxAttachment {
			a.log.Warn("attachment over Discord's upload limit", "name", att.Name, "bytes", len(att.Data))
			params.Content = "_The picture of this page is too large to upload; the text above is the source._"
		} else {
			params.Content = truncate(att.Title, maxContent)
			params.Files = []*discordgo.File{{Name: att.Name, ContentType: att.MIME, Reader: bytes.NewReader(att.Data)}}
		}
		err := a.call(ctx, "followup with file", func(opts ...discordgo.RequestOption) error {
			// The reader is consumed by a failed attempt: give each attempt its own.
			for _, f := range params.Files {
				f.Reader = bytes.NewReader(att.Data)
			}
			_, err := a.s.FollowupMessageCreate(in.Interaction, true, params, opts...)
			return err
		})
		if err != nil {
			a.logAPI(err, in.ChannelID, "upload page image", "Attach Files", logRequestID, r.RequestID)
			a.followups(ctx, in, []message{{Content: "_I couldn't upload the picture of this page; the text above is the source._"}}, private)
		}
	}
}
