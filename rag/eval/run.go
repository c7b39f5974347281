package eval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/footnote-dev/footnote/rag"
)

// Config says what Run measures.
type Config struct {
	// Retrieve runs one retrieval; pass (*rag.Pipeline).Retrieve. Required. It must
	// return rag.ErrNoEvidence (wrapped) when nothing survives the cut: that is a refusal.
	Retrieve func(ctx context.Context, q rag.Question) (rag.Retrieval, error)
	// Methods are the retrieval methods to compare; zero means {"hybrid"}.
	Methods []string
	// K is the rank cut-off of Precision@k and Recall@k; zero means 5. nDCG is always @10.
	K int
	// Timeout bounds each retrieval (and answer); zero means 60s.
	Timeout time.Duration
	// SkipWarmup measures the very first queries too. By default each method runs the
	// first question once, unmeasured, so that model loading and cold caches do not count
	// as query latency.
	SkipWarmup bool
	// Ask, when set, also answers every question per method and adds answer-level metrics
	// (Report.Methods[i].Answers); pass (*rag.Pipeline).Ask. It is called with a nil fn
	// (no streaming) and must report a refusal as an Answer with Refused set, not as an
	// error.
	Ask func(ctx context.Context, q rag.Question, fn func(delta string) error) (rag.Answer, error)
	// Progress, when set, is called after each question with the count done.
	Progress func(done, total int)
}

// Report is the result of Run. Its JSON form is what `footnote eval --json` prints.
//
// Every turn counts as a question: a question with follow-ups contributes one per turn
// (see Question.Turns), so Questions is the number of turns asked.
type Report struct {
	K             int `json:"k"`
	Questions     int `json:"questions"`
	Answerable    int `json:"answerable"`
	Unanswerable  int `json:"unanswerable"`
	Conversations int `json:"conversations"` // input questions that have follow-ups
	// Categories lists the question categories (Question.Kind) in order of first
	// appearance; each MethodReport.Categories follows this order.
	Categories []string       `json:"categories"`
	Methods    []MethodReport `json:"methods"`
}

// MethodReport holds one method's measurements.
//
// Ranking metrics (Source, Page) are averaged over answerable questions and computed on
// the method's ranked candidates (rag.Retrieval.Candidates: the reranked top RerankTop, or
// the fused list without a reranker), before the score cut, so they measure ranking
// quality whether or not the cut then refuses. The cut is measured by Refusal,
// FalseRefusals, Kept and KeptPrecision.
type MethodReport struct {
	Method string  `json:"method"`
	Source Ranking `json:"source"` // relevant: a chunk from an expected source
	Page   Ranking `json:"page"`   // relevant: a chunk on an expected page (see PageLevel)

	Refusal Refusal `json:"refusal"`
	// Kept is the mean number of sources kept after the cut on answerable questions, and
	// KeptPrecision the fraction of them from an expected source.
	Kept          float64 `json:"kept"`
	KeptPrecision float64 `json:"kept_precision"`

	Latency Latency `json:"latency"`
	// Answers holds answer-level metrics when Config.Ask was set.
	Answers *AnswerMetrics `json:"answers,omitempty"`
	// Categories splits the ranking, refusal and answer metrics by question category, in
	// Report.Categories order.
	Categories []CategoryReport `json:"categories"`
	// Summary is Figures(), filled by Run: the headline figures by name, which floors
	// files (Floors) refer to.
	Summary map[string]float64 `json:"figures"`

	Results []QuestionResult `json:"results"` // one per turn, in input order
}

// CategoryReport is one method's measurements over the turns of one category. Refusal
// counts the category's unanswerable turns (for "near-miss" and "off-topic" it is the
// refusal accuracy), FalseRefusals its answerable ones; the rankings average over the
// answerable turns.
type CategoryReport struct {
	Category     string         `json:"category"`
	Questions    int            `json:"questions"`
	Answerable   int            `json:"answerable"`
	Unanswerable int            `json:"unanswerable"`
	Source       Ranking        `json:"source"`
	Page         Ranking        `json:"page"`
	Refusal      Refusal        `json:"refusal"`
	Answers      *AnswerMetrics `json:"answers,omitempty"`
}

// Ranking is the ranking quality at one relevance level, averaged over answerable questions.
type Ranking struct {
	// Hit is the fraction of questions with a relevant candidate within the first k: an
	// expected paper (source level) or an expected page (page level) in the top k.
	Hit       float64 `json:"hit_at_k"`
	Precision float64 `json:"precision_at_k"`
	Recall    float64 `json:"recall_at_k"` // over expected sources; see Question.SourceRecallAt
	MRR       float64 `json:"mrr"`
	NDCG10    float64 `json:"ndcg_at_10"`
}

