package rag

import (
	"context"
	"regexp"
	"slices"
	"strings"
)

// A question about a training setting the paper never reports ("What dropout rate did
// the DSI authors use?") retrieves the paper's passages on training, which are similar
// to the question and name the paper, so neither the score cut nor the name check
// refuses it. Users of a research-paper bot ask such questions often, and the answer is
// then a confident quote about something else. The gate therefore knows the settings
// papers report about training and refuses a question about one when no kept paper
// mentions it anywhere. It is deliberately lenient: any mention
// in the paper passes, whether or not the passage states a value, so a question the paper
// does answer is not refused for its wording.
//
// The same holds for what a paper reports about running its work: how long it took, what
// it cost, how much memory or how many annotators it needed, how long its inputs were
// cut, where it was released. Asked of a paper that never gives one ("How many hours did
// it take to train DPR's encoders?", "How much did it cost to train LLaMA-65B?"), such a
// question retrieves the paper's passages on training or efficiency and was answered with
// a quote about something else: on the spent sets, 21 of the 54 near misses still answered
// asked for one of these.
//
// The list is the standard vocabulary of training hyperparameters and of such reported
// measures, not names from the corpus; each lists the words a question asks it by and the
// words a paper reports it with. A word marked "=" is matched as spelled, never by its
// stem: the "seconds" of a latency is not the "second" of "the second stage".
type attribute struct {
	name     string         // as the refusal names it
	asked    []keyItem      // a question asks about the setting with one of these
	askedRe  *regexp.Regexp // or in these words ("how much did it cost")
	notAsked *regexp.Regexp // unless the question says this
	stated   []keyItem      // a paper that reports the setting uses one of these
	statedRe *regexp.Regexp // or writes this ("$4.6M"), which no word index holds
	query    string         // the BM25 query for the stated words
	// valued settings are reported as a figure ("a dropout of 0.1", "Pdrop = 0.1"): a
	// question asking for one is answered only by a passage that gives a figure beside
	// the words. The Transformer paper says it selected "the dropout … on the Section 22
	// development set" for WSJ parsing and DistilBERT that it uses "a softmax-temperature",
	// and neither gives one there.
	valued bool
	// valueAsked, when set, is how a question asks for the figure; otherwise any question
	// asking "what", "which" or "how many" does (valueQuestion).
	valueAsked *regexp.Regexp
}

func attr(name string, asked, stated []string) attribute {
	var q []string
	for _, w := range stated {
		q = append(q, strings.TrimPrefix(w, "="))
	}
	return attribute{name: name, asked: phraseItems(asked), stated: phraseItems(stated), query: strings.Join(q, " ")}
}

// searchedBy sets the BM25 query that finds the passages stating the setting.
func (a attribute) searchedBy(query string) attribute {
	a.query = query
	return a
}

// askedAs adds a way of asking about the setting beyond its words.
func (a attribute) askedAs(re string) attribute {
	a.askedRe = regexp.MustCompile(re)
	return a
}

// statedAs adds a way a paper states the setting that no word index holds ("N(0, 0.02)").
func (a attribute) statedAs(re string) attribute {
	a.statedRe = regexp.MustCompile(re)
	return a
}

// notAskedAs keeps a question saying re from asking about the setting.
func (a attribute) notAskedAs(re string) attribute {
	a.notAsked = regexp.MustCompile(re)
	return a
}

// withValue marks the setting as one papers report as a figure.
func (a attribute) withValue() attribute {
	a.valued = true
	return a
}

// withValueAsked marks the setting as one papers report as a figure when the question
// asks for it as re does: "What warm-up did they use?" is answered by "a linear warm-up".
func (a attribute) withValueAsked(re string) attribute {
	a.valued, a.valueAsked = true, regexp.MustCompile(re)
	return a
}

