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
	"time"
)

// Defaults shared by the generators.
const (
	DefaultTemperature = 0.1
	DefaultMaxTokens   = 1024
	DefaultTimeout     = 2 * time.Minute
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

// withTimeout bounds one generation. The returned error translator tells a parent
// cancellation (returned as the parent's error) from this generator's own deadline
// (wrapped context.DeadlineExceeded naming the timeout).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errTimeout{d})
}

type errTimeout struct{ d time.Duration }

func (e errTimeout) Error() string { return fmt.Sprintf("no answer within %s", e.d) }
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
