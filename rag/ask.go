package rag

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode"
)

// GeneratorExtractive is Answer.Generator for answers composed from the sources' sentences.
const GeneratorExtractive = "extractive"

// MethodSelected is Answer.Method in selected-text mode, where nothing is retrieved.
const MethodSelected = "selected"

// Ask answers q from the indexed documents, streaming the answer text through fn as it is
// written (fn may be nil). The streamed text already carries the final citation numbers;
// the returned Answer is authoritative (a model's refusal is replaced by Refusal, and text
// streamed before a generator failure is followed by the extractive answer).
//
// A follow-up (q.History non-empty) is first condensed into a standalone query, by the
// generator when there is one, else by a rule that carries over the earlier questions' key
// terms. When retrieval finds no evidence the answer is a refusal: Text == Refusal, no
// sources, never a guess. Sources cited by earlier turns are offered to the generator as
// further context. In selected-text mode (q.Selected non-empty) nothing is retrieved: the
// passage is the only source, [1].
//
// Without a generator the answer is extractive. When the generator fails (timeout, HTTP
// error, connection refused) the answer falls back to extractive with Answer.Note saying
// so. Errors are returned for an empty question, a retrieval failure other than
// ErrNoEvidence, a cancelled ctx, and an error from fn (returned as is).
func (p *Pipeline) Ask(ctx context.Context, q Question, fn func(delta string) error) (Answer, error) {
	start := time.Now()
	ans, err := p.ask(withSparse(ctx), q, fn)
	ans.Timings.Total = time.Since(start)
	return ans, err
}

func (p *Pipeline) ask(ctx context.Context, q Question, fn func(delta string) error) (Answer, error) {
	if fn == nil {
		fn = func(string) error { return nil }
	}
	q.Text = strings.TrimSpace(q.Text)
	if q.Text == "" {
		return Answer{}, errors.New("ask: empty question")
	}
	ans := Answer{Question: q.Text, Query: q.Text, Sources: []Source{}}

	if strings.TrimSpace(q.Selected) != "" {
		ans.Method = MethodSelected
		src := p.selectedSource(ctx, q)
		if err := p.respond(ctx, q, q.Text, []Source{src}, 1, true, nil, fn, &ans); err != nil {
			return ans, err
		}
		return ans, nil
	}

	t := time.Now()
	moves := len(q.History) > 0 && p.movesOn(ctx, q)
	query, llmErr := p.condense(ctx, q, moves)
	ans.Timings.Condense = time.Since(t)
	if err := ctx.Err(); err != nil {
		return ans, err
	}
	ans.Query = query

	rq := q
	rq.Text, rq.History = query, nil
	steered := steerDocs(q, moves)
	// A question naming a paper ("DrQA's Document Reader", "the LLaMA authors") is searched
	// within it as well, as a follow-up within its thread's papers: it competes less with
	// other papers' passages on the same topic, and a near miss about a named paper ("REALM
	// on TriviaQA") keeps that paper's passages, which the gate then finds lacking.
	//
	// A follow-up kept in its thread names only what the thread mentioned or its papers
	// use ("and for the RoBERTa runs?" in a thread on LoRA's results): the thread's papers
	// answer it, and the named paper's own passages are not added beside theirs. On the
	// spent sets this answered 9 more follow-up turns from their paper and lost none;
	// adding the named papers when the thread's papers use the names less than
	// rescueMentions times lost one.
	var named []string
	lift := steered
	if len(lift) == 0 {
		named = p.questionPapers(ctx, q.Text)
		lift = named
	}
	r, err := p.retrieve(ctx, rq, lift)
	ans.Method = r.Method
	ans.Timings.Embed, ans.Timings.Search, ans.Timings.Rerank = r.Timings.Embed, r.Timings.Search, r.Timings.Rerank
	if errors.Is(err, ErrNoEvidence) {
		p.log.Debug("no evidence; refusing", "query", query)
		return ans, p.refuse(&ans, fn, false)
	}
	if err != nil {
		return ans, fmt.Errorf("ask: %w", err)
	}
	if len(r.Hits) == 0 { // a retriever that keeps nothing without saying ErrNoEvidence
		return ans, p.refuse(&ans, fn, false)
	}

	// An elliptical follow-up ("And what batch size did they use?") is answered from the
	// thread's papers when they hold evidence; any other question in a thread when its
	// best passage is theirs. The gate then checks the evidence chosen.
	followUp := isFollowUp(q.Text)
	inThread := len(steered) > 0 && followUp
	if followUp {
		r.Hits = sameDocs(p.steeredEvidence(ctx, r, steered, q.Text), steered, true)
		if inThread {
			r.Hits = withEarlierHolder(q, r.Hits)
		}
	} else {
		r.Hits = sameDocs(r.Hits, steered, false)
	}
	r.Hits = p.withNamedPapers(ctx, named, query, r.Hits)
	g := p.gateIn(ctx, q.Text, hitChunks(r.Hits), hitChunks(r.Candidates), inThread)
	if g.refused() {
		if hits, ok := p.withMissingFound(ctx, q.Text, query, r.Hits, g.missing, len(named) >= 2); ok {
			if g2 := p.gateIn(ctx, q.Text, hitChunks(hits), hitChunks(r.Candidates), inThread); !g2.refused() {
				r.Hits, g = hits, g2
			} else if g2.surveyed {
				g.missing, g.explain = g2.missing, g2.explain
			}
		}
	}
	if g.refused() {
		p.log.Debug("evidence gate refused", "query", query, "missing", g.missing, "coverage", g.coverage)
		ans.Missing = g.missing
		err := p.refuseWith(&ans, fn, false, g.explain)
		// The closest passages still help the user look further.
		ans.More = p.moreSources(Retrieval{Candidates: r.Candidates, Reranked: r.Reranked}, query, 0)
		return ans, err
	}
	// Passages naming what the question names come first, and those naming none of it are
	// not evidence: a reranker may prefer a passage on BERT's objectives for a question on
	// Sentence-BERT's. They remain under "More sources".
	r.Hits = holdersFirst(r.Hits, g.holders, newNames(q.Text, r.Hits, g.holders))
	p.log.Debug("evidence gate passed", "holders", g.holders, "coverage", g.coverage, "steered", steered)

	cands := hitSources(r.Hits, r.Reranked)
	cands = append(cands, historySources(q.History, cands)...)
	if err := p.respond(ctx, q, query, cands, len(r.Hits), r.Reranked, llmErr, fn, &ans); err != nil {
		return ans, err
	}
	if !ans.Refused {
		ans.More = p.moreSources(r, query, len(ans.Sources))
	}
	return ans, nil
}