// measure is a reported measure that a paper states as a figure with its unit ("12 hours",
// "$4.6M") or by the unit its table is in ("measured in milliseconds"): a mention of the
// word alone ("training time") does not report it. The question asks it by one of the
// words or in the way askedRe matches.
func measure(name string, asked []string, askedRe string, stated []string, statedRe, query string) attribute {
	a := attribute{name: name, asked: phraseItems(asked), stated: phraseItems(stated), statedRe: regexp.MustCompile(statedRe), query: query}
	if askedRe != "" {
		a.askedRe = regexp.MustCompile(askedRe)
	}
	return a
}

// isAsked reports whether the question asks about the setting.
func (a attribute) isAsked(q *evidenceIndex, question string) bool {
	if a.notAsked != nil && a.notAsked.MatchString(question) {
		return false
	}
	return coversAny(q, a.asked) || (a.askedRe != nil && a.askedRe.MatchString(question))
}

// figureAsked reports whether the question asks for the setting's figure. A setting with
// its own way of being asked for one (valueAsked) decides by that alone: "How many warmup
// steps did the schedule use?" asks for a figure although "schedule" asks how, not how
// much, of the other settings.
func (a attribute) figureAsked(question string) bool {
	if a.valueAsked != nil {
		return a.valueAsked.MatchString(question)
	}
	return valueQuestion.MatchString(question) && !notValueQuestion.MatchString(question)
}

// isStated reports whether the text reports the setting; with value, a figure for it.
// premise is the question's own words (wordSet).
func (a attribute) isStated(ix *evidenceIndex, text string, value bool, premise map[string]bool) bool {
	if a.statedRe != nil && a.statedRe.MatchString(text) {
		return true
	}
	if !value || !a.valued {
		return coversAny(ix, a.stated)
	}
	at := a.places(ix)
	if len(at) == 0 {
		return false
	}
	// A figure with another setting named between it and this one is that setting's:
	// "linear scheduling with warm-up and dropout rate 0.1" gives no warm-up steps.
	var others []int
	for _, b := range attributes {
		if b.valued && b.name != a.name {
			others = append(others, b.places(ix)...)
		}
	}
	between := func(p, i int) bool {
		for _, o := range others {
			if o > min(p, i) && o < max(p, i) && !slices.Contains(at, o) {
				return true
			}
		}
		return false
	}
	// A figure the question itself gives is its premise, not the setting's value: "up to
	// 4K examples per batch" does not say how many accumulation steps made the question's
	// "4K-example batches".
	ws, _ := segWords(text)
	for _, p := range at {
		for i := max(p-valueBefore, 0); i < min(p+valueAfter+1, len(ws)); i++ {
			if isFigure(ws, i) && !premise[ws[i]] && !between(p, i) {
				return true
			}
		}
	}
	return false
}

// premise reports whether the question gives the setting with its figure: "with batch
// size 1", "at a dropout of 0.1", "trained for 2 epochs". Only a plain number right after
// the setting, or right before it after a preposition, counts; the "5" of "T5" or "GPT-2"
// beside it is a name's.
func (a attribute) premise(q *evidenceIndex, question string) bool {
	if !a.valued {
		return false
	}
	ws, _ := segWords(question)
	for _, p := range a.places(q) {
		if p >= 2 && plainNumber.MatchString(ws[p-1]) && premiseBefore[ws[p-2]] {
			return true
		}
		for i := p + 1; i < min(p+4, len(ws)); i++ {
			if plainNumber.MatchString(ws[i]) {
				return true
			}
			if !premiseGlue[ws[i]] {
				break
			}
		}
	}
	return false
}

// premiseGlue are the words between a setting and the figure a question gives it.
var premiseGlue = map[string]bool{"size": true, "rate": true, "of": true, "at": true, "to": true, "set": true, "is": true, "was": true}

// premiseBefore are the words before a figure a question gives a setting ahead of it:
// "for 2 epochs", "1 to 3 epochs", "examples and 2 epochs".
var premiseBefore = map[string]bool{"for": true, "with": true, "and": true, "to": true, "of": true, "at": true, "after": true, "over": true, "by": true, "the": true, "a": true}

