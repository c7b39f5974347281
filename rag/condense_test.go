package rag

import (
	"strings"
	"testing"
)

func TestCondenseRule(t *testing.T) {
	mha := []Turn{{Question: "What is multi-head attention in the Transformer?", Answer: "It attends to several subspaces [1]."}}
	cases := []struct {
		name    string
		q       string
		history []Turn
		want    string
	}{
		{"no history", "and how many heads does it use?", nil, "and how many heads does it use?"},
		{"connective-led follow-up", "and how many heads does it use?", mha, "and how many heads does it use? multi-head attention Transformer"},
		{"pronoun-led", "Its computational cost?", mha, "Its computational cost? multi-head attention Transformer"},
		{"short", "Why eight?", mha, "Why eight? multi-head attention Transformer"},
		{"pronoun inside a short question", "How is it trained on translation data?", mha, "How is it trained on translation data? multi-head attention Transformer"},
		{"standalone question unchanged", "What dataset was used for training the English-German translation model?", mha, "What dataset was used for training the English-German translation model?"},
		{"terms already present are not repeated", "and how does multi-head attention scale?", mha, "and how does multi-head attention scale? Transformer"},
		{"walks back through follow-ups to the topic", "and the dropout rate?", []Turn{
			{Question: "How was the big Transformer model trained on WMT?"},
			{Question: "and for how many steps?"},
		}, "and the dropout rate? steps WMT big Transformer model trained"},
		{"stops at the last standalone question", "what about them?", []Turn{
			{Question: "What optimizer did BERT pretraining use?"},
			{Question: "How was the big Transformer model trained on WMT?"},
		}, "what about them? WMT big Transformer model trained"},
		// Past maxCarried words the model the thread is about was dropped when words
		// were carried in question order.
		{"names are carried before the other words", "and the 33B one?", []Turn{
			{Question: "According to the carbon footprint table in Meta's paper on its open foundation models, how many GPU-hours did training LLaMA-7B take?"},
		}, "and the 33B one? GPU-hours LLaMA-7B According carbon footprint table Meta's open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := condenseRule(c.q, c.history, len(unseenNames(c.q, c.history)) > 0); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestCleanCondensed(t *testing.T) {
	cases := map[string]string{
		"How many heads does multi-head attention use?":                   "How many heads does multi-head attention use?",
		"\n  \"How many heads does it use?\"\n":                           "How many heads does it use?",
		"Standalone question: What is BERT?\nExplanation: I replaced it.": "What is BERT?",
		"**What is BERT?**":         "What is BERT?",
		"":                          "",
		strings.Repeat("word ", 80): "",
	}
	for in, want := range cases {
		if got := cleanCondensed(in); got != want {
			t.Errorf("cleanCondensed(%q) = %q, want %q", in, got, want)
		}
	}
}
