package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Retry defaults shared by both embedders.
const (
	defaultMaxRetries = 4
	defaultMinBackoff = 500 * time.Millisecond
	defaultMaxBackoff = 30 * time.Second
	// maxRetryAfter bounds how long a server's Retry-After may hold a request.
	maxRetryAfter = time.Minute
)

// httpError is a failed HTTP exchange with the status that decides whether to retry.
// It replaces the SDKs' error types, which must not leak out of this package.
type httpError struct {
	service string // "openai" or "ollama"
	status  int    // 0: no response (a transport error)
	msg     string
}

func (e *httpError) Error() string {
	if e.status == 0 {
		return fmt.Sprintf("%s: %s", e.service, e.msg)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.service, e.status, e.msg)
}

// retryable reports whether a request that failed this way may succeed when repeated:
// rate limits (429), server errors (5xx) and transport failures; not other 4xx.
func (e *httpError) retryable() bool {
	return e.status == 0 || e.status == http.StatusTooManyRequests || e.status >= 500
}

// backoff repeats a request on retryable errors with exponential backoff and full jitter,
// waiting at least as long as the server's Retry-After asks.
type backoff struct {
	retries  int // retries after the first attempt
	min, max time.Duration
	log      *slog.Logger
}

func newBackoff(retries int, min, max time.Duration, log *slog.Logger) backoff {
	switch {
	case retries == 0:
		retries = defaultMaxRetries
	case retries < 0:
		retries = 0
	}
	if min <= 0 {
		min = defaultMinBackoff
	}
	if max <= 0 {
		max = defaultMaxBackoff
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return backoff{retries: retries, min: min, max: max, log: log}
}

// do calls fn until it succeeds, fails for good, retries run out or ctx ends. fn receives a
// context carrying a retryHint that the HTTP layer fills from the response's Retry-After.
func (b backoff) do(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	for attempt := 0; ; attempt++ {
		hint := &retryHint{}
		err := fn(context.WithValue(ctx, retryHintKey{}, hint))
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var he *httpError
		if !errors.As(err, &he) || !he.retryable() {
			return err
		}
		if attempt >= b.retries {
			return fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)
		}
		wait := b.delay(attempt, hint.get())
		b.log.WarnContext(ctx, "retrying", "request", what, "attempt", attempt+1, "status", he.status, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// delay is min·2^attempt capped at max, jittered uniformly into its upper half so
// concurrent clients spread out, and never shorter than Retry-After.
func (b backoff) delay(attempt int, retryAfter time.Duration) time.Duration {
	d := b.min << min(attempt, 20)
	if d > b.max || d <= 0 {
		d = b.max
	}
	d = d/2 + rand.N(d/2+1)
	if retryAfter > d {
		d = min(retryAfter, maxRetryAfter)
	}
	return d
}

type retryHintKey struct{}

// retryHint carries a response's Retry-After from the HTTP client back to backoff.do.
type retryHint struct {
	mu    sync.Mutex
	after time.Duration
}

func (h *retryHint) set(d time.Duration) {
	h.mu.Lock()
	h.after = d
	h.mu.Unlock()
}

func (h *retryHint) get() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.after
}

// hintTransport records Retry-After of 429 and 503 responses into the request context's
// retryHint: the SDKs turn such responses into errors without their headers.
type hintTransport struct {
	base http.RoundTripper
	now  func() time.Time
}

func (t hintTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return resp, err
	}
	if h, ok := req.Context().Value(retryHintKey{}).(*retryHint); ok {
		h.set(parseRetryAfter(resp.Header.Get("Retry-After"), t.now()))
	}
	return resp, nil
}

// hinting returns a copy of c (nil: a client with timeout) whose transport feeds
// Retry-After to the backoff.
func hinting(c *http.Client, timeout time.Duration) *http.Client {
	if c == nil {
		c = &http.Client{Timeout: timeout}
	}
	cc := *c
	base := cc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc.Transport = hintTransport{base: base, now: time.Now}
	return &cc
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date (RFC 9110 §10.2.3).
// Anything else, or a time in the past, is zero.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// transportError wraps an error that came without an HTTP status. Timeouts and
// connection failures are retryable; a cancelled context is returned as it is.
func transportError(service string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &httpError{service: service, msg: err.Error()}
	}
	return fmt.Errorf("%s: %s", service, err)
}
