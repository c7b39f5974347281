package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/footnote-dev/footnote/rag"
)

// Bot is footnote's conversation core. It is safe for concurrent use; several Bots (in one
// process or several) may share one state file.
type Bot struct {
	cfg      Config
	log      *slog.Logger
	state    *state
	users    *buckets
	channels *buckets
	gate     *gate
	clicks   chan struct{} // slots for WorkClick
	notes    chan struct{} // slots for Notify
	m        *metrics
	owner    string // this process's lease owner id
	leases   leases

	resumeMu sync.Mutex
	resumers map[string]Resumer
}

// claimTTL is how long a delivery id is remembered: Slack retries within minutes, Discord
// interactions live 15 minutes.
const claimTTL = 24 * time.Hour

// New validates cfg, fills its defaults and opens the state file.
func New(cfg Config) (*Bot, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	st, err := openState(ctx, cfg.StatePath, cfg.BusyTimeout)
	if err != nil {
		return nil, fmt.Errorf("bot: %w", err)
	}
	g := newGate(cfg.MaxConcurrent, cfg.MaxQueue)
	m, err := newMetrics(cfg.Registerer, g)
	if err != nil {
		st.close()
		return nil, fmt.Errorf("bot: %w", err)
	}
	b := &Bot{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "bot"),
		state:    st,
		users:    newBuckets(cfg.UserRate, cfg.UserBurst),
		channels: newBuckets(cfg.ChannelRate, cfg.ChannelBurst),
		gate:     g,
		clicks:   make(chan struct{}, 4*cfg.MaxConcurrent+cfg.MaxQueue),
		notes:    make(chan struct{}, notifySlots),
		m:        m,
		owner:    newID("p-", 10),
		leases:   leases{keys: map[string]struct{}{}},
		resumers: map[string]Resumer{},
	}
	return b, nil
}

// Close closes the state file. Calls in progress may fail; call it after the adapters stop.
func (b *Bot) Close() error {
	return b.state.close()
}

// Route returns how questions from a platform, tenant and channel are handled, so adapters
// can honour RequireMention.
func (b *Bot) Route(platform, tenant, channel string) Route {
	if b.cfg.Route == nil {
		return DefaultRoute
	}
	return b.cfg.Route(platform, tenant, channel)
}

// Documents reports how many documents the default corpus holds, for "Searching 12 papers…";
// 0 when Config.Docs is nil.
func (b *Bot) Documents(ctx context.Context) int {
	if b.cfg.Docs == nil {
		return 0
	}
	return b.cfg.Docs(ctx)
}

// Claim records a platform delivery id once: false when it was already claimed, by this or
// another process sharing the state file. Ask and Act claim Request.EventID and
// Click.EventID themselves under their own prefixes ("ask/", "act/"), so adapters that also
// call Claim should use keys of their own. When the state store fails, Claim returns true:
// answering twice is better than not answering.
func (b *Bot) Claim(ctx context.Context, key string) bool {
	ok, err := b.state.claim(ctx, key, b.cfg.Now())
	if err != nil {
		b.log.Warn("claim failed; handling the event anyway", logKey, key, logErr, err)
		return true
	}
	return ok
}

// Following reports whether footnote holds a live conversation in that thread, so adapters
// can treat untagged messages there as follow-ups. An empty thread is never followed.
func (b *Bot) Following(ctx context.Context, platform, channel, thread string) bool {
	if thread == "" {
		return false
	}
	ok, err := b.state.following(ctx, convKey{platform, channel, thread}, b.cfg.Now().Add(-b.cfg.IdleExpiry))
	if err != nil {
		b.log.Warn("following", logPlatform, platform, logChannel, channel, logThread, thread, logErr, err)
		return false
	}
	return ok
}

// Feedback lists the votes recorded on an answer, oldest first.
func (b *Bot) Feedback(ctx context.Context, answerID string) ([]Feedback, error) {
	return b.state.feedbackFor(ctx, answerID)
}

// maxQuestion and maxSelected bound what one request may ask about, in characters: a pasted
// paper is not a question, and the prompt budget is spent on sources.
const (
	maxQuestion = 4000
	maxSelected = 20000
)

// usage is the reply to an empty question.
const usage = "Ask me a question about the indexed documents, for example: " +
	"*What are the two sub-layers of a Transformer encoder layer?* " +
	"I answer from the documents only and cite the passages I used."

// Ask answers a question. It never fails: errors become KindError replies whose ErrorRef
// names the log entry holding the details. onDelta (may be nil) receives the answer text so
// far as it is generated.
func (b *Bot) Ask(ctx context.Context, req Request, onDelta func(text string)) Reply {
	start := time.Now()
	if req.ID == "" {
		req.ID = newID("r-", 10)
	}
	r := b.ask(ctx, req, onDelta, start)
	b.link(&r) // hook (native, #14): page links under sources
	r.RequestID = req.ID
	if r.Kind != KindDuplicate {
		r.Elapsed = time.Since(start)
	}
	b.m.requests.WithLabelValues(req.Platform, string(r.Kind)).Inc()
	b.m.latency.WithLabelValues(req.Platform, string(r.Kind)).Observe(time.Since(start).Seconds())
	return r
}

