package eval

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/footnote-dev/footnote/rag"
)

// Level is how strictly a retrieved chunk must match a question's expectations to count.
type Level int

const (
	// SourceLevel: the chunk comes from an expected source.
	SourceLevel Level = iota
	// PageLevel: the chunk comes from an expected source and touches one of its expected
	// pages. An expected source without listed pages (and a question without
	// expected_pages) falls back to the source level, since nothing stricter is known.
	PageLevel
)

func (l Level) String() string {
	if l == PageLevel {
		return "page"
	}
	return "source"
}

// Relevant reports whether chunk c answers q at level l.
func (q Question) Relevant(c rag.Chunk, l Level) bool {
	if !slices.Contains(q.ExpectedSources, c.Name) {
		return false
	}
	if l == SourceLevel {
		return true
	}
	pages, ok := q.ExpectedPages[c.Name]
	if !ok || len(pages) == 0 {
		return true
	}
	if c.PageStart == 0 { // no page information: cannot be confirmed
		return false
	}
	end := max(c.PageEnd, c.PageStart)
	for _, p := range pages {
		if p >= c.PageStart && p <= end {
			return true
		}
	}
	return false
}

// Judge marks each chunk of a ranked list relevant or not.
func (q Question) Judge(chunks []rag.Chunk, l Level) []bool {
	rel := make([]bool, len(chunks))
	for i, c := range chunks {
		rel[i] = q.Relevant(c, l)
	}
	return rel
}

// PrecisionAt is the fraction of the first k ranks holding a relevant item. A list shorter
// than k counts its missing ranks as not relevant, so returning fewer results is no
// advantage.
func PrecisionAt(rel []bool, k int) float64 {
	if k <= 0 {
		return 0
	}
	n := 0
	for _, r := range rel[:min(k, len(rel))] {
		if r {
			n++
		}
	}
	return float64(n) / float64(k)
}

// SourceRecallAt is the fraction of q's expected sources that have at least one relevant
// chunk (at level l) within the first k ranks. Recall is counted over sources rather than
// chunks because the set of all relevant chunks is not known: every chunk of an expected
// paper would count, and no answer needs all of them.
func (q Question) SourceRecallAt(chunks []rag.Chunk, l Level, k int) float64 {
	if len(q.ExpectedSources) == 0 {
		return 0
	}
	found := map[string]bool{}
	for _, c := range chunks[:min(k, len(chunks))] {
		if q.Relevant(c, l) {
			found[c.Name] = true
		}
	}
	return float64(len(found)) / float64(len(q.ExpectedSources))
}

// ReciprocalRank is 1/rank of the first relevant item, 0 when there is none.
func ReciprocalRank(rel []bool) float64 {
	for i, r := range rel {
		if r {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// NDCGAt is the normalised discounted cumulative gain of the first k ranks with binary
// gains: DCG = Σ rel_i / log2(i+1) over ranks i = 1..k, divided by the DCG of an ideal
// list holding min(k, relevant) relevant items first. relevant is the number of relevant
// items known to exist (Run uses the pool of every method's candidates); when the list
// itself holds more, that count is used.
func NDCGAt(rel []bool, k, relevant int) float64 {
	var dcg float64
	inList := 0
	for i, r := range rel {
		if r {
			inList++
			if i < k {
				dcg += 1 / math.Log2(float64(i+2))
			}
		}
	}
	relevant = max(relevant, inList)
	var idcg float64
	for i := range min(k, relevant) {
		idcg += 1 / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of ds by the nearest-rank method:
// the smallest value with at least p% of the values at or below it. Zero for no values.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// CitedOnPage reports whether the cited source s of an answer with the given text counts at
// page level: it comes from an expected source, and its page (the chunk's first page, the
// one footnote shows) or the page of a sentence the answer quotes from it next to its
// marker [s.N] is an expected page. An expected source without listed pages counts at the
// source level, as in PageLevel.
func (q Question) CitedOnPage(text string, s rag.Source) bool {
	return q.onExpectedPage(s.Chunk.Name, CitedPages(text, s))
}

// onExpectedPage reports whether a source of document name, cited on cited (CitedPages),
// counts at page level (see CitedOnPage).
func (q Question) onExpectedPage(name string, cited []int) bool {
	if !slices.Contains(q.ExpectedSources, name) {
		return false
	}
	pages, ok := q.ExpectedPages[name]
	if !ok || len(pages) == 0 {
		return true
	}
	for _, p := range cited {
		if slices.Contains(pages, p) {
			return true
		}
	}
	return false
}

// CitedPages returns the pages an answer cites source s on: the chunk's first page, then
// the page of each sentence carrying [s.N] that is found in the chunk's text (located with
// Chunk.PageBreaks). Extractive answers quote sentences, so their page is known even when
// the chunk spans pages; a generated sentence is usually not found and adds nothing.
func CitedPages(text string, s rag.Source) []int {
	var pages []int
	if s.Chunk.PageStart > 0 {
		pages = append(pages, s.Chunk.PageStart)
	}
	if len(s.Chunk.PageBreaks) == 0 || s.Chunk.PageStart == 0 {
		return pages
	}
	chunk, offs := letters(s.Chunk.Text)
	marker := "[" + strconv.Itoa(s.N) + "]"
	for i := 0; ; {
		j := strings.Index(text[i:], marker)
		if j < 0 {
			break
		}
		claim, _ := letters(claimBefore(text[:i+j]))
		i += j + len(marker)
		off := find(chunk, claim)
		if off < 0 {
			continue
		}
		p := s.Chunk.PageStart
		for _, b := range s.Chunk.PageBreaks {
			if offs[off] >= b {
				p++
			}
		}
		if !slices.Contains(pages, p) {
			pages = append(pages, p)
		}
	}
	return pages
}

// claimBefore returns the sentence that ends where a citation marker starts: the text
// after the previous line break or sentence end, without other markers.
func claimBefore(text string) string {
	start := strings.LastIndex(text, "\n") + 1
	for _, end := range []string{". ", "? ", "! ", "] "} {
		if k := strings.LastIndex(text, end); k >= 0 && k+len(end) > start && k+len(end) < len(text) {
			start = k + len(end)
		}
	}
	return citationMarker.ReplaceAllString(text[start:], " ")
}

var citationMarker = regexp.MustCompile(`\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\]`)

// letters keeps only the lower-cased letters and digits of s, with the byte offset in s of
// each one kept, so that a quote matches its source across line breaks, hyphenation and
// punctuation the answer tidied.
func letters(s string) (string, []int) {
	var b strings.Builder
	var offs []int
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n := b.Len()
			b.WriteRune(unicode.ToLower(r))
			for range b.Len() - n {
				offs = append(offs, i)
			}
		}
	}
	return b.String(), offs
}

// find locates claim in chunk by a window of it (its start, end or middle: the answer may
// have cut or mended either end), returning the offset in chunk where the window was
// found, or -1. Claims too short to place are not searched.
func find(chunk, claim string) int {
	const w = 40
	if len(claim) < 16 {
		return -1
	}
	if len(claim) <= w {
		return strings.Index(chunk, claim)
	}
	for _, at := range []int{0, len(claim) - w, (len(claim) - w) / 2} {
		if k := strings.Index(chunk, claim[at:at+w]); k >= 0 {
			return k
		}
	}
	return -1
}
