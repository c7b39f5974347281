package rag

import (
	"context"
	"errors"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
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
	if base, ok := firstVersion(it); ok && titleNames(title, base) {
		return true
	}
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

// titleHolds reports whether a name of several words stands whole in the title: "the
// Differentiable Search Index" is DSI's "Transformer Memory as a Differentiable Search
// Index". Unowned (its paper introduces the initials, not the words) and not the title's
// lead, the name named no paper, so a question pairing it with "T5" was searched within
// the T5 paper alone and refused for lacking it. A single word ("Transformer") stands in
// too many titles to name one.
func titleHolds(title string, it keyItem) bool {
	name := words(it.text)
	if len(name) < 2 {
		return false
	}
	tw := words(title)
	for i := 0; i+len(name) <= len(tw); i++ {
		if slices.Equal(tw[i:i+len(name)], name) {
			return true
		}
	}
	return false
}

// A paper's own short name need not be in its title: "InstructGPT", "DrQA" and
// "Fusion-in-Decoder" are each introduced by one paper ("We call the resulting models
// InstructGPT", "we refer to it as Fusion-in-Decoder") and only cited by others. That
// paper owns the name: a question using it is about that paper, and every passage of the
// paper speaks of it, named or not. How often a paper uses a name does not tell: the
// chain-of-thought paper uses "GSM8K" more than any other and does not own it.

// ownerHits bounds the BM25 search for the passages that may introduce a name.
const ownerHits = 40

// introRE finds a name a passage introduces, and a parenthesised short form after it
// ("we introduce Benchmarking-IR (BEIR)", "… “Text-to-Text Transfer Transformer” (T5)").
// Between the verb and the name only words like "the resulting models" may stand: "we
// present results on GSM8K" introduces nothing.
var introRE = regexp.MustCompile(`(?i:\b(?:call|calls|called|refer to|refers to|referred to|dub|dubbed|named|term|termed|introduce|introduces|present|presents|propose|proposes|develop|develops|release|releases|our largest model,?|our model,?)\s+(?:(?:the|this|these|our|it|them|as|a|an|new|resulting|final|model|models|approach|method|system|framework|family|collection|of|and|which|we|simply|hereafter)\s+){0,6})([A-Z][\p{L}0-9]*(?:-[\p{L}0-9]+)*|“[^”]{2,40}”|"[^"]{2,40}")(?:[^.()]{0,40}\(([A-Z][\p{L}0-9-]*)\))?`)

// nameForms returns a name as introduced and, for a quoted name of a model and its
// setting ("our model “E5mistral-7b + full data”"), the model's name with and without
// its size: the user's "E5-mistral". A size is not stripped from a bare name: the
// "ELECTRA-400K" a paper introduces is one run, not the ELECTRA-XL a user may ask about.
func nameForms(n string) []string {
	out := []string{n}
	if q := strings.Trim(n, `“”"`); q != n {
		if f := strings.Fields(q); len(f) > 1 && classify(f[0], false) == kindHard {
			out = append(out, f[0])
			if base := variantRE.ReplaceAllString(f[0], ""); base != f[0] && base != "" {
				out = append(out, base)
			}
		}
	}
	return out
}

// introAfterRE finds a name introduced before its definition: "“T5” refers to our model".
var introAfterRE = regexp.MustCompile(`([A-Z][\p{L}0-9]*(?:-[\p{L}0-9]+)*|“[^”]{1,40}”|"[^"]{1,40}") (?i:refers to|denotes|stands for) our `)

// introduced returns the squeezed names a text introduces.
func introduced(text string) []string {
	var out []string
	for _, re := range []*regexp.Regexp{introRE, introAfterRE} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			for _, n := range m[1:] {
				for _, v := range nameForms(n) {
					if k := squeeze(v); k != "" {
						out = append(out, k)
					}
					// The name users write for a hyphenated one: "FiD" for the
					// "Fusion-in-Decoder" a paper introduces without abbreviating it.
					if k := squeeze(CompoundInitials(v)); k != "" {
						out = append(out, k)
					}
				}
			}
		}
	}
	return out
}

// variantRE is a size or variant after a model's name: "LLaMA-65B", "T5-11B",
// "ELECTRA-Large", "Guanaco 65B". A bare version number ("GPT-2") is part of the name.
var variantRE = regexp.MustCompile(`(?i)[-\s](?:\d+(?:\.\d+)?[bmk]|large|base|small|tiny|mini|medium|xl|xxl)$`)

// owner returns the one paper that introduces the item, or the model the item is a
// variant of, among the passages a BM25 search for it reaches; "" when none or several
// do. Numbers name nothing.
func (p *Pipeline) owner(ctx context.Context, it keyItem, enc SparseEncoder) string {
	if isNumber(it.text) {
		return ""
	}
	memo := memoOwner(ctx)
	if memo != nil {
		if id, ok := memo.Load(it.key); ok {
			return id.(string)
		}
	}
	id := p.findOwner(ctx, it, enc)
	if memo != nil {
		memo.Store(it.key, id)
	}
	return id
}

