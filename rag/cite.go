package rag

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// citationMarker matches an inline citation: [1], [1, 2], [1;2], [1-3], [1–3], [1 and 2].
// Adjacent markers ([1][2]) match one by one.
var citationMarker = regexp.MustCompile(`\[\s*\d+(?:\s*(?:,|;|-|–|—|and)\s*\d+)*\s*\]`)

// markerPrefix matches what may still grow into a citation marker while text streams in.
var markerPrefix = regexp.MustCompile(`^\[[\d\s,;\-–—and]*$`)

// maxRange bounds the expansion of a range marker; a longer "range" is not a citation.
const maxRange = 20

// parseMarker returns the numbers a marker cites, in order, duplicates removed.
func parseMarker(m string) []int {
	body := strings.Trim(m, "[] ")
	body = strings.NewReplacer("–", "-", "—", "-", ";", ",", " and ", ",").Replace(body)
	var nums []int
	seen := map[int]bool{}
	add := func(n int) {
		if !seen[n] {
			seen[n] = true
			nums = append(nums, n)
		}
	}
	for _, part := range strings.Split(body, ",") {
		part = strings.TrimSpace(part)
		if lo, hi, ok := strings.Cut(part, "-"); ok {
			a, err1 := strconv.Atoi(strings.TrimSpace(lo))
			b, err2 := strconv.Atoi(strings.TrimSpace(hi))
			if err1 != nil || err2 != nil {
				continue
			}
			if b < a || b-a >= maxRange {
				add(-1) // an absurd range is one invalid citation
				continue
			}
			for n := a; n <= b; n++ {
				add(n)
			}
			continue
		}
		if n, err := strconv.Atoi(part); err == nil {
			add(n)
		}
	}
	return nums
}

// citer validates and renumbers the citation markers of an answer as it streams. Numbers
// refer to the sources of the prompt, 1-based; a number outside 1..sources is dropped and
// counted invalid. Valid numbers are renumbered in order of first citation, so the first
// source the answer cites becomes [1]. Write may be called with any split of the text; a
// marker split across deltas is held back until it is complete, as is trailing space (so
// the space before a dropped marker goes with it).
type citer struct {
	sources int
	order   []int       // prompt source numbers in order of first citation
	renum   map[int]int // prompt number → answer number
	valid   int
	invalid int
	pending string
	out     strings.Builder
	last    []int // answer numbers of the marker just written, to collapse [1][1]
}

func newCiter(sources int) *citer {
	return &citer{sources: sources, renum: map[int]int{}}
}

// Write consumes a delta and returns the text that is final.
func (c *citer) Write(delta string) string {
	c.pending += delta
	hold := len(c.pending)
	if i := strings.LastIndexByte(c.pending, '['); i >= 0 && markerPrefix.MatchString(c.pending[i:]) && len(c.pending)-i < 40 {
		hold = i
	}
	// Hold trailing space so it can be dropped with a following invalid marker.
	ready := strings.TrimRightFunc(c.pending[:hold], unicode.IsSpace)
	if ready == "" {
		return ""
	}
	c.pending = c.pending[len(ready):]
	return c.emit(ready)
}

// Flush returns the rest of the text at the end of the stream.
func (c *citer) Flush() string {
	rest := c.pending
	c.pending = ""
	return c.emit(rest)
}

// Text is everything emitted so far.
func (c *citer) Text() string { return c.out.String() }

func (c *citer) emit(s string) string {
	var b strings.Builder
	pos := 0
	for _, loc := range citationMarker.FindAllStringIndex(s, -1) {
		between := s[pos:loc[0]]
		if strings.TrimSpace(between) != "" {
			c.last = nil
		}
		var kept []int
		for _, n := range parseMarker(s[loc[0]:loc[1]]) {
			if n < 1 || n > c.sources {
				c.invalid++
				continue
			}
			m, ok := c.renum[n]
			if !ok {
				c.order = append(c.order, n)
				m = len(c.order)
				c.renum[n] = m
			}
			if containsInt(c.last, m) || containsInt(kept, m) {
				continue // [1][1] or [1, 1]: one citation
			}
			kept = append(kept, m)
		}
		if len(kept) == 0 {
			// Drop the marker and the space before it: "a claim [9]." → "a claim.".
			b.WriteString(strings.TrimRightFunc(between, unicode.IsSpace))
		} else {
			b.WriteString(between)
			sort.Ints(kept)
			for _, m := range kept {
				b.WriteString("[" + strconv.Itoa(m) + "]")
			}
			c.valid += len(kept)
			c.last = append(c.last, kept...)
		}
		pos = loc[1]
	}
	if pos < len(s) {
		c.last = nil
		b.WriteString(s[pos:])
	}
	c.out.WriteString(b.String())
	return b.String()
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// citeText validates and renumbers a complete text; see citer.
func citeText(text string, sources int) (*citer, string) {
	c := newCiter(sources)
	c.Write(text)
	c.Flush()
	return c, c.Text()
}

// stripMarkers removes numeric bracket references from text: the paper's own
// bibliography references ("[12]") would read as citations of our sources.
func stripMarkers(text string) string {
	s := citationMarker.ReplaceAllString(text, "")
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer(" .", ".", " ,", ",", " ;", ";", " :", ":", " )", ")").Replace(s)
}

// citationCoverage returns the fraction of the answer's sentences (outside a trailing
// "Interpretation:" part, which the prompt allows to go uncited) that carry a citation.
func citationCoverage(text string) float64 {
	if i := strings.Index(text, "Interpretation:"); i > 0 {
		text = text[:i]
	}
	sents := splitSentences(text)
	if len(sents) == 0 {
		return 0
	}
	cited := 0
	for _, s := range sents {
		if citationMarker.MatchString(s) {
			cited++
		}
	}
	return float64(cited) / float64(len(sents))
}

// excerptLen is the length of a source excerpt in characters (about two lines of a chat
// client).
const excerptLen = 240

// excerpt returns a short passage of text for display: it starts at the sentence that
// best matches query (by term overlap; the first sentence when nothing matches) and runs
// to about excerptLen characters, cut at a word boundary with an ellipsis, never mid-word.
func excerpt(text, query string) string {
	sents := splitSentences(text)
	if len(sents) == 0 {
		return ""
	}
	q := map[string]bool{}
	for _, t := range terms(query) {
		q[t] = true
	}
	best, bestScore := 0, 0
	for i, s := range sents {
		score := 0
		for _, t := range terms(s) {
			if q[t] {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	s := strings.Join(sents[best:], " ")
	prefix := ""
	if best > 0 {
		prefix = "… "
	}
	return prefix + cutWords(s, excerptLen)
}

// cutWords shortens s to at most max characters at a word boundary, adding "…" when it cut.
func cutWords(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	cut := 0
	n := 0
	for i := range s {
		if n == max {
			break
		}
		if s[i] == ' ' {
			cut = i
		}
		n++
	}
	if cut == 0 { // one enormous word: keep it whole rather than cut it
		if i := strings.IndexByte(s, ' '); i > 0 {
			cut = i
		} else {
			return s
		}
	}
	return strings.TrimRight(s[:cut], " ,;:") + "…"
}
