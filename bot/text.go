package bot

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/footnote-dev/footnote/rag"
)

var (
	// <@U123>, <@U123|name>, <@!123>, <@123>, <@&role>: user and role mentions (Slack, Discord).
	reMention = regexp.MustCompile(`<@[!&]?[A-Za-z0-9]+(?:\|[^>]*)?>`)
	// <#C123|general> (Slack) keeps the name; <#123> (Discord) has none to keep.
	reChannel = regexp.MustCompile(`<#[A-Za-z0-9]+(?:\|([^>]*))?>`)
	// <!here>, <!channel>, <!subteam^S1|@team>, <!date^…|fallback>: Slack special mentions.
	reSpecial = regexp.MustCompile(`<![^>|]*(?:\|([^>]*))?>`)
	// <a:name:123>, <:name:123> custom emoji and <t:1700000000:R> timestamps (Discord).
	reDiscordTag = regexp.MustCompile(`<a?:[A-Za-z0-9_~]+:[0-9]+>|<t:-?[0-9]+(?::[tTdDfFR])?>`)
	// <https://x|label> and <https://x>, <mailto:a@b|a@b> (Slack links).
	reLink = regexp.MustCompile(`<((?:https?|mailto|ftp):[^>|]*)(?:\|([^>]*))?>`)
	// Emphasis markers only where they touch a word boundary, so d_model and 2*3 survive.
	reOpenMark  = regexp.MustCompile(`(^|[\s(\[])(?:\*\*|__|~~|\|\||[*_~])(\S)`)
	reCloseMark = regexp.MustCompile(`(\S)(?:\*\*|__|~~|\|\||[*_~])($|[\s)\].,!?;:])`)
	reQuote     = regexp.MustCompile(`(?m)^\s*(?:>>>|>)\s?`)
	reSpace     = regexp.MustCompile(`\s+`)
	reBlank     = regexp.MustCompile(`\n[ \t]*\n`)
)

// Clean strips mentions and chat markup from a message and returns the question in plain
// text on one line. Platforms escape <, > and & (Slack) and wrap links and mentions in
// angle brackets; none of it means anything to retrieval.
func Clean(text string) string {
	s := reMention.ReplaceAllString(text, " ")
	s = reChannel.ReplaceAllStringFunc(s, func(m string) string {
		sub := reChannel.FindStringSubmatch(m)
		if sub[1] == "" {
			return " "
		}
		return "#" + strings.TrimPrefix(sub[1], "#")
	})
	s = reSpecial.ReplaceAllString(s, "$1")
	s = reDiscordTag.ReplaceAllString(s, " ")
	s = reLink.ReplaceAllStringFunc(s, func(m string) string {
		sub := reLink.FindStringSubmatch(m)
		if sub[2] != "" {
			return sub[2]
		}
		return strings.TrimPrefix(sub[1], "mailto:")
	})
	s = strings.ReplaceAll(s, "```", " ")
	s = strings.ReplaceAll(s, "`", "")
	s = reQuote.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	// Twice: a marker pair such as "**_x_**" nests.
	for range 2 {
		s = reOpenMark.ReplaceAllString(s, "$1$2")
		s = reCloseMark.ReplaceAllString(s, "$1$2")
	}
	return strings.TrimSpace(reSpace.ReplaceAllString(s, " "))
}

// Paragraphs splits answer text at blank lines, keeping fenced code blocks whole.
func Paragraphs(text string) []string {
	text = strings.ReplaceAll(strings.TrimSpace(text), "\r\n", "\n")
	if text == "" {
		return nil
	}
	var out []string
	var cur strings.Builder
	flush := func() {
		if p := strings.TrimSpace(cur.String()); p != "" {
			out = append(out, p)
		}
		cur.Reset()
	}
	inFence := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if !inFence && strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if cur.Len() > 0 {
			cur.WriteByte('\n')
		}
		cur.WriteString(line)
	}
	flush()
	return out
}

// Pages formats where a chunk sits: "3", "3–4", or "lines 10–42" for line-based files.
func Pages(c rag.Chunk) string {
	switch {
	case c.PageStart > 0 && c.PageEnd > c.PageStart:
		return fmt.Sprintf("%d–%d", c.PageStart, c.PageEnd)
	case c.PageStart > 0:
		return fmt.Sprintf("%d", c.PageStart)
	case c.LineStart > 0 && c.LineEnd > c.LineStart:
		return fmt.Sprintf("lines %d–%d", c.LineStart, c.LineEnd)
	case c.LineStart > 0:
		return fmt.Sprintf("line %d", c.LineStart)
	}
	return ""
}

// excerpt shortens text to at most n runes at a word boundary, with an ellipsis when cut.
func excerpt(text string, n int) string {
	text = strings.TrimSpace(reSpace.ReplaceAllString(text, " "))
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	cut := []rune(text)[:n]
	s := string(cut)
	if i := strings.LastIndexByte(s, ' '); i > n/2 {
		s = s[:i]
	}
	return strings.TrimRight(s, " ,;:.") + "…"
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
