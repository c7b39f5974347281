package bot_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/time/rate"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
	"github.com/footnote-dev/footnote/rag"
)

var _ bot.Asker = (*bottest.Asker)(nil)

// clock is a controllable Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newBot opens a Bot on a fresh state file with limits off unless cfg sets them.
func newBot(t testing.TB, cfg bot.Config) *bot.Bot {
	t.Helper()
	if cfg.StatePath == "" {
		cfg.StatePath = filepath.Join(t.TempDir(), "state.db")
	}
	if cfg.Asker == nil {
		cfg.Asker = &bottest.Asker{}
	}
	if cfg.UserRate == 0 {
		cfg.UserRate = rate.Inf
	}
	if cfg.ChannelRate == 0 {
		cfg.ChannelRate = rate.Inf
	}
	b, err := bot.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func mustPress(t *testing.T, a *bottest.Adapter, r bot.Reply, kind bot.ActionKind, n int, comment string) bot.Reply {
	t.Helper()
	got, err := a.Press(t.Context(), "C1", "U2", r, kind, n, comment)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

const encoderQ = "<@U0FOOTNOTE> What are the two sub-layers of a Transformer encoder layer?"

func TestAnswerAndFollowUp(t *testing.T) {
	asker := &bottest.Asker{}
	b := newBot(t, bot.Config{Asker: asker})
	a := &bottest.Adapter{Bot: b, Platform: "slack", Tenant: "T1"}
	ctx := t.Context()

	if b.Following(ctx, "slack", "C1", "1700.1") {
		t.Fatal("Following before any question: got true, want false")
	}
	r1 := a.Say(ctx, bottest.Message{Channel: "C1", Thread: "1700.1", User: "U1", Text: encoderQ})
	if r1.Kind != bot.KindAnswer {
		t.Fatalf("kind: got %q, want %q (%v)", r1.Kind, bot.KindAnswer, r1.Paragraphs)
	}
	if r1.Question != "What are the two sub-layers of a Transformer encoder layer?" {
		t.Errorf("question: got %q", r1.Question)
	}
	if r1.AnswerID == "" || r1.RequestID == "" {
		t.Errorf("ids: answer %q request %q, want both set", r1.AnswerID, r1.RequestID)
	}
	want0 := bot.Source{N: 1, ChunkID: "attn-0000", Title: "Attention Is All You Need", Name: "1706.03762",
		Section: []string{"3 Model Architecture", "3.1 Encoder and Decoder Stacks"}, Pages: "3",
		Excerpt: "The encoder is composed of a stack of N = 6 identical layers.", Cited: true,
		DocID: "attn", PageStart: 3, PageEnd: 3}
	if len(r1.Sources) != 2 {
		t.Fatalf("sources: got %d, want 2", len(r1.Sources))
	}
	if diff := cmp.Diff(want0, r1.Sources[0], cmpopts.IgnoreFields(bot.Source{}, "Score")); diff != "" {
		t.Errorf("source 1 (-want +got):\n%s", diff)
	}
	for _, s := range r1.Sources {
		if s.Text != "" {
			t.Errorf("source %d carries full text in an answer reply", s.N)
		}
		if s.Score <= 0 || s.Score > 1 {
			t.Errorf("source %d score %v outside (0, 1]", s.N, s.Score)
		}
	}
	if len(r1.Paragraphs) != 2 || !strings.Contains(r1.Paragraphs[0], "[1]") {
		t.Errorf("paragraphs: got %q, want two with [1] in the first", r1.Paragraphs)
	}
	var kinds []string
	for _, act := range r1.Actions {
		if act.AnswerID != r1.AnswerID {
			t.Errorf("action %v refers to %q, want %q", act, act.AnswerID, r1.AnswerID)
		}
		kinds = append(kinds, act.Label)
	}
	if diff := cmp.Diff([]string{"Show source 1", "Show source 2", "More sources", "👍", "👎"}, kinds); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if r1.Private {
		t.Error("public question got a private answer")
	}
	if posts := a.Posts(); len(posts) != 1 || posts[0].Deltas == 0 {
		t.Errorf("posts: got %d with %v deltas, want 1 streamed", len(posts), posts)
	}

	if !b.Following(ctx, "slack", "C1", "1700.1") {
		t.Error("Following the answered thread: got false, want true")
	}
	if b.Following(ctx, "slack", "C1", "1700.2") || b.Following(ctx, "discord", "C1", "1700.1") {
		t.Error("Following another thread: got true, want false")
	}

	// The follow-up only makes sense with the first question: the fake asker inherits its terms.
	r2 := a.Say(ctx, bottest.Message{Channel: "C1", Thread: "1700.1", User: "U1", Text: "And how many does the decoder have?"})
	if r2.Kind != bot.KindAnswer {
		t.Fatalf("follow-up kind: got %q (%v)", r2.Kind, r2.Paragraphs)
	}
	calls := asker.Calls()
	if len(calls) != 2 {
		t.Fatalf("asker calls: got %d, want 2", len(calls))
	}
	if len(calls[0].History) != 0 {
		t.Errorf("first question history: got %d turns, want 0", len(calls[0].History))
	}
	h := calls[1].History
	if len(h) != 1 {
		t.Fatalf("follow-up history: got %d turns, want 1", len(h))
	}
	if h[0].Question != r1.Question || h[0].Answer != strings.Join(r1.Paragraphs, "\n\n") {
		t.Errorf("history turn: got %q / %q, want the first question and answer", h[0].Question, h[0].Answer)
	}
	if len(h[0].Sources) != 2 || h[0].Sources[0].Chunk.ID != "attn-0000" || h[0].Sources[0].Chunk.Text == "" {
		t.Errorf("history sources: got %+v, want the two cited chunks with text", h[0].Sources)
	}
	if r2.Sources[0].ChunkID != "attn-0001" {
		t.Errorf("follow-up top source: got %s, want the decoder passage attn-0001", r2.Sources[0].ChunkID)
	}

	// A third turn sees both earlier turns, oldest first; another thread sees none.
	a.Say(ctx, bottest.Message{Channel: "C1", Thread: "1700.1", User: "U3", Text: "what about attention heads?"})
	a.Say(ctx, bottest.Message{Channel: "C1", Thread: "1700.2", User: "U1", Text: "what optimizer was used?"})
	calls = asker.Calls()
	if got := calls[2].History; len(got) != 2 || got[0].Question != r1.Question || got[1].Question != r2.Question {
		t.Errorf("third turn history: got %+v", got)
	}
	if got := calls[3].History; len(got) != 0 {
		t.Errorf("other thread history: got %d turns, want 0", len(got))
	}
}

func TestOneOffHasNoHistory(t *testing.T) {
	asker := &bottest.Asker{}
	b := newBot(t, bot.Config{Asker: asker})
	a := &bottest.Adapter{Bot: b}
	for range 2 {
		a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: encoderQ})
	}
	for i, c := range asker.Calls() {
		if len(c.History) != 0 {
			t.Errorf("call %d: got %d history turns for a message without thread", i, len(c.History))
		}
	}
	if b.Following(t.Context(), "fake", "C1", "") {
		t.Error("Following an empty thread: got true")
	}
}

