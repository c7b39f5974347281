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

// gate bounds concurrent answers, with a bounded number of callers waiting for a slot.
type gate struct {
	slots   chan struct{}
	queue   int
	waiting atomic.Int64 // callers in the queue
	active  atomic.Int64 // callers holding a slot
}

func newGate(concurrent, queue int) *gate {
	return &gate{slots: make(chan struct{}, concurrent), queue: queue}
}

// enter takes a slot, waiting in the queue if there is room. It returns false at once when
// the queue is full, and false when ctx ends while waiting (err says which).
func (g *gate) enter(ctx context.Context) (ok bool, err error) {
	select {
	case g.slots <- struct{}{}:
		g.active.Add(1)
		return true, nil
	default:
	}
	if g.waiting.Add(1) > int64(g.queue) {
		g.waiting.Add(-1)
		return false, nil
	}
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		g.active.Add(1)
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (g *gate) leave() {
	g.active.Add(-1)
	<-g.slots
}
