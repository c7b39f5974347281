package bot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/footnote-dev/footnote/rag"
)

// ErrBusy is returned by Query and Within when the core has no room: the caller should
// answer HTTP 429 with Retry-After.
var ErrBusy = errors.New("footnote is answering too many questions; try again in a minute")

// LimitError is returned by Query when a rate limit refused the question.
type LimitError struct {
	Scope string        // "user" or "channel"
	Wait  time.Duration // until a token is available
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("rate limited (%s): try again in %s", e.Scope, humanWait(e.Wait))
}

// Query answers a question for a caller that wants the pipeline's full Answer (the JSON API)
// under the same rules as Ask: rate limits, the gate, the timeout, the query log and the
// metrics. req.Text is ignored: q is asked as given (its history, method and filter come
// from the caller). Errors are the pipeline's, ErrBusy, or a *LimitError; rag.ErrNoEvidence
// becomes a refusal.
func (b *Bot) Query(ctx context.Context, req Request, q rag.Question) (rag.Answer, error) {
	start := time.Now()
	if req.ID == "" {
		req.ID = newID("r-", 10)
	}
	kind := KindAnswer
	defer func() {
		b.m.requests.WithLabelValues(req.Platform, string(kind)).Inc()
		b.m.latency.WithLabelValues(req.Platform, string(kind)).Observe(time.Since(start).Seconds())
	}()
	log := b.log.With(logRequestID, req.ID, logPlatform, req.Platform, logUser, req.User)
	ql := queryLog{At: b.cfg.Now(), RequestID: req.ID, Platform: req.Platform, Tenant: req.Tenant,
		Channel: req.Channel, User: req.User, Question: Clean(q.Text)}
	if scope, _, wait := b.limitWait(req); wait > 0 {
		b.m.rateLimited.WithLabelValues(scope).Inc()
		kind, ql.Kind = KindRateLimited, KindRateLimited
		b.logQuery(ctx, log, ql)
		return rag.Answer{}, &LimitError{Scope: scope, Wait: wait}
	}
	if b.cfg.Asker == nil {
		return rag.Answer{}, fmt.Errorf("query: %w: no default corpus", ErrUnknownCorpus)
	}
	var ans rag.Answer
	err := b.Within(ctx, req.Platform, func(ctx context.Context) error {
		var err error
		ans, err = b.cfg.Asker.Ask(ctx, q, func(string) error { return nil })
		return err
	})
	if errors.Is(err, ErrBusy) {
		kind, ql.Kind = KindBusy, KindBusy
		b.logQuery(ctx, log, ql)
		return rag.Answer{}, err
	}
	if err != nil && errors.Is(err, rag.ErrNoEvidence) {
		ans, err = rag.Answer{Question: q.Text, Text: rag.Refusal, Refused: true}, nil
	}
	kind = b.record(ctx, req.ID, req.Platform, req.User, q, ans, err, time.Since(start))
	if err == nil {
		b.m.observeTimings(ans.Timings)
	}
	return ans, err
}

// Within runs fn under the gate (a slot, the Timeout) for work other than questions that is
// as heavy as one (retrieval, method comparison); ErrBusy when there is no room.
func (b *Bot) Within(ctx context.Context, platform string, fn func(ctx context.Context) error) error {
	if !admitted(ctx) {
		if !b.gate.admit() {
			b.m.busy.WithLabelValues(platform).Inc()
			return ErrBusy
		}
		defer b.gate.release()
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	if err := b.gate.acquire(ctx); err != nil {
		return fmt.Errorf("wait for a free slot: %w", err)
	}
	defer b.gate.leave()
	return fn(ctx)
}
