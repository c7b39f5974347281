package bot

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// buckets is a token bucket per key (user or channel), created on first use. Buckets that
// have refilled completely carry no state worth keeping and are swept once the map grows.
type buckets struct {
	limit rate.Limit
	burst int

	mu   sync.Mutex
	m    map[string]*bucket
	next int // map size at which to sweep
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

func newBuckets(limit rate.Limit, burst int) *buckets {
	return &buckets{limit: limit, burst: burst, m: make(map[string]*bucket), next: 1024}
}

// reserve takes a token for key at now. When none is available it takes nothing and
// returns how long until one is.
func (b *buckets) reserve(key string, now time.Time) (*rate.Reservation, time.Duration) {
	if b.limit == rate.Inf {
		return nil, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bk, ok := b.m[key]
	if !ok {
		if len(b.m) >= b.next {
			b.sweep(now)
		}
		bk = &bucket{lim: rate.NewLimiter(b.limit, b.burst)}
		b.m[key] = bk
	}
	bk.last = now
	r := bk.lim.ReserveN(now, 1)
	if !r.OK() {
		return nil, time.Hour
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return nil, d
	}
	return r, 0
}

// full is how long an idle bucket takes to refill completely.
func (b *buckets) full() time.Duration {
	if b.limit <= 0 {
		return 24 * time.Hour
	}
	return time.Duration(float64(b.burst) / float64(b.limit) * float64(time.Second))
}

func (b *buckets) sweep(now time.Time) {
	idle := b.full()
	for k, bk := range b.m {
		if now.Sub(bk.last) > idle {
			delete(b.m, k)
		}
	}
	b.next = max(1024, 2*len(b.m))
}

// gate bounds questions: at most limit admitted (answering or waiting for one of the
// slots), whichever entry point they came through. Adapters admit a question when it
// arrives (Bot.Go), before any goroutine is started for it, so a burst beyond the bound is
// turned away at the door with a visible busy reply instead of piling up.
type gate struct {
	slots    chan struct{}
	limit    int64
	admitted atomic.Int64 // answering or waiting
	active   atomic.Int64 // holding a slot
}

func newGate(concurrent, queue int) *gate {
	return &gate{slots: make(chan struct{}, concurrent), limit: int64(concurrent + queue)}
}

// admit counts one question in; false at once when the gate is full.
func (g *gate) admit() bool {
	if g.admitted.Add(1) > g.limit {
		g.admitted.Add(-1)
		return false
	}
	return true
}

func (g *gate) release() { g.admitted.Add(-1) }

// waiting is how many admitted questions wait for a slot.
func (g *gate) waiting() int64 { return max(0, g.admitted.Load()-g.active.Load()) }

// acquire takes a slot for an admitted question, waiting until ctx ends.
func (g *gate) acquire(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		g.active.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) leave() {
	g.active.Add(-1)
	<-g.slots
}
