package discord

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/bot"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestRenderGolden(t *testing.T) {
	private := withShare(sampleAnswer())
	private.Private = true
	tests := map[string]bot.Reply{
		"answer":       sampleAnswer(),
		"private":      private,
		"refusal":      {Kind: bot.KindRefusal, RequestID: "r2", AnswerID: "ans_02", Paragraphs: []string{"I could not find this in the papers."}, Actions: []bot.Action{{Kind: bot.ActFeedbackUp, AnswerID: "ans_02"}, {Kind: bot.ActFeedbackDown, AnswerID: "ans_02"}}},
		"error":        {Kind: bot.KindError, RequestID: "r3", ErrorRef: "e-7k2mqp9x", Paragraphs: []string{"That took too long, so I stopped. Please try again, perhaps with a more specific question."}},
		"source":       {Kind: bot.KindSource, RequestID: "r4", Sources: []bot.Source{{N: 2, Title: "Attention Is All You Need", Section: []string{"3 Model Architecture"}, Pages: "3–4", Score: 0.63, Text: "We employ a residual connection *around* each of the two sub-layers, followed by layer_norm.\n# not a heading"}}},
		"notice":       {Kind: bot.KindNotice, RequestID: "r5", Paragraphs: []string{"Thanks for the feedback."}},
		"with_note":    {Kind: bot.KindAnswer, RequestID: "r6", AnswerID: "ans_06", Question: "q?", Paragraphs: []string{"Short answer [1]."}, Note: "the language model timed out; extractive answer", Sources: sampleAnswer().Sources[:1]},
		"more_sources": {Kind: bot.KindSources, RequestID: "r7", Sources: []bot.Source{{N: 4, Title: "BERT", Score: 0.41, Excerpt: "We introduce BERT."}}, Actions: []bot.Action{{Kind: bot.ActShowSource, AnswerID: "ans_01", Source: 4}}},
	}
	for name, reply := range tests {
		t.Run(name, func(t *testing.T) {
			msgs := render(reply)
			for _, m := range msgs {
				checkLimits(t, m)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // readable goldens: ">" quotes, "&"
			enc.SetIndent("", "  ")
			if err := enc.Encode(msgs); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
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

func TestRenderAnswer(t *testing.T) {
	msgs := render(sampleAnswer())
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if len(m.Embeds) != 2 {
		t.Fatalf("got %d embeds, want answer + sources", len(m.Embeds))
	}
	if m.Embeds[0].Title != sampleAnswer().Question {
		t.Errorf("title %q", m.Embeds[0].Title)
	}
	want := "Each encoder layer has **two sub-layers** [1]: a multi-head *self-attention* mechanism and a position-wise feed-forward network [1][2].\n\n- residual connections around each\n- followed by `LayerNorm(x + Sublayer(x))` [2]"
	if m.Embeds[0].Description != want {
		t.Errorf("description\n got %q\nwant %q", m.Embeds[0].Description, want)
	}
	fields := m.Embeds[1].Fields
	wantFields := []*discordgo.MessageEmbedField{
		{Name: "[1] Attention Is All You Need", Value: "3 Model Architecture › 3.1 Encoder and Decoder Stacks · p. 3 · relevance 0.87\n> The encoder is composed of a stack of N = 6 identical layers. Each layer has two sub-layers."},
		{Name: "[2] Attention Is All You Need", Value: "3 Model Architecture · p. 3–4 · relevance 0.63\n> We employ a residual connection around each of the two sub-layers, followed by layer normalization."},
		{Name: "[3] layer\\_norm", Value: "lines 10–42 · relevance 0.31 · *also retrieved*\n> Layer normalization \\<LN> & \\*friends\\*."},
	}
	_ = wantFields
	if diff := cmp.Diff([]string{wantFields[0].Name, wantFields[1].Name, "[3] layer_norm"}, []string{fields[0].Name, fields[1].Name, fields[2].Name}); diff != "" {
		t.Errorf("field names (-want +got):\n%s", diff)
	}
	for i := range 3 {
		if i < 2 && fields[i].Value != wantFields[i].Value {
			t.Errorf("field %d value\n got %q\nwant %q", i, fields[i].Value, wantFields[i].Value)
		}
	}
	if fields[2].Value != wantFields[2].Value {
		t.Errorf("escaped excerpt\n got %q\nwant %q", fields[2].Value, wantFields[2].Value)
	}
}

func TestCustomIDsDecode(t *testing.T) {
	r := withShare(sampleAnswer())
	var got []bot.Action
	for _, c := range render(r)[0].Components {
		for _, b := range c.(discordgo.ActionsRow).Components {
			id := b.(discordgo.Button).CustomID
			if len(id) == 0 || len(id) > maxCustomID {
				t.Errorf("custom_id %q has %d chars; Discord allows 1–100", id, len(id))
			}
			a, err := bot.DecodeAction(id)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, bot.Action{Kind: a.Kind, AnswerID: a.AnswerID, Source: a.Source})
		}
	}
	if diff := cmp.Diff(r.Actions, got); diff != "" {
		t.Errorf("decoded custom_ids (-want +got):\n%s", diff)
	}
	// The longest answer id bot accepts still fits.
	long := bot.Action{Kind: bot.ActMoreSources, AnswerID: strings.Repeat("x", 64)}
	if n := len(long.Encode()); n > maxCustomID {
		t.Errorf("encoded action has %d chars, over %d", n, maxCustomID)
	}
}

func TestRenderManySources(t *testing.T) {
	r := sampleAnswer()
	r.Sources, r.Actions = nil, nil
	for n := 1; n <= 40; n++ {
		r.Sources = append(r.Sources, bot.Source{N: n, Title: strings.Repeat("Long title ", 30), Section: []string{strings.Repeat("Section ", 20)},
			Pages: "3", Score: 0.5, Excerpt: strings.Repeat("excerpt words ", 60), Cited: n < 3})
		r.Actions = append(r.Actions, bot.Action{Kind: bot.ActShowSource, AnswerID: "ans_01", Source: n})
	}
	r.Actions = append(r.Actions, bot.Action{Kind: bot.ActMoreSources, AnswerID: "ans_01"},
		bot.Action{Kind: bot.ActFeedbackUp, AnswerID: "ans_01"}, bot.Action{Kind: bot.ActFeedbackDown, AnswerID: "ans_01"})
	msgs := render(r)
	fields := 0
	for i, m := range msgs {
		checkLimits(t, m)
		for _, e := range m.Embeds {
			fields += len(e.Fields)
		}
		if (len(m.Components) > 0) != (i == len(msgs)-1) {
			t.Errorf("message %d: buttons belong on the last message only", i)
		}
	}
	if fields != 40 {
		t.Errorf("got %d source fields, want all 40", fields)
	}
	last := msgs[len(msgs)-1].Components
	if len(last) != maxRows {
		t.Errorf("got %d rows, want %d (4 of sources, 1 of actions)", len(last), maxRows)
	}
}

func TestMarkdown(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "Each layer has two sub-layers [1].", "Each layer has two sub-layers [1]."},
		{"bold italic kept", "**two** *self* _attn_ `x_y`", "**two** *self* _attn_ `x_y`"},
		{"heading", "## Results **now**", "**Results now**"},
		{"bullets", "* one\n+ two\n  * nested\n- three", "- one\n- two\n  - nested\n- three"},
		{"fence untouched", "```\n# comment\n* x\n```\n# Title", "```\n# comment\n* x\n```\n**Title**"},
		{"unterminated fence closed", "```\ncode", "```\ncode\n```"},
		{"link kept", "see [the paper](https://arxiv.org/abs/1706.03762)", "see [the paper](https://arxiv.org/abs/1706.03762)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Markdown(tt.in); got != tt.want {
				t.Errorf("Markdown(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEscapeMarkdown(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a*b*c", `a\*b\*c`},
		{"d_model and ~x~ `c` |s|", `d\_model and \~x\~ \` + "`c\\` " + `\|s\|`},
		{"# not a heading\n- not a list\n> not a quote", "\\# not a heading\n\\- not a list\n\\> not a quote"},
		{"[x](http://a.b) <@123>", `[x]\(http://a.b) \<@123>`},
		{`back\slash`, `back\\slash`},
	}
	for _, tt := range tests {
		if got := escapeMarkdown(tt.in); got != tt.want {
			t.Errorf("escapeMarkdown(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestSplitTextNeverMidWord(t *testing.T) {
	var words []string
	for i := range 3000 {
		words = append(words, fmt.Sprintf("wörd%d", i))
	}
	parts := bot.SplitText(strings.Join(words, " "), maxContent, nil)
	if len(parts) < 5 {
		t.Fatalf("got %d parts", len(parts))
	}
	var got []string
	for _, p := range parts {
		if n := utf8.RuneCountInString(p); n > maxContent {
			t.Errorf("part has %d chars, over %d", n, maxContent)
		}
		got = append(got, strings.Fields(p)...)
	}
	if diff := cmp.Diff(words, got); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
	code := "```\n" + strings.Repeat("x := 1\n", 1000) + "```"
	for i, p := range bot.SplitText(code, maxContent, nil) {
		if strings.Count(p, "```")%2 != 0 {
			t.Errorf("part %d leaves a code fence open", i)
		}
	}
}

func TestThreadName(t *testing.T) {
	long := strings.Repeat("attention ", 30)
	if n := utf8.RuneCountInString(threadName(long)); n > maxThreadName || n == 0 {
		t.Errorf("thread name has %d chars; want 1..100", n)
	}
	if got := threadName("<@123> what is **attention**?\nreally"); got != "what is attention? really" {
		t.Errorf("threadName = %q", got)
	}
	if got := threadName("<@123>"); got != "footnote answer" {
		t.Errorf("empty question gives %q", got)
	}
}

// checkLimits fails when a message breaks a Discord limit (PLATFORMS.md, Discord).
func checkLimits(t *testing.T, m message) {
	t.Helper()
	if n := utf8.RuneCountInString(m.Content); n > maxContent {
		t.Errorf("content has %d chars, over %d", n, maxContent)
	}
	if m.Content == "" && len(m.Embeds) == 0 {
		t.Error("message has neither content nor embeds")
	}
	if len(m.Embeds) > maxEmbeds {
		t.Errorf("%d embeds, over %d", len(m.Embeds), maxEmbeds)
	}
	total := 0
	for _, e := range m.Embeds {
		total += embedSize(e)
		if utf8.RuneCountInString(e.Title) > maxEmbedTitle || utf8.RuneCountInString(e.Description) > maxEmbedDescription {
			t.Errorf("embed title %d / description %d chars over the limits", utf8.RuneCountInString(e.Title), utf8.RuneCountInString(e.Description))
		}
		if len(e.Fields) > maxFields {
			t.Errorf("%d fields, over %d", len(e.Fields), maxFields)
		}
		for _, f := range e.Fields {
			if n, v := utf8.RuneCountInString(f.Name), utf8.RuneCountInString(f.Value); n == 0 || n > maxFieldName || v == 0 || v > maxFieldValue {
				t.Errorf("field name %d / value %d chars out of range", n, v)
			}
		}
		if e.Footer != nil && utf8.RuneCountInString(e.Footer.Text) > maxFooter {
			t.Errorf("footer over %d", maxFooter)
		}
	}
	if total > maxEmbedTotal {
		t.Errorf("embeds total %d chars, over %d", total, maxEmbedTotal)
	}
	if len(m.Components) > maxRows {
		t.Errorf("%d action rows, over %d", len(m.Components), maxRows)
	}
	ids := map[string]bool{}
	for _, c := range m.Components {
		row := c.(discordgo.ActionsRow)
		if len(row.Components) > maxButtonsPerRow || len(row.Components) == 0 {
			t.Errorf("row has %d buttons; want 1..%d", len(row.Components), maxButtonsPerRow)
		}
		for _, b := range row.Components {
			btn := b.(discordgo.Button)
			if utf8.RuneCountInString(btn.Label) > maxButtonLabel || len(btn.CustomID) > maxCustomID || ids[btn.CustomID] {
				t.Errorf("button %q breaks a limit or repeats a custom_id", btn.CustomID)
			}
			ids[btn.CustomID] = true
		}
	}
}
