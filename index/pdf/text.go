package pdf

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ligatures are the presentation forms papers' fonts use; MuPDF usually expands them, but
// not when a font maps a ligature glyph to its Unicode code point.
var ligatures = strings.NewReplacer(
	"\uFB00", "ff", "\uFB01", "fi", "\uFB02", "fl", "\uFB03", "ffi", "\uFB04", "ffl",
	"\uFB05", "st", "\uFB06", "st",
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ",
	"\u00AD", "", "\u200B", "", "\uFEFF", "",
)

// spacingAccents maps the spacing accents LaTeX fonts draw as separate glyphs ("O˘guz")
// to the combining marks that compose with the following letter ("Oğuz").
var spacingAccents = map[rune]rune{
	'\u00A8': '\u0308', '\u00B4': '\u0301', '\u02C6': '\u0302', '\u02DC': '\u0303',
	'\u02D8': '\u0306', '\u02C7': '\u030C', '\u02D9': '\u0307', '\u02DA': '\u030A',
	'\u00AF': '\u0304', '\u02DD': '\u030B',
}

// composeAccents moves spacing accents onto the letter that follows them.
func composeAccents(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { _, ok := spacingAccents[r]; return ok }) {
		return s
	}
	rs := []rune(s)
	var b strings.Builder
	for i := 0; i < len(rs); i++ {
		if m, ok := spacingAccents[rs[i]]; ok && i+1 < len(rs) && unicode.IsLetter(rs[i+1]) {
			b.WriteRune(rs[i+1])
			b.WriteRune(m)
			i++
			continue
		}
		b.WriteRune(rs[i])
	}
	return norm.NFC.String(b.String())
}

// normalize expands ligatures, turns odd spaces into spaces, composes spacing accents with
// their letters, and drops U+FFFD (glyphs MuPDF could not map, mostly maths) and control
// characters.
func normalize(s string) string {
	s = composeAccents(ligatures.Replace(s))
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) }) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == utf8.RuneError:
			return -1
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}

// collapseSpaces trims s and squeezes runs of spaces to one.
func collapseSpaces(s string) string {
	if !strings.Contains(s, "  ") && strings.TrimSpace(s) == s {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// vocabulary counts the words of a document, lowercased, as they appear inside lines (not at
// a line break), to decide whether a line-break hyphen belongs to the word.
type vocabulary map[string]int

func (v vocabulary) addLine(text string, afterHyphen bool) {
	fields := strings.Fields(text)
	for i, f := range fields {
		if i == 0 && afterHyphen || i == len(fields)-1 && strings.HasSuffix(f, "-") {
			continue // pieces of a word broken across lines
		}
		w := strings.ToLower(strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' }))
		w = strings.Trim(w, "-")
		if w == "" {
			continue
		}
		v[w]++
		if strings.Contains(w, "-") {
			for p := range strings.SplitSeq(w, "-") {
				if p != "" {
					v[p]++
				}
			}
		}
	}
}

// joinLines joins a paragraph's lines with spaces, undoing hyphenation at line breaks: a
// word broken as "represen-" + "tation" becomes "representation", while a compound such as
// "self-" + "attention" keeps its hyphen when the document spells it so elsewhere or both
// halves are words of the document.
func (v vocabulary) joinLines(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if i == len(lines)-1 {
			b.WriteString(l)
			break
		}
		next := lines[i+1]
		switch {
		case !hyphenBreak(l, next):
			b.WriteString(l)
			b.WriteByte(' ')
		case v.keepHyphen(l, next):
			b.WriteString(l)
		default:
			b.WriteString(l[:len(l)-1])
		}
	}
	return b.String()
}

// hyphenBreak reports whether prev ends with a hyphen that joins it to next without a space.
func hyphenBreak(prev, next string) bool {
	if len(prev) < 2 || !strings.HasSuffix(prev, "-") || strings.HasSuffix(prev, "--") {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(prev[:len(prev)-1])
	first, _ := utf8.DecodeRuneInString(next)
	if !unicode.IsLetter(before) && !unicode.IsDigit(before) {
		return false // a dash set apart: "results -"
	}
	return unicode.IsLetter(first) || unicode.IsDigit(first)
}

// keepHyphen decides, for a line ending in "frag-" followed by a line starting with rest,
// whether the hyphen stays.
func (v vocabulary) keepHyphen(prev, next string) bool {
	frag := lastWord(prev[:len(prev)-1])
	rest := firstWord(next)
	if frag == "" || rest == "" || strings.Contains(rest, "-") {
		return true // "English-" + "to-German" continues a compound
	}
	lf, lr := strings.ToLower(frag), strings.ToLower(rest)
	hyph, joined := v[lf+"-"+lr], v[lf+lr]
	switch {
	case hyph > joined:
		return true
	case joined > 0:
		return false
	}
	first, _ := utf8.DecodeRuneInString(rest)
	last, _ := utf8.DecodeLastRuneInString(frag)
	if !unicode.IsLower(first) || unicode.IsDigit(last) {
		// "GPT-" + "2", "BERT-" + "Large": not a word break.
		return true
	}
	if strings.Contains(lf, "-") {
		return true // part of a compound already: "state-of-the-" + "art"
	}
	return len(lf) >= 3 && len(lr) >= 3 && v[lf] > 0 && v[lr] > 0
}

func lastWord(s string) string {
	i := strings.LastIndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' })
	return s[i+1:]
}

func firstWord(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' })
	if i < 0 {
		return s
	}
	return s[:i]
}
