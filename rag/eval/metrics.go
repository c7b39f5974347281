package eval

import (
	"math"
	"slices"
	"time"

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
