package rag

import (
	"context"
	"sort"
	"strconv"
	"strings"
)

// Grounded citations: every answer sentence that carries [n] is checked against source n
// before the answer is returned. A marker whose source does not support its sentence is
// removed; a sentence left with no supporting marker is dropped, unless another source
// supports it, which it then cites; an answer with nothing supported becomes the refusal.
//
// Support is lexical first: the names, versions and numbers of the sentence must all be in
// the source (a sentence saying "8 heads" is not supported by a passage saying 16), and
// most of its content words. A sentence in between — a paraphrase sharing some words with
// its source — is settled by the first embedder's cosine similarity between sentence and
// passage when there is one; only those sentences are embedded, so extractive answers
// (quoted, always lexically supported) cost nothing.
const (
	supportLexical  = 0.5  // share of the sentence's content words in the source: supported
	supportMinimum  = 0.25 // below this share: unsupported, whatever the embedder says
	supportNoModel  = 0.4  // in between without an embedder: supported from this share
	supportSemantic = 0.8  // cosine similarity of sentence and passage that supports it
)

// quoteMin is the length, in letters and digits, from which a claim found verbatim in its
// source is supported without further checks.
const quoteMin = 30

// groundSource is one source prepared for support checks.
type groundSource struct {
	ix    *evidenceIndex
	text  string
	flat  []string  // the text's letters and digits, as is and without footnote numbers
	vec   []float32 // embedded on first need
	tried bool
}

// grounder checks sentences against the sources of one answer.
type grounder struct {
	p    *Pipeline
	ctx  context.Context
	srcs []*groundSource
}

func (p *Pipeline) newGrounder(ctx context.Context, sources []Source) *grounder {
	g := &grounder{p: p, ctx: ctx}
	for _, s := range sources {
		text := stripMarkers(normalizeText(s.Chunk.Text))
		g.srcs = append(g.srcs, &groundSource{
			ix:   newEvidenceIndex(text, s.Chunk.Title, strings.Join(s.Chunk.Section, " ")),
			text: text,
			flat: []string{squeeze(text), squeeze(footnoteMark.ReplaceAllString(text, "$1"))},
		})
	}
	return g
}

// claimOf is a sentence without its citation markers.
func claimOf(sentence string) string { return stripMarkers(sentence) }

// support rates how well source i (0-based) supports a claim: 0 for not at all, else the
// share of its content words the source holds (or 1 when the embedder vouches for it).
func (g *grounder) support(claim string, i int) float64 {
	if i < 0 || i >= len(g.srcs) {
		return 0
	}
	src := g.srcs[i]
	// A quote is supported by the passage it was taken from. The item check below would
	// reject some: it reads "Sentence-BERT (Reimers and Gurevych, 2019)" as holding the
	// name "Gurevych 2019", which the passage only has with a comma in between.
	if q := squeeze(claim); len(q) >= quoteMin {
		for _, f := range src.flat {
			if strings.Contains(f, q) {
				return 1
			}
		}
	}
	for _, it := range questionItems(claim) {
		if it.hard && !src.ix.covers(it) {
			return 0
		}
	}
	ts := termSet(claim)
	if len(ts) == 0 {
		return 1 // nothing to contradict: "See below."
	}
	in := 0
	for t := range ts {
		if len(src.ix.stems[t]) > 0 {
			in++
		}
	}
	share := float64(in) / float64(len(ts))
	switch {
	case share >= supportLexical:
		return share
	case share < supportMinimum:
		return 0
	}
	if ok, known := g.semantic(claim, src); known {
		if ok {
			return supportLexical
		}
		return 0
	}
	if share >= supportNoModel {
		return share
	}
	return 0
}

