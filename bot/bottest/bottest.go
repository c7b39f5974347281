// Package bottest provides fakes for testing code built on bot: an Asker that answers from a
// tiny fixed corpus of real-looking chunks (or from a function you give it), and an Adapter
// that turns chat messages and button presses into bot calls the way a platform adapter
// does, round-tripping every button through Action.Encode and DecodeAction.
package bottest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/rag"
)

// Corpus is a handful of passages from well-known papers, with the metadata a real index
// gives them (ids, pages, section paths).
var Corpus = []rag.Chunk{
	chunk("attn", 0, "Attention Is All You Need", "1706.03762", []string{"3 Model Architecture", "3.1 Encoder and Decoder Stacks"}, 3, 3,
		"The encoder is composed of a stack of N = 6 identical layers. Each layer has two sub-layers. The first is a multi-head self-attention mechanism, and the second is a simple, position-wise fully connected feed-forward network."),
	chunk("attn", 1, "Attention Is All You Need", "1706.03762", []string{"3 Model Architecture", "3.1 Encoder and Decoder Stacks"}, 3, 3,
		"The decoder is also composed of a stack of N = 6 identical layers. In addition to the two sub-layers in each encoder layer, the decoder inserts a third sub-layer, which performs multi-head attention over the output of the encoder stack."),
	chunk("attn", 2, "Attention Is All You Need", "1706.03762", []string{"3 Model Architecture", "3.2 Attention", "3.2.1 Scaled Dot-Product Attention"}, 3, 4,
		"We call our particular attention Scaled Dot-Product Attention. The input consists of queries and keys of dimension d_k, and values of dimension d_v. We compute the dot products of the query with all keys, divide each by the square root of d_k, and apply a softmax function to obtain the weights on the values."),
	chunk("attn", 3, "Attention Is All You Need", "1706.03762", []string{"3 Model Architecture", "3.2 Attention", "3.2.2 Multi-Head Attention"}, 4, 5,
		"Multi-head attention allows the model to jointly attend to information from different representation subspaces at different positions. In this work we employ h = 8 parallel attention layers, or heads."),
	chunk("attn", 4, "Attention Is All You Need", "1706.03762", []string{"5 Training", "5.3 Optimizer"}, 7, 7,
		"We used the Adam optimizer with beta1 = 0.9, beta2 = 0.98 and epsilon = 1e-9. We varied the learning rate over the course of training, increasing it linearly for the first warmup steps."),
	chunk("bert", 0, "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding", "1810.04805", []string{"3 BERT", "3.1 Pre-training BERT"}, 4, 4,
		"We pre-train BERT using two unsupervised tasks: masked language modeling, where some percentage of the input tokens are masked at random and then predicted, and next sentence prediction."),
	chunk("bert", 1, "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding", "1810.04805", []string{"3 BERT"}, 3, 3,
		"BERT's model architecture is a multi-layer bidirectional Transformer encoder. BERT BASE has 12 layers, hidden size 768 and 12 self-attention heads."),
	chunk("resnet", 0, "Deep Residual Learning for Image Recognition", "1512.03385", []string{"3 Deep Residual Learning", "3.1 Residual Learning"}, 3, 3,
		"Instead of hoping each few stacked layers directly fit a desired underlying mapping, we explicitly let these layers fit a residual mapping. Shortcut connections perform identity mapping, and their outputs are added to the outputs of the stacked layers."),
	chunk("notes", 0, "Reading notes", "notes", []string{"Attention"}, 0, 0,
		"Self-attention relates different positions of a single sequence in order to compute a representation of the sequence; attention heads specialise."),
}

func chunk(doc string, i int, title, name string, section []string, p0, p1 int, text string) rag.Chunk {
	c := rag.Chunk{
		ID: fmt.Sprintf("%s-%04d", doc, i), DocID: doc, Index: i, Text: text, Tokens: len(strings.Fields(text)),
		Section: section, Title: title, Name: name, Source: "/corpus/" + name + ".pdf",
	}
	if p0 > 0 {
		c.PageStart, c.PageEnd = p0, p1
	} else {
		c.LineStart, c.LineEnd = 10*i+1, 10*i+8
		c.Source = "/corpus/" + name + ".md"
	}
	return c
}

var stop = map[string]bool{"the": true, "a": true, "an": true, "of": true, "in": true, "is": true,
	"are": true, "what": true, "which": true, "how": true, "many": true, "does": true, "do": true,
	"and": true, "to": true, "for": true, "with": true, "it": true, "its": true, "them": true,
	"they": true, "there": true, "this": true, "that": true, "by": true, "on": true, "each": true,
	"about": true, "say": true, "passage": true, "two": true, "use": true, "used": true, "has": true}

func terms(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}) {
		w = strings.TrimSuffix(w, "s")
		if len(w) > 1 && !stop[w] {
			out = append(out, w)
		}
	}
	return out
}