func (b *Bot) ask(ctx context.Context, req Request, onDelta func(string), start time.Time) Reply {
	log := b.log.With(logRequestID, req.ID, logPlatform, req.Platform, logChannel, req.Channel, logUser, req.User)
	if req.EventID != "" {
		ok, err := b.state.claim(ctx, "ask/"+req.Platform+"/"+req.EventID, b.cfg.Now())
		switch {
		case err != nil:
			// Answering twice beats not answering: carry on.
			log.Warn("claim event; answering anyway", logEventID, req.EventID, logErr, err)
		case !ok:
			log.Info("duplicate event", logEventID, req.EventID)
			return Reply{Kind: KindDuplicate}
		}
	}

	question := Clean(req.Text)
	selected := strings.TrimSpace(req.Selected)
	if question == "" && selected != "" {
		question = "What does this passage say?"
	}
	if !hasWord(question) {
		return Reply{Kind: KindUsage, Paragraphs: []string{usage}, Private: true}
	}
	if n, m := utf8.RuneCountInString(question), utf8.RuneCountInString(selected); n > maxQuestion || m > maxSelected {
		return Reply{Kind: KindUsage, Private: true, Paragraphs: []string{fmt.Sprintf(
			"That's too long for me: please keep questions under %d characters and selected passages under %d.", maxQuestion, maxSelected)}}
	}
	route := b.Route(req.Platform, req.Tenant, req.Channel)
	private := req.Private || route.Private
	ql := queryLog{At: b.cfg.Now(), RequestID: req.ID, Platform: req.Platform, Tenant: req.Tenant,
		Channel: req.Channel, Thread: req.Thread, User: req.User, Corpus: route.Corpus, Question: question}

	if r, ok := b.limit(req); !ok {
		log.Info("rate limited")
		r.Question = question
		ql.Kind = r.Kind
		b.logQuery(ctx, log, ql)
		return r
	}

	asker := b.cfg.Asker
	if route.Corpus != "" {
		asker = b.cfg.Corpora[route.Corpus]
	}
	if asker == nil {
		return b.fail(ctx, log, ql, fmt.Errorf("route %s/%s/%s: %w %q", req.Platform, req.Tenant, req.Channel, ErrUnknownCorpus, route.Corpus), private)
	}

	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	// A question an adapter admitted with Go holds its place already; others (the JSON API,
	// the terminal) are admitted here, under the same bound.
	if !admitted(ctx) {
		if !b.gate.admit() {
			log.Warn("busy; question turned away", "max_concurrent", b.cfg.MaxConcurrent, "max_queue", b.cfg.MaxQueue)
			b.m.busy.WithLabelValues(req.Platform).Inc()
			ql.Kind = KindBusy
			b.logQuery(ctx, log, ql)
			r := BusyReply()
			r.Question = question
			return r
		}
		defer b.gate.release()
	}
	if err := b.gate.acquire(ctx); err != nil {
		return b.fail(ctx, log, ql, fmt.Errorf("wait for a free slot: %w", err), private)
	}
	defer b.gate.leave()

	key := convKey{req.Platform, req.Channel, req.Thread}
	var history []rag.Turn
	if req.Thread != "" && b.cfg.HistoryTurns > 0 {
		h, err := b.state.history(ctx, key, b.cfg.Now().Add(-b.cfg.IdleExpiry), b.cfg.HistoryTurns)
		if err != nil {
			// Answer without context rather than not at all.
			log.Warn("load history; answering without it", logErr, err)
		}
		history = b.boundHistory(h)
	}

	q := rag.Question{Text: question, History: history, Selected: selected, Method: route.Method}
	var sofar strings.Builder
	fn := func(delta string) error {
		if onDelta == nil {
			return nil
		}
		sofar.WriteString(delta)
		onDelta(sofar.String())
		return nil
	}
	log.Debug("asking", "question", question, "history", len(history))
	ans, err := asker.Ask(ctx, q, fn)
	if err != nil && errors.Is(err, rag.ErrNoEvidence) && ctx.Err() == nil {
		ans, err = rag.Answer{Question: question, Text: rag.Refusal, Refused: true}, nil
	}
	if err != nil {
		return b.fail(ctx, log, ql, fmt.Errorf("ask: %w", err), private)
	}
	b.m.observeTimings(ans.Timings)
	return b.answered(ctx, log, req, question, private, ans, ql, start)
}

