package slack

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/footnote-dev/footnote/bot"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestMrkdwn(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "Each layer has two sub-layers.", "Each layer has two sub-layers."},
		{"bold", "**two sub-layers**", "*two sub-layers*"},
		{"bold underscores", "__two__ layers", "*two* layers"},
		{"italic star", "a *self-attention* layer", "a _self-attention_ layer"},
		{"italic underscore", "a _feed-forward_ net", "a _feed-forward_ net"},
		{"bold with italic inside", "**bold *and* more**", "*bold _and_ more*"},
		{"snake_case is not italic", "use d_model and d_ff", "use d_model and d_ff"},
		{"lone star is literal", "5 * 3 = 15", "5 * 3 = 15"},
		{"strike", "~~old~~ new", "~old~ new"},
		{"markers kept", "as shown [1][2] and [3].", "as shown [1][2] and [3]."},
		{"link", "see [the paper](https://arxiv.org/abs/1706.03762)", "see <https://arxiv.org/abs/1706.03762|the paper>"},
		{"link with parentheses", "[Go](https://en.wikipedia.org/wiki/Go_(programming_language)) rocks",
			"<https://en.wikipedia.org/wiki/Go_(programming_language)|Go> rocks"},
		{"link with title", `[x](https://a.b/c "title")`, "<https://a.b/c|x>"},
		{"link with ampersand", "[q](https://a.b/?x=1&y=2)", "<https://a.b/?x=1&amp;y=2|q>"},
		{"link label formatting", "[**bold** label](https://a.b)", "<https://a.b|*bold* label>"},
		{"marker then parenthesis is not a link", "[1] (see above)", "[1] (see above)"},
		{"escape", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"slack tokens untouched", "hi <@U123> in <#C42|general> <!here> <https://x.y|x>", "hi <@U123> in <#C42|general> <!here> <https://x.y|x>"},
		{"code span escaped only", "run `a<b && **c**`", "run `a&lt;b &amp;&amp; **c**`"},
		{"bullets", "- one\n* two\n  + nested", "• one\n• two\n  • nested"},
		{"ordered", "1. first\n2) second", "1. first\n2. second"},
		{"heading", "## Results **now**", "*Results now*"},
		{"quote", "> quoted <x>", ">quoted &lt;x&gt;"},
		{"fenced code", "```go\nif a < b && **c** {}\n```\nafter", "```\nif a &lt; b &amp;&amp; **c** {}\n```\nafter"},
		{"unterminated fence closed", "```\ncode", "```\ncode\n```"},
		{"escaped star", `\*not italic\*`, "*not italic*"},
		{"rule", "---", "───"},
		{"unicode", "**Äpfel** und _Öl_ — ok", "*Äpfel* und _Öl_ — ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Mrkdwn(tt.in); got != tt.want {
				t.Errorf("Mrkdwn(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestButtonValuesDecode(t *testing.T) {
	r := sampleAnswer()
	var got []bot.Action
	for _, b := range render(r)[0].Blocks {
		ab, ok := b.(*slack.ActionBlock)
		if !ok {
			continue
		}
		for _, e := range ab.Elements.ElementSet {
			a, err := bot.DecodeAction(e.(*slack.ButtonBlockElement).Value)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, bot.Action{Kind: a.Kind, AnswerID: a.AnswerID, Source: a.Source})
		}
	}
	if diff := cmp.Diff(r.Actions, got); diff != "" {
		t.Errorf("decoded button values (-want +got):\n%s", diff)
	}
}

