package bot_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/rag"
)

// TestAcceptLifecycle walks a question through the state machine the adapters rely on:
// a redelivery while it is being answered is ignored, one after its lease ran out (the
// process died) is answered again with the placeholder the first attempt saved, and one
// after delivery is ignored for good.
func TestAcceptLifecycle(t *testing.T) {
	clk := newClock()
	b := newBot(t, bot.Config{Now: clk.Now, Lease: 30 * time.Second})
	ctx := t.Context()

	t1, v := b.Accept(ctx, "slack", "slack:msg:C1:1.0", []byte(`{"q":1}`), clk.Now())
	if v != bot.Fresh || t1 == nil {
		t.Fatalf("first delivery: verdict %v, ticket %v; want Fresh", v, t1)
	}
	t1.Save(ctx, "ph-1")

	clk.Advance(10 * time.Second)
	if t2, v := b.Accept(ctx, "slack", "slack:msg:C1:1.0", nil, clk.Now()); v != bot.Duplicate || t2 != nil {
		t.Fatalf("redelivery while answering: verdict %v; want Duplicate", v)
	}

	// The process dies: nobody renews the lease.
	clk.Advance(31 * time.Second)
	t3, v := b.Accept(ctx, "slack", "slack:msg:C1:1.0", nil, clk.Now())
	if v != bot.Retry || t3 == nil {
		t.Fatalf("redelivery after the lease ran out: verdict %v; want Retry", v)
	}
	if t3.Placeholder() != "ph-1" {
		t.Errorf("retry ticket: placeholder %q; want the first attempt's ph-1", t3.Placeholder())
	}
	if t3.Stale() {
		t.Error("a 41 s old question is not stale")
	}
	t3.Done(ctx, "answered")

	clk.Advance(time.Hour)
	if _, v := b.Accept(ctx, "slack", "slack:msg:C1:1.0", nil, clk.Now()); v != bot.Duplicate {
		t.Fatalf("redelivery after delivery: verdict %v; want Duplicate", v)
	}
	if n, err := b.Pending(ctx); err != nil || n != 0 {
		t.Errorf("Pending = %d, %v; want 0", n, err)
	}
}

