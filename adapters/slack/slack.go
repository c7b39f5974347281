// Package slack is footnote's Slack adapter: /ask, mentions, DMs and thread follow-ups,
// over Socket Mode (Run) or the Events API over HTTP (Handler). It turns Slack payloads into
// bot Requests and Clicks and renders bot Replies as Block Kit. It is the only package that
// imports github.com/slack-go/slack.
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/footnote-dev/footnote/bot"
)

// Core is the part of *bot.Bot the adapter calls.
type Core interface {
	// Ask answers a question and never fails: errors come back as KindError replies. onDelta
	// receives the answer text generated so far.
	Ask(ctx context.Context, req bot.Request, onDelta func(text string)) bot.Reply
	// Act handles a button press or a feedback comment.
	Act(ctx context.Context, c bot.Click) bot.Reply
	// Following reports whether footnote holds a conversation in the thread.
	Following(ctx context.Context, platform, channel, thread string) bool
	// Claim records a delivery key once; false when it was claimed before.
	Claim(ctx context.Context, key string) bool
	// Documents is the number of documents searched, for "Searching 12 papers…".
	Documents(ctx context.Context) int

	// Accept records a question before its delivery is acknowledged (bot.Bot.Accept).
	Accept(ctx context.Context, platform, key string, payload []byte, received time.Time) (*bot.Ticket, bot.Verdict)
	// Go runs work in the background when the core has room; false means show the busy
	// notice (bot.Bot.Go).
	Go(ctx context.Context, platform string, w bot.Work, fn func(ctx context.Context)) bool
	// Notify posts a short notice under a small bound of its own (bot.Bot.Notify).
	Notify(ctx context.Context, platform string, fn func(ctx context.Context)) bool
	// OnResume registers how unfinished questions are answered after a restart.
	OnResume(platform string, fn bot.Resumer)
	// PlatformError counts a failed Web API call by HTTP status.
	PlatformError(platform string, status int)
}

// Platform is the bot.Request.Platform of Slack requests.
const Platform = "slack"

// Log attribute keys.
const (
	logChannel = "channel"
	logEventID = "event_id"
	logMethod  = "method"
	logErr     = "err"
	logKind    = "kind"
)

// Config configures an Adapter.
type Config struct {
	// BotToken is the bot user OAuth token (xoxb-…). Required.
	BotToken string
	// AppToken is the app-level token (xapp-…, scope connections:write) Run needs for Socket
	// Mode. Empty means HTTP mode only.
	AppToken string
	// SigningSecret verifies HTTP requests from Slack (Handler). Empty makes Handler reject
	// every request with 401.
	SigningSecret string
	// APIURL is the Web API base URL, ending in "/". Empty means https://slack.com/api/.
	APIURL string
	// Core answers questions. Required.
	Core Core
	// Logger receives the adapter's and slack-go's logs. Nil discards.
	Logger *slog.Logger
	// HTTPClient makes Web API calls. Nil means http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock for request signature freshness. Nil means time.Now.
	Now func() time.Time
	// Policy gives a channel's behaviour; team is the Slack workspace id. Nil means
	// DefaultPolicy everywhere. Wire it to bot.Route so adapter and core agree.
	Policy func(team, channel string) Policy
	// UpdateInterval is the minimum time between progressive chat.update calls while an answer
	// is generated. Zero means 1s (chat.update is a Tier 3 method, ~50 per minute); negative
	// disables progressive updates.
	UpdateInterval time.Duration
	// AnswerTimeout bounds the work on one event after it was acknowledged. Zero means 3 minutes.
	AnswerTimeout time.Duration
	// Native configures the AI-app surface: shortcut, assistant threads, streaming, App
	// Home (native.go).
	Native NativeConfig
	// MaxRetries is how often a Web API call answered 429 (after Retry-After) or 5xx (after
	// a doubling backoff from RetryDelay) is retried. Zero means 3; negative disables retries.
	MaxRetries int
	// RetryDelay is the first wait before retrying a 5xx. Zero means 1s.
	RetryDelay time.Duration
	// ReconnectDelay is the first wait before opening Socket Mode again after it failed; it
	// doubles up to 2 minutes. Zero means 1s.
	ReconnectDelay time.Duration
}

