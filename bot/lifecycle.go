package bot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A question's life in the state store: accepted (recorded, before the platform is
// acknowledged where it allows) → answering (a process holds its lease and renews it) →
// delivered (its one visible reply is posted). A process that dies mid-answer stops
// renewing; once the lease has run out, a platform redelivery or the resume loop of any
// process sharing the state answers it again, updating the same placeholder. That is
// at-least-once processing with exactly-once replies: the only duplicate a crash can cause
// is a reply posted but not yet marked delivered, a window of one state write.

// Verdict is what Accept decided about a delivery.
type Verdict int

const (
	// Fresh is a question seen for the first time: answer it.
	Fresh Verdict = iota
	// Duplicate is a redelivery of a question being answered (lease alive) or answered
	// already: post nothing.
	Duplicate
	// Retry is a redelivery of a question whose previous attempt died (lease run out):
	// answer it, reusing the placeholder the ticket names.
	Retry
)

const (
	stAnswering = "answering"
	stDelivered = "delivered"
)

// Ticket is a question this process holds the lease on. Its methods are safe on a nil
// Ticket (they do nothing), so click paths can share reply code.
type Ticket struct {
	b           *Bot
	key         string
	platform    string
	received    time.Time
	payload     []byte
	placeholder string
	resumed     bool
	stale       bool
	once        sync.Once
	onDone      func(outcome string) // tickets without a Bot (NewTicket)
}

// NewTicket returns a ticket that keeps no durable state, for cores without a state store
// (tests, one-shot tools): Save remembers the placeholder in memory and Done calls onDone
// (may be nil) once.
func NewTicket(key string, payload []byte, placeholder string, onDone func(outcome string)) *Ticket {
	return &Ticket{key: key, payload: payload, placeholder: placeholder, received: time.Now(), onDone: onDone}
}

// Key is the delivery key the ticket was accepted under.
func (t *Ticket) Key() string {
	if t == nil {
		return ""
	}
	return t.key
}

// Payload is what the adapter stored to answer the question again after a restart.
func (t *Ticket) Payload() []byte {
	if t == nil {
		return nil
	}
	return t.payload
}

// Placeholder is the message a previous attempt posted (and Save recorded), "" for none:
// update it instead of posting a second one.
func (t *Ticket) Placeholder() string {
	if t == nil {
		return ""
	}
	return t.placeholder
}

// Resumed reports whether a previous attempt died.
func (t *Ticket) Resumed() bool { return t != nil && t.resumed }

// Stale reports whether the question is older than ResumeMaxAge: post ApologyText instead
// of an answer nobody waits for.
func (t *Ticket) Stale() bool { return t != nil && t.stale }

// Save records the placeholder (or any reference the adapter needs to update its reply
// instead of posting another) before the work goes on. An adapter that deletes that message
// saves again once it is deleted: an attempt resumed after a crash must not be sent to
// update a message that is gone.
func (t *Ticket) Save(ctx context.Context, placeholder string) {
	if t == nil {
		return
	}
	t.placeholder = placeholder
	if t.b == nil {
		return
	}
	_, err := t.b.state.db.ExecContext(context.WithoutCancel(ctx), `UPDATE deliveries SET placeholder = ? WHERE key = ?`, placeholder, t.key)
	if err != nil {
		t.b.log.Warn("save placeholder", logKey, t.key, logErr, err)
	}
}

// Done marks the question delivered: outcome is "answered", "busy", "failed" (a visible
// failure reply) or "undeliverable" (nothing could be shown; logged and counted). Only the
// first call counts.
func (t *Ticket) Done(ctx context.Context, outcome string) {
	if t == nil {
		return
	}
	t.once.Do(func() {
		b := t.b
		if b == nil {
			if t.onDone != nil {
				t.onDone(outcome)
			}
			return
		}
		b.leases.drop(t.key)
		now := b.cfg.Now()
		_, err := b.state.db.ExecContext(context.WithoutCancel(ctx), `UPDATE deliveries SET state = ?, outcome = ?, done_at = ? WHERE key = ?`,
			stDelivered, outcome, now.UnixNano(), t.key)
		if err != nil {
			b.log.Error("mark question delivered", logKey, t.key, logErr, err)
		}
		b.m.deliveries.WithLabelValues(t.platform, outcome).Inc()
		if outcome == "undeliverable" {
			b.log.Error("reply undeliverable", logKey, t.key, logPlatform, t.platform)
			return
		}
		b.m.deliveryLatency.WithLabelValues(t.platform, outcome).Observe(now.Sub(t.received).Seconds())
	})
}

// GiveUp ends a question whose reply could not be posted: a transient failure (429, 5xx,
// network; the adapter knows its platform's errors) leaves it pending, to be answered again
// when its lease runs out unless it is too old by then; anything else is counted as
// undeliverable.
func (t *Ticket) GiveUp(ctx context.Context, err error, transient bool) {
	if t == nil {
		return
	}
	if err != nil && transient && !t.Stale() {
		if t.b != nil {
			t.b.log.Warn("reply not delivered; the question stays pending", logKey, t.key, logPlatform, t.platform, logErr, err)
		}
		t.Abandon()
		return
	}
	t.Done(ctx, "undeliverable")
}