// TestResumeAfterCrash: a process accepts a question and dies (its Bot is closed without
// Done); a new process on the same state file resumes it exactly once through the
// platform's Resumer, and apologises instead for a question older than ResumeMaxAge.
func TestResumeAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ctx := t.Context()
	old := newBot(t, bot.Config{StatePath: path, Lease: 200 * time.Millisecond})
	received := time.Now()
	if _, v := old.Accept(ctx, "slack", "k-new", []byte("new"), received); v != bot.Fresh {
		t.Fatal(v)
	}
	if _, v := old.Accept(ctx, "slack", "k-old", []byte("old"), received.Add(-time.Hour)); v != bot.Fresh {
		t.Fatal(v)
	}
	old.Close() // the crash: no Done, no renewal

	b := newBot(t, bot.Config{StatePath: path, Lease: 200 * time.Millisecond, ResumeMaxAge: 15 * time.Minute})
	var mu sync.Mutex
	calls := map[string]int{}
	stale := map[string]bool{}
	var done atomic.Int32
	b.OnResume("slack", func(ctx context.Context, tk *bot.Ticket) {
		mu.Lock()
		calls[string(tk.Payload())]++
		stale[string(tk.Payload())] = tk.Stale()
		mu.Unlock()
		tk.Done(ctx, "answered")
		done.Add(1)
	})
	rctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { b.Run(rctx); close(stopped) }()
	deadline := time.After(10 * time.Second)
	for done.Load() < 2 {
		select {
		case <-deadline:
			t.Fatalf("resumed %d of 2 questions", done.Load())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// A few more passes must not resume anything again.
	time.Sleep(600 * time.Millisecond)
	cancel()
	<-stopped
	mu.Lock()
	defer mu.Unlock()
	if calls["new"] != 1 || calls["old"] != 1 {
		t.Errorf("resumer calls %v; want each question once", calls)
	}
	if stale["new"] || !stale["old"] {
		t.Errorf("stale %v; want only the hour-old question stale", stale)
	}
}

// TestGoBusyBeyondCapacity: a burst beyond MaxConcurrent + MaxQueue is turned away at once
// (Go returns false) instead of starting goroutines that wait, and Ask from another entry
// point shares the same bound.
func TestGoBusyBeyondCapacity(t *testing.T) {
	b := newBot(t, bot.Config{MaxConcurrent: 2, MaxQueue: 3})
	release := make(chan struct{})
	var started atomic.Int32
	accepted := 0
	for range 20 {
		if b.Go(t.Context(), "slack", bot.WorkQuestion, func(ctx context.Context) {
			started.Add(1)
			<-release
		}) {
			accepted++
		}
	}
	if accepted != 5 {
		t.Errorf("admitted %d of 20; want MaxConcurrent+MaxQueue = 5", accepted)
	}
	r := b.Ask(t.Context(), bot.Request{Platform: "http", Text: "what is attention?"}, nil)
	if r.Kind != bot.KindBusy {
		t.Errorf("Ask while full: %s; want busy", r.Kind)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for started.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// Slots free again once the work ends.
	ok := false
	for time.Now().Before(deadline) && !ok {
		ok = b.Go(t.Context(), "slack", bot.WorkQuestion, func(context.Context) {})
		time.Sleep(10 * time.Millisecond)
	}
	if !ok {
		t.Error("Go still busy after the work ended")
	}
}

// TestRunPrunesQueryLog: the query log is kept for QueryLogRetention and pruned by Run in
// the background, not inside a request.
func TestRunPrunesQueryLog(t *testing.T) {
	clk := newClock()
	b := newBot(t, bot.Config{Now: clk.Now, QueryLogRetention: 24 * time.Hour})
	for _, q := range []string{"what is attention?", "what is BERT?"} {
		if r := b.Ask(t.Context(), bot.Request{Platform: "slack", Channel: "C1", User: "U1", Text: q}, nil); r.Kind == bot.KindError {
			t.Fatalf("ask: %+v", r)
		}
	}
	runOnce := func() {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { b.Run(ctx); close(done) }()
		time.Sleep(50 * time.Millisecond)
		cancel()
		<-done
	}
	runOnce()
	if s, err := b.Stats(t.Context()); err != nil || s.Questions != 2 {
		t.Fatalf("stats within retention: %+v, %v; want 2 questions", s, err)
	}
	clk.Advance(25 * time.Hour)
	runOnce()
	if s, err := b.Stats(t.Context()); err != nil || s.Questions != 0 {
		t.Errorf("stats after retention: %+v, %v; want the log pruned", s, err)
	}
}

// TestQueryGoesThroughTheCore: API questions are logged and share the gate with chat.
func TestQueryGoesThroughTheCore(t *testing.T) {
	b := newBot(t, bot.Config{MaxConcurrent: 1, MaxQueue: -1})
	ans, err := b.Query(t.Context(), bot.Request{Platform: "http", User: "ip:127.0.0.1"}, rag.Question{Text: "what are the two sub-layers of an encoder layer?"})
	if err != nil || ans.Text == "" {
		t.Fatalf("Query: %+v, %v", ans, err)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	if !b.Go(t.Context(), "slack", bot.WorkQuestion, func(ctx context.Context) {
		_ = b.Within(ctx, "slack", func(context.Context) error { close(started); <-release; return nil })
	}) {
		t.Fatal("Go refused the first question")
	}
	<-started
	if _, err := b.Query(t.Context(), bot.Request{Platform: "http"}, rag.Question{Text: "what is BERT?"}); !errors.Is(err, bot.ErrBusy) {
		t.Errorf("Query while the only slot is taken: %v; want ErrBusy", err)
	}
	close(release)
	s, err := b.Stats(t.Context())
	if err != nil || s.Questions != 2 || s.Busy != 1 {
		t.Errorf("query log %+v, %v; want 2 questions, 1 busy", s, err)
	}
}