// hasWord reports whether s has a letter or digit: "* *" left over from markup is no question.
func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// limit applies the per-user and per-channel token buckets. A refused question takes no
// token from either bucket. An empty User or Channel (an anonymous API call, a DM without a
// channel id) is not limited in that scope: one shared bucket would throttle strangers
// against each other.
func (b *Bot) limit(req Request) (Reply, bool) {
	scope, who, wait := b.limitWait(req)
	if wait == 0 {
		return Reply{}, true
	}
	b.m.rateLimited.WithLabelValues(scope).Inc()
	return Reply{Kind: KindRateLimited, Private: true, Paragraphs: []string{
		fmt.Sprintf("%s asking faster than I can answer. Please try again in %s.", who, humanWait(wait)),
	}}, false
}

// limitWait takes a token from the user's and the channel's bucket, or none and says which
// scope refused and for how long.
func (b *Bot) limitWait(req Request) (scope, who string, wait time.Duration) {
	now := b.cfg.Now()
	var ru *rate.Reservation
	if req.User != "" {
		ru, wait = b.users.reserve(req.Platform+"/"+req.User, now)
	}
	scope, who = "user", "You're"
	if wait == 0 && req.Channel != "" {
		if _, wait = b.channels.reserve(req.Platform+"/"+req.Channel, now); wait > 0 {
			if ru != nil {
				ru.CancelAt(now)
			}
			scope, who = "channel", "This channel is"
		}
	}
	return scope, who, wait
}

// humanWait rounds a wait up to what a person would say: "5 seconds", "2 minutes".
func humanWait(d time.Duration) string {
	s := int(math.Ceil(d.Seconds()))
	switch {
	case s <= 1:
		return "a second"
	case s < 90:
		return fmt.Sprintf("%d seconds", s)
	}
	m := int(math.Ceil(d.Minutes()))
	return fmt.Sprintf("%d minutes", m)
}

// boundHistory keeps the newest turns (given newest first) that fit HistoryTokens and
// returns them oldest first. The newest turn is kept even alone, with its answer cut to fit:
// a follow-up without the turn it follows makes no sense.
func (b *Bot) boundHistory(newestFirst []rag.Turn) []rag.Turn {
	budget := b.cfg.HistoryTokens
	var keep []rag.Turn
	for i, t := range newestFirst {
		n := b.cfg.CountTokens(t.Question) + b.cfg.CountTokens(t.Answer)
		if n > budget {
			if i == 0 {
				// Cut by characters in proportion, then check again with the real count.
				left := budget - b.cfg.CountTokens(t.Question)
				for left > 0 && t.Answer != "" && b.cfg.CountTokens(t.Answer) > left {
					t.Answer = truncate(t.Answer, len(t.Answer)*left/max(1, b.cfg.CountTokens(t.Answer)))
					if b.cfg.CountTokens(t.Answer) > left {
						t.Answer = truncate(t.Answer, len(t.Answer)-len(t.Answer)/10-1)
					}
				}
				if left <= 0 {
					t.Answer = ""
				}
				keep = append(keep, t)
			}
			break
		}
		budget -= n
		keep = append(keep, t)
	}
	for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
		keep[i], keep[j] = keep[j], keep[i]
	}
	return keep
}

// fail turns an error into a KindError reply and logs it once, under the reply's ErrorRef.
func (b *Bot) fail(ctx context.Context, log *slog.Logger, ql queryLog, err error, private bool) Reply {
	text, reason := explain(err)
	ref := newID("e-", 8)
	log.Error("question failed", logErrorRef, ref, logReason, reason, logErr, err)
	b.m.errors.WithLabelValues(reason).Inc()
	ql.Kind, ql.ErrorRef = KindError, ref
	// The request ctx may be what ended; the log row should still be written.
	b.logQuery(context.WithoutCancel(ctx), log, ql)
	if reason == "internal" || reason == "unavailable" || reason == "unknown_corpus" {
		text += fmt.Sprintf(" If it keeps happening, give an admin this reference: %s.", ref)
	}
	return Reply{Kind: KindError, Question: ql.Question, Paragraphs: []string{text}, ErrorRef: ref, Private: private}
}

func (b *Bot) logQuery(ctx context.Context, log *slog.Logger, ql queryLog) {
	if err := b.state.logQuery(ctx, ql); err != nil {
		log.Warn("query log", logErr, err)
	}
}

