package rag

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func hits(ids ...string) []Hit {
	out := make([]Hit, len(ids))
	for i, id := range ids {
		out[i] = Hit{Chunk: Chunk{ID: id}, Score: float64(len(ids) - i)}
	}
	return out
}

func scored(pairs ...any) []Hit {
	var out []Hit
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Hit{Chunk: Chunk{ID: pairs[i].(string)}, Score: pairs[i+1].(float64)})
	}
	return out
}

type idScore struct {
	ID    string
	Score float64
}

func flatten(hs []Hit) []idScore {
	out := make([]idScore, len(hs))
	for i, h := range hs {
		out[i] = idScore{h.Chunk.ID, h.Score}
	}
	return out
}

var approx = cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })

func TestFuse(t *testing.T) {
	tests := []struct {
		name  string
		lists [][]Hit
		f     Fusion
		limit int
		want  []idScore
	}{
		{
			// dense: a b c; sparse: c a d (k = 60)
			//   a = 1/61 + 1/62, c = 1/63 + 1/61, b = 1/62, d = 1/63
			name:  "rrf default k",
			lists: [][]Hit{hits("a", "b", "c"), hits("c", "a", "d")},
			want: []idScore{
				{"a", 1.0/61 + 1.0/62},
				{"c", 1.0/63 + 1.0/61},
				{"b", 1.0 / 62},
				{"d", 1.0 / 63},
			},
		},
		{
			// k = 1: x = 1/2 + 1/3, y = 1/3 + 1/2 (tie: id order), z = 1/4
			name:  "rrf ties by id",
			lists: [][]Hit{hits("y", "x", "z"), hits("x", "y")},
			f:     Fusion{Method: "rrf", K: 1},
			want: []idScore{
				{"x", 1.0/2 + 1.0/3},
				{"y", 1.0/3 + 1.0/2},
				{"z", 1.0 / 4},
			},
		},
		{
			name:  "limit",
			lists: [][]Hit{hits("a", "b", "c"), hits("c", "a", "d")},
			limit: 2,
			want: []idScore{
				{"a", 1.0/61 + 1.0/62},
				{"c", 1.0/63 + 1.0/61},
			},
		},
		{
			// list 1 scores 0.9 0.5 0.1 → 1, 0.5, 0; list 2 scores 10 5 → 1, 0.
			// weights 0.7, 0.3: a = 0.7·1 + 0.3·0 = 0.7, b = 0.35, c = 0 + 0.3 = 0.3
			name:  "weighted min-max",
			lists: [][]Hit{scored("a", 0.9, "b", 0.5, "c", 0.1), scored("c", 10.0, "a", 5.0)},
			f:     Fusion{Method: "weighted", Weights: []float64{0.7, 0.3}},
			want: []idScore{
				{"a", 0.7},
				{"b", 0.35},
				{"c", 0.3},
			},
		},
		{
			// A list of equal scores normalises to 1; a missing weight is 1.
			name:  "weighted flat list and missing weight",
			lists: [][]Hit{scored("a", 2.0, "b", 1.0), scored("b", 0.4, "c", 0.4)},
			f:     Fusion{Method: "weighted", Weights: []float64{0.5}},
			want: []idScore{
				{"b", 1},
				{"c", 1},
				{"a", 0.5},
			},
		},
		{
			name:  "empty",
			lists: [][]Hit{nil, {}},
			want:  []idScore{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := flatten(Fuse(tt.lists, tt.f, tt.limit))
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Fuse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFuseKeepsChunk(t *testing.T) {
	a := Chunk{ID: "a", Text: "alpha", DocID: "d1"}
	got := Fuse([][]Hit{{{Chunk: a, Score: 3}}, {{Chunk: Chunk{ID: "a"}, Score: 1}}}, Fusion{}, 0)
	if len(got) != 1 || got[0].Chunk.Text != "alpha" || got[0].Chunk.DocID != "d1" {
		t.Errorf("got %+v, want the chunk from the first list", got)
	}
}
