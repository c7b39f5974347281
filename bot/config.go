package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/footnote-dev/footnote/rag"
)

// Asker answers one question over one corpus; *rag.Pipeline satisfies it. fn receives the
// answer text as it is generated; an error from fn stops generation. A cancelled or expired
// ctx stops the work and returns an error wrapping ctx.Err(). A pipeline may report "nothing
// found" either as an Answer with Refused set or as an error wrapping rag.ErrNoEvidence; bot
// treats both as a refusal.
type Asker interface {
	Ask(ctx context.Context, q rag.Question, fn func(delta string) error) (rag.Answer, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(ctx context.Context, q rag.Question, fn func(delta string) error) (rag.Answer, error)

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, q rag.Question, fn func(delta string) error) (rag.Answer, error) {
	return f(ctx, q, fn)
}

// Route is how questions from one place are handled.
type Route struct {
	// Corpus names the entry of Config.Corpora to ask; "" is Config.Asker.
	Corpus string
	// Private makes every answer there ephemeral, whatever the platform asked.
	Private bool
	// Method is the retrieval method passed to the pipeline ("hybrid", "bm25",
	// "dense:<model>"); "" is the pipeline's default.
	Method string
	// RequireMention tells adapters to answer channel messages only when they mention
	// footnote; follow-ups in a thread footnote is Following are exempt. Bot itself does not
	// look at it.
	RequireMention bool
	// MentionFollowUps tells adapters that follow-ups in footnote's threads need a mention
	// too (Slack); bot itself does not look at it.
	MentionFollowUps bool
}

// DefaultRoute is the route used when Config.Route is nil: the default corpus, public
// answers unless the platform asks otherwise, the pipeline's method, mentions required.
var DefaultRoute = Route{RequireMention: true}

// Config assembles a Bot. Zero values are documented per field.
type Config struct {
	// Asker answers questions for the default corpus (Route.Corpus == ""). Required unless
	// Corpora holds every corpus Route can name.
	Asker Asker
	// Corpora are further corpora by name, for tenants or channels with their own documents.
	Corpora map[string]Asker
	// Route picks corpus and behaviour for a platform, tenant (Slack team, Discord guild) and
	// channel. Nil means DefaultRoute everywhere.
	Route func(platform, tenant, channel string) Route
	// Docs reports how many documents the default corpus holds; nil means Documents is 0.
	Docs func(ctx context.Context) int

	// Figure draws the cited region of a source for Show source n (a PDF page cropped to the
	// chunk, its lines highlighted). Nil, or an error, shows the source as text only; the
	// error is logged and the reply says the picture is missing.
	Figure func(ctx context.Context, s Source) (Attachment, error)
	// PageURL gives the address of a source's page picture for links under answers (it
	// needs a public base URL); nil or "" means no link.
	PageURL func(s Source) string

	// StatePath is the SQLite file for conversations, answer records, feedback, delivery
	// claims and the query log. Required. Several processes may share one file (WAL mode,
	// busy timeout).
	StatePath string
	// BusyTimeout is how long a state write waits for another process's lock; zero means 10s.
	BusyTimeout time.Duration

	// UserRate and UserBurst bound questions per platform user (token bucket): zero rate
	// means one question every 6 seconds, zero burst means 5. rate.Inf disables the limit.
	UserRate  rate.Limit
	UserBurst int
	// ChannelRate and ChannelBurst bound questions per channel: zero rate means one a
	// second, zero burst means 20. rate.Inf disables the limit.
	ChannelRate  rate.Limit
	ChannelBurst int
	// MaxConcurrent is how many questions are answered at once; zero means 4.
	MaxConcurrent int
	// MaxQueue is how many questions may wait for a free slot; beyond it the answer is
	// KindBusy at once. Zero means 32; negative means no waiting at all.
	MaxQueue int
	// Timeout bounds one question end to end, queueing included; zero means 60s.
	Timeout time.Duration

	// HistoryTurns is how many earlier turns of a thread the pipeline sees; zero means 6,
	// negative disables history.
	HistoryTurns int
	// HistoryTokens bounds the history's question and answer text; zero means 1500.
	HistoryTokens int
	// CountTokens counts tokens for HistoryTokens; nil approximates 4 characters per token.
	CountTokens func(string) int
	// IdleExpiry ends a conversation whose last turn is older than this; zero means 24h.
	IdleExpiry time.Duration
	// AnswerTTL is how long buttons on an answer keep working; zero means 90 days.
	AnswerTTL time.Duration
	// MoreBatch is how many further sources one "More sources" click shows; zero means 3.
	MoreBatch int

	// Lease is how long a question being answered stays claimed by its process without a
	// renewal (Run renews it every Lease/3); after a crash the question is answered again
	// once it has run out. Zero means 30s.
	Lease time.Duration
	// ResumeMaxAge is the oldest unfinished question Run answers after a restart; older ones
	// get ApologyText instead. Zero means 15 minutes.
	ResumeMaxAge time.Duration
	// QueryLogRetention is how long query log rows (and feedback) are kept; zero means 90 days.
	QueryLogRetention time.Duration
	// PruneEvery is how often Run deletes expired state; zero means 1 hour.
	PruneEvery time.Duration

	// Registerer receives the bot's Prometheus metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger receives request and error logs; nil discards.
	Logger *slog.Logger
	// Now is the clock for rate limits, expiry and stored timestamps; nil means time.Now.
	Now func() time.Time
}

func (c *Config) fill() error {
	if c.StatePath == "" {
		return errors.New("bot: Config.StatePath is required")
	}
	if c.Asker == nil && len(c.Corpora) == 0 {
		return errors.New("bot: Config.Asker or Config.Corpora is required")
	}
	for name, a := range c.Corpora {
		if a == nil {
			return fmt.Errorf("bot: Config.Corpora[%q] is nil", name)
		}
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 10 * time.Second
	}
	if c.UserRate == 0 {
		c.UserRate = rate.Every(6 * time.Second)
	}
	if c.UserBurst == 0 {
		c.UserBurst = 5
	}
	if c.ChannelRate == 0 {
		c.ChannelRate = 1
	}
	if c.ChannelBurst == 0 {
		c.ChannelBurst = 20
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = 4
	}
	if c.MaxConcurrent < 0 {
		return errors.New("bot: Config.MaxConcurrent is negative")
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = 32
	}
	if c.MaxQueue < 0 {
		c.MaxQueue = 0
	}
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.HistoryTurns == 0 {
		c.HistoryTurns = 6
	}
	if c.HistoryTokens == 0 {
		c.HistoryTokens = 1500
	}
	if c.CountTokens == nil {
		c.CountTokens = func(s string) int { return (len(s) + 3) / 4 }
	}
	if c.IdleExpiry == 0 {
		c.IdleExpiry = 24 * time.Hour
	}
	if c.AnswerTTL == 0 {
		c.AnswerTTL = 90 * 24 * time.Hour
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.ResumeMaxAge <= 0 {
		c.ResumeMaxAge = 15 * time.Minute
	}
	if c.QueryLogRetention <= 0 {
		c.QueryLogRetention = 90 * 24 * time.Hour
	}
	if c.PruneEvery <= 0 {
		c.PruneEvery = time.Hour
	}
	if c.MoreBatch == 0 {
		c.MoreBatch = 3
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}
