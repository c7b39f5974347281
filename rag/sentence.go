package rag

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// normalizeText turns extracted PDF text into running prose: a line break inside a paragraph
// becomes a space (a line-end hyphen is kept but the break dropped, "self-\nattention" →
// "self-attention"), runs of spaces collapse, and a blank line or a bullet is a paragraph
// break.
func normalizeText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var out []string
	for _, para := range paragraphBreak.Split(s, -1) {
		for _, p := range bullet.Split(para, -1) {
			p = lineHyphen.ReplaceAllString(p, "$1-$2")
			p = strings.Join(strings.Fields(p), " ")
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return strings.Join(out, "\n\n")
}

var (
	paragraphBreak = regexp.MustCompile(`\n[ \t]*\n\s*`)
	lineHyphen     = regexp.MustCompile(`(\p{L})-[ \t]*\n[ \t]*(\p{L})`)
	// A bullet starts a list item, which ends whatever came before.
	bullet = regexp.MustCompile(`\s*[•◦▪‣●]\s*`)
)

// abbreviations end with a period that does not end a sentence. Academic prose is full of
// them ("et al.", "Fig.", "Eq."), and a sentence cut after one makes a useless fragment.
var abbreviations = map[string]bool{
	"al": true, "e.g": true, "i.e": true, "cf": true, "vs": true, "viz": true, "approx": true,
	"fig": true, "figs": true, "eq": true, "eqs": true, "sec": true, "secs": true, "tab": true,
	"ref": true, "refs": true, "no": true, "nos": true, "vol": true, "pp": true, "ch": true,
	"dr": true, "mr": true, "ms": true, "prof": true, "resp": true, "appx": true, "app": true,
	"def": true, "thm": true, "prop": true, "lem": true, "alg": true, "st": true, "jr": true,
}

// splitSentences splits text into sentences, never inside one: a sentence ends at '.', '!'
// or '?' (plus closing quotes or brackets) followed by a space and a capital letter, digit,
// quote or bracket, unless the word before the period is an abbreviation or an initial;
// a paragraph break always ends a sentence. The text is normalised first.
func splitSentences(text string) []string {
	var out []string
	for _, s := range sentenceSpans(text) {
		out = append(out, s.text)
	}
	return out
}

// sentenceSpan is one sentence of splitSentences and the byte offset in the text given to
// it (before normalisation) at which the sentence's first character lies.
type sentenceSpan struct {
	text string
	off  int
}

// sentenceSpans is splitSentences with each sentence's offset in text, so a quoted sentence
// can be placed on its page (Chunk.PageAt). Normalisation only removes white space and
// bullets, so the n-th other rune of the normalised text is the n-th other rune of text.
func sentenceSpans(text string) []sentenceSpan {
	norm := normalizeText(text)
	var out []sentenceSpan
	pos := 0
	for _, para := range strings.Split(norm, "\n\n") {
		base := pos
		pos += len(para) + 2
		start := 0
		add := func(from, to int) {
			raw := para[from:to]
			if s := strings.TrimSpace(raw); s != "" {
				lead := len(raw) - len(strings.TrimLeftFunc(raw, unicode.IsSpace))
				out = append(out, sentenceSpan{text: s, off: base + from + lead})
			}
		}
		for i := 0; i < len(para); {
			r, size := utf8.DecodeRuneInString(para[i:])
			i += size
			if r != '.' && r != '!' && r != '?' {
				continue
			}
			end := i
			for end < len(para) && strings.ContainsRune(`"')]’”`, rune(para[end])) {
				end++
			}
			if end >= len(para) || para[end] != ' ' {
				continue
			}
			next, _ := utf8.DecodeRuneInString(para[end+1:])
			if !unicode.IsUpper(next) && !unicode.IsDigit(next) && !strings.ContainsRune(`"'([“‘`, next) {
				continue
			}
			if r == '.' && isAbbreviation(para[start:i-1]) {
				continue
			}
			add(start, end)
			start = end + 1
			i = end + 1
		}
		add(start, len(para))
	}
	mapOffsets(text, norm, out)
	return out
}

// mapOffsets turns offsets into norm (normalizeText(text)) into offsets into text, by
// counting the runes that normalisation keeps.
func mapOffsets(text, norm string, spans []sentenceSpan) {
	if len(spans) == 0 {
		return
	}
	var kept []int // byte offset in text of each rune normalisation keeps
	for i, r := range text {
		if !unicode.IsSpace(r) && !isBullet(r) {
			kept = append(kept, i)
		}
	}
	n, j := 0, 0 // kept runes of norm before byte i; next span
	for i, r := range norm {
		for j < len(spans) && spans[j].off == i {
			spans[j].off = kept[min(n, len(kept)-1)]
			j++
		}
		if j == len(spans) {
			return
		}
		if !unicode.IsSpace(r) {
			n++
		}
	}
}

func isBullet(r rune) bool { return strings.ContainsRune("•◦▪‣●", r) }

// isAbbreviation reports whether the text before a period ends with an abbreviation or a
// single-letter initial ("A. Vaswani").
func isAbbreviation(before string) bool {
	word := before
	if i := strings.LastIndexAny(before, " (["); i >= 0 {
		word = before[i+1:]
	}
	if utf8.RuneCountInString(word) == 1 {
		r, _ := utf8.DecodeRuneInString(word)
		return unicode.IsLetter(r)
	}
	return abbreviations[strings.ToLower(word)]
}

// trimToSentences returns the longest prefix of whole sentences of text whose token count
// (by count) is at most budget, and whether anything was dropped. If not even the first
// sentence fits it returns "".
func trimToSentences(text string, budget int, count func(string) int) (string, bool) {
	sents := splitSentences(text)
	kept := ""
	for i, s := range sents {
		next := s
		if i > 0 {
			next = kept + " " + s
		}
		if count(next) > budget {
			return kept, true
		}
		kept = next
	}
	return kept, false
}

// stopwords are left out of key terms and of overlap scores.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all also am an and any are as at be because
		been before being below between both but by can could did do does doing done down during each either
		else etc few for from further get gets got had has have having he her here hers herself him himself his
		how however i if in into is it its itself just let like many may me might more most much must my myself
		no nor not now of off on once one only or other our ours ourselves out over own per please same shall
		she should so some such than that the their theirs them themselves then there these they this those
		through thus to too under until up upon us use used uses using very via was we were what when where
		whether which while who whom whose why will with within without would yes yet you your yours yourself
		tell explain describe say said says paper papers work works authors author show shows shown`) {
		m[w] = true
	}
	return m
}()

// words returns the lower-cased words of s (letters and digits; hyphenated parts separate).
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// terms returns the stemmed content words of s, stopwords and one-letter words removed.
func terms(s string) []string {
	var out []string
	for _, w := range words(s) {
		if stopwords[w] || utf8.RuneCountInString(w) < 2 {
			continue
		}
		out = append(out, english.Stem(w, false))
	}
	return out
}

// lexicalWords splits text into lower-case words as words does, with Greek letters spelled
// out and letters split from digits, so that the "beta values" of a question meet the
// "β1 = 0.9" of a paper, and "BERT-large" meets "BERTLARGE" no better or worse than "BERT".
func lexicalWords(s string) []string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range strings.ToLower(s) {
		if name, ok := greekNames[r]; ok {
			b.WriteString(" " + name + " ")
			prev = ' '
			continue
		}
		if (unicode.IsDigit(r) && unicode.IsLetter(prev)) || (unicode.IsLetter(r) && unicode.IsDigit(prev)) {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return words(b.String())
}
