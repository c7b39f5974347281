package rag

import (
	"cmp"
	"slices"
)

// Fuse combines the ranked hit lists of several retrievers into one list of at most limit
// hits (limit <= 0 keeps all), best first. Each input list must be best first.
//
// Methods:
//   - "rrf" (also the zero value and any unknown method): reciprocal rank fusion,
//     score = Σ 1/(k + rank) over the lists that hold the chunk, rank counted from 1,
//     k = f.K or 60. Scores of the input hits are ignored.
//   - "weighted": each list's scores are min-max normalised to [0, 1] (a list whose hits
//     all score the same normalises to 1), then score = Σ weight_i · normalised_i.
//     f.Weights gives one weight per list, in list order; a missing weight is 1.
//
// Ties are broken by chunk ID ascending, so every store that fuses the same lists returns
// the same order. The chunk of a hit is taken from the first list that holds it.
func Fuse(lists [][]Hit, f Fusion, limit int) []Hit {
	type acc struct {
		chunk Chunk
		score float64
	}
	byID := map[string]*acc{}
	var order []string
	add := func(c Chunk, s float64) {
		a, ok := byID[c.ID]
		if !ok {
			a = &acc{chunk: c}
			byID[c.ID] = a
			order = append(order, c.ID)
		}
		a.score += s
	}
	switch f.Method {
	case "weighted":
		for i, list := range lists {
			if len(list) == 0 {
				continue
			}
			w := 1.0
			if i < len(f.Weights) {
				w = f.Weights[i]
			}
			lo, hi := list[0].Score, list[0].Score
			for _, h := range list {
				lo = min(lo, h.Score)
				hi = max(hi, h.Score)
			}
			for _, h := range list {
				n := 1.0
				if hi > lo {
					n = (h.Score - lo) / (hi - lo)
				}
				add(h.Chunk, w*n)
			}
		}
	default:
		k := f.K
		if k <= 0 {
			k = 60
		}
		for _, list := range lists {
			for r, h := range list {
				add(h.Chunk, 1/float64(k+r+1))
			}
		}
	}
	out := make([]Hit, 0, len(order))
	for _, id := range order {
		a := byID[id]
		out = append(out, Hit{Chunk: a.chunk, Score: a.score})
	}
	slices.SortFunc(out, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Chunk.ID, b.Chunk.ID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}