func TestHistoryExpires(t *testing.T) {
	clk := newClock()
	asker := &bottest.Asker{}
	b := newBot(t, bot.Config{Asker: asker, Now: clk.Now, IdleExpiry: time.Hour, HistoryTurns: 2})
	a := &bottest.Adapter{Bot: b}
	ctx := t.Context()
	for _, q := range []string{"encoder layer?", "decoder layer?", "attention heads?", "optimizer?"} {
		a.Say(ctx, bottest.Message{Channel: "C", Thread: "T", User: "U", Text: q})
		clk.Advance(10 * time.Minute)
	}
	calls := asker.Calls()
	if got := len(calls[3].History); got != 2 {
		t.Fatalf("history bounded to 2 turns: got %d", got)
	}
	if h := calls[3].History; h[0].Question != "decoder layer?" || h[1].Question != "attention heads?" {
		t.Errorf("bounded history keeps the newest, oldest first: got %q, %q", h[0].Question, h[1].Question)
	}
	clk.Advance(time.Hour)
	if b.Following(ctx, "fake", "C", "T") {
		t.Error("Following after idle expiry: got true")
	}
	a.Say(ctx, bottest.Message{Channel: "C", Thread: "T", User: "U", Text: "optimizer?"})
	if got := len(asker.Calls()[4].History); got != 0 {
		t.Errorf("history after idle expiry: got %d turns, want 0", got)
	}
}

func TestShowSourceAndMoreSources(t *testing.T) {
	b := newBot(t, bot.Config{MoreBatch: 3})
	a := &bottest.Adapter{Bot: b}
	ctx := t.Context()
	// "attention" matches six passages: two sources and four more.
	r := a.Say(ctx, bottest.Message{Channel: "C1", User: "U1", Text: "what is attention"})
	if r.Kind != bot.KindAnswer || len(r.Sources) != 2 {
		t.Fatalf("answer: kind %q, %d sources", r.Kind, len(r.Sources))
	}

	src := mustPress(t, a, r, bot.ActShowSource, 2, "")
	if src.Kind != bot.KindSource || len(src.Sources) != 1 {
		t.Fatalf("show source 2: kind %q, %d sources", src.Kind, len(src.Sources))
	}
	s := src.Sources[0]
	chunk := chunkByID(t, r.Sources[1].ChunkID)
	if s.N != 2 || s.Text != chunk.Text || s.Pages == "" || len(s.Section) == 0 {
		t.Errorf("show source 2: got %+v, want source 2 with the full chunk text, pages and section", s)
	}

	var shown []int
	m1 := mustPress(t, a, r, bot.ActMoreSources, 0, "")
	if m1.Kind != bot.KindSources || len(m1.Sources) != 3 {
		t.Fatalf("more sources: kind %q, %d sources (%v)", m1.Kind, len(m1.Sources), m1.Paragraphs)
	}
	for _, s := range m1.Sources {
		shown = append(shown, s.N)
	}
	// The reply offers the next batch, which holds what is left.
	m2 := mustPress(t, a, m1, bot.ActMoreSources, 0, "")
	if m2.Kind != bot.KindSources || len(m2.Sources) != 1 {
		t.Fatalf("second more: kind %q, %d sources", m2.Kind, len(m2.Sources))
	}
	shown = append(shown, m2.Sources[0].N)
	if diff := cmp.Diff([]int{3, 4, 5, 6}, shown); diff != "" {
		t.Errorf("more sources numbering (-want +got):\n%s", diff)
	}
	for _, act := range m2.Actions {
		if act.Kind == bot.ActMoreSources {
			t.Error("last batch still offers More sources")
		}
	}
	// The first reply's button is pressed again: nothing left.
	m3 := mustPress(t, a, r, bot.ActMoreSources, 0, "")
	if m3.Kind != bot.KindNotice || !strings.Contains(m3.Paragraphs[0], "every source") {
		t.Errorf("exhausted more: got %q %q, want a notice saying all were shown", m3.Kind, m3.Paragraphs)
	}
	// A source shown through More sources expands too.
	s6 := mustPress(t, a, m2, bot.ActShowSource, 6, "")
	if s6.Kind != bot.KindSource || s6.Sources[0].N != 6 || s6.Sources[0].Text == "" {
		t.Errorf("show source 6: got %q %+v", s6.Kind, s6.Sources)
	}
	// No such source number.
	none, err := a.PressValue(ctx, "C1", "U2", bot.Action{Kind: bot.ActShowSource, AnswerID: r.AnswerID, Source: 42}.Encode(), "", "")
	if err != nil || none.Kind != bot.KindNotice {
		t.Errorf("show source 42: got %q, %v, want a notice", none.Kind, err)
	}
}

