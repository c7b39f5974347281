package rag

import (
	"context"
	"errors"
	"strings"
)

// A question that names a paper ("REALM refreshes its index while RAG does not …",
// "DistilBERT or ELECTRA-Small?") can lose that paper's passages to another paper's that
// match the rest of it better; the gate then refuses, saying the papers do not mention a
// paper the corpus holds. When a name of the question titles exactly one paper and no
// kept passage is from it, that paper's best passage is retrieved on its own and kept
// beside the others, if it passes the same score cut. The gate still decides.

// namedSearchHits bounds the BM25 search that finds the papers a name titles.
const namedSearchHits = 20

// titleNames reports whether a paper's title names the item: the title's lead ("RoBERTa"
// in "RoBERTa: A Robustly …", "DistilBERT" in "DistilBERT, a distilled …") is the item, or
// the item is an acronym of the title's words ("DPR" of "Dense Passage Retrieval").
func titleNames(title string, it keyItem) bool {
	lead, _, _ := strings.Cut(title, ":")
	lead, _, _ = strings.Cut(lead, ",")
	if squeeze(lead) == it.key {
		return true
	}
	if !it.acro {
		return false
	}
	k := strings.TrimSuffix(it.key, "s")
	return len(newEvidenceIndex(title).acros[k]) > 0
}

// namedPapers returns, per hard item of the question, the one paper whose title names it,
// found among the papers a BM25 search for the item reaches. An item titling several
// papers ("LLMs") names none.
func (p *Pipeline) namedPapers(ctx context.Context, question string, enc SparseEncoder) []string {
	if enc == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, it := range questionItems(question) {
		if !it.hard {
			continue
		}
		v := enc.EncodeQuery(it.text)
		if len(v.Indices) == 0 {
			continue
		}
		hits, err := p.cfg.Searcher.Search(ctx, SearchRequest{Sparse: &v, Limit: namedSearchHits})
		if err != nil {
			p.log.Warn("named papers: search", "item", it.text, "err", err)
			continue
		}
		titled := map[string]bool{}
		for _, h := range hits {
			if titleNames(h.Chunk.Title, it) {
				titled[h.Chunk.DocID] = true
			}
		}
		if len(titled) != 1 {
			continue
		}
		for id := range titled {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// withNamedPapers adds to the kept hits the best passage of each paper the question names
// by title that none of them is from (see namedPapers). A failed search adds nothing.
func (p *Pipeline) withNamedPapers(ctx context.Context, question, query string, hits []Scored) []Scored {
	if p.cfg.Sparse == nil {
		return hits
	}
	enc, err := p.sparse(ctx)
	if err != nil {
		return hits
	}
	have := map[string]bool{}
	for _, h := range hits {
		have[h.Chunk.DocID] = true
	}
	for _, doc := range p.namedPapers(ctx, question, enc) {
		if have[doc] {
			continue
		}
		r, err := p.retrieve(ctx, Question{Text: query, TopK: 1, Filter: Filter{DocIDs: []string{doc}}}, nil)
		if err != nil {
			if !errors.Is(err, ErrNoEvidence) {
				p.log.Warn("named papers: retrieve", "doc", doc, "err", err)
			}
			continue
		}
		if len(r.Hits) > 0 && (!r.Reranked || r.Hits[0].Rerank >= p.cfg.MinScore) {
			hits = append(hits, r.Hits[0])
			have[doc] = true
		}
	}
	return hits
}

// withMissingFound is tried when the gate refused for names the kept passages lack: a
// paper's passage on LAMBADA may rank below its passages on language modelling for
// "What perplexity does GPT-2 reach on LAMBADA?". For each missing name, the best passage
// of a kept paper that names it (searched for the query and the name, within the kept
// papers, and passing the score cut) is added. Only kept papers are searched, so a name
// no kept paper uses, the near miss's "GPT-4", finds nothing. It reports whether it added
// any; the gate then judges the evidence again.
func (p *Pipeline) withMissingFound(ctx context.Context, question, query string, hits []Scored, missing []string) ([]Scored, bool) {
	var docs []string
	have := map[string]bool{}
	for _, h := range hits {
		if !have[h.Chunk.DocID] {
			docs = append(docs, h.Chunk.DocID)
		}
		have[h.Chunk.DocID] = true
		have[h.Chunk.ID] = true
	}
	byText := map[string]keyItem{}
	for _, it := range questionItems(question) {
		byText[it.text] = it
	}
	added := false
	for _, m := range missing {
		it, ok := byText[m]
		if !ok {
			continue
		}
		r, err := p.retrieve(ctx, Question{Text: query + " " + it.text, Filter: Filter{DocIDs: docs}}, nil)
		if err != nil {
			if !errors.Is(err, ErrNoEvidence) {
				p.log.Warn("missing names: retrieve", "item", it.text, "err", err)
			}
			continue
		}
		for _, c := range r.Candidates {
			if r.Reranked && c.Rerank < p.cfg.MinScore {
				break
			}
			if have[c.Chunk.ID] || !newEvidenceIndex(withoutReferences(c.Chunk.Text)).covers(it) {
				continue
			}
			hits = append(hits, c)
			have[c.Chunk.ID] = true
			added = true
			break
		}
	}
	return hits, added
}
