package rag

import (
	"fmt"
	"strconv"
	"strings"
)

// systemPrompt is the generator's standing instruction. The exact refusal sentence lets
// the pipeline recognise a refusal and replace it with Refusal, whatever the model adds.
const systemPrompt = `You are footnote, a research assistant that answers questions about research papers using only the numbered sources in the user's message.

Rules:
1. Answer only from the sources. Do not use outside knowledge, and do not guess.
2. If the sources do not contain enough information to answer, reply exactly: ` + Refusal + `
3. Cite every claim with the number of the source that supports it, in square brackets right after the claim, like [1] or [2][3]. Use only source numbers that appear in the sources.
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
	budget := p.cfg.ContextTokens
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
	text := strings.NewReplacer("<source", "‹source", "</source", "‹/source").Replace(e.text)
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
	fmt.Fprintf(&b, "Question: %s\n\nAnswer from the sources above, citing them as [n].", oneLine(q.Text))
	return []Message{
		{Role: "system", Content: systemPrompt},
		{Role: "user", Content: b.String()},
	}
}

func recentHistory(h []Turn) []Turn {
	if len(h) > historyTurns {
		return h[len(h)-historyTurns:]
	}
	return h
}