func chunkByID(t *testing.T, id string) rag.Chunk {
	t.Helper()
	for _, c := range bottest.Corpus {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no chunk %s", id)
	return rag.Chunk{}
}

func TestNoMoreSources(t *testing.T) {
	b := newBot(t, bot.Config{})
	a := &bottest.Adapter{Bot: b}
	r := a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: "residual shortcut mapping"})
	if r.Kind != bot.KindAnswer {
		t.Fatalf("kind %q", r.Kind)
	}
	for _, act := range r.Actions {
		if act.Kind == bot.ActMoreSources {
			t.Fatalf("answer without More candidates offers More sources: %+v", r.Actions)
		}
	}
	got, err := a.PressValue(t.Context(), "C1", "U1", bot.Action{Kind: bot.ActMoreSources, AnswerID: r.AnswerID}.Encode(), "", "")
	if err != nil || got.Kind != bot.KindNotice {
		t.Errorf("more on an answer without candidates: got %q, %v, want a notice", got.Kind, err)
	}
}

func TestFeedback(t *testing.T) {
	b := newBot(t, bot.Config{})
	a := &bottest.Adapter{Bot: b, Platform: "discord"}
	ctx := t.Context()
	r := a.Say(ctx, bottest.Message{Channel: "C1", User: "U1", Text: encoderQ})

	down := mustPress(t, a, r, bot.ActFeedbackDown, 0, "  It missed the residual connections.  ")
	if down.Kind != bot.KindNotice || !strings.HasPrefix(down.Paragraphs[0], "Thanks") {
		t.Errorf("down vote: got %q %q, want a thank-you notice", down.Kind, down.Paragraphs)
	}
	up, err := a.PressValue(ctx, "C1", "U9", bot.Action{Kind: bot.ActFeedbackUp, AnswerID: r.AnswerID}.Encode(), "", "")
	if err != nil || up.Kind != bot.KindNotice {
		t.Fatalf("up vote: %q, %v", up.Kind, err)
	}
	fb, err := b.Feedback(ctx, r.AnswerID)
	if err != nil {
		t.Fatal(err)
	}
	want := []bot.Feedback{
		{AnswerID: r.AnswerID, Platform: "discord", User: "U2", Up: false, Comment: "It missed the residual connections."},
		{AnswerID: r.AnswerID, Platform: "discord", User: "U9", Up: true},
	}
	if diff := cmp.Diff(want, fb, cmpopts.IgnoreFields(bot.Feedback{}, "At")); diff != "" {
		t.Errorf("feedback (-want +got):\n%s", diff)
	}
	// A user changing their mind replaces the vote and keeps the comment.
	mustPress(t, a, r, bot.ActFeedbackUp, 0, "")
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.FeedbackUp != 2 || st.FeedbackDown != 0 || st.Comments != 1 {
		t.Errorf("stats after a changed vote: up %d down %d comments %d, want 2 0 1", st.FeedbackUp, st.FeedbackDown, st.Comments)
	}
}

func TestButtonsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	asker := &bottest.Asker{}
	cfg := bot.Config{Asker: asker, StatePath: path, UserRate: rate.Inf, ChannelRate: rate.Inf, MoreBatch: 2}
	b1, err := bot.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a1 := &bottest.Adapter{Bot: b1, Platform: "slack"}
	r := a1.Say(ctx, bottest.Message{Channel: "C1", Thread: "T1", User: "U1", Text: "what is attention"})
	mustPress(t, a1, r, bot.ActMoreSources, 0, "")
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}

	// The buttons on r are clicked tomorrow, after a restart.
	b2 := newBot(t, cfg)
	a2 := &bottest.Adapter{Bot: b2, Platform: "slack"}
	s := mustPress(t, a2, r, bot.ActShowSource, 1, "")
	if s.Kind != bot.KindSource || s.Sources[0].ChunkID != r.Sources[0].ChunkID || s.Sources[0].Text == "" {
		t.Errorf("show source after restart: got %q %+v", s.Kind, s.Sources)
	}
	m := mustPress(t, a2, r, bot.ActMoreSources, 0, "")
	if m.Kind != bot.KindSources || len(m.Sources) != 2 || m.Sources[0].N != 5 {
		t.Errorf("more sources after restart: got %q %+v, want the second batch from 5", m.Kind, m.Sources)
	}
	if !b2.Following(ctx, "slack", "C1", "T1") {
		t.Error("Following after restart: got false")
	}
	a2.Say(ctx, bottest.Message{Channel: "C1", Thread: "T1", User: "U1", Text: "how many heads?"})
	if calls := asker.Calls(); len(calls[1].History) != 1 || calls[1].History[0].Question != "what is attention" {
		t.Errorf("history after restart: got %+v", calls[1].History)
	}
}

