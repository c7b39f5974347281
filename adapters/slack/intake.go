package slack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/footnote-dev/footnote/bot"
)

// How a delivery becomes work: the transport (HTTP or Socket Mode) classifies the payload
// before acknowledging it; a question is recorded in the core (Accept) and admitted
// (Core.Go) or answered at once with the busy notice; only then is the delivery
// acknowledged. The core's gate is the only bound: no goroutine is started for work that
// would wait.

// pending is what a question needs to be answered again after a restart (bot.Ticket's
// payload).
type pending struct {
	Kind        string `json:"k"` // kindMessage or kindCommand
	Team        string `json:"team,omitempty"`
	Channel     string `json:"ch"`
	User        string `json:"u"`
	Text        string `json:"text"`
	TS          string `json:"ts,omitempty"`
	Thread      string `json:"th,omitempty"`
	ResponseURL string `json:"ru,omitempty"`
}

const (
	kindMessage = "msg"
	kindCommand = "cmd"
)

type receivedKey struct{}

// withReceived stamps ctx with when the delivery arrived, for the delivery latency.
func withReceived(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, receivedKey{}, t)
}

func receivedAt(ctx context.Context) time.Time {
	if t, ok := ctx.Value(receivedKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

// accept records a question under key and admits it. It returns the ticket when the core had
// no room (the caller shows the busy notice and calls Done), nil otherwise (admitted, or a
// duplicate that gets nothing).
func (a *Adapter) accept(ctx context.Context, key string, p pending) (busy *bot.Ticket) {
	raw, _ := json.Marshal(p)
	t, v := a.core.Accept(ctx, Platform, key, raw, receivedAt(ctx))
	if v == bot.Duplicate {
		a.log.Info("duplicate delivery ignored", "key", key)
		return nil
	}
	done := a.begin()
	ok := a.core.Go(ctx, Platform, bot.WorkQuestion, func(ctx context.Context) {
		defer done()
		ctx, cancel := context.WithTimeout(ctx, a.cfg.AnswerTimeout)
		defer cancel()
		// Work that returns without ending its ticket (a route that forgot to) must not
		// hold a renewed lease forever; an explicit Abandon or Done comes first and wins.
		defer t.Done(ctx, "ended")
		a.work(ctx, t, p)
	})
	if ok {
		return nil
	}
	done()
	return t
}

// background runs a click's work under the core's bound for clicks; when there is no room,
// the clicking user is told so.
func (a *Adapter) background(ctx context.Context, channel, user, thread string, fn func(ctx context.Context)) {
	done := a.begin()
	ok := a.core.Go(ctx, Platform, bot.WorkClick, func(ctx context.Context) {
		defer done()
		ctx, cancel := context.WithTimeout(ctx, a.cfg.AnswerTimeout)
		defer cancel()
		fn(ctx)
	})
	if ok {
		return
	}
	done()
	if channel != "" && user != "" {
		a.core.Notify(ctx, Platform, func(ctx context.Context) {
			_ = a.sendEphemeral(ctx, channel, user, thread, bot.BusyReply())
		})
	}
}

// busyNotice marks a ticket whose busy notice is being sent. An ephemeral message cannot be
// looked up afterwards, so an attempt resumed after a crash in that window sends the notice
// again (work) instead of answering beside one the asker may already have seen: at worst
// the asker sees the notice twice, never an answer beside it and never nothing.
const busyNotice = "busy-notice"

// busyInThread tells the asker, in the question's thread, that footnote is busy.
func (a *Adapter) busyInThread(ctx context.Context, t *bot.Ticket, p pending) {
	ok := a.core.Notify(ctx, Platform, func(ctx context.Context) {
		t.Save(ctx, busyNotice)
		a.sendBusy(ctx, t, p)
	})
	if !ok {
		// Not even the notice can go out now: the question stays pending and is answered
		// when its lease runs out and the core has room again.
		t.Abandon()
	}
}

// sendBusy sends the busy notice of a marked ticket and ends it "busy".
func (a *Adapter) sendBusy(ctx context.Context, t *bot.Ticket, p pending) {
	if a.sendEphemeral(ctx, p.Channel, p.User, p.Thread, bot.BusyReply()) {
		t.Done(ctx, "busy")
		return
	}
	t.GiveUp(ctx, nil, transient(nil))
}

// busyCommand is the acknowledgement body of a slash command the core has no room for: an
// ephemeral reply needs no further API call.
func busyCommand() map[string]string {
	return map[string]string{"response_type": "ephemeral", "text": bot.BusyText}
}

// work answers a question, first or again.
func (a *Adapter) work(ctx context.Context, t *bot.Ticket, p pending) {
	if p.Kind == kindCommand {
		a.onCommand(ctx, t, p)
		return
	}
	if t.Placeholder() == busyNotice {
		a.sendBusy(ctx, t, p)
		return
	}
	req := bot.Request{Platform: Platform, Tenant: p.Team, Channel: p.Channel, Thread: p.Thread, User: p.User, Text: p.Text}
	a.answer(ctx, t, p.Channel, p.Thread, req, "")
}

// resume answers a question whose previous attempt died (bot.Resumer).
func (a *Adapter) resume(ctx context.Context, t *bot.Ticket) {
	var p pending
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.Channel == "" {
		a.log.Error("unfinished question cannot be resumed", "key", t.Key(), logErr, err)
		t.Done(ctx, "undeliverable")
		return
	}
	done := a.begin()
	defer done()
	ctx, cancel := context.WithTimeout(ctx, a.cfg.AnswerTimeout)
	defer cancel()
	defer t.Done(ctx, "ended")
	a.work(ctx, t, p)
}

// transient reports whether a failed Web API call may work later.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	if _, ok := errors.AsType[*slack.RateLimitedError](err); ok {
		return true
	}
	if se, ok := errors.AsType[slack.StatusCodeError](err); ok {
		return se.Code >= 500
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return false // Slack understood and refused (not_in_channel, channel_not_found …)
	}
	return true // network
}

// apiStatus is the HTTP status of a failed Web API call, 0 when there is none.
func apiStatus(err error) int {
	if _, ok := errors.AsType[*slack.RateLimitedError](err); ok {
		return http.StatusTooManyRequests
	}
	if se, ok := errors.AsType[slack.StatusCodeError](err); ok {
		return se.Code
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return http.StatusOK // Slack's errors come with a 200 and ok:false
	}
	return 0
}

// splitRef splits a command's saved reference "question-ts placeholder-ts".
func splitRef(ref string) (qts, pts string) {
	qts, pts, _ = strings.Cut(ref, " ")
	return qts, pts
}