// answered stores an answer (record, conversation turn, query log) and renders it.
func (b *Bot) answered(ctx context.Context, log *slog.Logger, req Request, question string, private bool, ans rag.Answer, ql queryLog, start time.Time) Reply {
	rec := record{
		ID: newID("", 10), At: b.cfg.Now(), RequestID: req.ID, Platform: req.Platform, Tenant: req.Tenant,
		Channel: req.Channel, Thread: req.Thread, User: req.User, Question: question,
		Answer: strings.TrimSpace(ans.Text), Refused: ans.Refused, Private: private,
		Confid: ans.Confidence, Note: ans.Note,
	}
	if ans.Refused {
		// Exactly the refusal sentence, whatever the pipeline wrote, and nothing to cite.
		rec.Answer = rag.Refusal
		b.m.refusals.WithLabelValues(req.Platform).Inc()
	} else {
		for _, s := range ans.Sources {
			rec.Sources = append(rec.Sources, toSource(s, s.N))
		}
		// More candidates are numbered after the sources, so "Show source 7" works for them.
		n := len(rec.Sources)
		for _, s := range rec.Sources {
			n = max(n, s.N)
		}
		for i, s := range ans.More {
			rec.More = append(rec.More, toSource(s, n+i+1))
		}
	}

	ql.Kind, ql.Answer, ql.Refused, ql.AnswerID = KindAnswer, rec.Answer, rec.Refused, rec.ID
	if rec.Refused {
		ql.Kind = KindRefusal
	}
	for _, s := range rec.Sources {
		ql.SourceIDs = append(ql.SourceIDs, s.ChunkID)
	}
	ql.Method, ql.Generator, ql.Confid, ql.Timings = ans.Method, ans.Generator, ans.Confidence, ans.Timings
	ql.Elapsed = time.Since(start)

	var turn *rag.Turn
	if req.Thread != "" {
		turn = &rag.Turn{Question: question, Answer: rec.Answer, Sources: turnSources(ans.Sources)}
	}
	r := render(rec, false)
	// The answer is written even if the request ctx ended meanwhile: the user gets it.
	if err := b.state.saveAnswer(context.WithoutCancel(ctx), rec, turn, ql); err != nil {
		// The answer is still worth showing, but its buttons would lead nowhere.
		log.Error("save answer; replying without buttons", logAnswerID, rec.ID, logErr, err)
		r.Actions = nil
	}
	log.Info("answered", logAnswerID, rec.ID, logKind, r.Kind, "sources", len(rec.Sources),
		"generator", ans.Generator, "elapsed", time.Since(start))
	return r
}

// turnSources keeps what a follow-up needs to know about an answer: the sources it cited, or
// all of them when it cited none.
func turnSources(src []rag.Source) []rag.Source {
	var cited []rag.Source
	for _, s := range src {
		if s.Cited {
			cited = append(cited, s)
		}
	}
	if len(cited) == 0 {
		return src
	}
	return cited
}

// excerptRunes is the length of an excerpt bot makes when the pipeline gave none.
const excerptRunes = 240

func toSource(s rag.Source, n int) Source {
	title := s.Chunk.Title
	if title == "" {
		title = s.Chunk.Name
	}
	ex := s.Excerpt
	if ex == "" {
		ex = excerpt(s.Chunk.Text, excerptRunes)
	}
	if n == 0 {
		n = s.N
	}
	return locate(Source{
		N: n, ChunkID: s.Chunk.ID, Title: title, Name: s.Chunk.Name, Section: s.Chunk.Section,
		Pages: Pages(s.Chunk), Score: clamp01(s.Score), Excerpt: ex, Text: s.Chunk.Text, Cited: s.Cited,
	}, s.Chunk) // hook (native, #14): page/line location for pictures and links
}

func clamp01(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return min(1, max(0, x))
}

// render builds the reply for a stored answer. shared is the re-post of a private answer to
// the channel.
func render(rec record, shared bool) Reply {
	r := Reply{
		Kind: KindAnswer, AnswerID: rec.ID, Question: rec.Question, Note: rec.Note,
		Private: rec.Private && !shared, Confidence: rec.Confid,
	}
	if rec.Refused {
		r.Kind = KindRefusal
		r.Paragraphs = []string{rag.Refusal}
		r.Confidence = 0
	} else {
		r.Paragraphs = Paragraphs(rec.Answer)
		for _, s := range rec.Sources {
			s.Text = ""
			r.Sources = append(r.Sources, s)
			r.Actions = append(r.Actions, Action{Kind: ActShowSource, AnswerID: rec.ID, Source: s.N,
				Label: fmt.Sprintf("Show source %d", s.N)})
		}
		if len(rec.More) > rec.MoreShown {
			r.Actions = append(r.Actions, Action{Kind: ActMoreSources, AnswerID: rec.ID, Label: actionLabel(ActMoreSources)})
		}
	}
	for _, k := range []ActionKind{ActFeedbackUp, ActFeedbackDown} {
		r.Actions = append(r.Actions, Action{Kind: k, AnswerID: rec.ID, Label: actionLabel(k)})
	}
	if r.Private {
		r.Actions = append(r.Actions, Action{Kind: ActShare, AnswerID: rec.ID, Label: actionLabel(ActShare)})
	}
	return r
}