func TestUnknownAndExpiredAnswers(t *testing.T) {
	clk := newClock()
	b := newBot(t, bot.Config{Now: clk.Now, AnswerTTL: 48 * time.Hour})
	a := &bottest.Adapter{Bot: b}
	ctx := t.Context()
	r := a.Say(ctx, bottest.Message{Channel: "C1", User: "U1", Text: encoderQ})
	for _, act := range []bot.Action{
		{Kind: bot.ActShowSource, AnswerID: "nosuchanswer", Source: 1},
		{Kind: bot.ActMoreSources, AnswerID: "nosuchanswer"},
		{Kind: bot.ActFeedbackUp, AnswerID: "nosuchanswer"},
		{Kind: bot.ActShare, AnswerID: "nosuchanswer"},
	} {
		got, err := a.PressValue(ctx, "C1", "U1", act.Encode(), "", "")
		if err != nil || got.Kind != bot.KindNotice || !strings.Contains(got.Paragraphs[0], "no longer available") {
			t.Errorf("%s on an unknown answer: got %q %q, %v", act.Kind, got.Kind, got.Paragraphs, err)
		}
	}
	clk.Advance(49 * time.Hour)
	got := mustPress(t, a, r, bot.ActShowSource, 1, "")
	if got.Kind != bot.KindNotice || !strings.Contains(got.Paragraphs[0], "no longer available") {
		t.Errorf("expired answer: got %q %q", got.Kind, got.Paragraphs)
	}
}

func TestShare(t *testing.T) {
	b := newBot(t, bot.Config{})
	a := &bottest.Adapter{Bot: b}
	r := a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: encoderQ, Private: true})
	if !r.Private {
		t.Fatal("private question: got a public answer")
	}
	shared := mustPress(t, a, r, bot.ActShare, 0, "")
	if shared.Kind != bot.KindAnswer || shared.Private {
		t.Errorf("share: got kind %q private %v, want a public answer", shared.Kind, shared.Private)
	}
	if diff := cmp.Diff(r.Paragraphs, shared.Paragraphs); diff != "" {
		t.Errorf("shared paragraphs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(r.Sources, shared.Sources); diff != "" {
		t.Errorf("shared sources (-want +got):\n%s", diff)
	}
	for _, act := range shared.Actions {
		if act.Kind == bot.ActShare {
			t.Error("shared answer still offers Share")
		}
	}

	// A route can make a channel private whatever the platform asked.
	b2 := newBot(t, bot.Config{Route: func(platform, tenant, channel string) bot.Route {
		return bot.Route{Private: channel == "quiet"}
	}})
	a2 := &bottest.Adapter{Bot: b2}
	if r := a2.Say(t.Context(), bottest.Message{Channel: "quiet", User: "U1", Text: encoderQ}); !r.Private {
		t.Error("private route: got a public answer")
	}
}

func TestRefusal(t *testing.T) {
	tests := []struct {
		name string
		ask  func(context.Context, rag.Question, func(string) error) (rag.Answer, error)
	}{
		{"fake corpus has nothing", nil},
		{"refused answer with other text and stray sources", func(context.Context, rag.Question, func(string) error) (rag.Answer, error) {
			return rag.Answer{Text: "I could not find that.", Refused: true, Sources: []rag.Source{{N: 1, Chunk: bottest.Corpus[0]}}}, nil
		}},
		{"ErrNoEvidence", func(context.Context, rag.Question, func(string) error) (rag.Answer, error) {
			return rag.Answer{}, fmt.Errorf("search: %w", rag.ErrNoEvidence)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBot(t, bot.Config{Asker: &bottest.Asker{AskFunc: tt.ask}})
			a := &bottest.Adapter{Bot: b}
			r := a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: "what is the airspeed velocity of a swallow?"})
			if r.Kind != bot.KindRefusal {
				t.Fatalf("kind: got %q, want refusal", r.Kind)
			}
			if diff := cmp.Diff([]string{rag.Refusal}, r.Paragraphs); diff != "" {
				t.Errorf("refusal text (-want +got):\n%s", diff)
			}
			if len(r.Sources) != 0 {
				t.Errorf("refusal has %d sources", len(r.Sources))
			}
			for _, act := range r.Actions {
				if act.Kind != bot.ActFeedbackUp && act.Kind != bot.ActFeedbackDown {
					t.Errorf("refusal offers %s", act.Kind)
				}
			}
		})
	}
}

