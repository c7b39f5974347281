package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/footnote-dev/footnote/bot"
)

// How a delivery becomes work: a question (/ask, a message) is recorded in the core (Accept)
// and admitted (Core.Go) or told at once that footnote is busy; clicks are admitted under
// the core's bound for clicks. The core's gate is the only bound: no goroutine is started
// for work that would wait.

// pending is what a question needs to be answered again after a restart (bot.Ticket's
// payload): the raw interaction (its token stays valid for 15 minutes) or message.
type pending struct {
	Kind      string          `json:"k"` // kindInteraction or kindMessage
	Raw       json.RawMessage `json:"raw"`
	Mentioned bool            `json:"m,omitempty"`
}

const (
	kindInteraction = "i"
	kindMessage     = "m"
)

// busyResponse answers an interaction the core has no room for, visible to the user only.
func busyResponse() *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: bot.BusyText, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions}}
}

// interaction acknowledges an interaction and starts the work that follows. raw is the
// interaction as delivered (stored to resume it). httpReply, when set, sends the
// acknowledgement as the HTTP response body (HTTP interactions); otherwise it goes through
// the REST callback endpoint (gateway). A nil response means the interaction is a duplicate
// and gets none.
func (a *Adapter) interaction(ctx context.Context, in *interaction, raw []byte, received time.Time, httpReply func(*discordgo.InteractionResponse)) {
	if in.Type == discordgo.InteractionPing {
		if httpReply != nil {
			httpReply(&discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong})
		}
		return
	}
	respond := func(ctx context.Context, resp *discordgo.InteractionResponse) bool {
		if httpReply != nil {
			httpReply(resp)
			return true
		}
		err := a.call(ctx, "interaction callback", func(opts ...discordgo.RequestOption) error {
			return a.s.InteractionRespond(in.Interaction, resp, opts...)
		})
		if err != nil {
			// The interaction token is spent or expired (3 s): nothing can be shown now.
			a.logAPI(err, in.ChannelID, "interaction callback", "")
			return false
		}
		return true
	}
	resp, work, what := a.plan(ctx, in)
	var t *bot.Ticket
	if what == workQuestion {
		p, _ := json.Marshal(pending{Kind: kindInteraction, Raw: raw})
		var v bot.Verdict
		t, v = a.core.Accept(ctx, Platform, "discord:interaction:"+in.ID, p, received)
		if v == bot.Duplicate {
			a.log.Info("duplicate interaction ignored", "interaction", in.ID)
			if httpReply != nil {
				httpReply(nil)
			}
			return
		}
	} else if !a.core.Claim(ctx, "discord:interaction:"+in.ID) {
		a.log.Info("duplicate interaction ignored", "interaction", in.ID)
		if httpReply != nil {
			httpReply(nil)
		}
		return
	}
	if work == nil {
		respond(ctx, resp)
		return
	}
	w := bot.WorkClick
	if what == workQuestion {
		w = bot.WorkQuestion
	}
	// Over HTTP the deferred response is the HTTP reply: the work waits until it is written.
	ready := make(chan struct{})
	done := a.begin()
	ok := a.core.Go(ctx, Platform, w, func(ctx context.Context) {
		defer done()
		ctx, cancel := context.WithTimeout(ctx, a.cfg.AnswerTimeout)
		defer cancel()
		// Work that returns without ending its ticket (a route that forgot to) must not
		// hold a renewed lease forever; an explicit Abandon or Done comes first and wins.
		defer t.Done(ctx, "ended")
		if httpReply != nil {
			<-ready
		} else if !respond(ctx, resp) {
			t.Done(ctx, "undeliverable") // the interaction token is gone
			return
		}
		work(withTicket(ctx, t))
	})
	if !ok {
		done()
		if httpReply != nil {
			httpReply(busyResponse())
			t.Done(ctx, "busy")
			return
		}
		if !a.core.Notify(ctx, Platform, func(ctx context.Context) {
			if respond(ctx, busyResponse()) {
				t.Done(ctx, "busy")
			} else {
				t.Done(ctx, "undeliverable")
			}
		}) {
			t.Done(ctx, "undeliverable")
		}
		return
	}
	if httpReply != nil {
		httpReply(resp)
	}
	close(ready)
}