// refuse turns ans into the refusal and streams it unless text was streamed already.
func (p *Pipeline) refuse(ans *Answer, fn func(string) error, streamed bool) error {
	return p.refuseWith(ans, fn, streamed, "")
}

// refuseWith is refuse with a reason after the refusal sentence, which stays first so
// callers can recognise it: "Not found in indexed documents. The papers mention GPT-3,
// but not GPT-4."
func (p *Pipeline) refuseWith(ans *Answer, fn func(string) error, streamed bool, reason string) error {
	ans.Refused = true
	ans.Text = Refusal
	if reason != "" {
		ans.Text += " " + reason
	}
	ans.Sources = []Source{}
	ans.More = nil
	ans.Confidence = 0
	ans.Citations, ans.InvalidCitations = 0, 0
	if ans.Generator == "" {
		ans.Generator = GeneratorExtractive
	}
	if streamed {
		return nil
	}
	return fn(ans.Text)
}

// holdersFirst orders the hits by how many of the question's names they hold (see
// gateResult.holders), keeping the reranker's order among equals. It keeps the passages
// of the papers holding the most names, even those naming none of them: a paper names its
// system once per section, and the passage stating the number asked for ("after
// filtering, 5,075,182 articles") often does not. Of other papers it keeps only passages
// naming something those papers do not (adds): the second paper of a comparison stays,
// the Transformer's WMT passage beside GPT-2's, for GPT-2 on WMT, does not. hits is not
// changed.
func holdersFirst(hits []Scored, holders []int, adds func(i int) bool) []Scored {
	if len(holders) != len(hits) {
		return hits
	}
	idx := make([]int, 0, len(hits))
	most := slices.Max(holders)
	held := map[string]bool{} // the papers of the passages holding the most names
	for i, h := range hits {
		if holders[i] == most {
			held[h.Chunk.DocID] = true
		}
	}
	for i, h := range hits {
		if holders[i] > 0 && (held[h.Chunk.DocID] || adds(i)) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return hits
	}
	for i, h := range hits {
		if holders[i] == 0 && held[h.Chunk.DocID] {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return holders[idx[a]] > holders[idx[b]] })
	out := make([]Scored, len(idx))
	for i, j := range idx {
		out[i] = hits[j]
	}
	return out
}