func (p *Pipeline) findOwner(ctx context.Context, it keyItem, enc SparseEncoder) string {
	keys := map[string]bool{it.key: true}
	query := it.text
	// A paper may write the name joined ("E5mistral-7b" for the user's "E5-mistral"),
	// which the search's words for "E5-mistral" do not reach.
	if it.key != strings.ToLower(it.text) {
		query += " " + it.key
	}
	if base := variantRE.ReplaceAllString(it.text, ""); base != it.text && base != "" {
		keys[squeeze(base)] = true
		query += " " + base
	}
	docs := map[string]bool{}
	for _, h := range p.searchName(ctx, query+" introduce call refer", ownerHits, enc) {
		for _, k := range p.chunkIntros(h.Chunk) {
			if keys[k] {
				docs[h.Chunk.DocID] = true
			}
		}
	}
	if len(docs) != 1 {
		return ""
	}
	for id := range docs {
		return id
	}
	return ""
}

// introEntry is what a passage introduces, with its text's hash to notice a passage
// re-indexed under the same ID with other text.
type introEntry struct {
	sum   uint64
	names []string
}

// chunkIntros returns the names a passage introduces outside its reference list, computed
// once per passage: the reference filter is most of an answer's cost otherwise, and a
// corpus holds a bounded number of passages.
func (p *Pipeline) chunkIntros(c Chunk) []string {
	h := fnv.New64a()
	h.Write([]byte(c.Text))
	sum := h.Sum64()
	if e, ok := p.intros.Load(c.ID); ok && e.(introEntry).sum == sum {
		return e.(introEntry).names
	}
	names := introduced(withoutReferences(c.Text))
	if c.ID != "" {
		p.intros.Store(c.ID, introEntry{sum: sum, names: names})
	}
	return names
}

// searchName runs a BM25 search over the whole corpus for a name; nil when there is
// nothing to search with or it fails.
func (p *Pipeline) searchName(ctx context.Context, query string, limit int, enc SparseEncoder) []Hit {
	if enc == nil {
		return nil
	}
	v := enc.EncodeQuery(query)
	if len(v.Indices) == 0 {
		return nil
	}
	hits, err := p.cfg.Searcher.Search(ctx, SearchRequest{Sparse: &v, Limit: limit})
	if err != nil {
		p.log.Warn("named papers: search", "query", query, "err", err)
		return nil
	}
	return hits
}

// owners returns owner for each item.
func (p *Pipeline) owners(ctx context.Context, items []keyItem, enc SparseEncoder) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = p.owner(ctx, it, enc)
	}
	return out
}

// questionPapers returns the papers the question names (namedPapers); none without BM25.
func (p *Pipeline) questionPapers(ctx context.Context, question string) []string {
	if p.cfg.Sparse == nil {
		return nil
	}
	enc, err := p.sparse(ctx)
	if err != nil {
		return nil
	}
	return p.namedPapers(ctx, question, enc)
}

// versionOne is a name's first version spelled with its number: "GPT-1", "LLaMA 1".
var versionOne = regexp.MustCompile(`^(\p{L}[\p{L}\d]*?)[-\s]?1$`)

// firstVersion returns the name a first version went by before it had a successor: the
// GPT-1 paper calls its model "GPT" (in its title's initials) and never "GPT-1".
func firstVersion(it keyItem) (keyItem, bool) {
	m := versionOne.FindStringSubmatch(it.text)
	if m == nil || len(m[1]) < 2 {
		return keyItem{}, false
	}
	// A user writing in lower case ("gpt-1") means the same initials.
	acro := isAcronym(m[1]) || (m[1] == strings.ToLower(m[1]) && isAcronym(strings.ToUpper(m[1])) && len(m[1]) <= 4)
	return keyItem{text: m[1], key: squeeze(m[1]), hard: true, acro: acro}, true
}

