package rag

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// systemPrompt is the generator's standing instruction. The exact refusal sentence lets
// the pipeline recognise a refusal and replace it with Refusal, whatever the model adds.
const systemPrompt = `You are footnote, a research assistant that answers questions about research papers using only the numbered sources in the user's message.

Rules:
1. Answer only from the sources. Do not use outside knowledge, and do not guess.
2. If the sources do not contain enough information to answer, reply exactly: ` + Refusal + `
3. Cite every claim with the number of the source that supports it, in square brackets right after the claim, like [1] or [2][3]. Every sentence of a source already ends with its number: keep that number when you use the sentence. Use only source numbers that appear in the sources.
4. First state what the papers say. If you add your own interpretation or inference, put it in a separate final paragraph that starts with "Interpretation:".
5. Be concise: a few sentences, at most three short paragraphs. Do not copy the papers' own reference numbers.`

// evidence is one source offered to the generator; src.N is its number in the prompt.
type evidence struct {
	src     Source
	text    string // the passage as shown: normalised, bibliography markers removed, maybe shortened
	trimmed bool   // whole sentences were dropped from the end to fit the budget
}

// promptText prepares a chunk's text for the prompt: running prose, without the paper's
// own bracketed reference numbers (a model would copy them as citations of our sources).
func promptText(s string) string {
	return strings.Join(splitSentences(stripMarkers(normalizeText(s))), " ")
}

// fillContext numbers candidate sources best first and keeps as many as fit in the
// context budget (Config.ContextTokens, counted with Config.CountTokens over the formatted
// source blocks). The first source that does not fit whole is shortened to the whole
// sentences that fit, and filling stops there: a chunk is never cut mid-sentence. If not
// even one sentence of the best source fits, its first sentence is kept anyway, so a tiny
// budget still yields an answerable prompt.
func (p *Pipeline) fillContext(cands []Source) []evidence {
	budget := p.sourceBudget(context.Background())
	used := 0
	var out []evidence
	for _, c := range cands {
		e := evidence{src: c, text: promptText(c.Chunk.Text)}
		e.src.N = len(out) + 1
		if e.text == "" {
			continue
		}
		if cost := p.cfg.CountTokens(formatSource(e)); used+cost <= budget {
			out = append(out, e)
			used += cost
			continue
		}
		sents := splitSentences(e.text)
		short := evidence{src: e.src, trimmed: true}
		for i := range sents {
			try := short
			try.text = strings.Join(sents[:i+1], " ")
			if used+p.cfg.CountTokens(formatSource(try)) > budget {
				break
			}
			short = try
		}
		if short.text == "" && len(out) == 0 && len(sents) > 0 {
			short.text = sents[0]
		}
		if short.text != "" {
			out = append(out, short)
		}
		break
	}
	return out
}

// formatSource renders one source block of the prompt. The delimiters are XML-like tags
// that models follow well; a tag inside the passage is defused so it cannot end the block.
func formatSource(e evidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<source id=\"%d\">\n", e.src.N)
	fmt.Fprintf(&b, "title: %s\n", oneLine(sourceTitle(e.src.Chunk)))
	if len(e.src.Chunk.Section) > 0 {
		fmt.Fprintf(&b, "section: %s\n", oneLine(strings.Join(e.src.Chunk.Section, " > ")))
	}
	if loc := location(e.src.Chunk); loc != "" {
		fmt.Fprintf(&b, "%s\n", loc)
	}
	if e.trimmed {
		b.WriteString("note: passage shortened\n")
	}
	text := strings.NewReplacer("<source", "‹source", "</source", "‹/source").Replace(markSentences(e.text, e.src.N))
	fmt.Fprintf(&b, "text: %s\n</source>", text)
	return b.String()
}

// sourceTitle names a chunk's document for people and prompts.
func sourceTitle(c Chunk) string {
	switch {
	case c.Title != "":
		return c.Title
	case c.Name != "":
		return c.Name
	case c.Source != "":
		return c.Source
	}
	return "untitled"
}