var plainNumber = regexp.MustCompile(`^\d+(?:\.\d+)?[km]?$`)

// places returns every place the text names the setting: at gives a stem's exact spelling
// first ("dropout"), and the figure may be beside another ("dropouts with a rate of 0.1").
func (a attribute) places(ix *evidenceIndex) []int {
	var at []int
	for _, it := range a.stated {
		if it.stem != "" {
			at = append(at, ix.stems[it.stem]...)
		}
		at = append(at, ix.at(it)...)
	}
	return at
}

// A setting's figure stands a few words from its name: "dropout rate of 0.1", "Pdrop =
// 0.1", "0.1 dropout", a table's "Learning Rate 2e-4".
const (
	valueBefore = 3
	valueAfter  = 6
)

// isFigure reports a word that can be a setting's value: a number that is not a year (a
// citation beside "AdamW") or the number of a section, table or equation.
func isFigure(ws []string, i int) bool {
	w := ws[i]
	if _, ok := numberWords[w]; ok {
		return true // "for two epochs"
	}
	if !strings.ContainsAny(w, "0123456789") {
		return false
	}
	if citationYear.MatchString(w) && w >= "1950" && w < "2030" {
		return false
	}
	if i > 0 {
		switch ws[i-1] {
		case "section", "sec", "table", "tab", "figure", "fig", "eq", "equation", "appendix", "step", "stage":
			return false
		}
	}
	return true
}

// valueQuestion asks for a setting's figure ("What dropout rate …", "How many warmup
// steps …"), not how it was set or scheduled ("What learning-rate schedule …", "Why …").
var valueQuestion = regexp.MustCompile(`(?i)\b(?:what|which|how (?:much|many|big|large|high|low|small|long))\b`)
var notValueQuestion = regexp.MustCompile(`(?i)\b(?:schedul\w*|why|decay|annealing|kind|type|form|how (?:does|do|did|was|were|is|are)\b)`)