func TestRenderGolden(t *testing.T) {
	many := sampleAnswer()
	for n := 4; n <= 8; n++ {
		many.Sources = append(many.Sources, bot.Source{N: n, Title: "Paper", Score: 0.2, Excerpt: "More."})
		many.Actions = append(many.Actions, bot.Action{Kind: bot.ActShowSource, AnswerID: many.AnswerID, Source: n})
	}
	private := sampleAnswer()
	private.Private = true
	private = withShare(private)
	tests := map[string]bot.Reply{
		"answer":       sampleAnswer(),
		"answer_many":  many,
		"private":      private,
		"refusal":      {Kind: bot.KindRefusal, RequestID: "r2", Paragraphs: []string{"I could not find this in the papers."}},
		"error":        {Kind: bot.KindError, RequestID: "r3", ErrorRef: "E7K2", Paragraphs: []string{"Something went wrong on my side."}},
		"source":       {Kind: bot.KindSource, RequestID: "r4", Sources: []bot.Source{{N: 2, Title: "Attention Is All You Need", Section: []string{"3 Model Architecture"}, Pages: "3–4", Score: 0.63, Text: "We employ a residual connection <around> each & every sub-layer."}}},
		"notice":       {Kind: bot.KindNotice, RequestID: "r5", Paragraphs: []string{"Thanks for the feedback."}},
		"with_note":    {Kind: bot.KindAnswer, RequestID: "r6", Paragraphs: []string{"Short answer [1]."}, Note: "the language model timed out; extractive answer", Sources: sampleAnswer().Sources[:1]},
		"more_sources": {Kind: bot.KindSources, RequestID: "r7", Sources: []bot.Source{{N: 4, Title: "BERT", Score: 0.41, Excerpt: "We introduce BERT."}}},
	}
	for name, reply := range tests {
		t.Run(name, func(t *testing.T) {
			msgs := render(reply)
			for _, m := range msgs {
				checkLimits(t, m)
			}
			got, err := json.MarshalIndent(msgs, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "render_"+name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("render %s differs from %s (-want +got):\n%s", name, path, diff)
			}
		})
	}
}

func TestRenderAnswerContent(t *testing.T) {
	msgs := render(sampleAnswer())
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	raw, _ := json.Marshal(msgs[0].Blocks)
	var blocks []map[string]any
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, b := range blocks {
		lines = append(lines, blockText(b))
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"*two sub-layers* [1]",
		"_self-attention_",
		"• followed by `LayerNorm(x + Sublayer(x))` [2]",
		"[1] *Attention Is All You Need* · 3 Model Architecture › 3.1 Encoder and Decoder Stacks · p. 3 · relevance 0.87",
		"[2] *Attention Is All You Need* · 3 Model Architecture · p. 3–4 · relevance 0.63",
		"[3] *layer_norm* · lines 10–42 · relevance 0.31 · _also retrieved_",
		"Layer normalization &lt;LN&gt; &amp; friends.",
		"Show source 1 | Show source 2 | Show source 3 | More sources | 👍 | 👎",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered answer lacks %q; got:\n%s", want, got)
		}
	}
	if msgs[0].Text == "" {
		t.Error("fallback text is empty")
	}
}

func TestRenderSplitsLongAnswers(t *testing.T) {
	// 60 paragraphs of ~900 chars: ~54k chars, far beyond one message (Slack rejects ~13k with
	// msg_blocks_too_long) and beyond one section (3,000 chars).
	var paras []string
	var words []string
	for p := 0; p < 60; p++ {
		var b strings.Builder
		for w := 0; w < 90; w++ {
			word := "word" + strings.Repeat("x", w%7) + "-" + string(rune('a'+p%26))
			words = append(words, word)
			b.WriteString(word + " ")
		}
		paras = append(paras, b.String())
	}
	// One giant paragraph with no blank line, to force word-boundary cuts.
	var giant strings.Builder
	for w := 0; w < 2000; w++ {
		word := "giant" + string(rune('a'+w%26))
		words = append(words, word)
		giant.WriteString(word + " ")
	}
	paras = append(paras, giant.String())
	r := sampleAnswer()
	r.Paragraphs = paras
	msgs := render(r)
	if len(msgs) < 5 {
		t.Fatalf("got %d messages, want the answer split over at least 5", len(msgs))
	}
	var gotWords []string
	for i, m := range msgs {
		checkLimits(t, m)
		for _, b := range m.Blocks {
			s, ok := b.(*slack.SectionBlock)
			if !ok || strings.HasPrefix(s.Text.Text, "[") || s.Text.Text == "*Sources*" {
				continue
			}
			gotWords = append(gotWords, strings.Fields(s.Text.Text)...)
		}
		hasActions := false
		for _, b := range m.Blocks {
			hasActions = hasActions || b.BlockType() == slack.MBTAction
		}
		if hasActions != (i == len(msgs)-1) {
			t.Errorf("message %d of %d: actions present = %v; buttons belong to the last message only", i+1, len(msgs), hasActions)
		}
	}
	// Words survive in order, none cut in two.
	if diff := cmp.Diff(words, gotWords); diff != "" {
		t.Errorf("answer words after splitting (-want +got):\n%s", diff)
	}
}

