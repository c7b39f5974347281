package rag

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// A question often names a paper by its authors: "What weight decay did Vaswani et al.
// apply?", "what max sequence length did Reimers and Gurevych use?". The gate's item
// reader skips them, since an author's name is printed once, on the first page, and is
// not what the question asks about; but it does say which paper the question is about. A
// question on a setting that paper never states was otherwise judged against every kept
// paper, and another paper's weight decay answered for it.

// etAl is "Vaswani et al." and "Reimers and Gurevych" / "Reimers & Gurevych".
var (
	etAl    = regexp.MustCompile(`(\p{Lu}[\p{L}'’-]+)\s+et\s+al\b`)
	twoName = regexp.MustCompile(`(\p{Lu}[\p{L}'’-]+)\s+(?:and|&)\s+(\p{Lu}[\p{L}'’-]+)`)
)

// authorPapers returns the documents whose authors the question names: the first author's
// surname before "et al.", or both authors of a two-author paper; or whose title it gives
// (titleNamed); and the surnames and title words that named them. Nil when it names none
// or the documents cannot be listed.
func (p *Pipeline) authorPapers(ctx context.Context, question string) (ids, names []string) {
	firsts := etAl.FindAllStringSubmatch(question, -1)
	pairs := twoName.FindAllStringSubmatch(question, -1)
	if len(firsts) == 0 && len(pairs) == 0 && !titleLike.MatchString(question) {
		return nil, nil
	}
	docs := p.documents(ctx)
	q := squeezedWords(question)
	for _, d := range docs {
		if words := titleNamed(question, q, d.Title); words != nil {
			ids, names = append(ids, d.ID), append(names, words...)
			continue
		}
		if len(d.Authors) == 0 {
			continue
		}
		first := surname(d.Authors[0])
		named := false
		for _, m := range firsts {
			if strings.EqualFold(m[1], first) {
				named, names = true, append(names, m[1])
			}
		}
		for _, m := range pairs {
			if len(d.Authors) == 2 && strings.EqualFold(m[1], first) && strings.EqualFold(m[2], surname(d.Authors[1])) {
				named, names = true, append(names, m[1], m[2])
			}
		}
		if named {
			ids = append(ids, d.ID)
		}
	}
	return ids, names
}

// A question names a paper by its title as often: "In Attention Is All You Need, how
// were the weights initialised?". The title's words are then no more what it asks about
// than an author's name; the Transformer paper's title was read as a question about
// attention, and LoRA's passages on attention weights answered for it.

// titleWords is how many leading words of a title a question must give to name the
// paper: "Dense Passage Retrieval", "Attention Is All You Need". Two ("Language Models")
// name a topic.
const titleWords = 3

// titleLike is a question that may hold a title: three words in a row.
var titleLike = regexp.MustCompile(`\S+\s+\S+\s+\S+`)

// titleNamed returns the words of the title's lead (up to a colon) when the question
// (squeezed: its squeezedWords) gives its first titleWords words or more, compared
// without case, spacing or hyphens; nil otherwise.
func titleNamed(question, squeezed, title string) []string {
	lead, _, _ := strings.Cut(title, ":")
	ws := strings.Fields(lead)
	if len(ws) < titleWords {
		return nil
	}
	n := 0
	for i := titleWords; i <= len(ws); i++ {
		if strings.Contains(squeezed, squeezedWords(strings.Join(ws[:i], " "))) {
			n = i
		}
	}
	if n == 0 {
		return nil
	}
	// A title's capitals must be the question's too: "Language models are trained on
	// …" does not name "Language Models are Unsupervised Multitask Learners". A question
	// in lower case gives a longer run instead.
	if strings.IndexFunc(question, unicode.IsUpper) < 0 {
		if n < titleWords+1 {
			return nil
		}
		return ws[:n]
	}
	for _, w := range ws[:n] {
		w = strings.Trim(w, ",.;")
		if r := []rune(w); len(r) > 0 && unicode.IsUpper(r[0]) && !strings.Contains(question, w) {
			return nil
		}
	}
	return ws[:n]
}

// squeezedWords squeezes each word of s and joins them with spaces, with a space at
// either end, so that a title's words are found as whole words in a question's:
// "Retrieval-Augmented Generation," → " retrievalaugmented generation ".
func squeezedWords(s string) string {
	var b strings.Builder
	b.WriteByte(' ')
	for _, f := range strings.Fields(s) {
		if k := squeeze(f); k != "" {
			b.WriteString(k)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// withoutNames drops the items that are authors' names: the paper prints them once, on
// its first page, and they are not what the question asks about.
func withoutNames(items []keyItem, names []string) []keyItem {
	if len(names) == 0 {
		return items
	}
	return slices.DeleteFunc(items, func(it keyItem) bool {
		return slices.ContainsFunc(names, func(n string) bool { return squeeze(n) == it.key })
	})
}

// surname is the last word of an author's name: "Ashish Vaswani" → "Vaswani", "Victor
// SANH" → "SANH".
func surname(name string) string {
	f := strings.FieldsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || r == ',' })
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// withAuthorPapers narrows the passages a setting is looked for in to the papers the
// question names by their authors, kept or not: a passage of each stands for its paper.
// When the question's names already single out some of those papers (named: "Radford et
// al." wrote GPT-1 and GPT-2; the question asks about GPT-2), those stay.
func withAuthorPapers(subject, kept []Chunk, authors []string, named bool) []Chunk {
	if len(authors) == 0 {
		return subject
	}
	var both []Chunk
	for _, c := range subject {
		if slices.Contains(authors, c.DocID) {
			both = append(both, c)
		}
	}
	if len(both) > 0 && named {
		return both
	}
	var out []Chunk
	for _, id := range authors {
		found := false
		for _, c := range kept {
			if c.DocID == id {
				out = append(out, c)
				found = true
			}
		}
		if !found {
			out = append(out, Chunk{ID: "author:" + id, DocID: id})
		}
	}
	return out
}

// documents lists the indexed documents for the gate, which reads their titles and
// authors; none when they cannot be listed (the gate then judges by the passages alone).
// Within a question (see withSparse) they are listed once.
func (p *Pipeline) documents(ctx context.Context) []Document {
	if p.cfg.Documents == nil {
		return nil
	}
	list := func() []Document {
		docs, err := p.cfg.Documents(ctx)
		if err != nil {
			p.log.Warn("evidence gate: list the documents", "err", err)
			return nil
		}
		return docs
	}
	s, ok := ctx.Value(sparseKey{}).(*sparseOnce)
	if !ok {
		return list()
	}
	s.docsOnce.Do(func() { s.docs = list() })
	return s.docs
}