// Refusal is how the score cut decides between answering and refusing.
type Refusal struct {
	Unanswerable int `json:"unanswerable"`
	Refused      int `json:"refused"` // unanswerable questions refused (correct)
	// Accuracy is Refused / Unanswerable: the refusal accuracy on unanswerable questions.
	Accuracy float64 `json:"accuracy"`
	// FalseRefusals counts answerable questions that were refused (wrong), and
	// FalseRefusalRate divides them by the answerable questions.
	FalseRefusals    int     `json:"false_refusals"`
	FalseRefusalRate float64 `json:"false_refusal_rate"`
}

// Latency holds per-stage percentiles over every question of a method. Total is the wall
// time of the Retrieve call.
type Latency struct {
	Embed  Percentiles `json:"embed"`
	Search Percentiles `json:"search"`
	Rerank Percentiles `json:"rerank"`
	Total  Percentiles `json:"total"`
}

// Percentiles of a latency distribution.
type Percentiles struct {
	P50 time.Duration `json:"p50_ns"`
	P95 time.Duration `json:"p95_ns"`
}

func percentiles(ds []time.Duration) Percentiles {
	return Percentiles{P50: Percentile(ds, 50), P95: Percentile(ds, 95)}
}

// AnswerMetrics are answer-level measurements (Config.Ask).
type AnswerMetrics struct {
	Questions int `json:"questions"`
	// CitationValidity is valid citation markers / all markers the generator wrote, over
	// every answer (1 when no marker was written at all).
	CitationValidity float64 `json:"citation_validity"`
	Citations        int     `json:"citations"`
	InvalidCitations int     `json:"invalid_citations"`
	// RefusalAccuracy is the fraction of unanswerable questions answered with rag.Refusal;
	// FalseRefusals counts answerable questions refused.
	RefusalAccuracy float64 `json:"refusal_accuracy"`
	FalseRefusals   int     `json:"false_refusals"`
	// Answered counts the answerable questions answered (not refused); the cited-*
	// fractions below are over them.
	Answered int `json:"answered"`
	// CitedExpected is the fraction of answered answerable questions whose cited sources
	// include an expected source.
	CitedExpected float64 `json:"cited_expected"`
	// CitedExpectedPage is the fraction of them citing an expected page (see
	// CitedOnPage), and PagePrecision the fraction of all their cited sources that are on
	// an expected page: CitedOnPage / CitedSources.
	CitedExpectedPage float64 `json:"cited_expected_page"`
	PagePrecision     float64 `json:"page_precision"`
	CitedSources      int     `json:"cited_sources"`
	CitedOnPage       int     `json:"cited_on_page"`
	// Checked and Supported sum rag.Answer.Grounding over every answer, and SupportedRate
	// is Supported / Checked (0 when nothing was checked: no grounding check ran).
	Checked       int     `json:"grounding_checked"`
	Supported     int     `json:"grounding_supported"`
	SupportedRate float64 `json:"supported_rate"`
	// KeyConcepts is the mean fraction of a question's key concepts the answer text
	// mentions (case-insensitive), over answered answerable questions that list some.
	KeyConcepts float64     `json:"key_concepts"`
	Generate    Percentiles `json:"generate"`
	Total       Percentiles `json:"total"`
}

// QuestionResult is one question under one method.
type QuestionResult struct {
	ID         string `json:"id"`
	Category   string `json:"category"` // Question.Kind of the turn
	Turn       int    `json:"turn"`     // 1 for a question, 2… for its follow-ups
	Answerable bool   `json:"answerable"`
	Refused    bool   `json:"refused"`
	Kept       int    `json:"kept"`
	// FirstSource and FirstPage are the 1-based ranks of the first relevant candidate at
	// each level; 0 when none is relevant.
	FirstSource int           `json:"first_source"`
	FirstPage   int           `json:"first_page"`
	TopK        []string      `json:"top_k"` // document names of the first k candidates
	Timings     rag.Timings   `json:"timings"`
	Answer      *AnswerResult `json:"answer,omitempty"`

	candidates []rag.Chunk
	kept       []rag.Chunk
}