var attributes = []attribute{
	attr("learning rate", []string{"learning rate", "learning-rate"}, []string{"learning rate", "lr", "step size"}).withValue(),
	attr("batch size", []string{"batch size", "batch sizes"}, []string{"batch", "minibatch", "batchsize"}).withValue(),
	attr("dropout", []string{"dropout"}, []string{"dropout", "p drop"}).withValue(),
	// A learning rate's "decay" is no weight decay: T5 "decays the learning rate" and
	// states none. Nor does a bare "decay" ask for one (an average's decay rate).
	attr("weight decay", []string{"weight decay"}, []string{"weight decay", "l2 regularization", "l2 penalty"}).withValue(),
	// Asked by its name: a bare "smoothing" is as often a language model's ("what kind of
	// smoothing did the 2007 n-gram model get by with?", which LLaMA's related work answers)
	// or BLEU's, and every question about labels' smoothing on the spent sets names it.
	attr("label smoothing", []string{"label smoothing", "label-smoothing"}, []string{"label smoothing"}).withValue(),
	attr("warmup", []string{"warmup", "warm up"}, []string{"warmup", "warm up"}).withValueAsked(`(?i)\bhow (?:many|long)\b|\bwarm-?\s?up (?:steps|ratio|proportion|updates|iterations|period)\b`),
	attr("gradient clipping", []string{"clip", "clipping", "gradient norm", "grad norm", "max norm"}, []string{"=clip", "=clipping", "=clipped", "gradient norm", "grad norm", "max norm", "maxnorm"}).withValue(),
	attr("temperature", []string{"temperature"}, []string{"temperature"}).withValue(),
	attr("momentum", []string{"momentum"}, []string{"momentum"}).withValue(),
	// Papers write Adam's epsilon "ε" beside the optimizer, and no BM25 term holds "ε".
	// "eps" as spelled: its stem "ep" is DPR's passage encoder "EP(·)", beside a figure.
	attr("epsilon", []string{"epsilon"}, []string{"epsilon", "=eps"}).searchedBy("epsilon eps adam").withValue(),
	attr("epochs", []string{"epoch", "epochs"}, []string{"epoch"}).withValue(),
	attr("optimizer", []string{"optimizer", "optimiser"}, []string{"optimizer", "optimiser", "adam", "adamw", "adafactor", "sgd", "gradient descent", "lamb", "rmsprop"}),
	attr("beam size", []string{"beam size", "beam width"}, []string{"beam"}).withValue(),
	attr("random seed", []string{"seed", "seeds"}, []string{"seed", "seeds"}),
	attr("top-p", []string{"top-p", "top p", "nucleus"}, []string{"top-p", "top p", "nucleus"}).withValue(),
	attr("gradient accumulation", []string{"gradient accumulation", "accumulation steps"}, []string{"accumulation", "accumulate", "accumulated", "accumulating"}).withValue(),
	// How weights were initialised: papers that say so write "initialized" or "init";
	// the Transformer and LLaMA papers never do. Matched as spelled: "initial" (an
	// initial learning rate) has the same stem.
	attr("weight initialization", []string{"=initialize", "=initialized", "=initialization", "=initialise", "=initialised", "=initialisation"},
		[]string{"=initialize", "=initialized", "=initialization", "=initialise", "=initialised", "=initialisation", "=initializing", "=initializes", "=init", "=initializer", "=initial state", "=initial states"}),
	// LoRA's scaling α.
	attr("alpha", []string{"=alpha"}, []string{"=alpha"}),
	attr("Adam betas", []string{"beta1", "beta2", "β1", "β2", "betas"}, []string{"beta1", "beta2", "β1", "β2", "betas", "β"}),
	// A Gaussian's spread: LoRA "uses a random Gaussian initialization" and gives none,
	// while GPT writes its "N(0, 0.02)" without the words. Papers also report the spread
	// of their results across seeds, with no figure beside the words.
	attr("standard deviation", []string{"standard deviation", "standard deviations", "=std", "=stdev", "=stddev"},
		[]string{"standard deviation", "standard deviations", "=std", "=stdev", "=stddev", "σ", "=sigma"}).withValue().statedAs(`N\s?\(\s?0\s?,\s?\d`),
	// A weight on a term of a loss: InstructGPT's KL and pretraining coefficients; LLaMA
	// names no coefficient at all. "value function" or "reward model" asked is a component.
	// A correlation coefficient is a result, not a setting.
	attr("a loss coefficient", []string{"coefficient", "coefficients"}, []string{"coefficient", "coefficients"}).withValue().notAskedAs(`(?i)\bcorrelation`),
	// The share of tokens masked: BERT "masks 15% of all WordPiece tokens"; DistilBERT
	// only says it uses dynamic masking.
	attr("a masking rate", nil, []string{"mask", "masked", "masking"}).
		askedAs(`(?i)\b(?:percent(?:age)?|fraction|proportion)\b[^?]*\bmask|\bmask\w* (?:rate|ratio|probability|percentage|proportion)\b`).withValue(),
	// Whether a checkpoint keeps case: DPR and REALM say "uncased"; SBERT never does.
	attr("casing", []string{"=cased", "=uncased", "lowercased", "lower-cased", "case-sensitive", "=casing"},
		[]string{"=cased", "=uncased", "lowercased", "lower-cased", "lowercase", "case-sensitive", "=casing"}),

	// Reported measures. Units a question names ("how many hours", "in milliseconds") ask
	// for a time, as their plurals: "per hour" asks for a rate. "How long … take" may be
	// answered in steps, and "latency" or "wall-clock time" is asked of a paper's reasoning
	// about speed as often as of a figure; neither asks for a time.
	// A latency (milliseconds, seconds) and a training or labelling time (minutes, hours,
	// days) are different figures: T5's days of pre-training do not answer how many
	// milliseconds T5-11B takes per example, nor FiD's GPU hours its time per question.
	// A table states its unit once, in its header: "Inf. time (seconds)".
	measure("timings",
		[]string{"=milliseconds", "=seconds"},
		"",
		[]string{"in milliseconds", "in seconds"},
		timeCount+`(?:ms|milliseconds?|seconds?|secs?)(?:$|[^\w-])|\bper second\b|\bqps\b|(?:^|\s)\((?:in )?(?:ms|milliseconds|seconds?|secs?|s)\)`,
		"seconds ms milliseconds second"),
	measure("timings",
		[]string{"=hours", "=minutes", "=days", "gpu hours", "gpu-hours"},
		"",
		[]string{"in minutes", "in hours", "in days"},
		// A paper reports a time as a number and its unit, in words or digits.
		// The unit follows on the same line and ends the word: "26849 MS-MARCO" is no time.
		timeCount+`(?:(?:gpu|tpu)[- ])?(?:hours?|hrs?|days?|weeks?|minutes?|mins?)(?:$|[^\w-])|(?:^|\s)\((?:in )?(?:hours?|hrs?|days?|minutes?|mins?)\)`,
		"hours days weeks minutes"),
	measure("costs in money",
		[]string{"dollars", "dollar", "usd", "wage", "wages", "price"},
		`(?i)\$|\bhow much (?:did|does|do|was|were|would|will)\b[^?]*\b(?:cost|spend|spent|pay|paid)\b`,
		[]string{"in dollars", "in usd"},
		`\$\s?\d|€\s?\d|£\s?\d|(?i)\d\s*(?:dollars|usd|cents)\b|\busd\s?\d`,
		"dollars usd cost paid price"),
	measure("memory sizes",
		[]string{"gigabytes", "megabytes", "terabytes", "=gb", "=mb", "=tb", "=gib", "how much memory", "how much ram", "memory footprint"},
		`(?i)\bhow much (?:gpu |cpu )?(?:memory|ram|disk)\b`,
		[]string{"in gb", "in gigabytes", "in mb", "in megabytes"},
		`(?i)\d\s*(?:gb|gib|mb|mib|tb|kb|gigabytes?|megabytes?|terabytes?|bytes)\b`,
		"gb gigabytes mb megabytes tb memory bytes"),
	// A vocabulary's size is stated as a number beside the word ("a 30,000 token
	// vocabulary", "vocabulary of 32,000 wordpieces", "expanded to 50,257", "50K subword
	// units"); ELECTRA's "x∈vocab" in a formula and XLNet's SentencePiece, named without a
	// size, state none. Asked of such a paper, the question was answered with a neighbouring
	// count: the paper's training tokens, or another paper's vocabulary beside it.
	measure("a vocabulary size",
		[]string{"vocabulary size", "vocabulary sizes", "vocab size", "size of the vocabulary"},
		`(?i)\bhow (?:big|large|many \w+)\b[^?]*\bvocab`,
		nil,
		`(?i)(?:`+vocabSize+`[^.]{0,40}\bvocab|\bvocab[^.]{0,40}?`+vocabSize+`)`,
		"vocabulary vocab tokens wordpieces subword bpe merges"),
	attr("annotator agreement",
		[]string{"inter-annotator", "agreement", "kappa", "krippendorff"},
		[]string{"agreement", "kappa", "krippendorff", "fleiss"}),
	// "a maximum length of 512" reports a setting; "L is the maximum length of the passage"
	// (DPR) names a bound in a formula, and as a statement it answered a near miss on the
	// length DPR truncates questions to. The questions' bare "what maximum length" is not
	// among the asking words either: the candidate measured on fresh sets had it so.
	attr("a maximum length",
		[]string{"maximum sequence length", "max sequence length", "maximum input length", "max input length", "maximum output length", "max output length", "a maximum length", "max length", "truncate", "truncated", "max_seq_length"},
		[]string{"a maximum length", "max length", "sequence length", "input length", "output length", "maximum sequence", "truncate", "truncated", "truncation", "truncating", "context length", "context window", "tokens long"}),
	// A model's attention heads: a paper that gives them says "heads" ("16 attention
	// heads", "h = 8 heads"); GPT-2 gives its layers and width and never its heads. Its
	// "head of the department" and "head fake" are no attention head, hence the spelling.
	// "task-specific heads" are a classifier's, not attention's.
	attr("attention heads", []string{"attention head", "attention heads"}, []string{"=heads", "attention head"}).askedAs(`(?i)\bhow many (?:\w+ )?heads\b`),
	attr("a document stride", []string{"stride"}, []string{"stride"}),
	// Asked as a count: "Which models can I just download?" asks where they are, which a
	// paper answers without any count.
	attr("download counts", nil, []string{"downloaded", "downloads"}).
		askedAs(`(?i)\bhow (?:many|often)\b[^?]*\bdownload|\bdownloads\b|\bdownload (?:counts?|numbers?|figures?|statistics)\b`),
	attr("a license", []string{"license", "licence", "licensed"}, []string{"license", "licence", "licensed", "licensing"}),
}

