package bottest

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/footnote-dev/footnote/bot"
)

// Delivery stands in for the bot core's gate and question lifecycle in adapter tests, so
// both chat adapters' fake cores embed one copy: Accept records each key's outcome, Go runs
// work unless Full is set, and platform errors and the resumer are kept for assertions.
type Delivery struct {
	Full atomic.Bool // Go turns everything away, as a full gate does

	mu        sync.Mutex
	accepted  map[string]string // key → "answering" or the outcome Done gave
	tickets   map[string]*bot.Ticket
	resumer   bot.Resumer
	apiErrors map[int]int
}

func (d *Delivery) Accept(_ context.Context, _, key string, payload []byte, _ time.Time) (*bot.Ticket, bot.Verdict) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.accepted[key]; ok {
		return nil, bot.Duplicate
	}
	if d.accepted == nil {
		d.accepted, d.tickets = map[string]string{}, map[string]*bot.Ticket{}
	}
	d.accepted[key] = "answering"
	t := bot.NewTicket(key, payload, "", func(outcome string) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.accepted[key] = outcome
	})
	d.tickets[key] = t
	return t, bot.Fresh
}

// Ticket is the ticket Accept gave for key (nil if none): what a process that died now
// would have left for the next one to resume from.
func (d *Delivery) Ticket(key string) *bot.Ticket {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tickets[key]
}

// Outcomes lists the outcome of every accepted question by key.
func (d *Delivery) Outcomes() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.accepted)
}

func (d *Delivery) Go(ctx context.Context, _ string, _ bot.Work, fn func(context.Context)) bool {
	if d.Full.Load() {
		return false
	}
	go fn(context.WithoutCancel(ctx))
	return true
}

func (d *Delivery) Notify(ctx context.Context, _ string, fn func(context.Context)) bool {
	go fn(context.WithoutCancel(ctx))
	return true
}

func (d *Delivery) OnResume(_ string, fn bot.Resumer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.resumer = fn
}

// Resumer is what the adapter registered with OnResume.
func (d *Delivery) Resumer() bot.Resumer {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resumer
}

func (d *Delivery) PlatformError(_ string, status int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.apiErrors == nil {
		d.apiErrors = map[int]int{}
	}
	d.apiErrors[status]++
}

// APIErrors counts the platform errors reported, by HTTP status.
func (d *Delivery) APIErrors() map[int]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.apiErrors)
}