func TestSplitTextCodeFence(t *testing.T) {
	code := "```\n" + strings.Repeat("x := 1\n", 1000) + "```"
	parts := bot.SplitText(code, 3000, outsideToken)
	if len(parts) < 2 {
		t.Fatalf("got %d parts, want several", len(parts))
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > maxSectionText {
			t.Errorf("part %d has %d chars, over %d", i, n, maxSectionText)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Errorf("part %d leaves a code fence open", i)
		}
	}
}

func TestSplitTextKeepsSlackTokens(t *testing.T) {
	label := strings.Repeat("long label ", 20)
	s := strings.Repeat("word ", 560) + "<https://example.com/x|" + label + "> tail"
	for _, p := range bot.SplitText(s, 3000, outsideToken) {
		if strings.Count(p, "<") != strings.Count(p, ">") {
			t.Errorf("a part cuts a <…> token: %q", p[max(0, len(p)-80):])
		}
	}
}

// checkLimits fails when a message breaks a Block Kit limit (PLATFORMS.md, Slack).
func checkLimits(t *testing.T, m message) {
	t.Helper()
	if len(m.Blocks) > maxBlocks {
		t.Errorf("%d blocks, Slack allows %d", len(m.Blocks), maxBlocks)
	}
	raw, _ := json.Marshal(m.Blocks)
	if len(raw) > maxMessageBlocks {
		t.Errorf("blocks are %d bytes, over our %d budget (msg_blocks_too_long at ~13k)", len(raw), maxMessageBlocks)
	}
	if m.Text == "" || utf8.RuneCountInString(m.Text) > maxMessageText {
		t.Errorf("fallback text has %d chars; want 1..%d", utf8.RuneCountInString(m.Text), maxMessageText)
	}
	ids := map[string]bool{}
	for _, b := range m.Blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			if n := utf8.RuneCountInString(b.Text.Text); n > maxSectionText || n == 0 {
				t.Errorf("section text has %d chars; want 1..%d", n, maxSectionText)
			}
		case *slack.ContextBlock:
			if n := len(b.ContextElements.Elements); n > maxContextElements {
				t.Errorf("context has %d elements, over %d", n, maxContextElements)
			}
		case *slack.ActionBlock:
			if n := len(b.Elements.ElementSet); n > maxActionElements {
				t.Errorf("actions block has %d elements, over %d", n, maxActionElements)
			}
			for _, e := range b.Elements.ElementSet {
				switch e := e.(type) {
				case *slack.ButtonBlockElement:
					if utf8.RuneCountInString(e.Text.Text) > maxButtonText || len(e.Value) > maxValue || len(e.ActionID) > maxActionID {
						t.Errorf("button %q breaks a limit", e.ActionID)
					}
					if ids[e.ActionID] {
						t.Errorf("duplicate action_id %q", e.ActionID)
					}
					ids[e.ActionID] = true
				case *slack.SelectBlockElement:
					if len(e.Options) > maxOptions {
						t.Errorf("select has %d options", len(e.Options))
					}
					for _, o := range e.Options {
						if len(o.Value) > maxValue || utf8.RuneCountInString(o.Text.Text) > maxOptionText {
							t.Errorf("option %q breaks a limit", o.Value)
						}
					}
				}
			}
		}
	}
}