// steeredEvidence is the kept evidence of an elliptical follow-up: the kept hits, or when
// none is from the thread's papers, their candidates that pass the score threshold (the
// drop-off rule cut them below another paper's passages), at most TopK.
//
// When the query is the follow-up with the thread's terms appended (see condenseRule) and
// the candidates are reranked, it is always the thread's candidates that pass the
// threshold, ordered by the reranker's score for the user's own words: the thread's terms
// found the paper, and within it they favour the passages on the earlier topic over the
// one on "And what batch size did they use?". When that reranking fails, the query's
// order stays.
func (p *Pipeline) steeredEvidence(ctx context.Context, r Retrieval, docs []string, own string) []Scored {
	if len(docs) == 0 {
		return r.Hits
	}
	byOwn := r.Reranked && strings.HasPrefix(r.Query, own+" ")
	if !byOwn {
		for _, h := range r.Hits {
			if slices.Contains(docs, h.Chunk.DocID) {
				return r.Hits
			}
		}
	}
	var in []Scored
	for _, c := range r.Candidates {
		if slices.Contains(docs, c.Chunk.DocID) && (!r.Reranked || c.Rerank >= p.cfg.MinScore) {
			in = append(in, c)
		}
	}
	if len(in) == 0 {
		return r.Hits
	}
	if byOwn && len(in) > 1 {
		hits := make([]Hit, len(in))
		for i, c := range in {
			hits[i] = c.Hit
		}
		if ranked, err := p.rerank(ctx, own, nil, hits); err == nil {
			prior := map[string]Scored{}
			for _, c := range in {
				prior[c.Chunk.ID] = c
			}
			for i, c := range ranked {
				in[i] = prior[c.Chunk.ID] // the own words' order, the query's scores
			}
		} else {
			p.log.Warn("rerank a follow-up's passages by its own words; keeping the query's order", "err", err)
		}
	}
	return in[:min(len(in), p.cfg.TopK)]
}

// withEarlierHolder puts first the passage the thread's last answer cited when it names
// everything hard the follow-up itself names: "and BM25?" after an answer quoting BEIR's
// Recall@100 table asks for another row of that table, which retrieval for the few words
// of the follow-up ranks below passages on how BM25 is run, or cuts. On the spent sets
// it cited an expected page in 14 more follow-up turns (15 gained, 1 lost), answered 2
// false refusals and refused 1 answer.
func withEarlierHolder(q Question, hits []Scored) []Scored {
	var own []keyItem
	for _, it := range questionItems(q.Text) {
		if it.hard {
			own = append(own, it)
		}
	}
	if len(own) == 0 || len(q.History) == 0 || len(hits) == 0 {
		return hits
	}
	for _, s := range q.History[len(q.History)-1].Sources {
		if !s.Cited || s.Chunk.Text == "" {
			continue
		}
		ix := newEvidenceIndex(withoutReferences(s.Chunk.Text))
		if !slices.ContainsFunc(own, func(it keyItem) bool { return !ix.covers(it) }) {
			out := []Scored{{Hit: Hit{Chunk: s.Chunk, Score: hits[0].Score}, Rerank: hits[0].Rerank}}
			for _, h := range hits {
				if h.Chunk.ID != s.Chunk.ID {
					out = append(out, h)
				}
			}
			return out
		}
	}
	return hits
}

