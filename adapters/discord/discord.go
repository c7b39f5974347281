// Package discord is footnote's Discord adapter: /ask, @mentions, DMs and thread follow-ups
// over the gateway (Run) and the HTTP interactions endpoint (Handler). It turns Discord
// payloads into bot Requests and Clicks and renders bot Replies as messages with embeds and
// buttons. It is the only package that imports github.com/bwmarrin/discordgo.
package discord

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

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

	// Accept records a question before it is acknowledged (bot.Bot.Accept).
	Accept(ctx context.Context, platform, key string, payload []byte, received time.Time) (*bot.Ticket, bot.Verdict)
	// Go runs work in the background when the core has room; false means show the busy
	// notice (bot.Bot.Go).
	Go(ctx context.Context, platform string, w bot.Work, fn func(ctx context.Context)) bool
	// Notify posts a short notice under a small bound of its own (bot.Bot.Notify).
	Notify(ctx context.Context, platform string, fn func(ctx context.Context)) bool
	// OnResume registers how unfinished questions are answered after a restart.
	OnResume(platform string, fn bot.Resumer)
	// PlatformError counts a failed REST call by HTTP status.
	PlatformError(platform string, status int)
}

// Platform is the bot.Request.Platform of Discord requests.
const Platform = "discord"

// Log attribute keys.
const (
	logChannel    = "channel"
	logGuild      = "guild"
	logStep       = "step"
	logErr        = "err"
	logKind       = "kind"
	logPermission = "permission"
	logRequestID  = "request_id"
)

// Gateway intents (Discord gateway reference). MESSAGE_CONTENT is privileged: without it
// Discord still delivers the content of messages that mention footnote and of DMs.
const (
	intentGuildMessages  = discordgo.IntentsGuildMessages  // 1 << 9
	intentDirectMessages = discordgo.IntentsDirectMessages // 1 << 12
	intentMessageContent = discordgo.IntentMessageContent  // 1 << 15
)

// Permissions is the permission integer footnote's invite asks for, and all it needs: Send
// Messages, Embed Links, Read Message History (to reply to a message), Use Application
// Commands, Create Public Threads and Send Messages in Threads. It is 311385212928.
const Permissions int64 = discordgo.PermissionSendMessages | discordgo.PermissionEmbedLinks |
	discordgo.PermissionReadMessageHistory | discordgo.PermissionUseApplicationCommands |
	discordgo.PermissionCreatePublicThreads | discordgo.PermissionSendMessagesInThreads

// InviteURL is the OAuth2 URL that adds footnote to a server with the bot and
// applications.commands scopes and exactly Permissions.
func InviteURL(appID string) string {
	return "https://discord.com/oauth2/authorize?client_id=" + url.QueryEscape(appID) +
		"&scope=bot+applications.commands&permissions=" + strconv.FormatInt(Permissions, 10)
}

// Config configures an Adapter.
type Config struct {
	// Token is the bot token from the Developer Portal (Bot → Token), without "Bot ".
	// Required.
	Token string
	// AppID is the application id (General Information → Application ID). Required: /ask is
	// registered under it and interaction responses are edited through it.
	AppID string
	// PublicKey is the application's hex Ed25519 public key (General Information → Public
	// Key); Handler verifies requests with it. Empty makes Handler reject every request
	// with 401.
	PublicKey string
	// GuildID registers /ask in this guild only, where command changes apply at once (a
	// test server). Empty registers a global command (every guild and DMs).
	GuildID string
	// APIURL is the REST base URL standing in for https://discord.com/api/ (a rate-limit
	// proxy such as nirn-proxy). Requests keep their path after /api/. Empty means Discord's.
	APIURL string
	// FollowThreads says the privileged Message Content intent is enabled for the app: every
	// human message in a thread footnote answered is then a follow-up, without a mention.
	// False means follow-ups need a mention, and the intent is not requested.
	FollowThreads bool
	// Core answers questions. Required.
	Core Core
	// Policy gives a channel's behaviour; guild is the Discord guild id ("" in DMs) and
	// channel the parent channel of a thread. Nil means DefaultPolicy everywhere. Wire it to
	// bot.Route so adapter and core agree.
	Policy func(guild, channel string) Policy
	// Logger receives the adapter's and discordgo's logs. Nil discards.
	Logger *slog.Logger
	// HTTPClient makes REST calls (its Transport is kept; APIURL rewriting wraps it). Nil
	// means a client with a 20 s timeout.
	HTTPClient *http.Client
	// Now is the clock for interaction signature freshness. Nil means time.Now.
	Now func() time.Time
	// AnswerTimeout bounds the work on one event after it was acknowledged. Zero means 3
	// minutes; interaction tokens live 15 minutes.
	AnswerTimeout time.Duration
	// Native configures the message command, /footnote docs|stats and page pictures
	// (native.go).
	Native NativeConfig
	// MaxRetries is how often a REST call answered 429 (after retry_after) or 5xx (after a
	// doubling backoff from RetryDelay) is retried. Zero means 3; negative disables retries.
	MaxRetries int
	// RetryDelay is the first wait before retrying a 5xx. Zero means 500ms.
	RetryDelay time.Duration
	// TypingInterval is how often the typing indicator is renewed while answering a message.
	// Zero means 8 s (Discord shows it for 10 s); negative disables it.
	TypingInterval time.Duration
	// ReconnectDelay is the first wait before re-opening a lost gateway connection; it
	// doubles up to 2 minutes. Zero means 1 s.
	ReconnectDelay time.Duration
}