// timeCount is the count before a time's unit, in digits or words, the unit following on
// the same line: "12 hours", "two-day", "26849 MS-MARCO" is none (see the timings).
const timeCount = `(?i)(?:\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|few|several))(?:[ \t]?-[ \t]?|[ \t]{0,2})`

// vocabSize is a count large enough to be a vocabulary's: "30,000", "50257", "32K". A
// formula's "(1 − p)" beside "x∈vocab" is none.
const vocabSize = `\b(?:\d{1,3}(?:,\d{3})+|\d{4,}|\d+(?:\.\d+)?\s?[km])\b`

// attributeHits bounds the passages of the kept papers searched for a setting.
const attributeHits = 40

// phraseItems turns phrases into items the evidence index can look up: a word by its stem
// (so "epochs" finds "epoch") and by its letters ("warm-up" finds "warmup"). A hyphenated
// phrase is looked up by its letters only: the stem of "top-p" is "top", which "on top"
// and "top 5" would match.
func phraseItems(phrases []string) []keyItem {
	var out []keyItem
	for _, ph := range phrases {
		exact := strings.HasPrefix(ph, "=")
		ph = strings.TrimPrefix(ph, "=")
		out = append(out, keyItem{text: ph, key: squeeze(ph), hard: true})
		if ts := terms(ph); len(ts) == 1 && !exact && !strings.ContainsAny(ph, " -") {
			out = append(out, keyItem{text: ph, key: squeeze(ph), stem: ts[0]})
		}
	}
	return out
}