func TestUsageAndMentions(t *testing.T) {
	asker := &bottest.Asker{}
	b := newBot(t, bot.Config{Asker: asker})
	a := &bottest.Adapter{Bot: b}
	for _, text := range []string{"", "   ", "<@U0FOOTNOTE>", "<@!123456789012345678> ", "<@U1|footnote> *  *"} {
		r := a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: text})
		if r.Kind != bot.KindUsage || len(r.Paragraphs) == 0 {
			t.Errorf("%q: got %q %q, want usage", text, r.Kind, r.Paragraphs)
		}
	}
	long := a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: strings.Repeat("why attention? ", 300)})
	if long.Kind != bot.KindUsage || !strings.Contains(long.Paragraphs[0], "too long") {
		t.Errorf("overlong question: got %q %q", long.Kind, long.Paragraphs)
	}
	if n := len(asker.Calls()); n != 0 {
		t.Errorf("asker called %d times for empty or overlong questions", n)
	}
	a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: "<@123456789> how does **multi-head** attention work? <@U1|bob>"})
	if calls := asker.Calls(); len(calls) != 1 || calls[0].Text != "how does multi-head attention work?" {
		t.Errorf("asked: got %+v", calls)
	}
	// Selected-text mode passes the passage on and needs no question.
	a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: "<@U1>", Selected: "  Each layer has two sub-layers. "})
	if calls := asker.Calls(); len(calls) != 2 || calls[1].Selected != "Each layer has two sub-layers." || calls[1].Text == "" {
		t.Errorf("selected mode: got %+v", calls[len(calls)-1])
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<@U123> what is BERT?", "what is BERT?"},
		{"<@U123|footnote> what is BERT?", "what is BERT?"},
		{"<@!123456> what is BERT?", "what is BERT?"},
		{"<@123456>what is BERT?", "what is BERT?"},
		{"hey <@&999> and <!here>, what is d_model?", "hey and , what is d_model?"},
		{"see <https://arxiv.org/abs/1706.03762|the paper> and <https://example.com>", "see the paper and https://example.com"},
		{"in <#C024BE7LR|general> and <#1234>", "in #general and"},
		{"is `softmax` used in *attention*?", "is softmax used in attention?"},
		{"**bold** __under__ ~~gone~~ _it_ ||spoiler||", "bold under gone it spoiler"},
		{"what is 2*3 and snake_case_name?", "what is 2*3 and snake_case_name?"},
		{"&lt;s&gt; token &amp; padding", "<s> token & padding"},
		{"> quoted line\nsecond\tline", "quoted line second line"},
		{"```\ncode block\n```", "code block"},
		{"custom <:thinking:123> emoji <t:1700000000:R>", "custom emoji"},
	}
	for _, tt := range tests {
		if got := bot.Clean(tt.in); got != tt.want {
			t.Errorf("Clean(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParagraphsAndPages(t *testing.T) {
	got := bot.Paragraphs("First [1].\nStill first.\n\n  \nSecond [2].\n\n```\ncode\n\nmore code\n```\n\nLast.")
	want := []string{"First [1].\nStill first.", "Second [2].", "```\ncode\n\nmore code\n```", "Last."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Paragraphs (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		c    rag.Chunk
		want string
	}{
		{rag.Chunk{PageStart: 3, PageEnd: 3}, "3"},
		{rag.Chunk{PageStart: 3, PageEnd: 4}, "3–4"},
		{rag.Chunk{PageStart: 3}, "3"},
		{rag.Chunk{LineStart: 10, LineEnd: 42}, "lines 10–42"},
		{rag.Chunk{LineStart: 7, LineEnd: 7}, "line 7"},
		{rag.Chunk{}, ""},
	} {
		if got := bot.Pages(tt.c); got != tt.want {
			t.Errorf("Pages(%+v): got %q, want %q", tt.c, got, tt.want)
		}
	}
}

func TestActionEncoding(t *testing.T) {
	id := strings.Repeat("z", 64)
	for _, a := range []bot.Action{
		{Kind: bot.ActShowSource, AnswerID: "k3v9x2m7qp", Source: 2, Label: "Show source 2"},
		{Kind: bot.ActShowSource, AnswerID: id, Source: 12345, Label: "Show source 12345"},
		{Kind: bot.ActMoreSources, AnswerID: "k3v9x2m7qp", Label: "More sources"},
		{Kind: bot.ActFeedbackUp, AnswerID: "k3v9x2m7qp", Label: "👍"},
		{Kind: bot.ActFeedbackDown, AnswerID: id, Label: "👎"},
		{Kind: bot.ActShare, AnswerID: "k3v9x2m7qp", Label: "Share in channel"},
	} {
		s := a.Encode()
		if len(s) > 100 {
			t.Errorf("%+v encodes to %d characters", a, len(s))
		}
		got, err := bot.DecodeAction(s)
		if err != nil {
			t.Errorf("DecodeAction(%q): %v", s, err)
			continue
		}
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("round trip of %q (-want +got):\n%s", s, diff)
		}
	}
	if got := (bot.Action{Kind: bot.ActShowSource, AnswerID: "k3v9x2m7qp", Source: 2}).Encode(); got != "fn1:src:k3v9x2m7qp:2" {
		t.Errorf("Encode: got %q", got)
	}
	for _, bad := range []string{"", "fn1", "fn1:src:abc", "fn1:src:abc:0", "fn1:src:abc:x", "fn2:up:abc",
		"fn1:nope:abc", "fn1:up:", "fn1:up:a b", "fn1:up:abc:3", "fn1:up:" + strings.Repeat("a", 98), "other_button"} {
		if a, err := bot.DecodeAction(bad); !errors.Is(err, bot.ErrBadAction) {
			t.Errorf("DecodeAction(%q): got %+v, %v, want ErrBadAction", bad, a, err)
		}
	}
}

func TestRateLimits(t *testing.T) {
	clk := newClock()
	asker := &bottest.Asker{}
	reg := prometheus.NewRegistry()
	b := newBot(t, bot.Config{Asker: asker, Now: clk.Now, Registerer: reg,
		UserRate: rate.Every(10 * time.Second), UserBurst: 2,
		ChannelRate: rate.Every(time.Minute), ChannelBurst: 4})
	a := &bottest.Adapter{Bot: b}
	ctx := t.Context()
	ask := func(user string) bot.Reply {
		return a.Say(ctx, bottest.Message{Channel: "C1", User: user, Text: "encoder layers?"})
	}
	for i := range 2 {
		if r := ask("U1"); r.Kind != bot.KindAnswer {
			t.Fatalf("question %d within the burst: got %q", i+1, r.Kind)
		}
	}
	r := ask("U1")
	if r.Kind != bot.KindRateLimited || !strings.Contains(r.Paragraphs[0], "try again in 10 seconds") || !r.Private {
		t.Errorf("third question: got %q %q, want a private rate-limit reply naming 10 seconds", r.Kind, r.Paragraphs)
	}
	clk.Advance(4 * time.Second)
	if r := ask("U1"); r.Kind != bot.KindRateLimited || !strings.Contains(r.Paragraphs[0], "6 seconds") {
		t.Errorf("after 4s: got %q %q, want 6 seconds", r.Kind, r.Paragraphs)
	}
	clk.Advance(6 * time.Second)
	if r := ask("U1"); r.Kind != bot.KindAnswer {
		t.Errorf("after the refill: got %q", r.Kind)
	}
	// Three answers so far took three of the channel's four tokens.
	if r := ask("U2"); r.Kind != bot.KindAnswer {
		t.Errorf("other user: got %q", r.Kind)
	}
	r = ask("U3")
	if r.Kind != bot.KindRateLimited || !strings.HasPrefix(r.Paragraphs[0], "This channel") {
		t.Errorf("channel limit: got %q %q", r.Kind, r.Paragraphs)
	}
	// The channel's refusal did not use U3's own tokens: both come back once the channel refills.
	clk.Advance(2 * time.Minute)
	for i := range 2 {
		if r := ask("U3"); r.Kind != bot.KindAnswer {
			t.Errorf("U3 question %d after the channel refilled: got %q %q", i+1, r.Kind, r.Paragraphs)
		}
	}
	if n := len(asker.Calls()); n != 6 {
		t.Errorf("asker calls: got %d, want 6 (limited questions never reach it)", n)
	}
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.RateLimited != 3 || st.Answered != 6 || st.Questions != 9 {
		t.Errorf("stats: got %+v, want 3 rate limited, 6 answered, 9 questions", st)
	}
	if got := counter(t, reg, "footnote_bot_rate_limited_total", map[string]string{"scope": "channel"}); got != 1 {
		t.Errorf("rate_limited_total{scope=channel}: got %v, want 1", got)
	}
}

// counter reads one series from a registry; 0 when absent.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue metric
				}
			}
			return value(m)
		}
	}
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func TestBusy(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	asker := &bottest.Asker{AskFunc: func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return rag.Answer{}, ctx.Err()
		}
		return bottest.Answer(ctx, q, fn)
	}}
	reg := prometheus.NewRegistry()
	b := newBot(t, bot.Config{Asker: asker, Registerer: reg, MaxConcurrent: 2, MaxQueue: 1})
	a := &bottest.Adapter{Bot: b}
	ctx := t.Context()

	var wg sync.WaitGroup
	replies := make([]bot.Reply, 3)
	for i := range 3 {
		wg.Go(func() {
			replies[i] = a.Say(ctx, bottest.Message{Channel: "C1", User: fmt.Sprint("U", i), Text: "encoder layers?"})
		})
		if i < 2 {
			<-entered // both slots taken
		}
	}
	// The third waits in the queue.
	waitFor(t, func() bool { return counter(t, reg, "footnote_bot_queue_depth", nil) == 1 })
	if got := counter(t, reg, "footnote_bot_in_flight", nil); got != 2 {
		t.Errorf("in flight: got %v, want 2", got)
	}
	start := time.Now()
	r := a.Say(ctx, bottest.Message{Channel: "C1", User: "U9", Text: "encoder layers?"})
	if r.Kind != bot.KindBusy || len(r.Paragraphs) == 0 {
		t.Errorf("fourth question: got %q, want busy", r.Kind)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("busy reply took %v, want at once", d)
	}
	close(release)
	wg.Wait()
	for i, r := range replies {
		if r.Kind != bot.KindAnswer {
			t.Errorf("question %d: got %q, want an answer", i, r.Kind)
		}
	}
	if got := counter(t, reg, "footnote_bot_in_flight", nil); got != 0 {
		t.Errorf("in flight after: got %v", got)
	}
	if got := counter(t, reg, "footnote_bot_requests_total", map[string]string{"kind": "busy"}); got != 1 {
		t.Errorf("requests_total{kind=busy}: got %v", got)
	}
	st, _ := b.Stats(ctx)
	if st.Busy != 1 || st.Answered != 3 {
		t.Errorf("stats: busy %d answered %d, want 1 and 3", st.Busy, st.Answered)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 5s")
}

