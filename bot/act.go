package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// maxComment bounds a stored feedback comment (Discord modals allow 4,000 characters,
// Slack plain_text_input 3,000).
const maxComment = 4000

// Act handles a button click (or a submitted feedback comment). It never fails: an unknown
// or expired answer id gives a polite KindNotice, a store error a KindError reply.
func (b *Bot) Act(ctx context.Context, c Click) Reply {
	reqID := newID("a-", 10)
	log := b.log.With(logRequestID, reqID, logPlatform, c.Platform, logChannel, c.Channel, logUser, c.User,
		logAction, c.Action.Kind, logAnswerID, c.Action.AnswerID)
	r := b.act(ctx, log, c)
	r.RequestID = reqID
	result := "ok"
	switch r.Kind {
	case KindNotice:
		if r.AnswerID == "" {
			result = "expired"
		}
	case KindError, KindDuplicate:
		result = string(r.Kind)
	}
	b.m.actions.WithLabelValues(string(c.Action.Kind), result).Inc()
	return r
}

const expired = "That answer is no longer available, so I can't do that. Please ask the question again."

func (b *Bot) act(ctx context.Context, log *slog.Logger, c Click) Reply {
	if c.EventID != "" {
		ok, err := b.state.claim(ctx, "act/"+c.Platform+"/"+c.EventID, b.cfg.Now())
		switch {
		case err != nil:
			log.Warn("claim event; acting anyway", logEventID, c.EventID, logErr, err)
		case !ok:
			return Reply{Kind: KindDuplicate}
		}
	}
	id := c.Action.AnswerID
	if !validID(id) {
		return Reply{Kind: KindNotice, Private: true, Paragraphs: []string{expired}}
	}
	notice := func(rec record, text string) Reply {
		return Reply{Kind: KindNotice, AnswerID: rec.ID, Private: true, Paragraphs: []string{text}}
	}
	fail := func(err error) Reply {
		text, reason := explain(err)
		ref := newID("e-", 8)
		log.Error("action failed", logErrorRef, ref, logReason, reason, logErr, err)
		b.m.errors.WithLabelValues(reason).Inc()
		return Reply{Kind: KindError, Private: true, ErrorRef: ref,
			Paragraphs: []string{text + fmt.Sprintf(" If it keeps happening, give an admin this reference: %s.", ref)}}
	}

	var rec record
	var err error
	var more []Source
	if c.Action.Kind == ActMoreSources {
		rec, more, err = b.state.nextMore(ctx, id, b.cfg.MoreBatch)
	} else {
		rec, err = b.state.answer(ctx, id)
	}
	if errors.Is(err, errNoRecord) || err == nil && b.cfg.Now().Sub(rec.At) > b.cfg.AnswerTTL {
		return Reply{Kind: KindNotice, Private: true, Paragraphs: []string{expired}}
	}
	if err != nil {
		return fail(err)
	}

	switch c.Action.Kind {
	case ActShowSource:
		for _, s := range append(append([]Source(nil), rec.Sources...), rec.More...) {
			if s.N == c.Action.Source {
				r := Reply{Kind: KindSource, AnswerID: rec.ID, Question: rec.Question,
					Sources: []Source{s}, Private: rec.Private}
				b.figure(ctx, log, &r)
				b.link(&r)
				return r
			}
		}
		return notice(rec, fmt.Sprintf("That answer has no source %d.", c.Action.Source))

	case ActMoreSources:
		if len(more) == 0 {
			if len(rec.More) == 0 {
				return notice(rec, "There are no further sources for this answer.")
			}
			return notice(rec, "That's all: I've shown every source I found for this question.")
		}
		r := Reply{Kind: KindSources, AnswerID: rec.ID, Question: rec.Question, Private: rec.Private}
		for _, s := range more {
			s.Text = ""
			r.Sources = append(r.Sources, s)
			r.Actions = append(r.Actions, Action{Kind: ActShowSource, AnswerID: rec.ID, Source: s.N,
				Label: fmt.Sprintf("Show source %d", s.N)})
		}
		if rec.MoreShown < len(rec.More) {
			r.Actions = append(r.Actions, Action{Kind: ActMoreSources, AnswerID: rec.ID, Label: actionLabel(ActMoreSources)})
		}
		return r

	case ActFeedbackUp, ActFeedbackDown:
		vote, label := 1, "up"
		if c.Action.Kind == ActFeedbackDown {
			vote, label = -1, "down"
		}
		comment := truncate(strings.TrimSpace(c.Comment), maxComment)
		if err := b.state.feedback(ctx, rec.ID, c.Platform, c.User, vote, comment, b.cfg.Now()); err != nil {
			return fail(err)
		}
		b.m.feedback.WithLabelValues(label).Inc()
		log.Info("feedback", "vote", label, "comment", comment != "")
		switch {
		case comment != "":
			return notice(rec, "Thanks for the feedback and the comment: it helps improve the answers.")
		case vote < 0:
			return notice(rec, "Thanks for the feedback. If you tell me what was wrong, it helps more.")
		}
		return notice(rec, "Thanks for the feedback!")

	case ActShare:
		return render(rec, true)
	}
	return notice(rec, "I don't know that button. It may come from a newer or older footnote.")
}
