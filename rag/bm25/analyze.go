package bm25

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/clipperhouse/uax29/v2/words"
	"github.com/footnote-dev/footnote/rag"
	"github.com/kljensen/snowball/english"
	"golang.org/x/text/unicode/norm"
)

// Analyze splits text into BM25 terms:
//   - Unicode word segmentation (UAX #29), so "state-of-the-art" gives four words,
//     "3.14" and "it's" stay whole, and each CJK ideograph is its own word;
//   - tokens without a letter or a digit (spaces, punctuation, symbols) are dropped;
//   - compatibility folding and accent removal ("ﬁ" → "fi", "Café" → "cafe"), lowercase;
//   - English stopwords removed (Snowball's list), possessive "'s" ignored for that test;
//   - Snowball English stemming of purely Latin words ("layers" → "layer",
//     "attention" → "attent"); numbers and other scripts are kept as they are.
//   - a capitalised hyphenated name with lower-case words inside ("Fusion-in-Decoder")
//     also gives its initials ("fid"), the short name users and other papers write for
//     it: the FiD paper itself never spells "FiD", so without the alias a question naming
//     it by that name could not find it;
//   - a count hyphenated to a short unit ("3-bit", "5-shot") also gives the joined term
//     ("3bit"), see countUnit.
//   - a factor written with a times sign ("4× the computation") also gives the term a
//     user types for it ("4x"); a product of two numbers ("3×3") gives none.
func Analyze(text string) []string {
	var out, run []string
	hyphen := false // the previous token was a hyphen continuing run
	prev, factor := "", ""
	for it := words.FromString(text); it.Next(); {
		v := it.Value()
		if factor != "" && !startsWithDigit(v) {
			out = append(out, factor+"x")
		}
		factor = ""
		if v == "×" && allDigits(prev) {
			factor = prev
		}
		prev = v
		switch {
		case v == "-" && len(run) > 0 && !hyphen:
			hyphen = true
		case hasAlnum(v) && hyphen:
			run = append(run, v)
			hyphen = false
		default:
			out = appendInitials(out, run)
			run, hyphen = run[:0], false
			if hasAlnum(v) {
				run = append(run, v)
			}
		}
		if t := term(v); t != "" {
			out = append(out, t)
		}
	}
	if factor != "" {
		out = append(out, factor+"x")
	}
	return appendInitials(out, run)
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func startsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// appendInitials appends the term of a hyphenated name's initials (rag.CompoundInitials)
// to out when parts are one, and the joined term of a count and its unit ("3-bit" →
// "3bit", see countUnit).
func appendInitials(out, parts []string) []string {
	if countUnit(parts) {
		return append(out, strings.ToLower(parts[0]+parts[1]))
	}
	if len(parts) < 3 {
		return out
	}
	if t := term(rag.CompoundInitials(strings.Join(parts, "-"))); t != "" {
		out = append(out, t)
	}
	return out
}

// countUnit reports whether parts are a count and a short lower-case unit, "3-bit" or
// "5-shot". Apart, "3" and "bit" are two common terms, and a question on a 3-bit model
// found the QLoRA paper's many 4-bit passages before its one 3-bit passage; joined, the
// count and unit are one rare term. Names with a number after the letters ("GPT-4",
// "T5-11B") stay apart: joining those re-weighted every question naming a model size.
func countUnit(parts []string) bool {
	if len(parts) != 2 || len(parts[1]) > 5 || !allDigits(parts[0]) {
		return false
	}
	for _, r := range parts[1] {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// term normalises one segmented word; "" means drop it.
func term(tok string) string {
	if !hasAlnum(tok) {
		return ""
	}
	tok = fold(tok)
	tok = strings.ToLower(tok)
	// The typographic apostrophe is common in PDFs; the stemmer expects ASCII.
	tok = strings.ReplaceAll(tok, "’", "'")
	base := strings.TrimSuffix(tok, "'s")
	if english.IsStopWord(base) || english.IsStopWord(tok) {
		return ""
	}
	if latinWord(tok) {
		tok = stem(tok)
	}
	tok = strings.Trim(tok, "'")
	if !hasAlnum(tok) {
		return ""
	}
	return tok
}

// Stemming dominates analysis and word frequencies are Zipfian, so stems are memoised.
// The cache stops growing at maxStems entries (a few MB) rather than evicting.
var (
	stems     sync.Map // word → stem
	stemCount atomic.Int64
)

const maxStems = 1 << 17

func stem(word string) string {
	if s, ok := stems.Load(word); ok {
		return s.(string)
	}
	s := english.Stem(word, false)
	if stemCount.Load() < maxStems {
		if _, loaded := stems.LoadOrStore(strings.Clone(word), s); !loaded {
			stemCount.Add(1)
		}
	}
	return s
}

func hasAlnum(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			return true
		}
	}
	return false
}

// latinWord reports whether s is ASCII letters (and apostrophes): the Snowball English
// stemmer is only meaningful there; it would mangle numbers and other scripts.
func latinWord(s string) bool {
	letters := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			letters = true
		case c == '\'':
		default:
			return false
		}
	}
	return letters
}

// fold applies compatibility decomposition (ligatures, full-width forms, superscripts) and
// strips combining diacritical marks (U+0300–U+036F), so accented and unaccented spellings
// meet. Marks of other scripts are kept: they are letters' parts there, not accents.
func fold(s string) string {
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
	d := norm.NFKD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if r >= 0x300 && r <= 0x36F {
			continue
		}
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}
