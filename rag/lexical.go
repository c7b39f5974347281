package rag

import (
	"context"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// A similarity scorer (onnx.SimilarityReranker) reads the question and the passage as two
// points in one embedding space: a short factual question ("What dropout rate does the
// Transformer use?") lands far from the paragraph that answers it, whose cosine then falls
// under the score cut, and a long passage about the same model in general ranks above it.
// A cross-encoder would see that the passage holds the question's words; the similarity
// scorer cannot. lexicalQuery supplies that evidence: the share of the question's content
// words, each weighed by its rarity in the corpus, that a passage (or a sentence) holds.
// It is blended into the similarity score of passages (Config.LexicalWeight) and of the
// sentences an extractive answer quotes (Config.SentenceLexicalWeight).
type lexicalQuery struct {
	stems  []string
	weight []float64 // corpus IDF relative to an unseen word's (see corpusIDF)
	total  float64
}

// lexicalQuery weighs the question's content words: stopwords, reference words ("it",
// "they") and words that only shape a question ("how many", "exactly") carry nothing, and a
// word BM25 ignores carries nothing either.
func (p *Pipeline) lexicalQuery(enc SparseEncoder, question string) lexicalQuery {
	idf := p.corpusIDF(enc, question)
	var lq lexicalQuery
	seen := map[string]bool{}
	for _, w := range lexicalWords(question) {
		if stopwords[w] || references[w] || questionWords[w] || len([]rune(w)) < 2 {
			continue
		}
		st := english.Stem(w, false)
		if seen[st] {
			continue
		}
		seen[st] = true
		x := idf(w)
		if x <= 0 {
			continue
		}
		lq.stems = append(lq.stems, st)
		lq.weight = append(lq.weight, x)
		lq.total += x
	}
	return lq
}

// lexicalFor returns the question's lexicalQuery from a fresh BM25 encoder, or an empty
// one (covering nothing, so blending changes no order) without corpus statistics.
func (p *Pipeline) lexicalFor(ctx context.Context, question string) lexicalQuery {
	if p.cfg.Sparse == nil {
		return lexicalQuery{}
	}
	enc, err := p.sparse(ctx)
	if err != nil {
		p.log.Warn("lexical evidence: no corpus statistics", "err", err)
		return lexicalQuery{}
	}
	return p.lexicalQuery(enc, question)
}

// coverage is the weighed share of the question's content words that the texts hold
// together: 1 when they hold all, 0 when none (or the question has none).
func (lq lexicalQuery) coverage(texts ...string) float64 {
	return lq.coverageIn(stemSet(texts...), nil)
}

// contextCredit is what a word counts for when only the passage's paper holds it (another
// candidate passage of the same paper): "Transformer" is not in the Transformer paper's
// "5.3 Optimizer" paragraph, yet that paragraph is about it.
const contextCredit = 0.5

// coverageIn is coverage over a set of stems, with words found only in context (nil for
// none) counting contextCredit.
func (lq lexicalQuery) coverageIn(have, context map[string]bool) float64 {
	if lq.total <= 0 {
		return 0
	}
	got := 0.0
	for i, st := range lq.stems {
		switch {
		case have[st]:
			got += lq.weight[i]
		case context[st]:
			got += contextCredit * lq.weight[i]
		}
	}
	return got / lq.total
}

// stemSet is the set of stemmed words of the texts (stopwords left out).
func stemSet(texts ...string) map[string]bool {
	have := map[string]bool{}
	for _, t := range texts {
		for _, w := range lexicalWords(t) {
			if !stopwords[w] {
				have[english.Stem(w, false)] = true
			}
		}
	}
	return have
}

// paperContext is, per document, the stems of its candidate passages with their headings
// and title: what a passage of that paper is about beyond its own words.
func paperContext(chunks []Chunk) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, c := range chunks {
		m := out[c.DocID]
		if m == nil {
			m = map[string]bool{}
			out[c.DocID] = m
		}
		for st := range stemSet(c.Text, strings.Join(c.Section, " "), c.Title) {
			m[st] = true
		}
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

// lexicalFloor is the similarity below which words in common lift nothing: a passage the
// scorer finds unrelated is not evidence because it shares the question's words (a cake
// recipe among GPT-2's samples, for how long to boil an egg).
const lexicalFloor = 0.1

// lexicalBlend mixes each candidate's reranker probability with the lexical coverage of
// its passage, section headings and paper title (words found only in the paper's other
// candidates count contextCredit): score' = (1-w)·score + w·coverage, and re-sorts. The cut
// then reads the blend.
func lexicalBlend(cands []Scored, lq lexicalQuery, w float64) []Scored {
	if lq.total <= 0 || w <= 0 {
		return cands
	}
	chunks := make([]Chunk, len(cands))
	for i, c := range cands {
		chunks[i] = c.Chunk
	}
	papers := paperContext(chunks)
	out := make([]Scored, len(cands))
	for i, c := range cands {
		have := stemSet(c.Chunk.Text, strings.Join(c.Chunk.Section, " "), c.Chunk.Title)
		if c.Rerank >= lexicalFloor {
			c.Rerank = (1-w)*c.Rerank + w*lq.coverageIn(have, papers[c.Chunk.DocID])
		}
		out[i] = c
	}
	sortByRerank(out)
	return out
}
