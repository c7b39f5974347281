package slack

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

const (
	// maxBody bounds a request body; Slack's payloads are a few kilobytes.
	maxBody = 1 << 20
	// maxSkew is how far a request timestamp may be from now: Slack's request-signing guide
	// rejects requests older than five minutes to stop replays.
	maxSkew = 5 * time.Minute
)

// Handler serves Slack's HTTP mode: POST /slack/events (Events API), POST /slack/commands
// (/ask) and POST /slack/interactions (buttons, modal submissions). Every request is verified
// with the signing secret and acknowledged at once; the answer is worked on afterwards.
// Mount it at "/slack/" of footnote serve's mux.
func (a *Adapter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /slack/events", a.serveEvents)
	mux.HandleFunc("POST /slack/commands", a.serveCommands)
	mux.HandleFunc("POST /slack/interactions", a.serveInteractions)
	return mux
}

var errSignature = errors.New("invalid slack signature")

// verify reads the raw body and checks X-Slack-Signature: "v0=" + hex(HMAC-SHA256(signing
// secret, "v0:" + X-Slack-Request-Timestamp + ":" + body)), compared in constant time, with the
// timestamp no more than five minutes from now.
func (a *Adapter) verify(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	if err := checkSignature(a.cfg.SigningSecret, r.Header, body, a.now()); err != nil {
		if r.URL.Path == "/slack/commands" && sslCheck(body) {
			// Slack probes a command URL's certificate with ssl_check=1; it only needs a 200,
			// and nothing is done with it.
			w.WriteHeader(http.StatusOK)
			return nil, false
		}
		a.log.Warn("rejected slack request", "path", r.URL.Path, logErr, err)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return nil, false
	}
	return body, true
}

func sslCheck(body []byte) bool {
	form, err := url.ParseQuery(string(body))
	return err == nil && form.Get("ssl_check") == "1" && form.Get("command") == ""
}

func checkSignature(secret string, h http.Header, body []byte, now time.Time) error {
	if secret == "" {
		return fmt.Errorf("%w: no signing secret configured", errSignature)
	}
	tsHeader := h.Get("X-Slack-Request-Timestamp")
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad timestamp %q", errSignature, tsHeader)
	}
	if skew := now.Sub(time.Unix(ts, 0)).Abs(); skew > maxSkew {
		return fmt.Errorf("%w: timestamp %s off", errSignature, skew.Round(time.Second))
	}
	got, err := hex.DecodeString(trimV0(h.Get("X-Slack-Signature")))
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: malformed signature", errSignature)
	}
	if !hmac.Equal(got, sign(secret, tsHeader, body)) {
		return fmt.Errorf("%w: mismatch", errSignature)
	}
	return nil
}

func trimV0(sig string) string {
	if len(sig) > 3 && sig[:3] == "v0=" {
		return sig[3:]
	}
	return "" // other versions are not defined
}

// sign is the raw v0 signature of a request.
func sign(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + timestamp + ":"))
	m.Write(body)
	return m.Sum(nil)
}

// Signature is the X-Slack-Signature header value Slack would send: "v0=" + hex digest. Tests
// and local tools use it to sign requests.
func Signature(secret, timestamp string, body []byte) string {
	return "v0=" + hex.EncodeToString(sign(secret, timestamp, body))
}

func (a *Adapter) serveEvents(w http.ResponseWriter, r *http.Request) {
	body, ok := a.verify(w, r)
	if !ok {
		return
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		a.log.Warn("unparsable event", logErr, err)
		w.Header().Set("X-Slack-No-Retry", "1") // a retry would not parse either
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		var v slackevents.ChallengeResponse
		if err := json.Unmarshal(body, &v); err != nil {
			http.Error(w, "bad challenge", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, v.Challenge)
	case slackevents.CallbackEvent:
		if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
			a.log.Info("slack retried an event", "retry_num", n, "retry_reason", r.Header.Get("X-Slack-Retry-Reason"))
		}
		// Classify and record the question before acknowledging (Slack wants a 2xx within
		// 3 s and retries otherwise): the answer itself is worked on in the background.
		a.onEvent(withReceived(r.Context(), time.Now()), ev)
		w.WriteHeader(http.StatusOK)
	default:
		// app_rate_limited and other outer events need no answer but a 200.
		a.log.Info("slack outer event", "type", ev.Type)
		w.WriteHeader(http.StatusOK)
	}
}

func (a *Adapter) serveCommands(w http.ResponseWriter, r *http.Request) {
	body, ok := a.verify(w, r)
	if !ok {
		return
	}
	// SlashCommandParse reads the body itself: give it the verified bytes again.
	r.Body = io.NopCloser(bytes.NewReader(body))
	cmd, err := slack.SlashCommandParse(r)
	if err != nil {
		http.Error(w, "bad command", http.StatusBadRequest)
		return
	}
	// An empty 200 acknowledges the command without a visible response; the answer follows
	// through the Web API (response_url allows only 5 uses in 30 minutes). When the core has
	// no room, the acknowledgement itself carries the busy notice.
	if busy := a.command(withReceived(r.Context(), time.Now()), cmd); busy != nil {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(busy)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (a *Adapter) serveInteractions(w http.ResponseWriter, r *http.Request) {
	body, ok := a.verify(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		a.log.Warn("unparsable interaction", logErr, err)
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	// An empty 200 also closes a submitted modal.
	w.WriteHeader(http.StatusOK)
	t := interactionTarget(cb)
	a.background(r.Context(), t.channel, t.user, t.thread, func(ctx context.Context) { a.onInteraction(ctx, cb) })
}
