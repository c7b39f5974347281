package bot

import (
	"strings"
	"unicode/utf8"
)

// SplitText cuts long reply text into parts of at most limit runes for platforms that cap a
// message or block (Slack sections, Discord content and embeds), preferring paragraph, then
// line, then word boundaries, so an answer continues in order and never breaks mid-word. A
// code fence cut in two is closed and re-opened so both parts render. canCut, when not nil,
// vetoes a space as a cut point given the text before it (Slack: inside a <…> link token).
func SplitText(s string, limit int, canCut func(prefix string) bool) []string {
	s = strings.TrimSpace(s)
	var parts []string
	for s != "" {
		if utf8.RuneCountInString(s) <= limit {
			parts = append(parts, s)
			break
		}
		head, rest := cutAt(s, limit-4, canCut) // room to close a code fence
		if strings.Count(head, "```")%2 == 1 {
			head += "\n```"
			rest = "```\n" + rest
		}
		parts = append(parts, head)
		s = strings.TrimSpace(rest)
	}
	return parts
}

// cutAt finds where to cut s so the head has at most limit runes.
func cutAt(s string, limit int, canCut func(string) bool) (head, rest string) {
	end := len(string([]rune(s)[:limit])) // byte offset of the rune limit
	window := s[:end]
	for _, sep := range []string{"\n\n", "\n"} {
		if i := strings.LastIndex(window, sep); i > end/3 {
			return strings.TrimRight(s[:i], " \n"), s[i+len(sep):]
		}
	}
	for i := end - 1; i > end/3; i-- {
		if s[i] == ' ' && (canCut == nil || canCut(s[:i])) {
			return strings.TrimRight(s[:i], " "), s[i+1:]
		}
	}
	// One word longer than a part: nothing else to do but cut it (at a rune boundary).
	return s[:end], s[end:]
}