// Outcome names how a reply ends a question's life, for the delivery metrics.
func Outcome(r Reply) string {
	switch r.Kind {
	case KindError:
		return "failed"
	case KindBusy, KindRateLimited:
		return "busy"
	}
	return "answered"
}

// Abandon gives the question up without a reply (this process is shutting down): the lease
// runs out and the question is resumed, here or by another process.
func (t *Ticket) Abandon() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		if t.b != nil {
			t.b.leases.drop(t.key)
		}
	})
}

// Accept records a question delivered by a platform under key (a platform id that stays the
// same across redeliveries) before it is acknowledged. payload is what the adapter needs to
// answer it again after a restart. received is when the event arrived, for the delivery
// latency. The returned ticket holds the lease unless the verdict is Duplicate (ticket nil).
// When the state store fails the question is answered anyway (Fresh, not durable):
// answering twice beats not answering.
func (b *Bot) Accept(ctx context.Context, platform, key string, payload []byte, received time.Time) (*Ticket, Verdict) {
	ctx = context.WithoutCancel(ctx)
	now := b.cfg.Now()
	t := &Ticket{b: b, key: key, platform: platform, received: received, payload: payload}
	v, err := b.state.accept(ctx, t, b.owner, now, now.Add(b.cfg.Lease))
	if err != nil {
		b.log.Warn("accept question; answering it without a durable record", logKey, key, logErr, err)
		return t, Fresh
	}
	switch v {
	case Duplicate:
		b.m.redeliveries.WithLabelValues(platform, "ignored").Inc()
		b.log.Info("redelivered question ignored: answering or answered", logKey, key)
		return nil, Duplicate
	case Retry:
		b.m.redeliveries.WithLabelValues(platform, "answered").Inc()
		b.log.Info("redelivered question answered again: its previous attempt died", logKey, key)
		t.resumed = true
		t.stale = now.Sub(t.received) > b.cfg.ResumeMaxAge
	}
	b.leases.add(t.key)
	return t, v
}

// accept is Accept's state transition, in one write transaction: insert a new row, or take
// over one whose lease ran out.
func (s *state) accept(ctx context.Context, t *Ticket, owner string, now, lease time.Time) (Verdict, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var st, ph string
	var leaseAt, recv int64
	err = tx.QueryRowContext(ctx, `SELECT state, lease, placeholder, received FROM deliveries WHERE key = ?`, t.key).Scan(&st, &leaseAt, &ph, &recv)
	v := Fresh
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if t.payload == nil {
			t.payload = []byte{}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO deliveries(key, platform, state, received, lease, owner, attempts, payload)
			VALUES (?, ?, ?, ?, ?, ?, 1, ?)`, t.key, t.platform, stAnswering, t.received.UnixNano(), lease.UnixNano(), owner, t.payload)
	case err != nil:
		return 0, err
	case st == stDelivered || leaseAt > now.UnixNano():
		return Duplicate, nil
	default:
		v = Retry
		t.placeholder, t.received = ph, time.Unix(0, recv)
		_, err = tx.ExecContext(ctx, `UPDATE deliveries SET lease = ?, owner = ?, attempts = attempts + 1 WHERE key = ?`,
			lease.UnixNano(), owner, t.key)
	}
	if err != nil {
		return 0, err
	}
	return v, tx.Commit()
}

// leases are the keys this process answers now; Run renews them.
type leases struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

func (l *leases) add(k string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys[k] = struct{}{}
}

func (l *leases) drop(k string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, k)
}

func (l *leases) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.keys))
	for k := range l.keys {
		out = append(out, k)
	}
	return out
}

// Resumer answers a question again from its ticket (Payload, Placeholder); when the ticket
// is Stale it posts ApologyText instead. It must call t.Done (or t.Abandon).
type Resumer func(ctx context.Context, t *Ticket)

// OnResume registers how an adapter answers its platform's unfinished questions. Questions
// of platforms without a Resumer stay pending until one registers (or they expire).
func (b *Bot) OnResume(platform string, fn Resumer) {
	b.resumeMu.Lock()
	defer b.resumeMu.Unlock()
	b.resumers[platform] = fn
}

func (b *Bot) resumer(platform string) Resumer {
	b.resumeMu.Lock()
	defer b.resumeMu.Unlock()
	return b.resumers[platform]
}

// Run does the core's background work until ctx ends: it renews the leases of questions
// being answered, resumes questions whose previous attempt died (after a crash or a
// deploy), and prunes expired state. Call it once per process, alongside the adapters.
func (b *Bot) Run(ctx context.Context) error {
	tick := max(b.cfg.Lease/3, 10*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	b.prune(ctx)
	lastPrune := time.Now()
	for {
		b.renew(ctx)
		b.resume(ctx)
		if time.Since(lastPrune) >= b.cfg.PruneEvery {
			b.prune(ctx)
			lastPrune = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (b *Bot) renew(ctx context.Context) {
	keys := b.leases.list()
	if len(keys) == 0 {
		return
	}
	until := b.cfg.Now().Add(b.cfg.Lease).UnixNano()
	tx, err := b.state.db.BeginTx(ctx, nil)
	if err != nil {
		b.log.Warn("renew leases", logErr, err)
		return
	}
	defer tx.Rollback()
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET lease = ? WHERE key = ? AND state != ?`, until, k, stDelivered); err != nil {
			b.log.Warn("renew leases", logErr, err)
			return
		}
	}
	if err := tx.Commit(); err != nil {
		b.log.Warn("renew leases", logErr, err)
	}
}