// coversAll reports whether the text names every item. An acronym may be part of a word:
// the "NLI" a question fine-tunes on is the paper's "SNLI and MultiNLI".
func coversAll(ix *evidenceIndex, text string, items []keyItem) bool {
	lower := strings.ToLower(text)
	for _, it := range items {
		if !ix.covers(it) && !(it.acro && len(it.key) >= 3 && strings.Contains(lower, it.key)) {
			return false
		}
	}
	return true
}

// components are the parts of a system a setting is asked of separately: DPR trains its
// encoders for 40 epochs and says less of its reader, InstructGPT its reward models and
// its policies with different settings. A figure asked of one ("For how many epochs did
// they train the DPR reader?") must stand in a passage that names it; on the spent sets the
// encoders' epochs answered for the reader. The retriever is not among them: papers give
// its settings as their encoders'.
var components = [][]keyItem{
	phraseItems([]string{"reader", "readers"}),
	phraseItems([]string{"generator"}),
	phraseItems([]string{"discriminator"}),
	phraseItems([]string{"teacher"}),
	phraseItems([]string{"student"}),
	phraseItems([]string{"reward model", "reward models", "=rm", "=rms"}),
	phraseItems([]string{"policy", "policies"}),
	phraseItems([]string{"value function", "value-function"}),
	phraseItems([]string{"critic"}),
	// The stage: RoBERTa's and XLNet's pre-training settings do not answer for their
	// fine-tuning on RACE or SQuAD, which papers give in a table of their own.
	phraseItems([]string{"fine-tuning", "fine-tune", "fine-tuned", "fine-tunes", "finetuning", "finetune", "finetuned", "finetunes"}),
}

