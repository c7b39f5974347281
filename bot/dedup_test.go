package bot_test

import (
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/time/rate"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/bot/bottest"
)

func TestDuplicateEventsOneBot(t *testing.T) {
	asker := &bottest.Asker{}
	b := newBot(t, bot.Config{Asker: asker})
	a := &bottest.Adapter{Bot: b, Platform: "slack"}
	ctx := t.Context()

	var wg sync.WaitGroup
	replies := make([]bot.Reply, 8)
	for i := range replies {
		wg.Go(func() {
			replies[i] = a.Say(ctx, bottest.Message{Channel: "C1", Thread: "T1", User: "U1", Text: encoderQ, EventID: "Ev0001"})
		})
	}
	wg.Wait()
	if got := countKinds(replies); got[bot.KindAnswer] != 1 || got[bot.KindDuplicate] != 7 {
		t.Errorf("replies: got %v, want 1 answer and 7 duplicates", got)
	}
	if n := len(asker.Calls()); n != 1 {
		t.Errorf("asker calls: got %d, want 1", n)
	}
	if n := len(a.Posts()); n != 1 {
		t.Errorf("posts: got %d, want 1", n)
	}
	// The same id on another platform is another event.
	if r := (&bottest.Adapter{Bot: b, Platform: "discord"}).Say(ctx, bottest.Message{Channel: "C1", User: "U1", Text: encoderQ, EventID: "Ev0001"}); r.Kind != bot.KindAnswer {
		t.Errorf("same id on discord: got %q", r.Kind)
	}

	// Clicks are claimed too.
	var answer bot.Reply
	for _, r := range replies {
		if r.Kind == bot.KindAnswer {
			answer = r
		}
	}
	value := bot.Action{Kind: bot.ActMoreSources, AnswerID: answer.AnswerID}.Encode()
	clicks := make([]bot.Reply, 4)
	for i := range clicks {
		wg.Go(func() {
			r, err := a.PressValue(ctx, "C1", "U1", value, "", "click-1")
			if err != nil {
				t.Error(err)
			}
			clicks[i] = r
		})
	}
	wg.Wait()
	if got := countKinds(clicks); got[bot.KindSources] != 1 || got[bot.KindDuplicate] != 3 {
		t.Errorf("clicks: got %v, want 1 sources reply and 3 duplicates", got)
	}

	// Claim is the adapters' own exactly-once door.
	if !b.Claim(ctx, "slack/cmd/42") || b.Claim(ctx, "slack/cmd/42") {
		t.Error("Claim: want true once, then false")
	}
}

func TestDuplicateEventsTwoProcesses(t *testing.T) {
	// Two Bots on one state file stand for two footnote processes behind one Slack app.
	path := filepath.Join(t.TempDir(), "state.db")
	askers := []*bottest.Asker{{}, {}}
	var adapters []*bottest.Adapter
	for _, asker := range askers {
		b := newBot(t, bot.Config{Asker: asker, StatePath: path, UserRate: rate.Inf, ChannelRate: rate.Inf})
		adapters = append(adapters, &bottest.Adapter{Bot: b, Platform: "slack"})
	}
	ctx := t.Context()
	const events = 20
	var wg sync.WaitGroup
	replies := make([]bot.Reply, 2*2*events)
	for e := range events {
		for p, a := range adapters {
			for k := range 2 {
				wg.Go(func() {
					replies[(e*2+p)*2+k] = a.Say(ctx, bottest.Message{Channel: "C1", User: "U1", Text: encoderQ,
						EventID: "Ev" + string(rune('A'+e))})
				})
			}
		}
	}
	wg.Wait()
	if got := countKinds(replies); got[bot.KindAnswer] != events || got[bot.KindDuplicate] != 3*events {
		t.Errorf("replies: got %v, want %d answers and %d duplicates", got, events, 3*events)
	}
	if n := len(askers[0].Calls()) + len(askers[1].Calls()); n != events {
		t.Errorf("asker calls over both processes: got %d, want %d", n, events)
	}
	if !adapters[0].Bot.Claim(ctx, "k") || adapters[1].Bot.Claim(ctx, "k") {
		t.Error("Claim across processes: want true in one, false in the other")
	}
	// An answer given by one process has working buttons in the other.
	for _, r := range replies {
		if r.Kind != bot.KindAnswer {
			continue
		}
		for _, a := range adapters {
			got, err := a.Press(ctx, "C1", "U1", r, bot.ActShowSource, 1, "")
			if err != nil || got.Kind != bot.KindSource {
				t.Errorf("show source of %s: got %q, %v", r.AnswerID, got.Kind, err)
			}
		}
		break
	}
}

func countKinds(rs []bot.Reply) map[bot.Kind]int {
	m := map[bot.Kind]int{}
	for _, r := range rs {
		m[r.Kind]++
	}
	return m
}