// location is "pages: 4" / "pages: 4-5" for PDFs and "lines: 10-42" for line-based files.
func location(c Chunk) string {
	span := func(a, b int) string {
		if b <= a {
			return strconv.Itoa(a)
		}
		return strconv.Itoa(a) + "-" + strconv.Itoa(b)
	}
	switch {
	case c.PageStart > 0:
		return "pages: " + span(c.PageStart, c.PageEnd)
	case c.LineStart > 0:
		return "lines: " + span(c.LineStart, c.LineEnd)
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// historyTurns is how many earlier turns a prompt recalls.
const historyTurns = 3

// buildMessages assembles the chat for the generator: the system prompt, then one user
// message with the recent conversation (citation markers removed: their numbers belonged
// to earlier source lists), the numbered sources and the question.
func buildMessages(q Question, ev []evidence) []Message {
	var b strings.Builder
	if h := recentHistory(q.History); len(h) > 0 {
		b.WriteString("Conversation so far:\n")
		for _, t := range h {
			fmt.Fprintf(&b, "Q: %s\nA: %s\n", oneLine(t.Question), cutWords(oneLine(stripMarkers(t.Answer)), 600))
		}
		b.WriteString("\n")
	}
	b.WriteString("Sources:\n\n")
	for _, e := range ev {
		b.WriteString(formatSource(e))
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Question: %s\n\n%s", oneLine(q.Text), answerInstruction)
	return []Message{
		{Role: "system", Content: systemPrompt},
		{Role: "user", Content: b.String()},
	}
}

// answerInstruction closes the user message. It names the marker's shape but gives no
// example sentence: a small model copies an example verbatim, and a copied claim with a
// valid marker would look grounded.
const answerInstruction = "Answer from the sources above in a few sentences. End every sentence with the number of its source in square brackets, like [1]."

// markSentences ends every sentence of a source's text with the source's marker, so a
// model that reuses a sentence, as small models mostly do, carries its citation along.
func markSentences(text string, n int) string {
	sents := splitSentences(text)
	if len(sents) == 0 {
		return text
	}
	marker := " [" + strconv.Itoa(n) + "]"
	for i, s := range sents {
		// Before the full stop, as the instruction's example shows it.
		if end := len(s) - 1; end > 0 && strings.ContainsRune(".!?", rune(s[end])) {
			sents[i] = s[:end] + marker + s[end:]
		} else {
			sents[i] = s + marker
		}
	}
	return strings.Join(sents, " ")
}

// ModelLimits is what a generator knows about the model behind it. Zero fields are
// unknown.
type ModelLimits struct {
	ContextTokens     int           // the context window: prompt and answer together
	PrefillPerSec     float64       // prompt tokens the server reads per second, as it measured
	FirstTokenTimeout time.Duration // how long the generator waits for the first token
}

// LimitedGenerator is a Generator that can report its model's limits (rag/generate's do).
type LimitedGenerator interface {
	Generator
	Limits(ctx context.Context) ModelLimits
}

// Shares of the prompt budget. footnote counts tokens with its embedding model's
// tokenizer, the server with its own (a small model's vocabulary can need a quarter more
// tokens for the same text), and a loaded machine reads prompts at half its idle speed.
const (
	tokenizerMargin   = 0.75
	speedMargin       = 0.5
	minSourceBudget   = 64  // below this not even one passage helps; fillContext keeps a sentence
	questionAllowance = 200 // the question and the recalled conversation, typically
)

// sourceBudget is the token budget for the sources of one prompt: Config.ContextTokens,
// lowered to what fits in the model's context window after the answer (Config.MaxTokens)
// and the fixed prompt, and to what the server can read before the first-token timeout at
// its measured speed within Config.FirstTokenTarget (footnote's own measurement of earlier
// answers when it has one, else the server's). A small local model so gets fewer and
// shorter sources instead of a long wait or a timeout. The speed budget leaves out the
// system prompt: it is the same in every request, and servers (llama.cpp, vLLM) keep it
// in their prompt cache.
func (p *Pipeline) sourceBudget(ctx context.Context) int {
	budget := p.cfg.ContextTokens
	if p.limits == nil {
		return budget
	}
	lim := p.limits(ctx)
	fixed := p.cfg.CountTokens(systemPrompt) + p.cfg.CountTokens(answerInstruction) + questionAllowance
	if lim.ContextTokens > 0 {
		answer := min(p.cfg.MaxTokens, lim.ContextTokens/4)
		if lim.ContextTokens <= smallModelContext {
			answer = min(answer, smallModelAnswer)
		}
		budget = min(budget, int(float64(lim.ContextTokens-answer)*tokenizerMargin)-fixed)
	}
	rate := p.speed.rate()
	if rate == 0 {
		rate = lim.PrefillPerSec
	}
	if rate > 0 {
		wait := p.cfg.FirstTokenTarget
		if lim.FirstTokenTimeout > 0 {
			wait = min(wait, time.Duration(float64(lim.FirstTokenTimeout)*speedMargin))
		}
		read := int(rate*wait.Seconds()*tokenizerMargin) - p.cfg.CountTokens(answerInstruction) - questionAllowance
		budget = min(budget, read)
	}
	if budget < minSourceBudget {
		budget = minSourceBudget
	}
	if budget != p.cfg.ContextTokens {
		p.log.Debug("prompt budget from the model's limits", "tokens", budget, "context", lim.ContextTokens, "prefill_per_s", rate)
	}
	return budget
}

// prefillSpeed is footnote's own measurement of how fast the generator reads prompts:
// prompt tokens (as Config.CountTokens counts them, the budget's unit) over the time to
// the first answer text, smoothed over recent answers.
type prefillSpeed struct {
	mu  sync.Mutex
	ewm float64
}

func (s *prefillSpeed) rate() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ewm
}

func (s *prefillSpeed) observe(tokens int, first time.Duration) {
	if tokens <= 0 || first <= 0 {
		return
	}
	r := float64(tokens) / first.Seconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ewm == 0 {
		s.ewm = r
		return
	}
	s.ewm = 0.5*s.ewm + 0.5*r
}

// watchedGenerator is the pipeline's view of Config.Generator. It measures the prompt
// speed of every generation for sourceBudget, and it ends a generation that has fallen
// into a loop (see loopGuard).
type watchedGenerator struct {
	Generator
	count  func(string) int
	speed  *prefillSpeed
	limits func(context.Context) ModelLimits // nil when the generator cannot tell
}

// Small models: a context window up to smallModelContext tokens gets answers of at most
// smallModelAnswer tokens (a few sentences; SmolLM2-135M at 4,096 otherwise writes on to
// its limit).
const (
	smallModelContext = 8192
	smallModelAnswer  = 256
)

func (g watchedGenerator) Generate(ctx context.Context, req GenerateRequest, fn func(string) error) error {
	if g.limits != nil {
		// A model with a small window is a small model: it rambles rather than stops, so its
		// answer is capped at what a few sentences need.
		if n := g.limits(ctx).ContextTokens; n > 0 && n <= smallModelContext && (req.MaxTokens == 0 || req.MaxTokens > smallModelAnswer) {
			req.MaxTokens = smallModelAnswer
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	first := time.Duration(0)
	var guard loopGuard
	looped := false
	err := g.Generator.Generate(ctx, req, func(delta string) error {
		if looped {
			return nil
		}
		if first == 0 && delta != "" {
			first = time.Since(start)
			tokens := 0
			for _, m := range req.Messages {
				if m.Role != "system" { // cached by the server after the first request
					tokens += g.count(m.Content)
				}
			}
			g.speed.observe(tokens, first)
		}
		out, stop := guard.write(delta)
		if stop {
			looped = true
			cancel() // the server stops generating once the connection closes
		}
		if out == "" {
			return nil
		}
		return fn(out)
	})
	if looped && ctx.Err() != nil {
		// The answer is complete up to the loop; ending it is not a failure.
		return nil
	}
	if err != nil {
		return err
	}
	if rest := guard.flush(); rest != "" {
		return fn(rest)
	}
	return nil
}

// loopGuard catches a small model repeating itself: once a sentence is complete, a
// sentence that begins like an earlier one is held back until it either differs (then it
// is let through) or ends identical (then the generation stops there, the repeat unseen).
// Other text streams through unchanged.
type loopGuard struct {
	seen []string        // completed sentences, normalised
	cur  strings.Builder // the sentence being written
	held strings.Builder // text of cur not yet passed on
}

// loopMinWords keeps short sentences ("Yes.", "See [1].") from counting as a loop.
const loopMinWords = 4

func (g *loopGuard) write(delta string) (out string, stop bool) {
	var b strings.Builder
	release := func() {
		b.WriteString(g.held.String())
		g.held.Reset()
	}
	for _, r := range delta {
		g.cur.WriteRune(r)
		norm := normSentence(g.cur.String())
		if strings.ContainsRune(".!?\n", r) {
			if len(strings.Fields(norm)) >= loopMinWords && slices.Contains(g.seen, norm) {
				g.held.Reset()
				return b.String(), true
			}
			if norm != "" {
				g.seen = append(g.seen, norm)
			}
			g.cur.Reset()
			release()
			b.WriteRune(r)
			continue
		}
		// Hold while the sentence could still turn out a repeat of an earlier one.
		if norm != "" && g.prefixOfSeen(norm) {
			g.held.WriteRune(r)
			continue
		}
		release()
		b.WriteRune(r)
	}
	return b.String(), false
}

func (g *loopGuard) prefixOfSeen(norm string) bool {
	for _, s := range g.seen {
		if strings.HasPrefix(s, norm) {
			return true
		}
	}
	return false
}

// flush passes on held text when the answer ends mid-sentence.
func (g *loopGuard) flush() string {
	s := g.held.String()
	g.held.Reset()
	return s
}

func normSentence(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func recentHistory(h []Turn) []Turn {
	if len(h) > historyTurns {
		return h[len(h)-historyTurns:]
	}
	return h
}
