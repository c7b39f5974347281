// Package generate holds footnote's answer generators: an Ollama chat client and an
// OpenAI-compatible one (OpenAI, vLLM, llama.cpp server, LM Studio, …). Both implement
// rag.Generator, stream the answer through the caller's callback, and translate their
// SDK's errors: an HTTP failure becomes an *HTTPError, a timeout wraps
// context.DeadlineExceeded, so rag can tell the user why it fell back to an extractive
// answer without knowing either SDK.
package generate

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Defaults shared by the generators. A generation is bounded by progress, not only by its
// total time: a small local model may need a minute of prefill before its first token and
// then stream steadily, while a stuck server streams nothing at all.
const (
	DefaultTemperature       = 0.1
	DefaultMaxTokens         = 1024
	DefaultTimeout           = 5 * time.Minute  // total, first byte to last
	DefaultFirstTokenTimeout = 90 * time.Second // request sent to first token (prefill)
	DefaultIdleTimeout       = 30 * time.Second // between two tokens
)

// HTTPError is a generator server's error response.
type HTTPError struct {
	Generator  string // e.g. "ollama:llama3.2"
	StatusCode int
	Message    string
}

func (e *HTTPError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: HTTP %d", e.Generator, e.StatusCode)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Generator, e.StatusCode, e.Message)
}

// HTTPStatus returns the status code; rag reads it through a one-method interface.
func (e *HTTPError) HTTPStatus() int { return e.StatusCode }

// Timeouts bounds one generation.
type Timeouts struct {
	Total      time.Duration // first byte to last; zero means DefaultTimeout
	FirstToken time.Duration // request to first answer text; zero means DefaultFirstTokenTimeout
	Idle       time.Duration // between two pieces of answer text; zero means DefaultIdleTimeout
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Total == 0 {
		t.Total = DefaultTimeout
	}
	if t.FirstToken == 0 {
		t.FirstToken = DefaultFirstTokenTimeout
	}
	if t.Idle == 0 {
		t.Idle = DefaultIdleTimeout
	}
	return t
}

// watchdog cancels a generation that stops making progress. Its cause wraps
// context.DeadlineExceeded, so ctxErr tells a parent cancellation (returned as the
// parent's error) from this generator's own deadlines, and rag reports a timeout.
type watchdog struct {
	timer   *time.Timer
	t       Timeouts
	started time.Time
	first   atomic.Int64 // nanoseconds to the first token; zero until it came
}

// watch returns the generation's context and its watchdog; call stop when done.
func watch(ctx context.Context, t Timeouts) (context.Context, *watchdog, func()) {
	t = t.withDefaults()
	ctx, cancelTotal := context.WithTimeoutCause(ctx, t.Total, errTimeout{"no complete answer within", t.Total})
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{t: t, started: time.Now()}
	w.timer = time.AfterFunc(t.FirstToken, func() {
		if w.first.Load() == 0 {
			cancel(errTimeout{"no first token within", t.FirstToken})
			return
		}
		cancel(errTimeout{"no new token within", t.Idle})
	})
	return ctx, w, func() {
		w.timer.Stop()
		cancel(nil)
		cancelTotal()
	}
}

// progress records answer text: the idle limit starts again. A token that races with the
// timer firing loses, which is what a limit means.
func (w *watchdog) progress() {
	if w.first.Load() == 0 {
		w.first.Store(max(int64(time.Since(w.started)), 1))
	}
	w.timer.Reset(w.t.Idle)
}

// firstToken is the time from the request to the first answer text, zero if none came.
func (w *watchdog) firstToken() time.Duration { return time.Duration(w.first.Load()) }

type errTimeout struct {
	what string
	d    time.Duration
}

func (e errTimeout) Error() string { return fmt.Sprintf("%s %s", e.what, e.d) }
func (e errTimeout) Unwrap() error { return context.DeadlineExceeded }

// ctxErr returns the reason ctx ended: the parent's error, or this generator's timeout.
func ctxErr(parent, ctx context.Context) error {
	if err := parent.Err(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		return ctx.Err()
	}
	return nil
}

// cbError marks an error from the caller's callback so it is returned unchanged.
type cbError struct{ err error }

func (e cbError) Error() string { return e.err.Error() }

func callbackErr(err error) (error, bool) {
	var cb cbError
	if errors.As(err, &cb) {
		return cb.err, true
	}
	return nil, false
}