// AnswerResult is the answer-level outcome of one question (Config.Ask).
type AnswerResult struct {
	Refused          bool `json:"refused"`
	Citations        int  `json:"citations"`
	InvalidCitations int  `json:"invalid_citations"`
	CitedExpected    bool `json:"cited_expected"`
	// CitedExpectedPage: a cited source is on an expected page (see CitedOnPage);
	// CitedSources counts the cited sources and CitedOnPage those on an expected page.
	CitedExpectedPage bool `json:"cited_expected_page"`
	CitedSources      int  `json:"cited_sources"`
	CitedOnPage       int  `json:"cited_on_page"`
	// Cited names each cited source with the pages the answer cites it on (CitedPages), as
	// "name p3 p4", so a missed page can be traced to the sentence chosen, not guessed at.
	Cited       []string      `json:"cited,omitempty"`
	Grounding   rag.Grounding `json:"grounding"`
	Missing     []string      `json:"missing,omitempty"` // rag.Answer.Missing of a refusal
	Text        string        `json:"text"`
	KeyConcepts float64       `json:"key_concepts"` // fraction mentioned; 0 without key concepts
	Elapsed     time.Duration `json:"elapsed_ns"`
	Generate    time.Duration `json:"generate_ns"`
}

// Run retrieves every question with every method (questions in order, the methods of each
// question in turn, so slow drifts of the machine affect all methods alike) and reports.
// A question with follow-ups is a conversation: per method its turns run in order, each
// later turn with the earlier ones as rag.Question.History — their answers and sources
// when Config.Ask is set, else their questions and kept evidence. A retrieval error other
// than rag.ErrNoEvidence stops the run: the report would otherwise be silently wrong.
func Run(ctx context.Context, cfg Config, questions []Question) (Report, error) {
	if cfg.Retrieve == nil {
		return Report{}, errors.New("eval: Config.Retrieve is required")
	}
	if len(questions) == 0 {
		return Report{}, errors.New("eval: no questions")
	}
	if len(cfg.Methods) == 0 {
		cfg.Methods = []string{rag.MethodHybrid}
	}
	if cfg.K <= 0 {
		cfg.K = 5
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	rep := Report{K: cfg.K}
	var turns []Question // every turn of every question, in order
	for _, q := range questions {
		if len(q.Followups) > 0 {
			rep.Conversations++
		}
		for _, t := range q.Turns() {
			turns = append(turns, t)
			if t.Answerable {
				rep.Answerable++
			} else {
				rep.Unanswerable++
			}
			if !slices.Contains(rep.Categories, t.Kind()) {
				rep.Categories = append(rep.Categories, t.Kind())
			}
		}
	}
	rep.Questions = len(turns)
	if !cfg.SkipWarmup {
		for _, m := range cfg.Methods {
			if _, err := retrieve(ctx, cfg, questions[0], m, nil); err != nil && !errors.Is(err, rag.ErrNoEvidence) {
				return rep, fmt.Errorf("warm-up %s: %w", m, err)
			}
		}
	}
	results := make([][]QuestionResult, len(cfg.Methods))
	for qi, q := range questions {
		for mi, m := range cfg.Methods {
			var history []rag.Turn
			for ti, t := range q.Turns() {
				res, turn, err := runOne(ctx, cfg, t, m, history)
				if err != nil {
					return rep, err
				}
				res.Turn = ti + 1
				results[mi] = append(results[mi], res)
				history = append(history, turn)
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(qi+1, len(questions))
		}
	}
	all := make([]int, len(turns))
	for i := range all {
		all[i] = i
	}
	for mi, m := range cfg.Methods {
		mr := summarize(m, cfg.K, turns, results, mi, all, cfg.Ask != nil)
		for _, c := range rep.Categories {
			var idx []int
			for i, t := range turns {
				if t.Kind() == c {
					idx = append(idx, i)
				}
			}
			cm := summarize(m, cfg.K, turns, results, mi, idx, cfg.Ask != nil)
			mr.Categories = append(mr.Categories, CategoryReport{
				Category: c, Questions: len(idx), Answerable: cm.answerable, Unanswerable: cm.Refusal.Unanswerable,
				Source: cm.Source, Page: cm.Page, Refusal: cm.Refusal, Answers: cm.Answers,
			})
		}
		mr.Summary = mr.Figures()
		rep.Methods = append(rep.Methods, mr.MethodReport)
	}
	return rep, nil
}

func retrieve(ctx context.Context, cfg Config, q Question, method string, history []rag.Turn) (rag.Retrieval, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	return cfg.Retrieve(ctx, rag.Question{Text: q.Question, Method: method, History: history})
}

// runOne measures one turn and returns it as the history entry for the next turn.
func runOne(ctx context.Context, cfg Config, q Question, method string, history []rag.Turn) (QuestionResult, rag.Turn, error) {
	start := time.Now()
	r, err := retrieve(ctx, cfg, q, method, history)
	total := time.Since(start)
	refused := errors.Is(err, rag.ErrNoEvidence)
	if err != nil && !refused {
		return QuestionResult{}, rag.Turn{}, fmt.Errorf("question %s, method %s: %w", q.ID, method, err)
	}
	res := QuestionResult{
		ID:         q.ID,
		Category:   q.Kind(),
		Answerable: q.Answerable,
		Refused:    refused || len(r.Hits) == 0,
		Kept:       len(r.Hits),
		Timings:    r.Timings,
	}
	if refused {
		res.Kept = 0
	}
	res.Timings.Total = total
	for _, c := range r.Candidates {
		res.candidates = append(res.candidates, c.Chunk)
	}
	// Without answers the kept evidence stands in for what the turn cited.
	turn := rag.Turn{Question: q.Question}
	for i, h := range r.Hits[:res.Kept] {
		res.kept = append(res.kept, h.Chunk)
		turn.Sources = append(turn.Sources, rag.Source{N: i + 1, Chunk: h.Chunk, Score: h.Score, Cited: true})
	}
	for i, c := range res.candidates {
		if res.FirstSource == 0 && q.Relevant(c, SourceLevel) {
			res.FirstSource = i + 1
		}
		if res.FirstPage == 0 && q.Relevant(c, PageLevel) {
			res.FirstPage = i + 1
		}
		if i < cfg.K {
			res.TopK = append(res.TopK, c.Name)
		}
	}
	if cfg.Ask != nil {
		a, ans, err := ask(ctx, cfg, q, method, history)
		if err != nil {
			return res, turn, err
		}
		res.Answer = &a
		turn = rag.Turn{Question: q.Question, Answer: ans.Text, Sources: ans.Sources}
	}
	return res, turn, nil
}

func ask(ctx context.Context, cfg Config, q Question, method string, history []rag.Turn) (AnswerResult, rag.Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	start := time.Now()
	a, err := cfg.Ask(ctx, rag.Question{Text: q.Question, Method: method, History: history}, nil)
	if err != nil {
		return AnswerResult{}, a, fmt.Errorf("answer question %s, method %s: %w", q.ID, method, err)
	}
	res := AnswerResult{
		Refused:          a.Refused,
		Citations:        a.Citations,
		InvalidCitations: a.InvalidCitations,
		Grounding:        a.Grounding,
		Missing:          a.Missing,
		Text:             a.Text,
		Elapsed:          time.Since(start),
		Generate:         a.Timings.Generate,
	}
	for _, s := range a.Sources {
		if !s.Cited {
			continue
		}
		res.CitedSources++
		pages := CitedPages(a.Text, s)
		cited := s.Chunk.Name
		for _, p := range pages {
			cited += " p" + strconv.Itoa(p)
		}
		res.Cited = append(res.Cited, cited)
		if q.Relevant(s.Chunk, SourceLevel) {
			res.CitedExpected = true
		}
		if q.onExpectedPage(s.Chunk.Name, pages) {
			res.CitedOnPage++
			res.CitedExpectedPage = true
		}
	}
	if len(q.KeyConcepts) > 0 {
		text := strings.ToLower(a.Text)
		n := 0
		for _, k := range q.KeyConcepts {
			if strings.Contains(text, strings.ToLower(k)) {
				n++
			}
		}
		res.KeyConcepts = float64(n) / float64(len(q.KeyConcepts))
	}
	return res, a, nil
}

// summary is a MethodReport with the count summarize averaged over.
type summary struct {
	MethodReport
	answerable int
}

// summarize computes method mi's report over the turns idx (indexes into qs and
// results[mi]) from every method's results; the other methods' candidates form the pool
// of known relevant chunks for nDCG.
func summarize(method string, k int, qs []Question, results [][]QuestionResult, mi int, idx []int, answers bool) summary {
	mr := MethodReport{Method: method}
	var embed, search, rerank, total []time.Duration
	var answerable, keptHits, keptRelevant int
	for _, qi := range idx {
		q := qs[qi]
		res := results[mi][qi]
		mr.Results = append(mr.Results, res)
		embed = append(embed, res.Timings.Embed)
		search = append(search, res.Timings.Search)
		if res.Timings.Rerank > 0 {
			rerank = append(rerank, res.Timings.Rerank)
		}
		total = append(total, res.Timings.Total)
		if !q.Answerable {
			mr.Refusal.Unanswerable++
			if res.Refused {
				mr.Refusal.Refused++
			}
			continue
		}
		answerable++
		if res.Refused {
			mr.Refusal.FalseRefusals++
		}
		mr.Kept += float64(res.Kept)
		keptHits += len(res.kept)
		for _, c := range res.kept {
			if q.Relevant(c, SourceLevel) {
				keptRelevant++
			}
		}
		for _, lv := range []Level{SourceLevel, PageLevel} {
			rel := q.Judge(res.candidates, lv)
			pool := map[string]bool{}
			for m := range results {
				for _, c := range results[m][qi].candidates {
					if q.Relevant(c, lv) {
						pool[c.ID] = true
					}
				}
			}
			rk := &mr.Source
			if lv == PageLevel {
				rk = &mr.Page
			}
			if slices.Contains(rel[:min(k, len(rel))], true) {
				rk.Hit++
			}
			rk.Precision += PrecisionAt(rel, k)
			rk.Recall += q.SourceRecallAt(res.candidates, lv, k)
			rk.MRR += ReciprocalRank(rel)
			rk.NDCG10 += NDCGAt(rel, 10, len(pool))
		}
	}
	if answerable > 0 {
		n := float64(answerable)
		for _, rk := range []*Ranking{&mr.Source, &mr.Page} {
			rk.Hit /= n
			rk.Precision /= n
			rk.Recall /= n
			rk.MRR /= n
			rk.NDCG10 /= n
		}
		mr.Kept /= n
		mr.Refusal.FalseRefusalRate = float64(mr.Refusal.FalseRefusals) / n
	}
	if keptHits > 0 {
		mr.KeptPrecision = float64(keptRelevant) / float64(keptHits)
	}
	if mr.Refusal.Unanswerable > 0 {
		mr.Refusal.Accuracy = float64(mr.Refusal.Refused) / float64(mr.Refusal.Unanswerable)
	}
	mr.Latency = Latency{Embed: percentiles(embed), Search: percentiles(search), Rerank: percentiles(rerank), Total: percentiles(total)}
	if answers {
		var sub []Question
		for _, qi := range idx {
			sub = append(sub, qs[qi])
		}
		mr.Answers = summarizeAnswers(sub, mr.Results)
	}
	return summary{MethodReport: mr, answerable: answerable}
}

func summarizeAnswers(qs []Question, results []QuestionResult) *AnswerMetrics {
	am := &AnswerMetrics{Questions: len(qs)}
	var gen, total []time.Duration
	var unanswerable, refusedRight, citedExpected, citedPage, withConcepts int
	var concepts float64
	for qi, q := range qs {
		a := results[qi].Answer
		if a == nil {
			continue
		}
		am.Citations += a.Citations
		am.InvalidCitations += a.InvalidCitations
		am.Checked += a.Grounding.Checked
		am.Supported += a.Grounding.Supported
		total = append(total, a.Elapsed)
		if a.Generate > 0 {
			gen = append(gen, a.Generate)
		}
		if !q.Answerable {
			unanswerable++
			if a.Refused {
				refusedRight++
			}
			continue
		}
		if a.Refused {
			am.FalseRefusals++
			continue
		}
		am.Answered++
		if a.CitedExpected {
			citedExpected++
		}
		if a.CitedExpectedPage {
			citedPage++
		}
		am.CitedSources += a.CitedSources
		am.CitedOnPage += a.CitedOnPage
		if len(q.KeyConcepts) > 0 {
			withConcepts++
			concepts += a.KeyConcepts
		}
	}
	am.CitationValidity = 1
	if n := am.Citations + am.InvalidCitations; n > 0 {
		am.CitationValidity = float64(am.Citations) / float64(n)
	}
	if unanswerable > 0 {
		am.RefusalAccuracy = float64(refusedRight) / float64(unanswerable)
	}
	if am.Answered > 0 {
		am.CitedExpected = float64(citedExpected) / float64(am.Answered)
		am.CitedExpectedPage = float64(citedPage) / float64(am.Answered)
	}
	if am.CitedSources > 0 {
		am.PagePrecision = float64(am.CitedOnPage) / float64(am.CitedSources)
	}
	if am.Checked > 0 {
		am.SupportedRate = float64(am.Supported) / float64(am.Checked)
	}
	if withConcepts > 0 {
		am.KeyConcepts = concepts / float64(withConcepts)
	}
	am.Generate, am.Total = percentiles(gen), percentiles(total)
	return am
}