// sameDocs keeps the hits from the given documents when the first hit is from one of them
// or, with anywhere, when any is; otherwise, or without documents, it returns hits
// unchanged.
func sameDocs(hits []Scored, docs []string, anywhere bool) []Scored {
	if len(docs) == 0 || len(hits) == 0 {
		return hits
	}
	var out []Scored
	for _, h := range hits {
		if slices.Contains(docs, h.Chunk.DocID) {
			out = append(out, h)
		}
	}
	if len(out) == 0 || (!anywhere && !slices.Contains(docs, hits[0].Chunk.DocID)) {
		return hits
	}
	return out
}

func hitChunks(hits []Scored) []Chunk {
	out := make([]Chunk, len(hits))
	for i, h := range hits {
		out[i] = h.Chunk
	}
	return out
}

// respond writes the answer from cands, of which the first primary are this question's
// evidence (best first) and the rest earlier turns' sources (offered to a generator only,
// and listed only when cited); scored says whether their scores are probabilities (for
// the confidence). llmErr is a generator failure seen while condensing: the
// generator is then not asked again.
func (p *Pipeline) respond(ctx context.Context, q Question, query string, cands []Source, primary int, scored bool, llmErr error, fn func(string) error, ans *Answer) error {
	start := time.Now()
	defer func() { ans.Timings.Generate = time.Since(start) }()

	streamed := false
	genErr := llmErr
	if p.cfg.Generator != nil && llmErr == nil {
		ev := p.fillContext(cands)
		msgs := buildMessages(q, ev)
		p.log.Debug("generate", "generator", p.cfg.Generator.Name(), "sources", len(ev), "prompt", msgs[1].Content)
		res, err := p.generate(ctx, msgs, len(ev), fn)
		streamed = res.streamed
		switch {
		case err == nil:
			ans.Generator = p.cfg.Generator.Name()
			if res.refused || isModelRefusal(res.citer.Text(), res.citer.valid) {
				return p.refuse(ans, fn, streamed)
			}
			byN := map[int]Source{}
			prompt := make([]Source, len(ev))
			for i, e := range ev {
				byN[e.src.N] = e.src
				prompt[i] = e.src
			}
			c := res.citer
			if c.valid == 0 {
				// An answer citing nothing gets the sources that support its sentences.
				text, n := p.newGrounder(ctx, prompt).attach(c.Text())
				if n == 0 {
					genErr = errUncited
					break
				}
				c, _ = citeText(text, len(ev))
			}
			if !p.finish(ctx, ans, c, func(n int) Source { return byN[n] }, cands[:primary], query, scored) {
				return p.refuse(ans, fn, streamed)
			}
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			var se streamError
			if errors.As(err, &se) {
				return se.err
			}
			genErr = err
		}
	}

	if genErr != nil {
		ans.Note = fallbackNote(genErr)
		p.log.Warn("language model failed; answering extractively", "generator", p.cfg.Generator.Name(), "err", genErr)
	}
	ans.Generator = GeneratorExtractive
	own := extractiveQuery(q, query)
	// A follow-up scored by its own words only (extractiveQuery) is elliptical: it asks
	// for a number when its thread does.
	quantity := asksQuantity(own) || (own != query && threadAsksQuantity(q.History))
	text := p.extractiveFor(ctx, own, quantity, cands[:primary])
	if err := ctx.Err(); err != nil {
		return err
	}
	if text == "" {
		note := ans.Note
		err := p.refuse(ans, fn, streamed)
		ans.Note = note
		return err
	}
	c, _ := citeText(text, min(primary, extractiveChunks))
	// Grounded before it streams, so what streams is the answer.
	if !p.finish(ctx, ans, c, func(n int) Source { return cands[n-1] }, cands[:primary], query, scored) {
		note := ans.Note
		err := p.refuse(ans, fn, streamed)
		ans.Note = note
		return err
	}
	if streamed {
		if err := fn("\n\n"); err != nil {
			return err
		}
	}
	// Stream sentence by sentence, as a generator would.
	for i, s := range splitSentences(ans.Text) {
		if i > 0 {
			s = " " + s
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// errUncited is the fallback reason for a generated answer that cites nothing any source
// supports.
var errUncited = errors.New("the answer cited no source that supports it")

// finish grounds the citations of a completed citer (see ground.go) and fills the answer's
// text, sources, counts and confidence. Sources are the cited ones in citation order
// (source(n) maps a prompt number to its source), then the uncited evidence as "also
// retrieved". It returns false, leaving ans to be refused, when no cited sentence is
// supported by its source.
func (p *Pipeline) finish(ctx context.Context, ans *Answer, c *citer, source func(n int) Source, evidence []Source, query string, scored bool) bool {
	// Answer numbers first, then the uncited evidence, which a sentence citing the wrong
	// source may be re-cited to.
	all := make([]Source, len(c.order), len(c.order)+len(evidence))
	have := map[string]bool{}
	for i, n := range c.order {
		all[i] = source(n)
		have[all[i].Chunk.ID] = true
	}
	for _, s := range evidence {
		if !have[s.Chunk.ID] {
			have[s.Chunk.ID] = true
			all = append(all, s)
		}
	}
	text, g := p.newGrounder(ctx, all).ground(c.Text())
	ans.Grounding = g
	if g.Unsupported > 0 {
		p.log.Debug("grounding removed citations", "before", c.Text(), "after", text, "grounding", g)
	}
	invalid := c.invalid
	// Renumber what is left in order of first citation.
	c, _ = citeText(text, len(all))
	if c.valid == 0 && g.Checked > 0 {
		return false
	}
	source = func(n int) Source { return all[n-1] }
	ans.Text = strings.TrimSpace(c.Text())
	ans.Citations, ans.InvalidCitations = c.valid, invalid
	ans.Sources = []Source{}
	isCited := map[string]bool{}
	for _, n := range c.order {
		s := source(n)
		s.N = len(ans.Sources) + 1
		s.Cited = true
		s.Excerpt = excerpt(s.Chunk.Text, query)
		isCited[s.Chunk.ID] = true
		ans.Sources = append(ans.Sources, s)
	}
	for _, s := range evidence {
		if isCited[s.Chunk.ID] {
			continue
		}
		s.N = len(ans.Sources) + 1
		s.Cited = false
		s.Excerpt = excerpt(s.Chunk.Text, query)
		ans.Sources = append(ans.Sources, s)
	}
	ans.Confidence = confidence(ans.Sources, ans.Text, c.valid, invalid, scored)
	return true
}

// genResult is what one generation produced.
type genResult struct {
	citer    *citer
	streamed bool // some text reached fn
	refused  bool // the model's reply began with the refusal sentence
}

// streamError marks an error returned by the caller's fn, so it is returned as is rather
// than taken for a generator failure.
type streamError struct{ err error }

func (e streamError) Error() string { return e.err.Error() }
func (e streamError) Unwrap() error { return e.err }

// generate runs the generator, validating and renumbering citations as the text streams.
// While the reply could still be the refusal sentence it is held back, so a refusal never
// streams as an answer.
func (p *Pipeline) generate(ctx context.Context, msgs []Message, sources int, fn func(string) error) (genResult, error) {
	res := genResult{citer: newCiter(sources)}
	var raw strings.Builder
	decided := false
	refusal := strings.ToLower(Refusal)
	// send passes final text to fn, without leading space at the start of the answer.
	send := func(out string) error {
		if !res.streamed {
			out = strings.TrimLeft(out, " \t\n")
		}
		if out == "" {
			return nil
		}
		res.streamed = true
		if err := fn(out); err != nil {
			return streamError{err}
		}
		return nil
	}
	err := p.cfg.Generator.Generate(ctx, GenerateRequest{
		Messages:    msgs,
		Temperature: p.cfg.Temperature,
		MaxTokens:   p.cfg.MaxTokens,
	}, func(delta string) error {
		if res.refused {
			return nil
		}
		raw.WriteString(delta)
		if decided {
			return send(res.citer.Write(delta))
		}
		t := refusalProbe(raw.String())
		if len(t) < len(refusal) && strings.HasPrefix(refusal, t) {
			return nil // may still become the refusal sentence
		}
		decided = true
		if strings.HasPrefix(t, refusal) {
			res.refused = true
			return nil
		}
		return send(res.citer.Write(raw.String()))
	})
	if err != nil {
		return res, err
	}
	if res.refused {
		return res, nil
	}
	if !decided {
		if refusalProbe(raw.String()) == strings.TrimSuffix(refusal, ".") {
			res.refused = true
			return res, nil
		}
		if err := send(res.citer.Write(raw.String())); err != nil {
			return res, err
		}
	}
	// Trailing space is held by the citer and not part of the answer.
	return res, send(strings.TrimRightFunc(res.citer.Flush(), unicode.IsSpace))
}

// refusalProbe lower-cases the start of a reply without leading space or emphasis, for
// comparison with the refusal sentence.
func refusalProbe(s string) string {
	return strings.ToLower(strings.TrimLeft(s, " \n\t*_>\"“"))
}

// insufficientPhrases are how models say the context does not answer the question when
// they do not use the exact refusal sentence.
var insufficientPhrases = []string{
	strings.ToLower(strings.TrimSuffix(Refusal, ".")),
	"insufficient", "not enough information", "do not contain enough", "does not contain enough",
	"do not contain information", "does not contain information", "do not contain any information",
	"does not contain any information", "don't contain", "doesn't contain", "do not provide",
	"does not provide", "doesn't provide", "don't provide", "do not mention", "does not mention",
	"not mentioned", "cannot answer", "can't answer", "unable to answer", "no information",
	"not found in", "no relevant", "does not answer", "do not answer",
}

// isModelRefusal reports whether a generated answer says the context does not answer the
// question: it starts with the refusal sentence, or it cites nothing and says the context
// is insufficient in other words. An answer with valid citations is kept even when it
// notes a gap, since it is grounded.
func isModelRefusal(text string, valid int) bool {
	t := refusalProbe(text)
	if t == "" || strings.HasPrefix(t, strings.ToLower(strings.TrimSuffix(Refusal, "."))) {
		return true
	}
	if valid > 0 {
		return false
	}
	for _, ph := range insufficientPhrases {
		if strings.Contains(t, ph) {
			return true
		}
	}
	return false
}

// httpStatuser is implemented by generator errors that carry an HTTP status
// (rag/generate's HTTPError), so the fallback note can say which.
type httpStatuser interface{ HTTPStatus() int }

// fallbackNote tells the user why the answer is extractive.
func fallbackNote(err error) string {
	if errors.Is(err, errUncited) {
		return "The language model's answer cited no source that supports it; showing an extractive answer."
	}
	reason := "error"
	var ne net.Error
	var hs httpStatuser
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		reason = "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.As(err, &hs) && hs.HTTPStatus() > 0:
		reason = fmt.Sprintf("HTTP %d", hs.HTTPStatus())
	}
	return fmt.Sprintf("The language model did not answer (%s); showing an extractive answer.", reason)
}

// hitSources turns kept hits into sources, best first; Score is the reranker probability
// when the candidates were reranked, else the retrieval score.
func hitSources(hits []Scored, reranked bool) []Source {
	out := make([]Source, len(hits))
	for i, h := range hits {
		out[i] = Source{N: i + 1, Chunk: h.Chunk, Score: score(h, reranked)}
	}
	return out
}

func score(h Scored, reranked bool) float64 {
	if reranked {
		return h.Rerank
	}
	return h.Score
}

// historySources returns earlier turns' sources not among have, most recent turn first
// and, within a turn, cited ones first.
func historySources(history []Turn, have []Source) []Source {
	seen := map[string]bool{}
	for _, s := range have {
		seen[s.Chunk.ID] = true
	}
	var out []Source
	for i := len(history) - 1; i >= 0; i-- {
		for _, cited := range []bool{true, false} {
			for _, s := range history[i].Sources {
				if s.Cited != cited || seen[s.Chunk.ID] || s.Chunk.Text == "" {
					continue
				}
				seen[s.Chunk.ID] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// moreSources are the reranked candidates below the cut, numbered after the answer's
// sources, for "More sources".
func (p *Pipeline) moreSources(r Retrieval, query string, after int) []Source {
	kept := map[string]bool{}
	for _, h := range r.Hits {
		kept[h.Chunk.ID] = true
	}
	var out []Source
	for _, c := range r.Candidates {
		if kept[c.Chunk.ID] {
			continue
		}
		kept[c.Chunk.ID] = true
		out = append(out, Source{N: after + len(out) + 1, Chunk: c.Chunk, Score: score(c, r.Reranked), Excerpt: excerpt(c.Chunk.Text, query)})
	}
	return out
}

// selectedSource is the passage of selected-text mode as source [1]. When an earlier
// turn's source contains the passage, its document, section and pages are kept. Its score
// is the reranker's for the question when there is a reranker, else 1 (the user chose it).
func (p *Pipeline) selectedSource(ctx context.Context, q Question) Source {
	text := strings.TrimSpace(q.Selected)
	chunk := Chunk{ID: "selected", Text: text, Title: "Selected text"}
	norm := normalizeText(text)
	for i := len(q.History) - 1; i >= 0 && chunk.ID == "selected"; i-- {
		for _, s := range q.History[i].Sources {
			if strings.Contains(normalizeText(s.Chunk.Text), norm) {
				chunk = s.Chunk
				chunk.ID = s.Chunk.ID + "#selected"
				chunk.Text = text
				break
			}
		}
	}
	score := 1.0
	if p.cfg.Reranker != nil {
		if s, err := p.cfg.Reranker.Score(ctx, q.Text, []string{text}); err == nil && len(s) == 1 {
			score = s[0]
		}
	}
	return Source{N: 1, Chunk: chunk, Score: score, Cited: true}
}

// confidence estimates how well the answer is supported, in [0, 1]:
//
//	evidence = the highest score among cited sources
//	support  = the mean score of cited sources
//	coverage = the share of answer sentences that carry a citation (see citationCoverage)
//	validity = valid / (valid + invalid) citation markers (1 when there were none)
//	confidence = (0.5·evidence + 0.2·support + 0.3·coverage) · validity
//
// Scores are reranker probabilities; without a reranker (scored false) retrieval scores
// are not probabilities, and evidence and support count as 0.5 each. An answer citing
// nothing has confidence 0.
func confidence(sources []Source, text string, valid, invalid int, scored bool) float64 {
	var top, sum float64
	n := 0
	for _, s := range sources {
		if !s.Cited {
			continue
		}
		sc := 0.5
		if scored {
			sc = min(max(s.Score, 0), 1)
		}
		top = max(top, sc)
		sum += sc
		n++
	}
	if n == 0 {
		return 0
	}
	validity := 1.0
	if valid+invalid > 0 {
		validity = float64(valid) / float64(valid+invalid)
	}
	c := (0.5*top + 0.2*sum/float64(n) + 0.3*citationCoverage(text)) * validity
	return min(max(c, 0), 1)
}

// extractiveQuery is what an extractive answer's sentences are scored against: the
// user's own words when the rule condensation only appended the thread's terms to them.
// Retrieval needs those terms to find the subject; the sentence answering "And what batch
// size did they use?" is the one about batch size, and the carried terms ("objective",
// "NLI", "pairs") would rank the paper's sentences on its earlier topic first.
func extractiveQuery(q Question, query string) string {
	if len(q.History) > 0 && strings.HasPrefix(query, q.Text+" ") {
		return q.Text
	}
	return query
}

// newNames reports, per hit, whether it names one of the question's names that none of
// the hits holding the most of them names: the second paper of a comparison.
func newNames(question string, hits []Scored, holders []int) func(int) bool {
	var hard []keyItem
	for _, it := range questionItems(question) {
		if it.hard {
			hard = append(hard, it)
		}
	}
	if len(holders) != len(hits) || len(hits) == 0 {
		return func(int) bool { return false }
	}
	most := slices.Max(holders)
	holds := make([][]bool, len(hits))
	byMost := make([]bool, len(hard))
	for i, h := range hits {
		ix := newEvidenceIndex(withoutReferences(h.Chunk.Text), h.Chunk.Title)
		holds[i] = make([]bool, len(hard))
		for j, it := range hard {
			holds[i][j] = ix.covers(it)
			if holders[i] == most && holds[i][j] {
				byMost[j] = true
			}
		}
	}
	return func(i int) bool {
		for j := range hard {
			if holds[i][j] && !byMost[j] {
				return true
			}
		}
		return false
	}
}