// LogValue keeps the token out of logs.
func (c Config) LogValue() slog.Value {
	redact := func(s string) string {
		if s == "" {
			return ""
		}
		return "[redacted]"
	}
	return slog.GroupValue(
		slog.String("token", redact(c.Token)),
		slog.String("app_id", c.AppID),
		slog.Bool("public_key", c.PublicKey != ""),
		slog.String("guild_id", c.GuildID),
		slog.String("api_url", c.APIURL),
		slog.Bool("follow_threads", c.FollowThreads),
		slog.Duration("answer_timeout", c.AnswerTimeout),
	)
}

// Policy is how footnote behaves in one channel.
type Policy struct {
	// Private makes /ask answers ephemeral: only the asker sees them, with a Share in
	// channel button. Mentions cannot be answered privately on Discord: in such channels
	// footnote points to /ask instead.
	Private bool
	// RequireMention: new questions in the channel must mention footnote. False (with
	// FollowThreads, which delivers message content) makes every top-level message a
	// question. DMs never need a mention.
	RequireMention bool
}

// DefaultPolicy is the Policy when Config.Policy is nil: public answers, questions by mention.
var DefaultPolicy = Policy{RequireMention: true}

func (a *Adapter) policy(guild, channel string) Policy {
	if a.cfg.Policy == nil {
		return DefaultPolicy
	}
	return a.cfg.Policy(guild, channel)
}

// Adapter connects Discord to the core.
type Adapter struct {
	cfg       Config
	s         *discordgo.Session
	core      Core
	log       *slog.Logger
	now       func() time.Time
	publicKey ed25519.PublicKey
	link      bot.Link // the gateway connection, for /health

	mu       sync.Mutex
	self     string // footnote's user id, from /users/@me or READY
	inflight int
	idle     []chan struct{}
	channels map[string]channelInfo
}

// New validates cfg and returns an Adapter. It performs no I/O.
func New(cfg Config) (*Adapter, error) {
	if cfg.Token == "" {
		return nil, errors.New("discord: token is required")
	}
	cfg.Token = strings.TrimPrefix(strings.TrimSpace(cfg.Token), "Bot ")
	if cfg.AppID == "" {
		return nil, errors.New("discord: application id is required")
	}
	if cfg.Core == nil {
		return nil, errors.New("discord: core is required")
	}
	var pub ed25519.PublicKey
	if cfg.PublicKey != "" {
		k, err := hex.DecodeString(strings.TrimSpace(cfg.PublicKey))
		if err != nil || len(k) != ed25519.PublicKeySize {
			return nil, errors.New("discord: public key must be the application's 64 hex digit Ed25519 key")
		}
		pub = k
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AnswerTimeout == 0 {
		cfg.AnswerTimeout = 3 * time.Minute
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 500 * time.Millisecond
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	}
	if cfg.TypingInterval == 0 {
		cfg.TypingInterval = 8 * time.Second
	}
	if cfg.ReconnectDelay <= 0 {
		cfg.ReconnectDelay = time.Second
	}
	client := &http.Client{Timeout: 20 * time.Second}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		client = &c
	}
	if cfg.APIURL != "" {
		base, err := url.Parse(cfg.APIURL)
		if err != nil || base.Scheme == "" || base.Host == "" {
			return nil, fmt.Errorf("discord: api url %q is not an absolute URL", cfg.APIURL)
		}
		client.Transport = &rewrite{base: base, next: client.Transport}
	}
	log := cfg.Logger.With("component", "discord")

	routeSDKLogs(log)
	s, err := discordgo.New("Bot " + cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	s.Client = client
	// discordgo retries a 429 without bound (and sleeps ignoring ctx): retry ourselves.
	s.ShouldRetryOnRateLimit = false
	// discordgo reconnects forever, also after fatal close codes (4004 bad token, 4014
	// disallowed intent): Run reconnects instead and stops on those.
	s.ShouldReconnectOnError = false
	// Handlers run on the gateway goroutine in order; ours only classify and hand work to
	// bounded goroutines, instead of discordgo's unbounded goroutine per event.
	s.SyncEvents = true
	s.StateEnabled = false
	s.LogLevel = discordgo.LogWarning
	s.Identify.Intents = intentGuildMessages | intentDirectMessages
	if cfg.FollowThreads {
		s.Identify.Intents |= intentMessageContent
	}

	a := &Adapter{
		cfg:       cfg,
		s:         s,
		core:      cfg.Core,
		log:       log,
		now:       cfg.Now,
		publicKey: pub,
		channels:  map[string]channelInfo{},
	}
	s.AddHandler(a.onGatewayEvent)
	cfg.Core.OnResume(Platform, a.resume)
	return a, nil
}

// sdkLog receives discordgo's log lines. discordgo.Logger is one package-wide hook: it is
// set once and reads the logger of the newest Adapter atomically.
var (
	sdkLog     atomic.Pointer[slog.Logger]
	sdkLogOnce sync.Once
)

func routeSDKLogs(log *slog.Logger) {
	sdkLog.Store(log)
	sdkLogOnce.Do(func() {
		discordgo.Logger = func(level, _ int, format string, args ...any) {
			l := sdkLog.Load()
			msg := strings.TrimSpace(fmt.Sprintf(format, args...))
			switch level {
			case discordgo.LogError:
				l.Error(msg, "source", "discordgo")
			case discordgo.LogWarning:
				l.Warn(msg, "source", "discordgo")
			default:
				l.Debug(msg, "source", "discordgo")
			}
		}
	})
}

// rewrite sends requests for https://discord.com/api/… to the configured base URL instead,
// keeping the rest of the path: discordgo computes its endpoint URLs at init, and
// reassigning its Endpoint* variables would change them for every session in the process.
type rewrite struct {
	base *url.URL
	next http.RoundTripper
}

func (t *rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/api/"); ok && (r.URL.Host == "discord.com" || r.URL.Host == "discordapp.com") {
		r = r.Clone(r.Context())
		u := *r.URL
		u.Scheme, u.Host = t.base.Scheme, t.base.Host
		u.Path = strings.TrimSuffix(t.base.Path, "/") + "/" + rest
		u.RawPath = ""
		r.URL, r.Host = &u, t.base.Host
	}
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
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
		return fmt.Errorf("discord: wait for in-flight answers: %w", ctx.Err())
	}
}