// sizeCount is a model's size or a count: "175B", "7B", "1.5M".
var sizeCount = regexp.MustCompile(`^\d+(?:\.\d+)?[kKmMbBtT]$`)

// qualifiers are the names of a question about one paper that no paper owns (named.go's
// owner) and its title lacks, numbers and sizes ("175B") aside: the parser, dataset or
// outside model a setting is asked for. A question about two papers, or naming another
// paper's model, has none: each paper's passages name only their own model.
func qualifiers(hard []keyItem, owners []string, subject []Chunk) []keyItem {
	if len(owners) != len(hard) || len(subject) == 0 {
		return nil
	}
	for _, c := range subject {
		if c.DocID != subject[0].DocID {
			return nil
		}
	}
	var out []keyItem
	for i, it := range hard {
		if owners[i] == "" && !titleNames(subject[0].Title, it) && !isNumber(it.text) && !sizeCount.MatchString(it.text) {
			out = append(out, it)
		}
	}
	return out
}

// wordSet is the set of the text's words as segWords spells them.
func wordSet(text string) map[string]bool {
	ws, _ := segWords(text)
	out := make(map[string]bool, len(ws))
	for _, w := range ws {
		out[w] = true
	}
	return out
}

func coversAny(ix *evidenceIndex, items []keyItem) bool {
	for _, it := range items {
		if ix.covers(it) {
			return true
		}
	}
	return false
}

// unstatedAttributes returns the training settings the question asks about that no kept
// paper mentions (see attribute). Without BM25 it cannot look through the papers and
// returns none.
//
// A figure asked of something the paper is not itself about (quals: "for the WSJ parser",
// "on RTE", "on GPT-3 175B") must stand in a passage that names it: the Transformer
// paper's dropout for its translation models does not answer for its parser.
//
// explain, when not empty, says why for a setting the papers do give, but for something
// else: "The papers give learning rate, but not for "fine-tuning"." Saying they do not
// mention it would be untrue.
func (p *Pipeline) unstatedAttributes(ctx context.Context, question string, kept []Chunk, quals []keyItem, enc SparseEncoder) (missing []keyItem, explain string) {
	if enc == nil {
		return nil, ""
	}
	q := newEvidenceIndex(question)
	premise := wordSet(question)
	var parts [][]keyItem
	for _, c := range components {
		if coversAny(q, c) {
			parts = append(parts, c)
		}
	}
	// qualified reports whether a passage giving the figure names what it is asked for.
	qualified := func(ix *evidenceIndex, text string) bool {
		for _, c := range parts {
			if !coversAny(ix, c) {
				return false
			}
		}
		return coversAll(ix, text, quals)
	}
	// Built on the first setting asked: the kept texts without their references, and
	// their indexes.
	var keptText []string
	var keptIx []*evidenceIndex
	var elsewhere []string // the settings stated, but not for what the question asks
	asked := attributes
	if a, ok := countAttribute(question); ok {
		asked = append(slices.Clip(attributes), a)
	}
	for _, a := range asked {
		// "with batch size 1, how much memory do the gradients take?": a setting the
		// question gives with its figure is its premise, not what it asks.
		if !a.isAsked(q, question) || a.premise(q, question) {
			continue
		}
		if keptIx == nil {
			for _, c := range kept {
				t := withoutReferences(c.Text)
				keptText, keptIx = append(keptText, t), append(keptIx, newEvidenceIndex(t))
			}
		}
		value := a.figureAsked(question)
		// states reports whether a passage states the setting, and when its figure is
		// asked, gives one where what it is asked of is named. A figure given where that is
		// not named is recorded (unqualified): a refusal then says the papers give it for
		// something else.
		unqualified := false
		states := func(ix *evidenceIndex, text string) bool {
			if !a.isStated(ix, text, value, premise) {
				return false
			}
			if !value || !a.valued || qualified(ix, text) {
				return true
			}
			unqualified = true
			return false
		}
		stated := false
		for i := range kept {
			stated = stated || states(keptIx[i], keptText[i])
		}
		if stated {
			continue
		}
		// A paper's text is searched whole: a two-column page interleaves its body with
		// its reference list, which the reference filter would drop with it. A common
		// word like "learning" fills the first hits with other passages, hence the depth.
		n := p.docPassages(ctx, a.query, attributeHits, func(text string) bool {
			return states(newEvidenceIndex(text), text)
		}, kept, enc)
		if n != nil && len(n) == 0 {
			missing = append(missing, keyItem{text: a.name, key: squeeze(a.name)})
			if unqualified && (len(parts) > 0 || len(quals) > 0) {
				elsewhere = append(elsewhere, a.name)
			}
		}
	}
	if len(elsewhere) == len(missing) && len(missing) > 0 {
		var asked []string
		for _, c := range parts {
			for _, it := range c {
				if q.covers(it) {
					asked = append(asked, `"`+it.text+`"`)
					break
				}
			}
		}
		for _, it := range quals {
			asked = append(asked, it.text)
		}
		explain = "The papers give " + joinAnd(elsewhere) + ", but not for " + joinAnd(asked) + "."
	}
	return missing, explain
}

