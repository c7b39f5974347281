package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/embedded"
	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

var _ bot.Asker = (*rag.Pipeline)(nil)

// pipeline indexes the corpus into an embedded store (BM25 only) and returns the
// extractive pipeline over it with the document count.
func pipeline(t testing.TB) (*rag.Pipeline, int) {
	t.Helper()
	papers := corpustest.Papers(t)
	ctx := t.Context()
	store, err := embedded.Open(ctx, embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ix, err := index.New(index.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sum, err := ix.Index(ctx, []string{papers}, index.Options{})
	if err != nil {
		t.Fatalf("index %s: %v", papers, err)
	}
	t.Logf("indexed %d papers (%d chunks) in %v", sum.Indexed, sum.Chunks, time.Since(start).Round(time.Millisecond))
	p, err := rag.New(rag.Config{
		Searcher: store,
		Sparse: func(ctx context.Context) (rag.SparseEncoder, error) {
			st, err := store.Stats(ctx)
			if err != nil {
				return nil, err
			}
			return bm25.NewQueryEncoder(bm25.Params{}, st.Chunks, st.DF), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, sum.Indexed
}

// questions reads the evaluation questions.
func questions(t testing.TB) []string {
	t.Helper()
	f, err := os.Open(corpustest.Questions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var q struct {
			Question string `json:"question"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatalf("questions: %v", err)
		}
		qs = append(qs, q.Question)
	}
	if err := sc.Err(); err != nil || len(qs) == 0 {
		t.Fatalf("questions: %d read, %v", len(qs), err)
	}
	return qs
}

// TestLoadOnCorpus asks 200 questions from 50 concurrent users (each in its own thread, so
// later questions are follow-ups with history) through the bot core and the real extractive
// pipeline: every question gets exactly one answer or refusal, nothing is lost, nothing
// doubled, and the query log agrees.
func TestLoadOnCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes the corpus")
	}
	p, docs := pipeline(t)
	qs := questions(t)
	b, err := bot.New(bot.Config{
		Asker: p, StatePath: filepath.Join(t.TempDir(), "state.db"),
		Docs:     func(context.Context) int { return docs },
		UserRate: rate.Inf, ChannelRate: rate.Inf,
		MaxConcurrent: 4, MaxQueue: 64, Timeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	if got := b.Documents(ctx); got != docs {
		t.Errorf("Documents: got %d, want %d", got, docs)
	}

	const users, total = 50, 200
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
					User: fmt.Sprintf("U%d", u), Text: "<@UFOOTNOTE> " + qs[i%len(qs)]})
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	slices.Sort(lat)

	kinds := map[bot.Kind]int{}
	ids := map[string]bool{}
	for i, r := range replies {
		kinds[r.Kind]++
		if r.Kind != bot.KindAnswer && r.Kind != bot.KindRefusal {
			t.Errorf("question %d (%q): got %q %q", i, qs[i%len(qs)], r.Kind, r.Paragraphs)
			continue
		}
		if ids[r.AnswerID] {
			t.Errorf("question %d: answer id %s twice", i, r.AnswerID)
		}
		ids[r.AnswerID] = true
		if r.Kind == bot.KindAnswer && len(r.Sources) == 0 {
			t.Errorf("question %d: answer without sources", i)
		}
	}
	if n := len(a.Posts()); n != total {
		t.Errorf("posts: got %d, want %d", n, total)
	}
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Questions != total || st.Answered+st.Refusals != total {
		t.Errorf("query log: %+v, want %d questions all answered", st, total)
	}
	if kinds[bot.KindAnswer] < total/2 {
		t.Errorf("answers: got %d of %d, want most evaluation questions answered", kinds[bot.KindAnswer], total)
	}
	t.Logf("real corpus, BM25 + extractive, %d users, 4 slots: %d questions in %v (%.1f questions/s), %d answers, %d refusals; client p50 %v, p95 %v, max %v; logged p50 %v, p95 %v",
		users, total, wall.Round(time.Millisecond), float64(total)/wall.Seconds(), kinds[bot.KindAnswer], kinds[bot.KindRefusal],
		bot.Percentile(lat, 0.5).Round(time.Millisecond), bot.Percentile(lat, 0.95).Round(time.Millisecond), lat[total-1].Round(time.Millisecond),
		st.LatencyP50.Round(time.Millisecond), st.LatencyP95.Round(time.Millisecond))
}

// BenchmarkAskOnCorpus measures one question at a time through the bot core and the real
// extractive pipeline (history off: every question is a one-off).
func BenchmarkAskOnCorpus(b *testing.B) {
	p, _ := pipeline(b)
	qs := questions(b)
	bt, err := bot.New(bot.Config{Asker: p, StatePath: filepath.Join(b.TempDir(), "state.db"),
		UserRate: rate.Inf, ChannelRate: rate.Inf})
	if err != nil {
		b.Fatal(err)
	}
	defer bt.Close()
	i := 0
	for b.Loop() {
		r := bt.Ask(b.Context(), bot.Request{Platform: "bench", Channel: "C", User: "U", Text: qs[i%len(qs)]}, nil)
		if r.Kind != bot.KindAnswer && r.Kind != bot.KindRefusal {
			b.Fatalf("%q: got %q %q", qs[i%len(qs)], r.Kind, r.Paragraphs)
		}
		i++
	}
}