func TestTimeout(t *testing.T) {
	var got error
	asker := &bottest.Asker{AskFunc: func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
		if _, ok := ctx.Deadline(); !ok {
			return rag.Answer{}, errors.New("no deadline on the request ctx")
		}
		<-ctx.Done()
		got = ctx.Err()
		return rag.Answer{}, fmt.Errorf("generate with ollama:qwen at http://10.0.0.5:11434: %w", ctx.Err())
	}}
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	b := newBot(t, bot.Config{Asker: asker, Timeout: 50 * time.Millisecond, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	a := &bottest.Adapter{Bot: b}
	r := a.Say(t.Context(), bottest.Message{Channel: "C1", User: "U1", Text: encoderQ})
	if !errors.Is(got, context.DeadlineExceeded) {
		t.Errorf("asker saw %v, want context.DeadlineExceeded", got)
	}
	if r.Kind != bot.KindError || !strings.Contains(r.Paragraphs[0], "took too long") || r.ErrorRef == "" {
		t.Errorf("reply: got %q %q ref %q, want an error saying it took too long", r.Kind, r.Paragraphs, r.ErrorRef)
	}
	if strings.Contains(strings.Join(r.Paragraphs, " "), "10.0.0.5") {
		t.Errorf("reply leaks the error: %q", r.Paragraphs)
	}
	if !strings.Contains(logs.String(), r.ErrorRef) || !strings.Contains(logs.String(), "10.0.0.5") {
		t.Errorf("log does not hold the error under %s:\n%s", r.ErrorRef, logs.String())
	}
	if n := counter(t, reg, "footnote_bot_errors_total", map[string]string{"reason": "timeout"}); n != 1 {
		t.Errorf("errors_total{reason=timeout}: got %v", n)
	}
}

func TestErrorReplies(t *testing.T) {
	const secret = "/home/alice/models/bge.onnx token=sk-abc123"
	tests := []struct {
		name string
		err  error
		want string // in the reply
	}{
		{"model missing", fmt.Errorf("embed: open %s: %w", secret, rag.ErrModelMissing), "footnote models pull"},
		{"store unreachable", fmt.Errorf("search %s: %w", secret, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), "can't reach"},
		{"anything else", fmt.Errorf("rerank %s: index out of range", secret), "reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			b := newBot(t, bot.Config{
				Asker: &bottest.Asker{AskFunc: func(context.Context, rag.Question, func(string) error) (rag.Answer, error) {
					return rag.Answer{}, tt.err
				}},
				Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
			})
			a := &bottest.Adapter{Bot: b}
			r := a.Say(t.Context(), bottest.Message{Channel: "C1", Thread: "T", User: "U1", Text: encoderQ})
			text := strings.Join(r.Paragraphs, " ")
			if r.Kind != bot.KindError || r.ErrorRef == "" || !strings.Contains(text, tt.want) {
				t.Errorf("got %q %q ref %q, want an error reply containing %q", r.Kind, text, r.ErrorRef, tt.want)
			}
			for _, leak := range []string{"alice", "sk-abc123", "index out of range", "connection refused", tt.err.Error()} {
				if strings.Contains(text, leak) {
					t.Errorf("reply contains %q: %q", leak, text)
				}
			}
			if len(r.Actions) != 0 || len(r.Sources) != 0 {
				t.Errorf("error reply has actions or sources: %+v", r)
			}
			if !strings.Contains(logs.String(), r.ErrorRef) || !strings.Contains(logs.String(), "sk-abc123") {
				t.Errorf("the full error is not logged under %s:\n%s", r.ErrorRef, logs.String())
			}
			// A failed question starts no conversation.
			if b.Following(t.Context(), "fake", "C1", "T") {
				t.Error("Following after an error: got true")
			}
			st, _ := b.Stats(t.Context())
			if st.Errors != 1 {
				t.Errorf("stats errors: got %d", st.Errors)
			}
		})
	}
}

