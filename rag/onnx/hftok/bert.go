package hftok

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// bertNormalizer is tokenizers' BertNormalizer (normalizers/bert.rs): clean the text, pad
// CJK ideographs with spaces, strip accents (NFD, then drop nonspacing marks), lowercase —
// in that order. It replaces sugarme's for fixes 1 and 6 and because sugarme's keeps
// per-byte alignments that made normalising most of the cost of tokenizing (alignments are
// of no use to footnote, which needs ids only).
type bertNormalizer struct {
	clean, chinese, strip, lower bool
}

func (n bertNormalizer) normalize(text string) string {
	var b strings.Builder
	b.Grow(len(text) + 8)
	for _, r := range text {
		if n.clean {
			if r == 0 || r == utf8.RuneError || isControl(r) {
				continue
			}
			if unicode.IsSpace(r) {
				r = ' '
			}
		}
		if n.chinese && isCJK(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	s := b.String()
	if n.strip {
		s = stripAccents(s)
	}
	if n.lower {
		s = strings.ToLower(s)
	}
	return s
}

func stripAccents(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isControl is tokenizers' is_control: the Unicode "Other" categories (Cc, Cf, Co, Cs and
// unassigned Cn) except tab and newlines, which count as whitespace.
func isControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// isCJK is tokenizers' is_chinese_char: the CJK Unified Ideograph blocks BERT pads.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
