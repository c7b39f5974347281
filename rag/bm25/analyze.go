package bm25

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/clipperhouse/uax29/v2/words"
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
func Analyze(text string) []string {
	var out []string
	it := words.FromString(text)
	for it.Next() {
		if t := term(it.Value()); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// analyzeQuery is Analyze for a query, plus each hyphenated compound of letters as one
// term ("BERT-large" also gives "bertlarg"): papers set a model's variant as a subscript,
// which text extraction glues on ("BERTLARGE"), and users write it with a hyphen. The
// documents' terms are unchanged, so existing indexes need no rebuild.
func analyzeQuery(text string) []string {
	out := Analyze(text)
	for _, f := range strings.Fields(text) {
		f = strings.Trim(f, ".,;:!?()[]{}\"'“”‘’")
		parts := strings.Split(f, "-")
		if len(parts) < 2 || len(parts) > 3 {
			continue
		}
		letters := true
		for _, p := range parts {
			letters = letters && p != "" && latinWord(strings.ToLower(p)) && !strings.Contains(p, "'")
		}
		if !letters {
			continue
		}
		if t := term(strings.Join(parts, "")); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	// "tau", "beta2": papers write the letter ("τ = 0.02", "β2 = 0.98").
	for _, w := range Analyze(text) {
		name := strings.TrimRight(w, "0123456789")
		for _, g := range greekLetters[name] {
			if t := term(g + w[len(name):]); t != "" && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// greekLetters are the letters papers name hyperparameters with, by their English names.
var greekLetters = map[string][]string{
	"alpha": {"α"}, "beta": {"β"}, "gamma": {"γ"}, "delta": {"δ"}, "epsilon": {"ϵ", "ε"},
	"eta": {"η"}, "theta": {"θ"}, "lambda": {"λ"}, "mu": {"μ"}, "rho": {"ρ"}, "sigma": {"σ"},
	"tau": {"τ"},
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