// question records a message that may be a question (mentioned, a DM, or a thread message
// with FollowThreads) and admits its classification and answer.
func (a *Adapter) question(ctx context.Context, m *discordgo.Message, raw []byte, mentioned bool) {
	p, _ := json.Marshal(pending{Kind: kindMessage, Raw: raw, Mentioned: mentioned})
	t, v := a.core.Accept(ctx, Platform, "discord:msg:"+m.ID, p, time.Now())
	if v == bot.Duplicate {
		a.log.Info("duplicate message ignored", "message", m.ID)
		return
	}
	done := a.begin()
	ok := a.core.Go(ctx, Platform, bot.WorkQuestion, func(ctx context.Context) {
		defer done()
		ctx, cancel := context.WithTimeout(ctx, a.cfg.AnswerTimeout)
		defer cancel()
		a.message(withTicket(ctx, t), m, mentioned)
	})
	if ok {
		return
	}
	done()
	if !mentioned && m.GuildID != "" {
		// An untagged message in a followed thread may not be a question at all: a busy
		// notice to every message there would be noise.
		t.Done(ctx, "dropped")
		return
	}
	if !a.core.Notify(ctx, Platform, func(ctx context.Context) {
		// Marked first: if the process dies between posting the notice and recording it,
		// the resumed attempt finds the notice (postedBefore) instead of answering too.
		t.Save(ctx, posting)
		if err := a.postAll(ctx, m.ChannelID, m.ID, []message{{Content: bot.BusyText}}); err != nil {
			a.logAPI(err, m.ChannelID, "post busy notice", "Send Messages")
			t.GiveUp(ctx, err, transient(err))
			return
		}
		t.Done(ctx, "busy")
	}) {
		t.Abandon()
	}
}

// resume answers a question whose previous attempt died (bot.Resumer).
func (a *Adapter) resume(ctx context.Context, t *bot.Ticket) {
	var p pending
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		a.log.Error("unfinished question cannot be resumed", "key", t.Key(), logErr, err)
		t.Done(ctx, "undeliverable")
		return
	}
	done := a.begin()
	defer done()
	ctx, cancel := context.WithTimeout(ctx, a.cfg.AnswerTimeout)
	defer cancel()
	defer t.Done(ctx, "ended")
	switch p.Kind {
	case kindInteraction:
		in, err := parseInteraction(p.Raw)
		if err != nil {
			t.Done(ctx, "undeliverable")
			return
		}
		_, work, what := a.plan(ctx, in)
		if work == nil || what != workQuestion {
			t.Done(ctx, "undeliverable")
			return
		}
		work(withTicket(ctx, t))
	default:
		var m discordgo.Message
		if err := json.Unmarshal(p.Raw, &m); err != nil || m.Author == nil {
			t.Done(ctx, "undeliverable")
			return
		}
		a.message(withTicket(ctx, t), &m, p.Mentioned)
	}
}

// posting marks a ticket whose answer is being posted: a message answer has no placeholder
// to edit, so an attempt resumed after a crash first looks for the answer a previous
// attempt may have posted.
const posting = "posting"

// postedBefore reports whether a previous attempt at this question already posted its
// reply, an answer or a busy notice (and ends the ticket then); otherwise it marks the
// ticket as posting. It looks for a message by footnote after the question in the channel
// the answer goes to. Only an earlier attempt leaves the mark: this one sets it below.
func (a *Adapter) postedBefore(ctx context.Context, t *bot.Ticket, q question) bool {
	if t.Placeholder() == posting && q.messageID != "" {
		var msgs []*discordgo.Message
		err := a.call(ctx, "list messages", func(opts ...discordgo.RequestOption) error {
			var err error
			msgs, err = a.s.ChannelMessages(q.target, 50, "", q.messageID, "", opts...)
			return err
		})
		if err != nil {
			a.logAPI(err, q.target, "look for an earlier answer", "Read Message History")
		}
		self := a.selfID()
		for _, m := range msgs {
			if m.Author != nil && m.Author.ID == self && (m.MessageReference == nil || m.MessageReference.MessageID == q.messageID) {
				a.log.Info("reply posted by an earlier attempt; not posting another", "key", t.Key(), "message", m.ID)
				outcome := "answered"
				if m.Content == bot.BusyText {
					outcome = "busy"
				}
				t.Done(ctx, outcome)
				return true
			}
		}
	}
	t.Save(ctx, posting)
	return false
}

type ticketKey struct{}

// withTicket carries a question's ticket to the code that answers it.
func withTicket(ctx context.Context, t *bot.Ticket) context.Context {
	return context.WithValue(ctx, ticketKey{}, t)
}

// ticketFrom is the question's ticket; nil (whose methods do nothing) for clicks.
func ticketFrom(ctx context.Context) *bot.Ticket {
	t, _ := ctx.Value(ticketKey{}).(*bot.Ticket)
	return t
}

func transient(err error) bool {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		return true
	}
	if e, ok := restError(err); ok {
		return e.status == http.StatusTooManyRequests || e.status >= 500
	}
	return true // network
}