func TestUnknownCorpus(t *testing.T) {
	b := newBot(t, bot.Config{
		Corpora: map[string]bot.Asker{"physics": &bottest.Asker{}},
		Asker: &bottest.Asker{AskFunc: func(context.Context, rag.Question, func(string) error) (rag.Answer, error) {
			return rag.Answer{}, errors.New("default corpus must not be asked")
		}},
		Route: func(platform, tenant, channel string) bot.Route { return bot.Route{Corpus: tenant} },
	})
	ok := (&bottest.Adapter{Bot: b, Tenant: "physics"}).Say(t.Context(), bottest.Message{Channel: "C", User: "U", Text: encoderQ})
	if ok.Kind != bot.KindAnswer {
		t.Errorf("routed corpus: got %q %q", ok.Kind, ok.Paragraphs)
	}
	bad := (&bottest.Adapter{Bot: b, Tenant: "chemistry"}).Say(t.Context(), bottest.Message{Channel: "C", User: "U", Text: encoderQ})
	if bad.Kind != bot.KindError || bad.ErrorRef == "" {
		t.Errorf("unknown corpus: got %q", bad.Kind)
	}
}

func TestStreaming(t *testing.T) {
	b := newBot(t, bot.Config{})
	var deltas []string
	r := b.Ask(t.Context(), bot.Request{Platform: "cli", Channel: "local", User: "me", Text: encoderQ},
		func(s string) { deltas = append(deltas, s) })
	if len(deltas) < 2 {
		t.Fatalf("deltas: got %d, want several", len(deltas))
	}
	for i := 1; i < len(deltas); i++ {
		if !strings.HasPrefix(deltas[i], deltas[i-1]) {
			t.Fatalf("delta %d does not extend the text so far: %q then %q", i, deltas[i-1], deltas[i])
		}
	}
	if last := strings.TrimSpace(deltas[len(deltas)-1]); last != strings.Join(r.Paragraphs, "\n\n") {
		t.Errorf("streamed %q, answered %q", last, r.Paragraphs)
	}
	// nil onDelta is allowed.
	if r := b.Ask(t.Context(), bot.Request{Platform: "cli", Text: encoderQ}, nil); r.Kind != bot.KindAnswer {
		t.Errorf("nil onDelta: got %q", r.Kind)
	}
}

