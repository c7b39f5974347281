package rag

import (
	"context"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Follow-ups keep their subject without a language model: the papers the previous answer
// cited are searched as well as the whole corpus, and their passages are lifted in the
// ranking (steerBoost), so "And what batch size did they use?" is answered from the paper
// the thread is about. A follow-up that names a paper or model the thread has not seen
// and its papers do not use ("And what about ELECTRA?" after an answer on BERT) moves on:
// it is not steered, and the earlier question's names are not carried into its query (see
// movesOn, condenseRule).
const (
	// steerBoost lifts a steered passage's probability p to p^(1-steerBoost): 0.3 → 0.49,
	// 0.5 → 0.66, 0.9 → 0.94. A strong passage of another paper still outranks a weak one
	// of the thread's paper, and 0 stays 0.
	steerBoost = 0.4
	// steerExtra bounds the passages of the thread's papers added to the reranked pool.
	steerExtra = 5
	// steerDocs bounds the papers a follow-up is steered to.
	steerDocsMax = 3
)

// steerDocs returns the documents a follow-up should be steered to (threadDocs); none
// when there is no history or the follow-up moves on (movesOn).
func steerDocs(q Question, moves bool) []string {
	if len(q.History) == 0 || moves {
		return nil
	}
	return threadDocs(q)
}

// threadDocs returns the documents the most recent answer with sources cited (else
// retrieved), at most steerDocsMax, best first.
func threadDocs(q Question) []string {
	for i := len(q.History) - 1; i >= 0; i-- {
		var docs []string
		seen := map[string]bool{}
		for _, cited := range []bool{true, false} {
			for _, s := range q.History[i].Sources {
				if s.Cited != cited || s.Chunk.DocID == "" || seen[s.Chunk.DocID] || len(docs) == steerDocsMax {
					continue
				}
				seen[s.Chunk.DocID] = true
				docs = append(docs, s.Chunk.DocID)
			}
			if len(docs) > 0 {
				break // cited sources say what the answer was about; retrieved ones only without them
			}
		}
		if len(docs) > 0 {
			return mostCited(docs, q.History[i])
		}
	}
	return nil
}

// mostCited keeps the documents t's answer cites at least half as often as its most cited
// one (by citation markers), in order. An answer quoting three sentences of Sentence-BERT
// and one of RoBERTa is about Sentence-BERT: steering its follow-up to RoBERTa as well
// lets RoBERTa's stronger passages on batch sizes answer "And what batch size did they
// use?". An answer about two papers cites both alike and keeps both. Without markers
// (an answer not kept as text) docs are kept.
func mostCited(docs []string, t Turn) []string {
	byN := map[int]string{}
	for _, s := range t.Sources {
		if s.Cited && s.N > 0 {
			byN[s.N] = s.Chunk.DocID
		}
	}
	count := map[string]int{}
	most := 0
	for _, m := range citationMarker.FindAllString(t.Answer, -1) {
		for _, n := range parseMarker(m) {
			if d, ok := byN[n]; ok {
				count[d]++
				most = max(most, count[d])
			}
		}
	}
	if most == 0 {
		return docs
	}
	var out []string
	for _, d := range docs {
		if 2*count[d] >= most {
			out = append(out, d)
		}
	}
	return out
}

// subjectNames are the names in a question that can change a thread's subject: hard items
// starting with a letter ("ELECTRA", "GPT-4", "T5"), not sizes or numbers ("7B", "512").
func subjectNames(text string) []keyItem {
	var out []keyItem
	for _, it := range questionItems(text) {
		r, _ := utf8.DecodeRuneInString(it.text)
		if it.hard && unicode.IsLetter(r) {
			out = append(out, it)
		}
	}
	return out
}

// unseenNames returns the names of the question (subjectNames) the thread has not
// mentioned in its questions, answers or cited sources.
func unseenNames(text string, history []Turn) []keyItem {
	names := subjectNames(text)
	if len(names) == 0 {
		return nil
	}
	ix := newEvidenceIndex()
	for _, t := range history {
		ix.add(t.Question)
		ix.add(t.Answer)
		for _, s := range t.Sources {
			// An "also retrieved" passage is not what the thread talked about.
			if s.Cited {
				ix.add(s.Chunk.Title)
				ix.add(s.Chunk.Text)
			}
		}
	}
	var out []keyItem
	for _, it := range names {
		if !ix.covers(it) {
			out = append(out, it)
		}
	}
	return out
}

// movesOn reports whether a follow-up leaves its thread's papers: it names something the
// thread has not mentioned (unseenNames) and the thread's papers do not use it either.
// "And for the RoBERTa runs?" after an answer on LoRA's GPT-3 results, or "and DPR?" after
// one on BEIR's BM25 figures, names a model the thread's paper evaluates, and the answer
// is in that paper; "And what about ELECTRA?" after one on BERT moves on. On the spent
// sets every follow-up naming something new was answered by its thread's paper.
func (p *Pipeline) movesOn(ctx context.Context, q Question) bool {
	unseen := unseenNames(q.Text, q.History)
	if len(unseen) == 0 {
		return false
	}
	return !p.docsUseAll(ctx, threadDocs(q), unseen)
}

// docsUseAll reports whether the documents use every name, each in rescueMentions
// passages of one of them (docsUsing). Without documents, names or BM25 it reports false.
func (p *Pipeline) docsUseAll(ctx context.Context, docs []string, names []keyItem) bool {
	if len(docs) == 0 || len(names) == 0 || p.cfg.Sparse == nil {
		return false
	}
	enc, err := p.sparse(ctx)
	if err != nil {
		return false
	}
	var in []Chunk
	for _, d := range docs {
		in = append(in, Chunk{DocID: d})
	}
	for _, it := range names {
		if len(p.docsUsing(ctx, it, in, enc)) == 0 {
			return false
		}
	}
	return true
}

// steer lifts the candidates of the steered documents (see steerBoost) and re-sorts.
func steer(cands []Scored, docs []string) []Scored {
	if len(docs) == 0 {
		return cands
	}
	in := map[string]bool{}
	for _, d := range docs {
		in[d] = true
	}
	out := make([]Scored, len(cands))
	for i, c := range cands {
		if in[c.Chunk.DocID] && c.Rerank > 0 {
			c.Rerank = math.Pow(c.Rerank, 1-steerBoost)
		}
		out[i] = c
	}
	sortByRerank(out)
	return out
}

// mergeSteered adds to the pool to be reranked up to steerExtra hits of the steered
// documents that it lacks, best first.
func mergeSteered(pool, steered []Hit) []Hit {
	have := map[string]bool{}
	for _, h := range pool {
		have[h.Chunk.ID] = true
	}
	out := append([]Hit(nil), pool...)
	added := 0
	for _, h := range steered {
		if added == steerExtra {
			break
		}
		if !have[h.Chunk.ID] {
			have[h.Chunk.ID] = true
			out = append(out, h)
			added++
		}
	}
	return out
}

// isNameWord reports whether a word of an earlier question is a name (see classify).
func isNameWord(w string) bool {
	return classify(strings.Trim(w, trimToken), false) == kindHard
}

// steerPool is how many more hits than usual are reranked for a steered question.
func steerPool(steered []string) int {
	if len(steered) == 0 {
		return 0
	}
	return steerExtra
}