// namedPapers returns the paper the question names by its title or by its authors, if
// one, and, per hard item of the question, the one paper whose title names it, found among
// the papers a BM25 search for the item reaches, or else the paper that owns it. An item
// titling several papers ("LLMs") names none.
func (p *Pipeline) namedPapers(ctx context.Context, question string, enc SparseEncoder) []string {
	if enc == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	// "In Attention Is All You Need, …" and "Raffel et al." name a paper by its title and
	// its authors (see authorPapers). "Radford et al." wrote GPT-1 and GPT-2, and names
	// neither: searched within both, the GPT-2 paper answered for the original GPT.
	if ids, _ := p.authorPapers(ctx, question); len(ids) == 1 {
		seen[ids[0]] = true
		out = append(out, ids[0])
	}
	// A paper that never spells its own name ("GPT", the initials of "Generative
	// Pre-Training") is not reached by a search for the name; one for the question may,
	// and the list of documents always does: "what tokenizer did gpt-1 use?" reached only
	// GPT-2's passages. Only a first version's name and initials of three words or more
	// are looked up in every title: two initials ("RMs") name "Retrieval Models" in some
	// title, and a search bounds that.
	var asked []Hit
	var docs []Document
	listed := false
	for _, it := range questionItems(question) {
		if !it.hard && !it.name {
			continue
		}
		if asked == nil {
			asked = p.searchName(ctx, question, namedSearchHits, enc)
		}
		_, everyTitle := firstVersion(it)
		everyTitle = everyTitle || it.acro && len(strings.TrimSuffix(it.key, "s")) >= 3
		if everyTitle && !listed {
			docs, listed = p.documents(ctx), true
		}
		titled := map[string]bool{}
		for _, h := range append(p.searchName(ctx, it.text, namedSearchHits, enc), asked...) {
			if titleNames(h.Chunk.Title, it) || titleHolds(h.Chunk.Title, it) {
				titled[h.Chunk.DocID] = true
			}
		}
		for _, d := range docs {
			if everyTitle && titleNames(d.Title, it) {
				titled[d.ID] = true
			}
		}
		if len(titled) == 0 {
			if id := p.owner(ctx, it, enc); id != "" {
				titled[id] = true
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
// (named, see questionPapers) that none of them is from. A failed search adds nothing.
func (p *Pipeline) withNamedPapers(ctx context.Context, named []string, query string, hits []Scored) []Scored {
	have := map[string]bool{}
	for _, h := range hits {
		have[h.Chunk.DocID] = true
	}
	for _, doc := range named {
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
//
// A question comparing papers (comparing: it names two or more) looks deeper when the
// candidates hold no such passage (deeperHolder). Its words are shared between the papers,
// so each paper's passage on its part of it ranks low: for "How many parameters does
// LoRA's table give for fine-tuning GPT-2 Medium, and what count does the GPT-2 paper list
// for its 24-layer model?", no candidate of the GPT-2 paper named "24". On the spent sets
// this answered 3 false refusals and no near miss. A question about one paper does not
// look deeper: there a passage naming the thing in passing (InstructGPT's "GAE", asked for
// its GAE lambda) answered 5 near misses, and only 1 more false refusal.
func (p *Pipeline) withMissingFound(ctx context.Context, question, query string, hits []Scored, missing []string, comparing bool) ([]Scored, bool) {
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
		found := false
		for _, c := range r.Candidates {
			if r.Reranked && c.Rerank < p.cfg.MinScore {
				break
			}
			if have[c.Chunk.ID] || !newEvidenceIndex(withoutReferences(c.Chunk.Text)).covers(it) {
				continue
			}
			hits = append(hits, c)
			have[c.Chunk.ID] = true
			added, found = true, true
			break
		}
		if !found && comparing {
			if c, ok := p.deeperHolder(ctx, query, it, docs, have); ok {
				hits = append(hits, c)
				have[c.Chunk.ID] = true
				added = true
			}
		}
	}
	return hits, added
}

// deeperHolder looks further into the kept papers for a passage naming it: BM25 over
// the papers, deeper than the candidates, keeps the best passage for the whole query among
// those naming it.
func (p *Pipeline) deeperHolder(ctx context.Context, query string, it keyItem, docs []string, have map[string]bool) (Scored, bool) {
	if p.cfg.Sparse == nil {
		return Scored{}, false
	}
	enc, err := p.sparse(ctx)
	if err != nil {
		return Scored{}, false
	}
	hits, _ := p.searchDocs(ctx, enc, it.searchText()+" "+query, attributeHits, docs)
	for _, h := range hits {
		if !have[h.Chunk.ID] && slices.Contains(docs, h.Chunk.DocID) && newEvidenceIndex(withoutReferences(h.Chunk.Text)).covers(it) {
			return Scored{Hit: h}, true
		}
	}
	return Scored{}, false
}

// CompoundInitials returns the initials of a hyphenated name ("FiD" for
// "Fusion-in-Decoder"), the short name users and other papers write for it; "" for any
// other word. The name is a titled compound (titledCompound, as the gate reads "Plan-and-
// Solve") whose inner parts are all short lower-case words, whose initials stay small:
// "Step-Back", "state-of-the-art" and "GPT-3-175B" give "". BM25 indexes the initials
// beside the name (rag/bm25.Analyze), and a paper introducing the name owns them (owner).
func CompoundInitials(name string) string {
	parts := strings.FieldsFunc(name, isHyphen)
	if len(parts) < 3 || !titledCompound(name) {
		return ""
	}
	if slices.ContainsFunc(parts[1:len(parts)-1], func(p string) bool { return p != strings.ToLower(p) }) {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		r, _ := utf8.DecodeRuneInString(p)
		b.WriteRune(r)
	}
	return b.String()
}