// LogValue keeps the tokens and the signing secret out of logs.
func (c Config) LogValue() slog.Value {
	redact := func(s string) string {
		if s == "" {
			return ""
		}
		return "[redacted]"
	}
	return slog.GroupValue(
		slog.String("bot_token", redact(c.BotToken)),
		slog.String("app_token", redact(c.AppToken)),
		slog.String("signing_secret", redact(c.SigningSecret)),
		slog.String("api_url", c.APIURL),
		slog.Bool("socket_mode", c.AppToken != ""),
		slog.Duration("update_interval", c.UpdateInterval),
		slog.Duration("answer_timeout", c.AnswerTimeout),
	)
}

// Policy is how footnote behaves in one channel.
type Policy struct {
	// Private makes /ask answers ephemeral: only the asker sees them, with a Share with
	// channel button.
	Private bool
	// RequireMention: new questions in the channel must mention footnote. False makes every
	// top-level message in the channel a question (a dedicated Q&A channel). DMs never need a
	// mention.
	RequireMention bool
	// MentionFollowUps: follow-ups in threads footnote answered need a mention too. False
	// (the default) treats every human message in such a thread as a follow-up.
	MentionFollowUps bool
}

// DefaultPolicy is the Policy when Config.Policy is nil: public answers, questions by mention,
// follow-ups without one.
var DefaultPolicy = Policy{RequireMention: true}

func (a *Adapter) policy(team, channel string) Policy {
	if a.cfg.Policy == nil {
		return DefaultPolicy
	}
	return a.cfg.Policy(team, channel)
}

// Adapter connects Slack to the core.
type Adapter struct {
	cfg  Config
	api  *slack.Client
	core Core
	log  *slog.Logger
	now  func() time.Time

	link bot.Link // Socket Mode connection, for /health

	mu       sync.Mutex
	inflight int
	idle     []chan struct{} // closed when inflight drops to zero
}

// New validates cfg and returns an Adapter. It performs no I/O.
func New(cfg Config) (*Adapter, error) {
	if cfg.BotToken == "" {
		return nil, errors.New("slack: bot token is required")
	}
	if cfg.Core == nil {
		return nil, errors.New("slack: core is required")
	}
	if cfg.AppToken != "" && !strings.HasPrefix(cfg.AppToken, "xapp-") {
		return nil, errors.New("slack: app token must be an app-level token (xapp-…)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.UpdateInterval == 0 {
		cfg.UpdateInterval = time.Second
	}
	if cfg.AnswerTimeout == 0 {
		cfg.AnswerTimeout = 3 * time.Minute
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	if cfg.ReconnectDelay <= 0 {
		cfg.ReconnectDelay = time.Second
	}
	log := cfg.Logger.With("component", "slack")
	opts := []slack.Option{
		slack.OptionLog(sdkLogger{log}),
		slack.OptionDebug(log.Enabled(context.Background(), slog.LevelDebug)),
		slack.OptionOnWarning(func(path string, _ any, w *slack.Warning) {
			log.Warn("slack api warning", logMethod, path, "warning", w.Warnings, "codes", w.Codes)
		}),
	}
	if cfg.APIURL != "" {
		u := cfg.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		opts = append(opts, slack.OptionAPIURL(u))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, slack.OptionHTTPClient(cfg.HTTPClient))
	}
	if cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(cfg.AppToken))
	}
	a := &Adapter{
		cfg:  cfg,
		api:  slack.New(cfg.BotToken, opts...),
		core: cfg.Core,
		log:  log,
		now:  cfg.Now,
	}
	cfg.Core.OnResume(Platform, a.resume)
	return a, nil
}

