package bot

import (
	"context"
	"time"
)

// Work is the kind of background work an adapter hands to Go.
type Work int

const (
	// WorkQuestion answers a question: it counts against MaxConcurrent + MaxQueue, the
	// bound Ask enforces for everyone.
	WorkQuestion Work = iota
	// WorkClick handles a button or a modal: quick, no pipeline, with its own bound so a
	// click never waits behind answers.
	WorkClick
)

func (w Work) String() string {
	if w == WorkClick {
		return "click"
	}
	return "question"
}

// notifySlots bounds the busy and failure notices being posted at once. A notice that finds
// no slot is dropped (and counted): by then the platform is being flooded and one more API
// call would make it worse.
const notifySlots = 16

type admittedKey struct{}

// admitted reports whether ctx belongs to a question Go admitted.
func admitted(ctx context.Context) bool {
	v, _ := ctx.Value(admittedKey{}).(bool)
	return v
}

// Go runs fn in the background when the core has room for it, and false at once when it
// has not: the caller must then show BusyReply where the question was asked. Every entry
// point (Slack HTTP and Socket Mode, the Discord gateway and interactions) goes through
// here, so one bound holds for all of them and no goroutine is started for work that
// would only wait. fn's ctx is not cancelled with ctx (an HTTP delivery ends as soon as it
// is acknowledged); fn bounds its own time.
func (b *Bot) Go(ctx context.Context, platform string, w Work, fn func(ctx context.Context)) bool {
	var release func()
	switch w {
	case WorkClick:
		select {
		case b.clicks <- struct{}{}:
			release = func() { <-b.clicks }
		default:
		}
	default:
		if b.gate.admit() {
			release = b.gate.release
		}
	}
	if release == nil {
		b.m.busy.WithLabelValues(platform).Inc()
		b.log.Warn("busy; work turned away", logPlatform, platform, "work", w.String(),
			"max_concurrent", b.cfg.MaxConcurrent, "max_queue", b.cfg.MaxQueue)
		return false
	}
	ctx = context.WithValue(context.WithoutCancel(ctx), admittedKey{}, w == WorkQuestion)
	go func() {
		defer release()
		fn(ctx)
	}()
	return true
}

// Notify posts a short notice (busy, an apology) in the background, bounded by
// notifySlots; false when it was dropped. fn gets a context bounded by deliverTimeout.
func (b *Bot) Notify(ctx context.Context, platform string, fn func(ctx context.Context)) bool {
	select {
	case b.notes <- struct{}{}:
	default:
		b.m.dropped.WithLabelValues(platform).Inc()
		b.log.Error("notice dropped: too many notices in flight", logPlatform, platform)
		return false
	}
	go func() {
		defer func() { <-b.notes }()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DeliverTimeout)
		defer cancel()
		fn(ctx)
	}()
	return true
}

// DeliverTimeout bounds posting one finished reply, retries included.
const DeliverTimeout = 30 * time.Second

// BusyText is what a question turned away at the door is told.
const BusyText = "I'm answering a lot of questions right now. Please try again in a minute."

// BusyReply is the reply to a question the core has no room for.
func BusyReply() Reply {
	return Reply{Kind: KindBusy, Private: true, Paragraphs: []string{BusyText}}
}

// ApologyText is posted in place of an answer to a question that could not be answered
// before it grew too old to resume (footnote was down or restarting).
const ApologyText = "Sorry, I was restarting and lost track of this question. Please ask it again."

// PlatformError counts a failed platform API call (status is the HTTP status, 0 for a
// network error); 429s are counted as rate limits too.
func (b *Bot) PlatformError(platform string, status int) {
	b.m.platformErrors.WithLabelValues(platform, statusClass(status)).Inc()
	if status == 429 {
		b.m.platformRateLimited.WithLabelValues(platform).Inc()
	}
}

func statusClass(status int) string {
	switch {
	case status == 429:
		return "429"
	case status >= 500:
		return "5xx"
	case status >= 400:
		return "4xx"
	case status > 0:
		return "refused" // the platform answered 2xx with an error (Slack's ok:false)
	}
	return "network"
}
