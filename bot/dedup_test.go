package bot_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// TestDuplicateEventsSeparateProcesses runs two real processes (this test binary re-executed)
// on one state file, both receiving the same deliveries, as two footnote replicas behind one
// Slack app would.
func TestDuplicateEventsSeparateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	// Create the schema first, so the helpers race on events, not on CREATE TABLE.
	newBot(t, bot.Config{StatePath: path}).Close()

	start := filepath.Join(t.TempDir(), "go")
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range 2 {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "BOT_HELPER_STATE="+path, "BOT_HELPER_START="+start)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	if err := os.WriteFile(start, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
		var n int
		if _, err := fmt.Sscanf(lastLine(outs[i].String(), "answered "), "answered %d", &n); err != nil {
			t.Fatalf("helper %d output: %v\n%s", i, err, outs[i])
		}
		t.Logf("process %d answered %d", i, n)
		total += n
	}
	if total != helperEvents {
		t.Errorf("answers over both processes: got %d, want %d", total, helperEvents)
	}
	b := newBot(t, bot.Config{StatePath: path})
	if st, err := b.Stats(t.Context()); err != nil || st.Answered != helperEvents {
		t.Errorf("query log: got %+v, %v, want %d answers", st, err, helperEvents)
	}
}

const helperEvents = 30

// TestHelperProcess is one replica for TestDuplicateEventsSeparateProcesses.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv("BOT_HELPER_STATE")
	if path == "" {
		t.Skip("helper for TestDuplicateEventsSeparateProcesses")
	}
	b := newBot(t, bot.Config{StatePath: path})
	a := &bottest.Adapter{Bot: b, Platform: "slack"}
	for range 500 {
		if _, err := os.Stat(os.Getenv("BOT_HELPER_START")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var wg sync.WaitGroup
	var answered atomic.Int64
	for k := range 2 {
		wg.Go(func() {
			for e := range helperEvents {
				r := a.Say(t.Context(), bottest.Message{Channel: "C1", Thread: fmt.Sprint("T", k), User: "U1",
					Text: encoderQ, EventID: fmt.Sprint("Ev", e)})
				switch r.Kind {
				case bot.KindAnswer:
					answered.Add(1)
				case bot.KindDuplicate:
				default:
					t.Errorf("event %d: got %q %q", e, r.Kind, r.Paragraphs)
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("answered %d\n", answered.Load())
}

func lastLine(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], prefix) {
			return lines[i]
		}
	}
	return ""
}