// Wait blocks until the work on acknowledged events has finished or ctx ends. Call it on
// shutdown after the HTTP server and Run have stopped taking events.
func (a *Adapter) Wait(ctx context.Context) error {
	a.mu.Lock()
	if a.inflight == 0 {
		a.mu.Unlock()
		return nil
	}
	idle := make(chan struct{})
	a.idle = append(a.idle, idle)
	a.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("slack: wait for in-flight answers: %w", ctx.Err())
	}
}

// begin counts one piece of work as in flight (before its delivery is acknowledged, so Wait
// cannot miss it); the returned func ends it.
func (a *Adapter) begin() func() {
	a.mu.Lock()
	a.inflight++
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.inflight--
		if a.inflight == 0 {
			for _, c := range a.idle {
				close(c)
			}
			a.idle = nil
		}
	}
}

// sdkLogger routes slack-go's logs (debug output only) into slog.
type sdkLogger struct{ log *slog.Logger }

func (l sdkLogger) Output(_ int, s string) error {
	l.log.Debug(strings.TrimSpace(s), "source", "slack-go")
	return nil
}

// retry calls fn again after Retry-After when Slack answers 429 (*slack.RateLimitedError),
// and after a doubling backoff on a 5xx; every failure is counted.
func (a *Adapter) retry(ctx context.Context, method string, fn func() error) error {
	backoff := a.cfg.RetryDelay
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		status := apiStatus(err)
		a.core.PlatformError(Platform, status)
		var wait time.Duration
		if rl, ok := errors.AsType[*slack.RateLimitedError](err); ok {
			wait = max(rl.RetryAfter, time.Second)
		} else if status >= 500 {
			wait, backoff = backoff, min(2*backoff, 30*time.Second)
		}
		if wait == 0 || attempt >= a.cfg.MaxRetries {
			return fmt.Errorf("%s: %w", method, err)
		}
		a.log.Warn("slack api call failed, retrying", logMethod, method, "status", status, "retry_after", wait, "attempt", attempt+1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w", method, ctx.Err())
		}
	}
}

// post posts a message (in a thread when thread is set) and returns its ts.
func (a *Adapter) post(ctx context.Context, channel, thread string, m message) (string, error) {
	opts := []slack.MsgOption{slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	var ts string
	err := a.retry(ctx, "chat.postMessage", func() error {
		var err error
		_, ts, err = a.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	return ts, err
}

func (a *Adapter) update(ctx context.Context, channel, ts string, m message) error {
	return a.retry(ctx, "chat.update", func() error {
		_, _, _, err := a.api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...))
		return err
	})
}

func (a *Adapter) ephemeral(ctx context.Context, channel, user, thread string, m message) error {
	opts := []slack.MsgOption{slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	return a.retry(ctx, "chat.postEphemeral", func() error {
		_, err := a.api.PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
}

// logAPI logs a failed Web API call with its details; users never see err.Error().
func (a *Adapter) logAPI(err error, channel string, attrs ...any) {
	attrs = append(attrs, logChannel, channel, logErr, err)
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		attrs = append(attrs, "slack_error", se.Err, "messages", se.ResponseMetadata.Messages)
	}
	a.log.Error("slack web api call", attrs...)
}

// textMessage is a one-section message.
func textMessage(mrkdwn, fallback string) message {
	return message{Text: fallback, Blocks: []slack.Block{mrkdwnSection(mrkdwn)}}
}

func (a *Adapter) placeholder(ctx context.Context) message {
	n := a.core.Documents(ctx)
	var s string
	switch {
	case n == 1:
		s = "Searching 1 paper…"
	case n > 1:
		s = "Searching " + strconv.Itoa(n) + " papers…"
	default:
		s = "Searching…"
	}
	return textMessage("_"+s+"_", s)
}