// resumeBatch bounds the questions one resume pass takes over.
const resumeBatch = 16

// resume answers again the questions whose lease ran out, oldest first, as long as the gate
// admits them; the rest wait for the next pass.
func (b *Bot) resume(ctx context.Context) {
	now := b.cfg.Now()
	b.resumeMu.Lock()
	args := []any{stDelivered, now.UnixNano()}
	marks := ""
	for p := range b.resumers {
		args = append(args, p)
		marks += ",?"
	}
	b.resumeMu.Unlock()
	if marks == "" {
		return // no adapter can answer anything yet
	}
	args = append(args, 4*resumeBatch)
	// Only platforms with a Resumer: questions of an adapter that is not configured now must
	// not hide the others.
	rows, err := b.state.rd.QueryContext(ctx, `SELECT key, platform FROM deliveries
		WHERE state != ? AND lease < ? AND platform IN (`+marks[1:]+`) ORDER BY received LIMIT ?`, args...)
	if err != nil {
		b.log.Warn("list unfinished questions", logErr, err)
		return
	}
	type pending struct{ key, platform string }
	var todo []pending
	for rows.Next() {
		var p pending
		if err := rows.Scan(&p.key, &p.platform); err != nil {
			break
		}
		todo = append(todo, p)
	}
	rows.Close()
	n := 0
	for _, p := range todo {
		if n >= resumeBatch || ctx.Err() != nil {
			return
		}
		fn := b.resumer(p.platform)
		if fn == nil {
			continue
		}
		t, err := b.takeOver(ctx, p.key, p.platform, now)
		if err != nil {
			b.log.Warn("take over unfinished question", logKey, p.key, logErr, err)
			continue
		}
		if t == nil {
			continue // another process was quicker
		}
		n++
		outcome := "answered"
		if t.stale {
			outcome = "apology"
		}
		ok := b.Go(ctx, p.platform, WorkQuestion, func(ctx context.Context) {
			b.m.resumed.WithLabelValues(p.platform, outcome).Inc()
			b.log.Info("resuming unfinished question", logKey, t.key, "age", now.Sub(t.received).Round(time.Second), "apology", t.stale)
			fn(ctx, t)
		})
		if !ok {
			// No room now: let the lease run out again and retry on a later pass.
			t.Abandon()
			return
		}
	}
}

// takeOver leases an unfinished question whose lease ran out; nil when another process
// holds it now.
func (b *Bot) takeOver(ctx context.Context, key, platform string, now time.Time) (*Ticket, error) {
	tx, err := b.state.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	t := &Ticket{b: b, key: key, platform: platform, resumed: true}
	var recv int64
	err = tx.QueryRowContext(ctx, `SELECT received, placeholder, payload FROM deliveries WHERE key = ? AND state != ? AND lease < ?`,
		key, stDelivered, now.UnixNano()).Scan(&recv, &t.placeholder, &t.payload)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET lease = ?, owner = ?, attempts = attempts + 1 WHERE key = ?`,
		now.Add(b.cfg.Lease).UnixNano(), b.owner, key); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	t.received = time.Unix(0, recv)
	t.stale = now.Sub(t.received) > b.cfg.ResumeMaxAge
	b.leases.add(key)
	return t, nil
}

// prune deletes expired state in the background, never inside a user's request.
func (b *Bot) prune(ctx context.Context) {
	now := b.cfg.Now()
	err := b.state.prune(context.WithoutCancel(ctx), pruneCutoffs{
		claims:     now.Add(-claimTTL),
		deliveries: now.Add(-claimTTL),
		turns:      now.Add(-b.cfg.IdleExpiry),
		answers:    now.Add(-b.cfg.AnswerTTL),
		queries:    now.Add(-b.cfg.QueryLogRetention),
	})
	if err != nil {
		b.log.Warn("prune state", logErr, err)
	}
}

// Pending counts questions accepted but not delivered, for /health and tests.
func (b *Bot) Pending(ctx context.Context) (int, error) {
	var n int
	err := b.state.rd.QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries WHERE state != ?`, stDelivered).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pending questions: %w", err)
	}
	return n, nil
}
