package rag

import (
	"math"
	"slices"
	"testing"
)

func TestDocumentPrior(t *testing.T) {
	c := func(id, doc string, p float64) Scored {
		return Scored{Hit: Hit{Chunk: Chunk{ID: id, DocID: doc}}, Rerank: p}
	}
	// Paper A answers the question (0.9); paper B only mentions the topic (0.6, 0.55).
	in := []Scored{c("a1", "A", 0.9), c("b1", "B", 0.6), c("b2", "B", 0.55), c("a2", "A", 0.5), c("a3", "A", 0.3)}
	got := documentPrior(in, 0.5)
	var ids []string
	for _, s := range got {
		ids = append(ids, s.Chunk.ID)
	}
	// a2: 0.5·0.5+0.5·0.9 = 0.70 > b1: 0.5·0.6+0.5·0.6 = 0.60 > a3: 0.60 (stable: b1 first) > b2: 0.575.
	if want := []string{"a1", "a2", "b1", "a3", "b2"}; !slices.Equal(ids, want) {
		t.Errorf("order = %v, want %v", ids, want)
	}
	if got[0].Rerank != 0.9 || math.Abs(got[1].Rerank-0.7) > 1e-9 {
		t.Errorf("scores = %v, %v; want 0.9 and 0.7", got[0].Rerank, got[1].Rerank)
	}
	// No candidate rises above its document's best, so a weak document stays below the gate.
	weak := documentPrior([]Scored{c("x1", "X", 0.15), c("x2", "X", 0.1)}, 0.9)
	if len(Cut(weak, 0.2, 0.35, 5)) != 0 {
		t.Errorf("a document with no passage above the minimum score was lifted over the cut: %v", weak)
	}
	if in[1].Rerank != 0.6 {
		t.Error("documentPrior modified its input")
	}
}

func TestStripHeading(t *testing.T) {
	tests := []struct {
		in      string
		section []string
		want    string
	}{
		{"3.1 Encoder and Decoder Stacks Encoder: The encoder is composed of a stack of N = 6 identical layers.",
			[]string{"3 Model Architecture", "3.1 Encoder and Decoder Stacks"}, "The encoder is composed of a stack of N = 6 identical layers."},
		{"Input noise: The input to BERT contains artificial symbols.", nil, "The input to BERT contains artificial symbols."},
		{"2.3 Training Objectives During pretraining, BERT uses two objectives.", []string{"2 Background", "2.3 Training Objectives"}, "During pretraining, BERT uses two objectives."},
		{"We use k: the number of heads.", nil, "We use k: the number of heads."},
		{"The ratio is 3: 4 in practice.", nil, "The ratio is 3: 4 in practice."},
	}
	for _, tt := range tests {
		if got := stripHeading(tt.in, tt.section); got != tt.want {
			t.Errorf("stripHeading(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestContinueSentences(t *testing.T) {
	all := []sentence{
		{text: "Each layer has two sub-layers.", src: 0, pos: 1},
		{text: "The first is a multi-head self-attention mechanism, and the second is a feed-forward network.", src: 0, pos: 2},
		{text: "We employ a residual connection.", src: 0, pos: 3},
		{text: "Attention maps a query to an output.", src: 1, pos: 0},
		{text: "This is computed in parallel.", src: 1, pos: 1},
	}
	got := continueSentences([]sentence{all[0], all[3]}, all)
	if want := "Each layer has two sub-layers. The first is a multi-head self-attention mechanism, and the second is a feed-forward network."; got[0].text != want {
		t.Errorf("announcing sentence = %q, want it continued with its list", got[0].text)
	}
	if got[1].text != all[3].text {
		t.Errorf("sentence followed by an ordinary one was changed: %q", got[1].text)
	}
}

func TestFusedPrior(t *testing.T) {
	c := func(id string, p, fused float64) Scored {
		return Scored{Hit: Hit{Chunk: Chunk{ID: id}, Score: fused}, Rerank: p}
	}
	// d1 is the dense favourite; b1 the best fused (lexical) match with a lower probability.
	in := []Scored{c("d1", 0.8, 0.02), c("b1", 0.7, 0.04), c("x", 0.3, 0.01)}
	got := fusedPrior(in, 0.5)
	var ids []string
	for _, s := range got {
		ids = append(ids, s.Chunk.ID)
	}
	// b1: 0.5·0.7+0.5·0.8·1 = 0.75 > d1: 0.5·0.8+0.5·0.8·0.5 = 0.6 > x: 0.15+0.1 = 0.25.
	if want := []string{"b1", "d1", "x"}; !slices.Equal(ids, want) {
		t.Errorf("order = %v, want %v", ids, want)
	}
	if math.Abs(got[0].Rerank-0.75) > 1e-9 || math.Abs(got[1].Rerank-0.6) > 1e-9 {
		t.Errorf("scores = %v, %v; want 0.75 and 0.6", got[0].Rerank, got[1].Rerank)
	}
	for _, s := range fusedPrior([]Scored{c("a", 0.15, 0.03), c("b", 0.1, 0.05)}, 0.9) {
		if s.Rerank > 0.15 {
			t.Errorf("%s lifted to %.3f, above the best probability 0.15", s.Chunk.ID, s.Rerank)
		}
	}
	if in[0].Rerank != 0.8 {
		t.Error("fusedPrior modified its input")
	}
}
