package bot_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
	"github.com/footnote-dev/footnote/rag"
)

// loadResult is what a load run measured.
type loadResult struct {
	Replies  []bot.Reply
	Latency  []time.Duration // sorted
	Wall     time.Duration
	Answered int
}

func (r loadResult) String() string {
	return fmt.Sprintf("%d questions in %v: %.0f questions/s, p50 %v, p95 %v, max %v",
		len(r.Replies), r.Wall.Round(time.Millisecond), float64(len(r.Replies))/r.Wall.Seconds(),
		bot.Percentile(r.Latency, 0.5).Round(10*time.Microsecond), bot.Percentile(r.Latency, 0.95).Round(10*time.Microsecond),
		r.Latency[len(r.Latency)-1].Round(10*time.Microsecond))
}

// runLoad sends total questions from users concurrent users (each asking in turn, in its
// own thread) through an adapter, and checks that every question got exactly one answer.
func runLoad(t testing.TB, ctx context.Context, b *bot.Bot, questions []string, users, total int) loadResult {
	t.Helper()
	a := &bottest.Adapter{Bot: b, Platform: "load"}
	replies := make([]bot.Reply, total)
	lat := make([]time.Duration, total)
	var wg sync.WaitGroup
	start := time.Now()
	for u := range users {
		wg.Go(func() {
			for i := u; i < total; i += users {
				t0 := time.Now()
				replies[i] = a.Say(ctx, bottest.Message{Channel: fmt.Sprintf("C%d", u%5), Thread: fmt.Sprintf("T%d", u),
					User: fmt.Sprintf("U%d", u), Text: questions[i%len(questions)]})
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	res := loadResult{Replies: replies, Latency: lat, Wall: time.Since(start)}
	slices.Sort(res.Latency)

	ids := map[string]bool{}
	for i, r := range replies {
		switch r.Kind {
		case bot.KindAnswer, bot.KindRefusal:
			res.Answered++
		default:
			t.Errorf("question %d: got %q %q", i, r.Kind, r.Paragraphs)
		}
		if ids[r.AnswerID] {
			t.Errorf("question %d: answer id %s given twice", i, r.AnswerID)
		}
		ids[r.AnswerID] = true
	}
	if n := len(a.Posts()); n != total {
		t.Errorf("posts: got %d, want %d", n, total)
	}
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Questions != total || st.Answered+st.Refusals != total {
		t.Errorf("query log: got %+v, want %d questions all answered", st, total)
	}
	return res
}

var loadQuestions = []string{
	"What are the two sub-layers of a Transformer encoder layer?",
	"How many layers does the decoder have?",
	"What is scaled dot-product attention?",
	"How many attention heads are used?",
	"Which optimizer was used for training?",
	"What tasks is BERT pre-trained on?",
	"What is a residual mapping?",
	"What is the capital of France?", // refused
}

// TestLoad answers 200 questions from 50 concurrent users through the core with the fake
// asker (which takes a few milliseconds, as an extractive answer does): no lost or doubled
// answers, and the latency the queue adds stays bounded.
func TestLoad(t *testing.T) {
	asker := &bottest.Asker{AskFunc: func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return rag.Answer{}, ctx.Err()
		}
		return bottest.Answer(ctx, q, fn)
	}}
	// 50 users at once: 8 answer, the rest wait in a queue big enough for all of them.
	b := newBot(t, bot.Config{Asker: asker, MaxConcurrent: 8, MaxQueue: 64, Timeout: 30 * time.Second})
	res := runLoad(t, t.Context(), b, loadQuestions, 50, 200)
	t.Logf("fake asker (5 ms per answer), 50 users, 8 slots: %v", res)
	if n := len(asker.Calls()); n != 200 {
		t.Errorf("asker calls: got %d, want 200", n)
	}
	// Follow-ups: every user's later questions carried the thread's history.
	withHistory := 0
	for _, c := range asker.Calls() {
		if len(c.History) > 0 {
			withHistory++
		}
	}
	if withHistory != 200-50 {
		t.Errorf("questions with history: got %d, want %d (all but each user's first)", withHistory, 150)
	}
}

// BenchmarkAsk measures the core's own cost per question (claim, history, state writes,
// query log) with the fake asker answering at once.
func BenchmarkAsk(b *testing.B) {
	bt := newBot(b, bot.Config{MaxConcurrent: 8, MaxQueue: 1024})
	ctx := b.Context()
	i := 0
	for b.Loop() {
		r := bt.Ask(ctx, bot.Request{Platform: "bench", Channel: "C", Thread: fmt.Sprint("T", i%50), User: "U",
			Text: loadQuestions[i%len(loadQuestions)], EventID: fmt.Sprint("e", i)}, nil)
		if r.Kind != bot.KindAnswer && r.Kind != bot.KindRefusal {
			b.Fatalf("got %q %q", r.Kind, r.Paragraphs)
		}
		i++
	}
}