// begin counts one piece of work as in flight, for Wait; the core bounds how much there is.
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

// Kinds of background work.
const (
	workQuestion = "question"
	workClick    = "click"
)

func (a *Adapter) selfID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.self
}

func (a *Adapter) setSelf(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.self = id
}

// Discord JSON error codes (Discord's opcodes and status codes reference).
const (
	codeUnknownMessage     = 10008
	codeMissingAccess      = 50001
	codeMissingPermissions = 50013
)

// apiError is a failed REST call as the adapter sees it, without discordgo types.
type apiError struct {
	status int
	code   int
	msg    string
}

func restError(err error) (apiError, bool) {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		e := apiError{status: re.Response.StatusCode}
		if re.Message != nil {
			e.code, e.msg = re.Message.Code, re.Message.Message
		}
		return e, true
	}
	return apiError{}, false
}

// forbidden reports a 403 Missing Permissions / Missing Access.
func forbidden(err error) bool {
	e, ok := restError(err)
	return ok && (e.status == http.StatusForbidden || e.code == codeMissingPermissions || e.code == codeMissingAccess)
}

// call runs one REST call, retrying a 429 after retry_after and a 5xx after a doubling
// backoff, at most MaxRetries times so a rate-limited burst cannot turn into a storm of
// retries (Discord bans IPs after 10,000 invalid requests in 10 minutes). Every failure is
// counted.
func (a *Adapter) call(ctx context.Context, what string, fn func(opts ...discordgo.RequestOption) error) error {
	backoff := a.cfg.RetryDelay
	for attempt := 0; ; attempt++ {
		err := fn(discordgo.WithContext(ctx))
		if err == nil {
			return nil
		}
		var wait time.Duration
		msg := "discord server error, retrying"
		var rl *discordgo.RateLimitError
		if errors.As(err, &rl) {
			msg = "discord rate limited, retrying"
			a.core.PlatformError(Platform, http.StatusTooManyRequests)
			wait = min(max(rl.RetryAfter, 100*time.Millisecond), 30*time.Second)
		} else if e, ok := restError(err); ok {
			a.core.PlatformError(Platform, e.status)
			if e.status >= 500 {
				wait, backoff = backoff, min(2*backoff, 30*time.Second)
			}
		} else if ctx.Err() == nil {
			a.core.PlatformError(Platform, 0)
		}
		if wait == 0 || attempt >= a.cfg.MaxRetries {
			return fmt.Errorf("%s: %w", what, err)
		}
		a.log.Warn(msg, logStep, what, "retry_after", wait, "attempt", attempt+1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}

// logAPI logs a failed REST call; a missing permission is named so an admin can grant it.
// Users never see err.Error().
func (a *Adapter) logAPI(err error, channel, step, permission string, attrs ...any) {
	attrs = append(attrs, logStep, step, logChannel, channel, logErr, err)
	if e, ok := restError(err); ok {
		attrs = append(attrs, "status", e.status, "code", e.code)
		if forbidden(err) {
			if permission == "" {
				permission = "View Channel"
			}
			attrs = append(attrs, logPermission, permission)
			a.log.Error("discord refused: footnote lacks a permission in this channel", attrs...)
			return
		}
	}
	a.log.Error("discord api call", attrs...)
}