func TestDocuments(t *testing.T) {
	if got := newBot(t, bot.Config{}).Documents(t.Context()); got != 0 {
		t.Errorf("no Docs: got %d", got)
	}
	b := newBot(t, bot.Config{Docs: func(context.Context) int { return 12 }})
	if got := b.Documents(t.Context()); got != 12 {
		t.Errorf("Documents: got %d, want 12", got)
	}
}

func TestNewValidates(t *testing.T) {
	dir := t.TempDir()
	for _, cfg := range []bot.Config{
		{Asker: &bottest.Asker{}},
		{StatePath: filepath.Join(dir, "a.db")},
		{StatePath: filepath.Join(dir, "b.db"), Corpora: map[string]bot.Asker{"x": nil}},
		{StatePath: filepath.Join(dir, "no", "such", "dir", "c.db"), Asker: &bottest.Asker{}},
	} {
		if b, err := bot.New(cfg); err == nil {
			b.Close()
			t.Errorf("New(%+v): got no error", cfg)
		}
	}
	// Registering twice on one registry is an error, not a panic.
	reg := prometheus.NewRegistry()
	newBot(t, bot.Config{Registerer: reg})
	if b, err := bot.New(bot.Config{Asker: &bottest.Asker{}, StatePath: filepath.Join(dir, "d.db"), Registerer: reg}); err == nil {
		b.Close()
		t.Error("second Bot on one registry: got no error")
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := newBot(t, bot.Config{Registerer: reg})
	a := &bottest.Adapter{Bot: b, Platform: "slack"}
	r := a.Say(t.Context(), bottest.Message{Channel: "C", User: "U", Text: encoderQ})
	a.Say(t.Context(), bottest.Message{Channel: "C", User: "U", Text: "swallow velocity?"})
	mustPress(t, a, r, bot.ActFeedbackUp, 0, "")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"footnote_bot_requests_total", map[string]string{"platform": "slack", "kind": "answer"}, 1},
		{"footnote_bot_requests_total", map[string]string{"platform": "slack", "kind": "refusal"}, 1},
		{"footnote_bot_refusals_total", map[string]string{"platform": "slack"}, 1},
		{"footnote_bot_stage_duration_seconds", map[string]string{"stage": "search"}, 1},
		{"footnote_bot_request_duration_seconds", map[string]string{"kind": "answer"}, 1},
		{"footnote_bot_actions_total", map[string]string{"action": "up", "result": "ok"}, 1},
		{"footnote_bot_feedback_total", map[string]string{"vote": "up"}, 1},
	} {
		if got := counter(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v: got %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestStats(t *testing.T) {
	asker := &bottest.Asker{}
	asker.AskFunc = func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
		if q.Text == "break" {
			return rag.Answer{}, errors.New("boom")
		}
		return bottest.Answer(ctx, q, fn)
	}
	b := newBot(t, bot.Config{Asker: asker})
	a := &bottest.Adapter{Bot: b}
	for _, q := range []string{encoderQ, "decoder?", "swallow velocity?", "break"} {
		a.Say(t.Context(), bottest.Message{Channel: "C", User: "U", Text: q})
	}
	st, err := b.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Questions != 4 || st.Answered != 2 || st.Refusals != 1 || st.Errors != 1 {
		t.Errorf("stats: got %+v, want 4 questions, 2 answered, 1 refusal, 1 error", st)
	}
	if st.LatencyP50 <= 0 || st.LatencyP95 < st.LatencyP50 || st.Since.IsZero() {
		t.Errorf("latency: p50 %v p95 %v since %v", st.LatencyP50, st.LatencyP95, st.Since)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50}, {0.95, 95}, {1, 100}, {0, 1}} {
		if got := bot.Percentile(d, tt.p); got != tt.want {
			t.Errorf("Percentile(1..100, %v): got %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := bot.Percentile(nil, 0.5); got != 0 {
		t.Errorf("empty: got %v", got)
	}
}

func TestAnonymousNotLimitedTogether(t *testing.T) {
	b := newBot(t, bot.Config{UserRate: rate.Every(time.Hour), UserBurst: 1, ChannelRate: rate.Every(time.Hour), ChannelBurst: 1})
	for i := range 3 {
		r := b.Ask(t.Context(), bot.Request{Platform: "http", Text: encoderQ}, nil)
		if r.Kind != bot.KindAnswer {
			t.Errorf("anonymous question %d: got %q, want an answer", i, r.Kind)
		}
	}
	// A named user is limited as usual.
	b.Ask(t.Context(), bot.Request{Platform: "http", User: "alice", Text: encoderQ}, nil)
	if r := b.Ask(t.Context(), bot.Request{Platform: "http", User: "alice", Text: encoderQ}, nil); r.Kind != bot.KindRateLimited {
		t.Errorf("alice's second question: got %q, want rate limited", r.Kind)
	}
}

func TestStateFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	newBot(t, bot.Config{StatePath: path})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("state file mode: got %v, want 0600", got)
	}
}