// semantic asks the first embedder whether claim and passage say the same; known is false
// without an embedder or when it fails.
func (g *grounder) semantic(claim string, src *groundSource) (ok, known bool) {
	if len(g.p.cfg.Embedders) == 0 {
		return false, false
	}
	e := g.p.cfg.Embedders[0]
	texts := []string{claim}
	if !src.tried {
		texts = append(texts, src.text)
	}
	vs, err := e.EmbedDocuments(g.ctx, texts)
	if err != nil || len(vs) != len(texts) {
		g.p.log.Warn("grounding: embed a sentence; judging by its words", "err", err)
		return false, false
	}
	if !src.tried {
		src.vec, src.tried = vs[1], true
	}
	if len(src.vec) == 0 {
		return false, false
	}
	return cosine(vs[0], src.vec) >= supportSemantic, true
}

// best returns the 0-based index of the source that best supports claim, or -1.
func (g *grounder) best(claim string) int {
	bi, bs := -1, 0.0
	for i := range g.srcs {
		if s := g.support(claim, i); s > bs {
			bi, bs = i, s
		}
	}
	return bi
}

// ground checks the citations of text, whose markers are 1-based indexes into the
// grounder's sources, and returns the text with unsupported markers removed and
// unsupported sentences dropped (or re-cited to a source that supports them), and the
// counts. Sentences without markers are left alone: the prompt lets an "Interpretation:"
// paragraph go uncited.
func (g *grounder) ground(text string) (string, Grounding) {
	var gr Grounding
	var paras []string
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		var kept []string
		for _, sent := range splitSentences(para) {
			locs := citationMarker.FindAllStringIndex(sent, -1)
			if len(locs) == 0 {
				kept = append(kept, sent)
				continue
			}
			claim := claimOf(sent)
			var b strings.Builder
			pos, supported := 0, 0
			clause := claim
			for _, loc := range locs {
				// A marker inside a sentence vouches for the clause before it: "trained on
				// WMT 2014 [2], and each layer has two sub-layers [1]".
				if c := claimOf(sent[pos:loc[0]]); len(termSet(c)) > 0 {
					clause = c
				}
				var ok []int
				for _, n := range parseMarker(sent[loc[0]:loc[1]]) {
					gr.Checked++
					if g.support(clause, n-1) > 0 || g.support(claim, n-1) > 0 {
						gr.Supported++
						ok = append(ok, n)
					} else {
						gr.Unsupported++
					}
				}
				between := sent[pos:loc[0]]
				if len(ok) == 0 {
					b.WriteString(strings.TrimRight(between, " "))
				} else {
					b.WriteString(between)
					b.WriteString(markers(ok))
					supported += len(ok)
				}
				pos = loc[1]
			}
			b.WriteString(sent[pos:])
			out := b.String()
			if supported == 0 {
				if i := g.best(claim); i >= 0 {
					out = withCitation(strings.TrimSpace(claim), i+1)
				} else {
					gr.Dropped++
					continue
				}
			}
			kept = append(kept, out)
		}
		if len(kept) > 0 {
			paras = append(paras, strings.Join(kept, " "))
		}
	}
	return strings.Join(paras, "\n\n"), gr
}

// attach cites each sentence of an answer that cites nothing with the source that best
// supports it, and reports how many sentences it cited. Sentences no source supports stay
// uncited.
func (g *grounder) attach(text string) (string, int) {
	n := 0
	var paras []string
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		var out []string
		for _, sent := range splitSentences(para) {
			if strings.HasPrefix(sent, "Interpretation:") {
				out = append(out, sent)
				continue
			}
			if i := g.best(claimOf(sent)); i >= 0 && len(termSet(sent)) > 0 {
				sent = withCitation(strings.TrimSpace(claimOf(sent)), i+1)
				n++
			}
			out = append(out, sent)
		}
		if len(out) > 0 {
			paras = append(paras, strings.Join(out, " "))
		}
	}
	return strings.Join(paras, "\n\n"), n
}

// markers renders citation numbers as "[1][3]".
func markers(ns []int) string {
	sort.Ints(ns)
	var b strings.Builder
	for _, n := range ns {
		b.WriteString("[" + strconv.Itoa(n) + "]")
	}
	return b.String()
}