// Answer answers q from Corpus: chunks sharing terms with the question (and, for a
// follow-up, with the previous question) ranked by overlap; the best two are cited sources,
// the rest "More" candidates; no overlap is a refusal. The text streams through fn a word
// at a time.
func Answer(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
	query := q.Text
	if len(q.History) > 0 {
		// A crude condense step: a follow-up inherits the previous question's terms.
		query = q.History[len(q.History)-1].Question + " " + q.Text
	}
	qt := terms(query)
	type scored struct {
		c rag.Chunk
		s float64
	}
	var hits []scored
	for _, c := range Corpus {
		ct := terms(c.Text)
		n := 0
		for _, t := range qt {
			if slices.Contains(ct, t) {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, scored{c, float64(n) / float64(len(qt))})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].s > hits[j].s })
	ans := rag.Answer{Question: q.Text, Query: query, Generator: "fake", Method: "fake"}
	if len(hits) == 0 {
		ans.Text, ans.Refused = rag.Refusal, true
		return ans, nil
	}
	var text []string
	for i, h := range hits {
		src := rag.Source{N: i + 1, Chunk: h.c, Score: h.s, Excerpt: firstSentence(h.c.Text)}
		if i < 2 {
			src.Cited = true
			ans.Sources = append(ans.Sources, src)
			text = append(text, fmt.Sprintf("%s [%d]", firstSentence(h.c.Text), i+1))
			continue
		}
		src.N = 0
		ans.More = append(ans.More, src)
	}
	ans.Text = strings.Join(text, "\n\n")
	ans.Confidence = hits[0].s
	ans.Citations = len(ans.Sources)
	for _, w := range strings.SplitAfter(ans.Text, " ") {
		if err := ctx.Err(); err != nil {
			return rag.Answer{}, err
		}
		if err := fn(w); err != nil {
			return rag.Answer{}, err
		}
	}
	ans.Timings = rag.Timings{Embed: time.Millisecond, Search: 2 * time.Millisecond, Generate: time.Millisecond, Total: 4 * time.Millisecond}
	return ans, nil
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// Asker is a fake bot.Asker that records every question. AskFunc nil answers with Answer.
type Asker struct {
	AskFunc func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error)

	mu    sync.Mutex
	calls []rag.Question
}

// Ask records q and answers it.
func (a *Asker) Ask(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
	a.mu.Lock()
	a.calls = append(a.calls, q)
	a.mu.Unlock()
	if a.AskFunc != nil {
		return a.AskFunc(ctx, q, fn)
	}
	return Answer(ctx, q, fn)
}

// Calls returns the questions asked so far, in order.
func (a *Asker) Calls() []rag.Question {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

// Adapter plays a chat platform in front of a Bot: messages become Requests with fresh
// delivery ids, presses find the button on a reply and send what a platform would send
// back (the encoded action), and every reply an adapter would post is recorded.
type Adapter struct {
	Bot      *bot.Bot
	Platform string // zero means "fake"
	Tenant   string

	mu    sync.Mutex
	posts []Post
}

// seq numbers delivery ids process-wide, so two Adapters never reuse one.
var seq atomic.Int64

// Post is a reply the adapter would have posted.
type Post struct {
	Channel, Thread string
	Reply           bot.Reply
	Deltas          int // progressive updates received before the reply
}

// Message is one chat message.
type Message struct {
	Channel, Thread, User, Text string
	EventID                     string // zero means a fresh id
	Private                     bool
	Selected                    string
}

func (a *Adapter) platform() string {
	if a.Platform == "" {
		return "fake"
	}
	return a.Platform
}

func (a *Adapter) nextID(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, seq.Add(1))
}

// Say delivers a message and returns the reply.
func (a *Adapter) Say(ctx context.Context, m Message) bot.Reply {
	if m.EventID == "" {
		m.EventID = a.nextID("ev")
	}
	deltas := 0
	r := a.Bot.Ask(ctx, bot.Request{
		Platform: a.platform(), Tenant: a.Tenant, Channel: m.Channel, Thread: m.Thread, User: m.User,
		Text: m.Text, Selected: m.Selected, EventID: m.EventID, Private: m.Private,
	}, func(string) { deltas++ })
	a.post(Post{Channel: m.Channel, Thread: m.Thread, Reply: r, Deltas: deltas})
	return r
}

// Press clicks the button of the given kind (and source number, for ActShowSource) on r, as
// user in channel, with an optional feedback comment. It fails when r has no such button or
// the button's value does not survive Encode and DecodeAction.
func (a *Adapter) Press(ctx context.Context, channel, user string, r bot.Reply, kind bot.ActionKind, source int, comment string) (bot.Reply, error) {
	for _, act := range r.Actions {
		if act.Kind != kind || kind == bot.ActShowSource && act.Source != source {
			continue
		}
		return a.PressValue(ctx, channel, user, act.Encode(), comment, "")
	}
	return bot.Reply{}, fmt.Errorf("reply %s has no %s button for source %d", r.AnswerID, kind, source)
}

// PressValue sends a raw button value (a Slack action value or Discord custom_id), with an
// explicit delivery id ("" means a fresh one).
func (a *Adapter) PressValue(ctx context.Context, channel, user, value, comment, eventID string) (bot.Reply, error) {
	act, err := bot.DecodeAction(value)
	if err != nil {
		return bot.Reply{}, err
	}
	if eventID == "" {
		eventID = a.nextID("click")
	}
	r := a.Bot.Act(ctx, bot.Click{Action: act, Platform: a.platform(), Tenant: a.Tenant, Channel: channel,
		User: user, Comment: comment, EventID: eventID})
	a.post(Post{Channel: channel, Reply: r})
	return r, nil
}

func (a *Adapter) post(p Post) {
	if p.Reply.Kind == bot.KindDuplicate {
		return // adapters post nothing for a redelivered event
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.posts = append(a.posts, p)
}

// Posts returns what the adapter would have posted, in order.
func (a *Adapter) Posts() []Post {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.posts)
}
