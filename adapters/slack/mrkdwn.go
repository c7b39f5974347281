package slack

import (
	"regexp"
	"strings"
)

// Mrkdwn converts the Markdown footnote's answers are written in to Slack's mrkdwn: **bold** →
// *bold*, *italic* and _italic_ → _italic_, ~~strike~~ → ~strike~, [label](url) → <url|label>,
// headings → bold lines, "- item" → "• item", fenced code kept without its language tag.
// &, < and > are escaped except inside Slack's own <…> tokens (<@U123>, <#C1>, <!here>,
// <https://…|label>), as Slack's "Formatting text for app surfaces" asks. Citation markers such
// as [1] are left alone.
func Mrkdwn(md string) string {
	var b strings.Builder
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	fence := ""
	for i, line := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		trimmed := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
				fence = ""
				b.WriteString("```")
				continue
			}
			b.WriteString(escapeText(line))
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			marker := trimmed[:3]
			fence = marker
			// Slack shows no syntax highlighting: drop the language tag.
			b.WriteString("```")
			continue
		}
		b.WriteString(convertLine(line))
	}
	if fence != "" {
		b.WriteString("\n```") // close an unterminated fence so the rest is not swallowed
	}
	return b.String()
}

var (
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	bulletRE  = regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`)
	orderedRE = regexp.MustCompile(`^(\s*)(\d{1,9})[.)]\s+(.*)$`)
	quoteRE   = regexp.MustCompile(`^(\s*)>\s?(.*)$`)
	ruleRE    = regexp.MustCompile(`^\s{0,3}([-*_])(\s*[-*_]){2,}\s*$`)
)

func convertLine(line string) string {
	if m := headingRE.FindStringSubmatch(line); m != nil {
		// A heading is bold already; drop nested bold markers so "*" pairs do not clash.
		inner := strings.TrimSpace(inline(strings.NewReplacer("**", "", "__", "").Replace(m[2])))
		if inner == "" {
			return ""
		}
		return "*" + inner + "*"
	}
	if ruleRE.MatchString(line) {
		return "───"
	}
	if m := bulletRE.FindStringSubmatch(line); m != nil {
		return m[1] + "• " + inline(m[2])
	}
	if m := orderedRE.FindStringSubmatch(line); m != nil {
		return m[1] + m[2] + ". " + inline(m[3])
	}
	if m := quoteRE.FindStringSubmatch(line); m != nil {
		// Slack renders a leading ">" as a quote, so it must stay unescaped.
		return m[1] + ">" + inline(m[2])
	}
	return inline(line)
}

// slackTokenRE matches Slack's own angle-bracket tokens, which must pass through unescaped.
var slackTokenRE = regexp.MustCompile(`^<(?:[@#!][^<>\s]*|(?:https?|mailto|ftp):[^<>\s|]+(?:\|[^<>]*)?)>`)

// inline converts the inline Markdown of one line.
func inline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) && strings.IndexByte("\\`*_{}[]()#+-.!~<>&|", s[i+1]) >= 0 {
				b.WriteString(escapeText(s[i+1 : i+2]))
				i += 2
				continue
			}
		case '`':
			if n, code := codeSpan(s[i:]); n > 0 {
				b.WriteString("`" + escapeText(code) + "`")
				i += n
				continue
			}
		case '<':
			if m := slackTokenRE.FindString(s[i:]); m != "" {
				b.WriteString(m)
				i += len(m)
				continue
			}
		case '[':
			if n, label, url := link(s[i:]); n > 0 {
				b.WriteString("<" + escapeURL(url) + "|" + linkLabel(label) + ">")
				i += n
				continue
			}
		case '*', '_', '~':
			if n, out := emphasis(s, i); n > 0 {
				b.WriteString(out)
				i += n
				continue
			}
		}
		b.WriteString(escapeText(s[i : i+1]))
		i++
	}
	return b.String()
}

// codeSpan returns the length and content of a code span at the start of s.
func codeSpan(s string) (int, string) {
	ticks := len(s) - len(strings.TrimLeft(s, "`"))
	closing := strings.Index(s[ticks:], s[:ticks])
	if closing < 0 {
		return 0, ""
	}
	code := s[ticks : ticks+closing]
	if strings.TrimSpace(code) == "" {
		return 0, ""
	}
	if ticks > 1 {
		code = strings.TrimSpace(code)
	}
	// Slack code spans cannot hold a backtick; an inner one would end the span early.
	code = strings.ReplaceAll(code, "`", "'")
	return ticks + closing + ticks, code
}

// link parses [label](url "title") at the start of s, with nested brackets in the label and
// balanced parentheses in the URL (https://en.wikipedia.org/wiki/Go_(programming_language)).
func link(s string) (n int, label, url string) {
	depth := 0
	end := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				end = i
			}
		}
		if end >= 0 {
			break
		}
	}
	if end < 0 || end+1 >= len(s) || s[end+1] != '(' {
		return 0, "", ""
	}
	label = s[1:end]
	depth = 0
	start := end + 2
	for i := start; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				dest := strings.TrimSpace(s[start:i])
				if sp := strings.IndexAny(dest, " \t"); sp >= 0 { // drop a "title"
					dest = dest[:sp]
				}
				dest = strings.TrimSuffix(strings.TrimPrefix(dest, "<"), ">")
				if dest == "" || strings.ContainsAny(dest, "<>") {
					return 0, "", ""
				}
				return i + 1, label, dest
			}
			depth--
		case ' ':
			if !strings.HasPrefix(strings.TrimSpace(s[i:]), `"`) {
				return 0, "", ""
			}
		}
	}
	return 0, "", ""
}

// linkLabel renders a link label: inline formatting kept, but "|" and ">" would end Slack's
// token, so they are replaced or escaped.
func linkLabel(label string) string {
	out := inline(label)
	out = strings.ReplaceAll(out, "|", "¦")
	if out == "" {
		out = "link"
	}
	return out
}

// escapeURL escapes only what would break the <url|label> token.
func escapeURL(u string) string {
	u = strings.ReplaceAll(u, "&", "&amp;")
	u = strings.ReplaceAll(u, "|", "%7C")
	return u
}

// emphasis converts **bold**, __bold__, *italic*, _italic_ and ~~strike~~ starting at s[i].
func emphasis(s string, i int) (int, string) {
	c := s[i]
	double := i+1 < len(s) && s[i+1] == c
	if c == '~' && !double {
		return 0, ""
	}
	delim := s[i : i+1]
	if double {
		delim = s[i : i+2]
	}
	body := i + len(delim)
	if body >= len(s) || s[body] == ' ' || s[body] == c {
		return 0, ""
	}
	// "_" inside a word (snake_case) is not emphasis in Markdown.
	if c == '_' && i > 0 && isWordByte(s[i-1]) {
		return 0, ""
	}
	for j := body + 1; j+len(delim) <= len(s); j++ {
		if s[j:j+len(delim)] != delim || s[j-1] == ' ' {
			continue
		}
		if len(delim) == 1 && j+1 < len(s) && s[j+1] == c {
			j++ // part of a longer run: "**" inside an italic span
			continue
		}
		if c == '_' && j+len(delim) < len(s) && isWordByte(s[j+len(delim)]) {
			continue
		}
		inner := inline(s[body:j])
		n := j + len(delim) - i
		switch {
		case c == '~':
			return n, "~" + inner + "~"
		case double:
			return n, "*" + inner + "*"
		default:
			return n, "_" + inner + "_"
		}
	}
	return 0, ""
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// escapeText escapes the three characters Slack's mrkdwn reserves.
func escapeText(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}