// countAttribute returns the count a question asks for with "how many" ("How many
// subreddits did WebText's links come from?") as a setting of its own, unless the
// question asks a listed one, which is then checked instead. Like the listed settings it
// is lenient: the papers asked about must use the counted word somewhere. Requiring a
// figure beside it, as for a listed setting's value, refused 37 answerable questions on
// the spent sets for 14 near misses: papers count in tables ("# Params") and in other
// words. Mentioned at all, it refused 4 near misses and 1 answerable question, whose
// "crowdworkers" the paper calls annotators.
func countAttribute(question string) (attribute, bool) {
	q := newEvidenceIndex(question)
	for _, a := range attributes {
		if a.isAsked(q, question) {
			return attribute{}, false
		}
	}
	ws, _ := segWords(question)
	for i := 0; i+1 < len(ws); i++ {
		if ws[i] != "how" || ws[i+1] != "many" {
			continue
		}
		for _, w := range ws[i+2 : min(i+6, len(ws))] {
			if !countNoun.MatchString(w) || strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "pus") || stopwords[w] || notCounted[w] {
				continue
			}
			return attr(w, []string{w}, []string{w}), true
		}
		return attribute{}, false
	}
	return attribute{}, false
}

// countNoun is a plural noun a "how many" question counts: "subreddits", "GPUs"; not
// "corpus" or "class".
var countNoun = regexp.MustCompile(`^[a-z][a-z0-9]{2,}s$`)

// notCounted are plurals a "how many" question uses that count no thing of the papers.
var notCounted = map[string]bool{"times": true, "ways": true, "others": true, "things": true}

// subjectPapers keeps the passages of the papers the question is about: those rated
// highest by the names of the question they hold (gateResult.holders). A question on DSI's
// dropout is about DSI even when a QLoRA passage on dropout was kept beside it.
func subjectPapers(kept []Chunk, holders []int) []Chunk {
	best := 0
	for _, h := range holders {
		best = max(best, h)
	}
	if best == 0 || len(holders) != len(kept) {
		return kept
	}
	docs := map[string]bool{}
	for i, h := range holders {
		if h == best {
			docs[kept[i].DocID] = true
		}
	}
	var out []Chunk
	for _, c := range kept {
		if docs[c.DocID] {
			out = append(out, c)
		}
	}
	return out
}
