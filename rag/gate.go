package rag

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The evidence-sufficiency gate runs after the reranker's score cut. The cut asks whether
// the evidence is similar to the question; the gate asks whether it covers what the
// question hinges on. A near miss — "What accuracy does GPT-4 reach on MMLU?" over papers
// about GPT-2 and GPT-3 — retrieves passages that are very similar to the question and
// still do not answer it: they never name GPT-4.
//
// The question's key items are of two kinds:
//   - hard items: names with a version or digits ("GPT-4", "Sentence-T5", "LLaMA 2",
//     "4-bit"), acronyms and inner-capital names ("MMLU", "RoBERTa"), capitalised phrases
//     ("Natural Questions"), capitalised words the corpus rarely uses ("Claude") and
//     numbers ("512"). Each must appear in a kept passage (outside its reference list),
//     compared without case, spacing or hyphens ("GPT-4" = "GPT 4" = "gpt4", "BERT-base" =
//     "BERTBASE"); an acronym also matches words whose initials spell it ("LLMs" = "large
//     language models"). Several must appear close together in one passage (see
//     hardCoverage): the GPT-4 of a passage on GPT-4 as a judge and the MMLU of the
//     next section do not answer "GPT-4's accuracy on MMLU".
//   - soft items: the other content words, weighted by their BM25 inverse document
//     frequency in the corpus (Config.Sparse), so rare words weigh most. When the
//     evidence covers less than gateCoverage of the question's weight and lacks a word the
//     corpus never uses, and the question names nothing the evidence holds, the question
//     is about something else ("context sufficiency").
//
// The reranker's score cut (Config.MinScore, Config.MaxGap) runs first and still refuses
// what is merely dissimilar; the gate refuses what is similar but not the same.
// No list of model names is involved: what counts as a name is read from the question's
// spelling, and what is rare from the corpus. The one list is of training settings
// (gate_attrs.go): a question about a setting no paper it is about reports is refused.
const (
	// gateCoverage is the share of the question's weight the evidence must cover when
	// it lacks a word of the question the corpus never uses.
	gateCoverage = 0.5
	// rareIDF is the share of the largest IDF (that of a word no chunk contains) from
	// which a word counts as rare: on 1,300 chunks, a word in at most about a dozen.
	rareIDF = 0.6
	// unseenIDF marks a word no chunk contains. Only such a word, missing from the
	// evidence, lets the gate refuse on ordinary words: on the tuning questions, refusing
	// for missing rare-but-seen words ("optimizer", "biggest") only refused paraphrases and
	// questions whose evidence retrieval had missed, never a near miss.
	unseenIDF = 0.99
	// rescueHits bounds the passages searched per item for the document-level check.
	rescueHits = 10
	// coWindow is how close, in words, a passage must name the question's hard items.
	coWindow = 20
	// looseItems is how many hard items a question names for all but one of them
	// together to do (see hardCoverage).
	looseItems = 4
	// tableItems is how many hard items a question names for its paper's other passages
	// to stand in for the window (see hardCoverage).
	tableItems = 3
	// rescueMentions is how many passages of a document must use an item for the
	// document to count as covering it.
	rescueMentions = 3
	// gateMaxMissing bounds the missing items an explanation names.
	gateMaxMissing = 3
)

// keyItem is one thing a question hinges on.
type keyItem struct {
	text string // as the user wrote it: "GPT-4", "LLaMA 2", "tokenizer"
	key  string // lower-case letters and digits only: "gpt4", "llama2"
	stem string // soft single words: the stem compared with the evidence's terms
	hard bool   // a name, version or number that must appear verbatim
	acro bool   // an acronym, which may also be spelled out
	name bool   // a capitalised word or phrase inside the question: hard when rare
	// caps: an acronym written in capitals ("DROP", "MATH"), which the evidence must write
	// with more than one capital too: the "drop" of "a drop in accuracy" is no dataset.
	caps   bool
	weight float64 // soft items: the corpus IDF
	// alts are names the user wrote beside it after a slash ("Lucene/Pyserini",
	// "CNN/Daily Mail"): either is what is meant, so the evidence may hold any of them.
	alts []keyItem
}

// searchText is what a BM25 search for the item looks for: it and its alternatives.
func (it keyItem) searchText() string {
	texts := []string{it.text}
	// A search for "CommonsenseQA" also looks for "commonsense": the passages naming its
	// short form ("CSQA") say what it is about.
	if m := camelTail.FindStringSubmatch(it.text); m != nil {
		texts = append(texts, strings.TrimSuffix(it.text, m[1]), m[1])
	}
	for _, a := range it.alts {
		texts = append(texts, a.text)
	}
	return strings.Join(texts, " ")
}

// gateResult is the gate's verdict.
type gateResult struct {
	missing  []string // what the evidence lacks, as the user wrote it
	explain  string   // one or two sentences for the refusal
	coverage float64  // covered share of the soft weight (1 when there is none)
	// holders rates the kept passages by the hard items of the question they hold (nil
	// when it has none), with a point more for a paper whose title names one: the answer
	// is best quoted from the passages rated highest.
	holders []int
	// surveyed: the explanation says the papers name something only in their related
	// work, which a first look at fewer passages may have missed (see Pipeline.ask).
	surveyed bool
}

func (g gateResult) refused() bool { return len(g.missing) > 0 }

// trimToken is what surrounds a word without being part of it.
const trimToken = ".,;:!?()[]{}\"'“”‘’«»*_`<>"

// questionItems extracts the key items of a question (see the gate's comment).
func questionItems(question string) []keyItem {
	toks := withoutGuesses(splitJoined(tokenize(question)))
	// A question written in capitals does not mark its names by case.
	shouting := upperShare(question) > 0.5
	var items []keyItem
	lastEnd := -2 // the token the last item ends at
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		alt := t.alt && lastEnd == i-1 && len(items) > 0
		// "Dettmers et al.": an author, whose name the paper prints once, on its first
		// page, is who wrote it and not what the question asks about.
		if i+2 < len(toks) && toks[i+1].text == "et" && toks[i+2].text == "al" {
			i += 2
			// "Radford et al. 2018", "(Radford et al., 2018)": the year is the citation's.
			if i+1 < len(toks) && citationYear.MatchString(toks[i+1].text) {
				i++
			}
			continue
		}
		// "the NQ-only DPR model": a name made an adjective ends there.
		if m := withoutModifier(t.text); m != t.text {
			t.text, toks[i].brk = m, true
		}
		// "the 3-layer model": a table of model sizes states the count in a column headed
		// "#L" and never spells "3 layers"; the count is the item, and the unit a word.
		// The same holds for any count made an adjective: the "4.7M-parameter LoRA" is a
		// "4.7M" in a column of trainable parameters, the "4-foot wire" is "4 feet long",
		// the "8-GPU machine" has "8 NVIDIA P100 GPUs", and a "multi-GPU box" is about GPUs.
		// A precision, an n-gram or a number of shots, hops or ways is a setting's name,
		// which papers write the same way: "4-bit", "5-shot", "5-gram".
		if m := countUnit.FindStringSubmatch(t.text); m != nil && !settingUnits[strings.ToLower(m[2])] {
			if m[1] != "" {
				items = append(items, keyItem{text: m[1], key: squeeze(m[1]), hard: true})
			}
			if isAcronym(m[2]) {
				items = append(items, keyItem{text: m[2], key: squeeze(m[2]), hard: true, acro: true})
			} else if st := terms(m[2]); len(st) == 1 {
				items = append(items, keyItem{text: m[2], key: squeeze(m[2]), stem: st[0]})
			}
			continue
		}
		// "the 11-billion-parameter T5": a size in words is written "11B" in the papers'
		// tables and names ("T5-11B") as often as "11 billion", which the index finds as
		// rounded figures; the unit is a word.
		if m := countMagnitude.FindStringSubmatch(t.text); m != nil {
			size := m[1] + magnitudeLetter[strings.ToLower(m[2])]
			words := m[1] + " " + strings.ToLower(m[2])
			items = append(items, keyItem{text: size, key: squeeze(size), hard: true,
				alts: []keyItem{{text: words, key: squeeze(words), hard: true}}})
			if st := terms(m[3]); len(st) == 1 {
				items = append(items, keyItem{text: m[3], key: squeeze(m[3]), stem: st[0]})
			}
			continue
		}
		kind := classify(t.text, shouting)
		// "Plan-and-Solve", "Step-Back", "English-to-German": capitalised parts joined by
		// hyphens name a method or a language pair, which a paper names so or not at all.
		if kind == kindSoft && !shouting && titledCompound(t.text) {
			kind = kindHard
		}
		// "about 70 EM", "roughly 5 million": the user's round figure, as "~70" is, and not
		// one the paper must print ("69.5").
		if kind == kindHard && isNumber(t.text) && i > 0 && roundingWords[strings.ToLower(toks[i-1].text)] {
			kind = kindSoft
		}
		if kind == kindNone {
			continue
		}
		text := t.text
		name := kind == kindSoft && isTitle(text) && !t.first && !shouting
		if name {
			// "Natural Questions": capitalised words in a row inside a sentence are a name,
			// and so are two joined by "of" ("Tree of Thoughts").
			for i+1 < len(toks) && !toks[i+1].first && !toks[i].brk {
				if isTitle(toks[i+1].text) && classify(toks[i+1].text, false) == kindSoft {
					text += " " + toks[i+1].text
					i++
					continue
				}
				// "the Graph Retriever of Min et al.": an author after "of" is a citation.
				if toks[i+1].text == "of" && i+2 < len(toks) && !toks[i+2].first && isTitle(toks[i+2].text) && classify(toks[i+2].text, false) == kindSoft && !(i+4 < len(toks) && toks[i+3].text == "et" && toks[i+4].text == "al") {
					text += " of " + toks[i+2].text
					i += 2
					continue
				}
				break
			}
			if strings.Contains(text, " ") {
				kind, name = kindHard, false
			}
		}
		// "MS MARCO": capitals in a row are one name.
		for kind == kindHard && isAcronym(text) && i+1 < len(toks) && !toks[i+1].first && !toks[i].brk && isAcronym(toks[i+1].text) && !shouting {
			text += " " + toks[i+1].text
			i++
		}
		// "LLaMA 2", "GPT 4", "SQuAD v1.1": a name followed by a bare version number is one
		// name.
		if next := i + 1; (kind == kindHard || name) && next < len(toks) && (isNumber(toks[next].text) || versionWord.MatchString(toks[next].text)) && !toks[next].first && !toks[i].brk {
			text += " " + toks[i+1].text
			kind, name = kindHard, false
			i++
		}
		it := keyItem{text: text, key: squeeze(text), hard: kind == kindHard, name: name}
		if it.key == "" {
			continue
		}
		if it.hard {
			it.acro = isAcronym(text) || (mixedInitials.MatchString(text) && utf8.RuneCountInString(text) <= 4)
			it.caps = isAcronym(text) && !shouting && !modelSize.MatchString(text)
		} else {
			ts := terms(text)
			if len(ts) == 0 {
				continue
			}
			if len(ts) == 1 {
				it.stem = ts[0]
			}
		}
		it.alts = append(it.alts, spellingAlts(it)...)
		// "English Gigaword (Giga5)": a name in brackets right after another is its short
		// form, and either is what the papers may write.
		if t.paren && lastEnd == i-1 && len(items) > 0 && bracketAlias(items[len(items)-1], it) {
			items[len(items)-1].alts = append(items[len(items)-1].alts, it)
			lastEnd = i
			continue
		}
		lastEnd = i
		// "CNN/Daily Mail" is one dataset's two names, not a choice: a phrase after the
		// slash is an item of its own.
		if alt && !strings.Contains(text, " ") {
			items[len(items)-1].alts = append(items[len(items)-1].alts, it)
			continue
		}
		items = append(items, it)
	}
	return dedupeItems(items)
}

var digitComma = regexp.MustCompile(`(\d),(\d)`)

// versionWord is a version written with a "v": "v1.1", "V2".
var versionWord = regexp.MustCompile(`^[vV]\d+(?:\.\d+)*$`)

// modifiers are hyphenated endings that make a name an adjective: the "STS" of
// "STS-style data", the "BERT" of "BERT-based models", the "NQ" of "the NQ-only model",
// the "NLI" of "the NLI-trained model", the "GPT" of "GPT-generated data".
var modifiers = []string{"-style", "-like", "-based", "-sized", "-type", "-specific", "-only",
	"-trained", "-pretrained", "-tuned", "-finetuned", "-generated"}

// countUnit is a count made an adjective ("3-layer", "12-head", "4.7M-parameter",
// "2x-bigger", "8-GPU": the count, maybe with its order of magnitude or as a factor, is
// the first group) or a unit said to be several ("multi-GPU": no count).
var countUnit = regexp.MustCompile(`^(?:(\d+(?:\.\d+)?[kKmMbBtTxX]?)|multi|single)[-–](\p{Ll}{2,}|\p{Lu}{2,}s?)$`)

// countMagnitude is a count with its order of magnitude in words made an adjective:
// "11-billion-parameter", "1.5-million-word".
var countMagnitude = regexp.MustCompile(`(?i)^(\d+(?:\.\d+)?)[-–](thousand|million|billion|trillion)[-–](\p{L}{2,})$`)

var magnitudeLetter = map[string]string{"thousand": "K", "million": "M", "billion": "B", "trillion": "T"}

// co2eq is a CO2 equivalent as papers write it, maybe in tonnes: "co2eq", "tco2eq", "co2e".
var co2eq = regexp.MustCompile(`^t?co2eq?$`)

// settingUnits are the units whose count names a setting (see questionItems).
var settingUnits = map[string]bool{"bit": true, "bits": true, "shot": true, "shots": true, "hop": true, "way": true, "gram": true, "grams": true}

// citationYear is the year of an author citation.
var citationYear = regexp.MustCompile(`^(?:19|20)\d\d[a-z]?$`)

// withoutModifier drops such an ending from a word that is a name without it.
func withoutModifier(w string) string {
	for _, m := range modifiers {
		if len(w) <= len(m) || !strings.EqualFold(w[len(w)-len(m):], m) {
			continue
		}
		if base := w[:len(w)-len(m)]; classify(base, false) == kindHard {
			return base
		}
	}
	return w
}

// qtoken is a word of the question; first marks the first word of a sentence, and brk a
// word after which a name cannot go on: a comma follows it ("MRPC, RTE") or it is an
// acronym's or a coined name's possessive ("WNLI's NLI format", "DPR's FAISS index").
type qtoken struct {
	text  string
	first bool
	brk   bool
	alt   bool // a slash comes before it: "Pyserini" of "Lucene/Pyserini"
	paren bool // an opening bracket comes before it: "Giga5" of "Gigaword (Giga5)"
}

// tokenize splits a question into words, keeping hyphens, dots and percent signs inside a
// word ("GPT-3.5", "15%") and dropping a possessive "'s".
func tokenize(s string) []qtoken {
	var out []qtoken
	first := true
	// A comma ends a word unless digits follow it: "1,000,000" is one number.
	s = digitComma.ReplaceAllString(s, "$1\x00$2")
	s = strings.ReplaceAll(s, ",", ", ")
	// A slash between two words offers alternatives: each is a word of its own, and the
	// first ends a name ("Lucene/Pyserini" is Lucene or Pyserini, not one name).
	s = strings.ReplaceAll(s, "/", ",\x01")
	for _, f := range strings.Fields(s) {
		alt := false
		for _, g := range strings.Split(f, "\x01") {
			if g != "" {
				out = appendToken(out, g, alt, &first)
			}
			alt = true
		}
	}
	return out
}

// appendToken adds the word f to a question's tokens (see tokenize).
func appendToken(out []qtoken, f string, alt bool, first *bool) []qtoken {
	f = strings.ReplaceAll(f, "\x00", ",")
	end := strings.ContainsAny(f[len(f)-1:], ".?!:;")
	brk := strings.HasSuffix(f, ",")
	paren := strings.HasPrefix(f, "(")
	w := strings.Trim(f, trimToken)
	possessive := false
	for _, suf := range []string{"'s", "’s"} {
		if strings.HasSuffix(w, suf) {
			w, possessive = strings.TrimSuffix(w, suf), true
		}
	}
	w = strings.Trim(w, trimToken+"-–")
	// "Children's Book Test" is one name: only a hard name's possessive ends one.
	brk = brk || (possessive && classify(w, false) == kindHard)
	if w != "" {
		out = append(out, qtoken{text: w, first: *first, brk: brk, alt: alt, paren: paren})
		*first = false
	}
	if end {
		*first = true
	}
	return out
}

// titledCompound reports a hyphenated word of two or more capitalised parts, maybe joined by
// short lower-case words: "Plan-and-Solve", "Step-Back", "English-to-German".
func titledCompound(w string) bool {
	parts := strings.FieldsFunc(w, isHyphen)
	if len(parts) < 2 {
		return false
	}
	titled := 0
	for i, p := range parts {
		switch {
		case isTitle(p) && !isAcronym(p) && utf8.RuneCountInString(p) >= 2:
			titled++
		case i > 0 && i < len(parts)-1 && utf8.RuneCountInString(p) <= 3 && p == strings.ToLower(p):
		default:
			return false
		}
	}
	return titled >= 2
}

func isHyphen(r rune) bool { return r == '-' || r == '–' }

// spellingAlts are the other ways papers write a name: a language pair with or without
// "to" ("English-to-German" is the table's "English-German"), and a word-and-acronym name
// by its initials ("masked-LM" is "MLM").
func spellingAlts(it keyItem) []keyItem {
	if !it.hard {
		return nil
	}
	parts := strings.FieldsFunc(it.text, isHyphen)
	alt := func(text string) []keyItem {
		return []keyItem{{text: text, key: squeeze(text), hard: true, acro: isAcronym(text)}}
	}
	switch {
	case len(parts) == 3 && parts[1] == "to" && titledCompound(it.text):
		return alt(parts[0] + "-" + parts[2])
	case len(parts) == 2 && titledCompound(it.text):
		return alt(parts[0] + "-to-" + parts[1])
	case len(parts) >= 2 && isAcronym(parts[len(parts)-1]):
		var b strings.Builder
		for _, p := range parts[:len(parts)-1] {
			r, _ := utf8.DecodeRuneInString(p)
			if !unicode.IsLower(r) {
				return nil
			}
			b.WriteRune(unicode.ToUpper(r))
		}
		return alt(b.String() + parts[len(parts)-1])
	}
	return nil
}

// bracketAlias reports whether the name in brackets after prev is prev's short form: not a
// size or figure ("LLaMA (65B)"), a version ("BERT (v2)") or a variant naming prev
// ("RoBERTa (RoBERTa-large)"); a shortening of prev is one ("RAG-Sequence (RAG-Seq)").
func bracketAlias(prev, it keyItem) bool {
	if !prev.hard || !it.hard || strings.Contains(it.text, " ") || isNumber(it.text) || sizeCount.MatchString(it.text) || versionWord.MatchString(it.text) {
		return false
	}
	return !strings.Contains(it.key, prev.key)
}

// withoutGuesses drops the answers a user offers as guesses: "spaCy, or something
// else?", "Xavier/Glorot or something else?", "something like Manhattan or Euclidean
// distance". The question asks what the paper did, whichever it was; a paper that used
// NLTK answers it, and a guess the paper never names is no sign of a near miss.
func withoutGuesses(toks []qtoken) []qtoken {
	drop := make([]bool, len(toks))
	low := func(i int) string {
		if i < 0 || i >= len(toks) {
			return ""
		}
		return strings.ToLower(toks[i].text)
	}
	for i := range toks {
		// "A or something else", "A, B or anything else": the guesses run back to the
		// sentence's start or the comma before the first of them.
		if low(i) == "or" && (low(i+1) == "something" || low(i+1) == "anything") {
			for j := i - 1; j >= 0; j-- {
				drop[j] = true
				if toks[j].first || (j > 0 && toks[j-1].brk) {
					break
				}
			}
		}
		// "something like A or B": A and B.
		if low(i) == "something" && low(i+1) == "like" {
			if i+2 < len(toks) {
				drop[i+2] = true
				if low(i+3) == "or" && i+4 < len(toks) {
					drop[i+4] = true
				}
			}
		}
	}
	var out []qtoken
	for i, t := range toks {
		if !drop[i] {
			out = append(out, t)
		}
	}
	return out
}

// joiner links two names into one word: "ELMo-plus-BiLSTM" is the paper's "an ELMo
// encoder followed by two BiLSTMs", "BM25-vs-DPR" two systems.
var joiner = regexp.MustCompile(`[-–](?:plus|and|with|vs|versus|or|then|over)[-–]`)

// splitJoined splits a word of names joined by a joiner into its names, when each is a
// name by itself; the names are then items of their own.
func splitJoined(toks []qtoken) []qtoken {
	var out []qtoken
	for _, t := range toks {
		parts := joiner.Split(t.text, -1)
		whole := len(parts) < 2
		for _, p := range parts {
			whole = whole || classify(p, false) != kindHard
		}
		if whole {
			out = append(out, t)
			continue
		}
		for i, p := range parts {
			out = append(out, qtoken{text: p, first: t.first && i == 0, brk: i < len(parts)-1 || t.brk, alt: t.alt && i == 0})
		}
	}
	return out
}

type itemKind int

const (
	kindNone itemKind = iota
	kindSoft
	kindHard
)

// classify decides what a question word is: a hard item (digits, an acronym, an inner
// capital — unless the whole question shouts), a soft content word, or nothing.
func classify(w string, shouting bool) itemKind {
	letters, digits := 0, 0
	for _, r := range w {
		switch {
		case unicode.IsLetter(r):
			letters++
		case unicode.IsDigit(r):
			digits++
		}
	}
	if letters+digits == 0 {
		return kindNone
	}
	// "~1000-dim" is the user's round figure, not one a paper must print.
	if strings.HasPrefix(w, "~") || strings.HasPrefix(w, "≈") {
		return kindSoft
	}
	if digits > 0 {
		return kindHard
	}
	lw := strings.ToLower(w)
	if stopwords[lw] || references[lw] || questionWords[lw] || labs[w] || contraction.MatchString(lw) {
		return kindNone
	}
	if !shouting && innerCapital(w) {
		return kindHard
	}
	if len(terms(w)) == 0 {
		return kindNone
	}
	return kindSoft
}

// roundingWords are the words that make the number after them a round figure.
var roundingWords = map[string]bool{"about": true, "around": true, "roughly": true, "approximately": true, "approx": true, "nearly": true, "almost": true, "circa": true}

// contraction is grammar ("couldn't", "they're", "we've"): a word the corpus never
// spells, which the gate would otherwise take for a rare word the papers lack.
var contraction = regexp.MustCompile(`^\p{L}+['’](t|re|ve|ll|d|m)$`)

// questionWords are content-free in a question even though they are not stopwords.
var questionWords = map[string]bool{
	"much": true, "many": true, "kind": true, "kinds": true, "way": true, "ways": true,
	"exactly": true, "main": true, "key": true, "specific": true, "specifically": true,
	"please": true, "briefly": true, "give": true, "list": true, "compare": true,
	"compared": true, "difference": true, "differences": true, "differ": true,
	"example": true, "examples": true, "happen": true, "happens": true, "actually": true,
	"really": true, "role": true, "purpose": true, "mean": true, "means": true,
	"approach": true, "idea": true, "find": true, "found": true, "reported": true,
	"report": true, "reports": true, "reach": true, "reaches": true, "achieve": true,
	"achieves": true, "get": true, "gets": true, "obtain": true, "obtains": true,
	"make": true, "makes": true, "work": true, "works": true, "done": true,
}

// labs are the companies whose researchers wrote papers users ask about: "What weight
// decay did Meta use for LLaMA?", "How did OpenAI filter GPT-2's web pages?". Like an
// author's name (authors.go), a lab's says who made the model, not what is asked, and
// papers print it once, on the first page; as an item it refused such questions whenever
// the kept passages were not that page. Spelled as the companies write them: "meta" in
// "meta-learning" is a word.
var labs = map[string]bool{
	"OpenAI": true, "Meta": true, "Google": true, "DeepMind": true, "Microsoft": true,
	"Facebook": true, "Anthropic": true, "NVIDIA": true, "Nvidia": true,
}

// innerCapital reports an acronym or a name with a capital inside a hyphen-separated part:
// "MMLU", "RoBERTa", "Sentence-BERT", but not "Self-Attention" or "The".
func innerCapital(w string) bool {
	for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '-' || r == '–' || r == '.' }) {
		n := 0
		for i, r := range part {
			if i > 0 && unicode.IsUpper(r) {
				n++
			}
		}
		if n > 0 && utf8.RuneCountInString(part) >= 2 {
			return true
		}
	}
	return false
}

// isAcronym reports a word of capitals, maybe plural: "LLM", "LLMs", "NSP".
func isAcronym(w string) bool {
	w = strings.TrimSuffix(w, "s")
	n := utf8.RuneCountInString(w)
	if n < 2 || n > 6 {
		return false
	}
	for _, r := range w {
		if !unicode.IsUpper(r) {
			return false
		}
	}
	return true
}

// modelSize is a model size written in capitals ("XL", "XXL", "S"), which papers also write
// in lower case: QLoRA's "T5 xl and xxl".
var modelSize = regexp.MustCompile(`^X*[SML]$`)

// mixedInitials is a short form that keeps a small word's initial in lower case: "FiD"
// of "Fusion-in-Decoder", "CoT" of "chain-of-thought". Users write the short form, the
// paper its words; the "MS MARCO" joining of acronyms in a row does not take them.
var mixedInitials = regexp.MustCompile(`^\p{Lu}(?:\p{Ll}?\p{Lu})+$`)

func isTitle(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r) && !innerCapital(w)
}

// isNumber reports a bare number: "2", "4.5", "15%".
func isNumber(w string) bool {
	w = strings.TrimSuffix(w, "%")
	if w == "" {
		return false
	}
	for _, r := range w {
		if !unicode.IsDigit(r) && r != '.' {
			return false
		}
	}
	return true
}

func upperShare(s string) float64 {
	up, letters := 0, 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			letters++
			if unicode.IsUpper(r) {
				up++
			}
		}
	}
	if letters == 0 {
		return 0
	}
	return float64(up) / float64(letters)
}

// squeeze keeps the lower-cased letters and digits of s, and pluses ending a word: "GPT-4"
// → "gpt4", "DSI++" → "dsi++".
func squeeze(s string) string {
	var b strings.Builder
	rs := []rune(strings.ToLower(s))
	for i, r := range rs {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || (b.Len() > 0 && endingPlus(rs, i)) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// endingPlus reports a plus that ends a word ("DSI++"), as opposed to one between two
// words ("L1+L2"); squeeze and segWords both keep it, so that "DSI++" is a name of its own.
func endingPlus(rs []rune, i int) bool {
	return rs[i] == '+' && (i+1 == len(rs) || !(unicode.IsLetter(rs[i+1]) || unicode.IsDigit(rs[i+1])))
}

func dedupeItems(items []keyItem) []keyItem {
	seen := map[string]bool{}
	var out []keyItem
	for _, it := range items {
		if seen[it.key] {
			continue
		}
		seen[it.key] = true
		out = append(out, it)
	}
	return out
}

// evidenceIndex is what the gate and the grounding check look items up in: where each
// item occurs, by word position.
type evidenceIndex struct {
	grams map[string][]int // squeezed runs of 1–3 consecutive words: "gpt4", "bertbase"
	acros map[string][]int // initials of 2–6 consecutive words: "llm", "mlm"
	stems map[string][]int // stemmed content words
	// plain marks the places of words written in lower case or with one capital
	// ("drop", "Drop"), which do not spell a capitals-only name ("DROP").
	plain map[int]bool
	// clipped holds a name whose last word a table clips with a full stop ("RAG-Seq."),
	// squeezed, at the place of its first word: "ragseq".
	clipped map[string][]int
	n       int // words indexed, plus a gap between texts
}

// maxGram is the longest run of words a hard item is compared with ("Hierarchical
// Navigable Small World" is four).
const maxGram = 6

func newEvidenceIndex(texts ...string) *evidenceIndex {
	ix := &evidenceIndex{grams: map[string][]int{}, acros: map[string][]int{}, stems: map[string][]int{}, plain: map[int]bool{}, clipped: map[string][]int{}}
	for _, text := range texts {
		ix.add(text)
	}
	return ix
}

func (ix *evidenceIndex) add(text string) {
	orig, brk, plain, clip := segWordsStops(text)
	base := ix.n
	ws := make([]string, len(orig))
	for i, w := range orig {
		ws[i] = w
		if plain[i] {
			ix.plain[base+i] = true
		}
		// Emissions are reported as a CO2 equivalent, in tonnes ("tCO2eq", "CO2eq/KWh"):
		// the user's "CO2".
		if co2eq.MatchString(w) {
			ix.grams["co2"] = append(ix.grams["co2"], base+i)
		}
		// "two sub-layers" states the "2" of a question.
		if d, ok := numberWords[w]; ok {
			ix.grams[w] = append(ix.grams[w], base+i)
			ws[i] = d
		}
		// "76GB" states the "GB" of a question ("how many GB"), "12ms" its "ms".
		if m := figureUnit.FindStringSubmatch(w); m != nil {
			ix.grams[m[1]] = append(ix.grams[m[1]], base+i)
		}
		// A table's subscript size joins the model's name when the PDF is read:
		// "DeBERTaXXL", "RoBERTalarge", "BERTBASE" state the "DeBERTa" and "XXL" of a
		// question. Only a name with two or more capitals: "Database" is no sized model.
		if !plain[i] {
			if m := gluedSize.FindStringSubmatch(w); m != nil {
				ix.grams[m[1]] = append(ix.grams[m[1]], base+i)
				ix.grams[m[2]] = append(ix.grams[m[2]], base+i)
			}
		}
		// "SQuAD v1.1" states the "SQuAD 1.1" of a question; a "V100" GPU is no version.
		if len(w) > 1 && len(w) <= 3 && w[0] == 'v' && isNumber(w[1:]) {
			ix.grams[w] = append(ix.grams[w], base+i)
			ws[i] = w[1:]
		}
	}
	for i, w := range orig {
		g := ""
		for j := i; j < len(ws) && j < i+maxGram && (j == i || !brk[j]); j++ {
			g += ws[j]
			ix.grams[g] = append(ix.grams[g], base+i)
		}
		a := ""
		for j := i; j < len(ws) && j < i+6 && (j == i || !brk[j]); j++ {
			r, _ := utf8.DecodeRuneInString(orig[j])
			a += string(r)
			if j > i {
				ix.acros[a] = append(ix.acros[a], base+i)
			}
		}
		if i > 0 && clip[i] && !brk[i] && isLetters(w) && !stopwords[orig[i-1]] {
			ix.clipped[orig[i-1]+w] = append(ix.clipped[orig[i-1]+w], base+i-1)
		}
		if !stopwords[w] && utf8.RuneCountInString(w) >= 2 {
			st := stemOf(w)
			ix.stems[st] = append(ix.stems[st], base+i)
		}
	}
	// Texts are kept apart so that no window spans two of them.
	ix.n = base + len(ws) + 2*coWindow
}

// segWords returns the lower-cased words of text (as words does) and, per word, whether
// punctuation that ends a phrase — a comma, a bracket, a quote, a full stop before a
// space — comes before it, so that "next sentence. BERT uses" does not read as
// "Sentence-BERT". Hyphens, slashes and a dot inside a number ("4.5") join; pluses ending a
// word stay with it, so that "DSI++" is not "DSI".
func segWords(text string) (ws []string, brk []bool) {
	ws, brk, _ = segWordsCase(text)
	return ws, brk
}

// segWordsCase is segWords that also reports, per word, whether it is plain: written in
// lower case or with one capital.
func segWordsCase(text string) (ws []string, brk, plain []bool) {
	ws, brk, plain, _ = segWordsStops(text)
	return ws, brk, plain
}

// segWordsStops is segWordsCase that also reports, per word, whether it is capitalised
// and a full stop ends it, as a table clips a name ("Seq." in "RAG-Seq. 14.7"); a word
// ending a sentence is mostly in lower case.
func segWordsStops(text string) (ws []string, brk, plain, clip []bool) {
	var cur strings.Builder
	upper := false // the current word begins with a capital
	pending := false
	caps := 0 // capitals in the current word
	orig := []rune(text)
	rs := []rune(strings.ToLower(text))
	if len(rs) != len(orig) {
		orig = rs // a lower-casing that changes lengths: no case to tell
	}
	flush := func() {
		ws = append(ws, cur.String())
		brk = append(brk, pending)
		plain = append(plain, caps <= 1)
		clip = append(clip, false)
		cur.Reset()
		pending, caps = false, 0
	}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if unicode.IsUpper(orig[i]) {
			caps++
			upper = upper || cur.Len() == 0
		}
		// A possessive is dropped as the question's tokenizer drops it: the question's
		// "Children's Book Test" is the paper's "Children’s Book Test".
		if (r == '\'' || r == '’') && cur.Len() > 0 && i+1 < len(rs) && rs[i+1] == 's' && (i+2 == len(rs) || !unicode.IsLetter(rs[i+2])) {
			i++
			continue
		}
		// "4× the computation" is the "4x" of a question; "3×3" and "4 × 10" are no factor.
		if r == '×' && cur.Len() > 0 && unicode.IsDigit(rs[i-1]) && (i+1 == len(rs) || !unicode.IsDigit(rs[i+1]) && !unicode.IsLetter(rs[i+1])) {
			cur.WriteRune('x')
			continue
		}
		if name, ok := greekNames[r]; ok {
			cur.WriteString(name)
			continue
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			cur.WriteRune(r)
			continue
		}
		if cur.Len() > 0 && endingPlus(rs, i) {
			cur.WriteRune(r)
			continue
		}
		// "1,000,000" and "4.5" are one number.
		if (r == ',' || r == '.') && i > 0 && i+1 < len(rs) && unicode.IsDigit(rs[i-1]) && unicode.IsDigit(rs[i+1]) {
			continue
		}
		// "TL;DR" is one name, as the question's tokenizer reads it.
		if r == ';' && i > 0 && i+1 < len(rs) && unicode.IsLetter(rs[i-1]) && unicode.IsLetter(rs[i+1]) {
			continue
		}
		fullStop := r == '.' && (i+1 == len(rs) || unicode.IsSpace(rs[i+1]))
		if cur.Len() > 0 {
			flush()
			clip[len(clip)-1] = fullStop && upper
		}
		upper = false
		switch {
		case strings.ContainsRune(",;:!?()[]{}\"“”", r):
			pending = true
		case fullStop:
			pending = true
		}
	}
	if cur.Len() > 0 {
		flush()
	}
	return ws, brk, plain, clip
}

// gluedSize is a model's name with its size joined to it: "debertaxxl", "robertalarge".
var gluedSize = regexp.MustCompile(`^([a-z][a-z0-9]{2,}?)(xxl|xl|large|base|small)$`)

// figureUnit is a figure written with its unit: "76gb", "12ms", "8gpus".
var figureUnit = regexp.MustCompile(`^\d+(?:\.\d+)?([a-z]{2,4})$`)

// greekNames spells out the Greek letters papers use for hyperparameters, so that the
// "beta1" and "beta2" of a question are found in "β1 = 0.9, β2 = 0.95".
var greekNames = map[rune]string{
	'α': "alpha", 'β': "beta", 'γ': "gamma", 'δ': "delta", 'ε': "epsilon", 'ϵ': "epsilon",
	'η': "eta", 'θ': "theta", 'λ': "lambda", 'μ': "mu", 'ρ': "rho", 'σ': "sigma", 'τ': "tau",
}

// stemOf stems one lower-case word as terms does.
func stemOf(w string) string {
	if t := terms(w); len(t) == 1 {
		return t[0]
	}
	return w
}

// at returns the positions where the item, or else one of its alternatives, occurs.
func (ix *evidenceIndex) at(it keyItem) []int {
	pos := ix.atItem(it)
	for _, a := range it.alts {
		if len(pos) > 0 {
			break
		}
		pos = ix.atItem(a)
	}
	return pos
}

func (ix *evidenceIndex) atItem(it keyItem) []int {
	if pos := ix.spelled(it, ix.grams[it.key]); len(pos) > 0 {
		return pos
	}
	if it.hard {
		// "1.4T-token" is the paper's "1.4T tokens", "12-layer" its "12 layers".
		if pluralable.MatchString(it.text) {
			if pos := ix.grams[it.key+"s"]; len(pos) > 0 {
				return pos
			}
		}
		// "BiLSTM" is the paper's "two BiLSTMs".
		if strings.ContainsFunc(it.text, unicode.IsUpper) && !pluralable.MatchString(it.text) {
			if pos := ix.grams[it.key+"s"]; len(pos) > 0 {
				return pos
			}
		}
		// "SQuAD 1.1" is "SQuAD v1.1".
		if k := versionV.ReplaceAllString(it.key, "$1$2"); k != it.key {
			if pos := ix.grams[k]; len(pos) > 0 {
				return pos
			}
		}
		if ws := strings.Fields(it.text); len(ws) == 2 && it.text != strings.ToLower(it.text) {
			// A model and its size come in either order: the user's "XXL DSI" is the
			// table's "DSI XXL".
			if pos := ix.grams[squeeze(ws[1])+squeeze(ws[0])]; len(pos) > 0 {
				return pos
			}
		}
		// The user's "79k" rounds the table's "79,168".
		if m := roundFigure.FindStringSubmatch(it.text); m != nil {
			if pos := ix.rounded(m[1], map[string]int{"k": 3, "m": 6}[strings.ToLower(m[2])]); len(pos) > 0 {
				return pos
			}
		}
		// "Natural Questions" is the "NQ" of a results table's header, in capitals: the
		// "et" of "et al." is no "Evolved Transformer".
		if k := titleInitials(it.text); k != "" {
			if pos := ix.inCapitals(ix.grams[k]); len(pos) > 0 {
				return pos
			}
		}
		// "CommonsenseQA" is the "CSQA" of the chain-of-thought paper's tables.
		if pos := ix.camelShort(it.text); len(pos) > 0 {
			return pos
		}
		// "rank-8" is the "r = 8" of LoRA's tables and formulas, as low-rank papers write it.
		if m := rankKey.FindStringSubmatch(it.key); m != nil {
			if pos := ix.grams["r"+m[1]]; len(pos) > 0 {
				return pos
			}
		}
		// "RAG-Sequence" is the "RAG-Seq." of a results table, which clips a long last word
		// with a full stop.
		if pos := ix.clippedName(it.text); len(pos) > 0 {
			return pos
		}
		// "ROUGE-1" is the "R-1" of a results table's header (GPT-2's summarization table).
		if m := rougeKey.FindStringSubmatch(it.key); m != nil {
			if pos := ix.grams["r"+m[1]]; len(pos) > 0 {
				return pos
			}
		}
		// "Euclidean" is the HNSW paper's "Euclid spaces": a name's adjective is found by
		// the name.
		for _, k := range nameOfAdjective(it) {
			if pos := ix.grams[k]; len(pos) > 0 {
				return pos
			}
		}
		if it.acro {
			k := strings.TrimSuffix(it.key, "s")
			return append(ix.spelled(it, ix.grams[k]), ix.acros[k]...)
		}
		if k := yearVariant(it.key); k != "" {
			return ix.grams[k]
		}
		return nil
	}
	if it.stem != "" {
		return ix.stems[it.stem]
	}
	// A soft compound ("in-batch"): where its first part is, when every part occurs.
	ts := terms(it.text)
	for _, t := range ts {
		if len(ix.stems[t]) == 0 {
			return nil
		}
	}
	if len(ts) == 0 {
		return nil
	}
	return ix.stems[ts[0]]
}

// clippedName returns where a table writes the two-word name with its last word clipped
// to three letters or more and a full stop: "RAG-Seq." for "RAG-Sequence". A last word of
// under five letters is too short to clip.
func (ix *evidenceIndex) clippedName(name string) []int {
	ws, _ := segWords(name)
	if len(ws) != 2 || !isLetters(ws[1]) || utf8.RuneCountInString(ws[1]) < 5 {
		return nil
	}
	last := []rune(ws[1])
	var out []int
	for n := 3; n < len(last); n++ {
		out = append(out, ix.clipped[ws[0]+string(last[:n])]...)
	}
	slices.Sort(out)
	return out
}

// isLetters reports a word of letters only.
func isLetters(w string) bool {
	return w != "" && !strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) })
}

// rougeKey is the key of a ROUGE variant: "ROUGE-1", "ROUGE-L", "ROUGE-AVG".
var rougeKey = regexp.MustCompile(`^rouge(\d|l|avg)$`)

// rankKey is the key of a rank a question names as one word: "rank-8", "rank-64".
var rankKey = regexp.MustCompile(`^rank(\d+)$`)

// nameOfAdjective returns the keys of the name a capitalised adjective is made from:
// "Euclidean" → "euclid", "Gaussian" → "gauss", "Laplacian" → "laplac" or "laplace". A
// root shorter than four letters is too common a prefix to be a name.
func nameOfAdjective(it keyItem) []string {
	r, _ := utf8.DecodeRuneInString(it.text)
	if !unicode.IsUpper(r) || strings.ContainsAny(it.text, " -") {
		return nil
	}
	for _, end := range []string{"ean", "ian"} {
		if root, ok := strings.CutSuffix(it.key, end); ok && len(root) >= 4 && !strings.ContainsAny(root, "0123456789") {
			return []string{root, root + "e"}
		}
	}
	return nil
}

// spelled keeps the places of a capitals-only name (keyItem.caps) where the evidence
// writes it so; others are all kept.
func (ix *evidenceIndex) spelled(it keyItem, pos []int) []int {
	if !it.caps {
		return pos
	}
	return ix.inCapitals(pos)
}

// inCapitals keeps the places where the word is written with more than one capital.
func (ix *evidenceIndex) inCapitals(pos []int) []int {
	var out []int
	for _, p := range pos {
		if !ix.plain[p] {
			out = append(out, p)
		}
	}
	return out
}

// roundFigure is a figure rounded to thousands or millions: "79k", "2M".
var roundFigure = regexp.MustCompile(`^(\d+)([kKmM])$`)

// rounded returns where a whole number that lead rounds to, with zeros digits dropped,
// occurs: lead "79" and 3 zeros for "79,168".
func (ix *evidenceIndex) rounded(lead string, zeros int) []int {
	var out []int
	for g, pos := range ix.grams {
		if len(g) == len(lead)+zeros && strings.HasPrefix(g, lead) && strings.Trim(g, "0123456789") == "" {
			out = append(out, pos...)
		}
	}
	slices.Sort(out)
	return out
}

// camelTail is one word or several run together, each capitalised, ending in a run of
// capitals: "CommonsenseQA", "StrategyQA".
var camelTail = regexp.MustCompile(`^[A-Z][a-z]+(?:[A-Z][a-z]+)*([A-Z]{2,})$`)

// camelShort returns where a short form of a camel-case name occurs: a word of at most six
// letters that starts with the name's first letter, ends in its capitals and spells at
// least one letter between from the words between, in order ("CSQA" for "CommonsenseQA"),
// and that is not the name's own end. The bare "CQA" is none: every name of a C and a QA
// would be it. The capitals at the end keep it to the names papers shorten so, datasets
// ending in "QA".
func (ix *evidenceIndex) camelShort(text string) []int {
	m := camelTail.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	key := strings.ToLower(text)
	tail := strings.ToLower(m[1])
	mid := key[1 : len(key)-len(tail)]
	var out []int
	for g, pos := range ix.grams {
		// A name grown at its front is another model: "LongLoRA" is not "LoRA".
		if len(g) < len(tail)+2 || len(g) > 6 || g[0] != key[0] || !strings.HasSuffix(g, tail) || strings.HasSuffix(key, g) {
			continue
		}
		if subsequence(g[1:len(g)-len(tail)], mid) {
			out = append(out, pos...)
		}
	}
	slices.Sort(out)
	return out
}

// subsequence reports whether the letters of s occur in t in order.
func subsequence(s, t string) bool {
	for i := 0; i < len(s); i++ {
		j := strings.IndexByte(t, s[i])
		if j < 0 {
			return false
		}
		t = t[j+1:]
	}
	return true
}

// titleInitials returns the lower-cased initials of a name of two or more capitalised
// words ("Natural Questions" → "nq", "Tree of Thoughts" → "tot"), or "".
func titleInitials(text string) string {
	ws := strings.Fields(text)
	if len(ws) < 2 {
		return ""
	}
	var b strings.Builder
	for _, w := range ws {
		r, _ := utf8.DecodeRuneInString(w)
		switch {
		case isTitle(w) && !isAcronym(w):
			b.WriteRune(unicode.ToLower(r))
		case !unicode.IsLower(r):
			return ""
		}
	}
	return b.String()
}

var (
	// pluralable is a hyphenated name ending in a lower-case word.
	pluralable = regexp.MustCompile(`[-–]\p{Ll}+$`)
	// versionV is a version written with a "v": the "v1" of "squadv11".
	versionV  = regexp.MustCompile(`([a-z])v(\d)`)
	shortYear = regexp.MustCompile(`^([a-z]{2,})(\d\d)$`)
	longYear  = regexp.MustCompile(`^([a-z]{2,})(?:19|20)(\d\d)$`)
)

// yearVariant spells a name's year the other way: "wmt14" and "wmt2014" are the same
// workshop, "conll03" and "conll2003" the same shared task.
func yearVariant(key string) string {
	if m := longYear.FindStringSubmatch(key); m != nil {
		return m[1] + m[2]
	}
	if m := shortYear.FindStringSubmatch(key); m != nil {
		century := "20"
		if m[2] >= "50" {
			century = "19"
		}
		return m[1] + century + m[2]
	}
	return ""
}

// covers reports whether the evidence contains the item.
func (ix *evidenceIndex) covers(it keyItem) bool { return len(ix.at(it)) > 0 }

// near reports whether the item occurs within dist words of the span [lo, hi].
func (ix *evidenceIndex) near(it keyItem, lo, hi, dist int) bool {
	for _, p := range ix.at(it) {
		if p >= lo-dist && p <= hi+dist {
			return true
		}
	}
	return false
}

// corpusIDF returns a function giving a word's BM25 inverse document frequency in the
// corpus relative to the largest there is (that of a word no chunk contains, so 1 means
// unseen), read from the sparse query encoder: a query's weight for a term is its IDF.
// Without BM25 every word weighs 1 and none is rare.
func (p *Pipeline) corpusIDF(enc SparseEncoder, question string) func(string) float64 {
	if enc == nil {
		return func(string) float64 { return 0.5 }
	}
	const unseenWord = "qzxjvwkfootnoteunseen"
	// One encoding of the whole question first: an encoder that reads statistics from the
	// store (Milvus) keeps them, so the words asked for below cost no further round trips.
	enc.EncodeQuery(question + " " + unseenWord)
	unseen := sparseSum(enc.EncodeQuery(unseenWord))
	if unseen <= 0 {
		return func(string) float64 { return 0.5 }
	}
	return func(w string) float64 {
		v := enc.EncodeQuery(w)
		if len(v.Indices) == 0 {
			return 0 // a stopword to BM25
		}
		return min(sparseSum(v)/float64(len(v.Indices))/unseen, 1)
	}
}

func sparseSum(v SparseVector) float64 {
	var s float64
	for _, x := range v.Values {
		s += float64(x)
	}
	return s
}

// gate checks the kept evidence against the question's key items. candidates (the kept
// evidence and those below the cut) are searched for a near variant of a missing name to
// say what the papers do mention ("GPT-3" for "GPT-4").
//
// Hard items must all appear in one kept passage: a question relating two things ("GPT-4"
// and "MMLU") is not answered by one passage naming each. A hard item the passages lack
// still counts when their document uses it elsewhere (a paper's own short name, "T5",
// appears in few of its passages); a BM25 search within the kept documents finds out.
// When the hard items are spread over passages, those naming the other items only in the
// title of their own paper still count: a question comparing two papers is answered from
// both.
func (p *Pipeline) gate(ctx context.Context, question string, kept, candidates []Chunk) gateResult {
	return p.gateIn(ctx, question, kept, candidates, false)
}

// gateIn is gate for a question that may be an elliptical follow-up kept in its thread
// (inThread): its subject is the thread's, so a word of its own that the corpus never uses
// ("once they bolt on the calculator") is the asker's, as it is beside a name the
// evidence holds.
func (p *Pipeline) gateIn(ctx context.Context, question string, kept, candidates []Chunk, inThread bool) gateResult {
	authors, authorNames := p.authorPapers(ctx, question)
	items := withoutNames(questionItems(question), authorNames)
	res := gateResult{coverage: 1}
	if len(items) == 0 || len(kept) == 0 {
		return res
	}
	var enc SparseEncoder
	if p.cfg.Sparse != nil {
		e, err := p.sparse(ctx)
		if err != nil {
			p.log.Warn("evidence gate: no corpus statistics; weighing words alike", "err", err)
		} else {
			enc = e
		}
	}
	idf := p.corpusIDF(enc, question)
	rarity := func(text string) float64 {
		r := 0.0
		for _, w := range words(text) {
			r = max(r, idf(w))
		}
		return r
	}
	// A capitalised word the corpus rarely uses is a name the question hinges on.
	for i, it := range items {
		if it.name && rarity(it.text) >= rareIDF {
			items[i].hard = true
		}
	}

	p.log.DebugContext(ctx, "evidence gate", "items", fmt.Sprintf("%+v", items))

	chunkIx := make([]*evidenceIndex, len(kept))
	all := newEvidenceIndex()
	results := asksResult.MatchString(question)
	for i, c := range kept {
		body := withoutReferences(c.Text)
		// A paper's related work names the benchmarks and models of other work, which it
		// does not run: "What accuracy does DrQA get on SimpleQuestions?" is not answered
		// by DrQA's survey of the KB-QA datasets. Its passages hold no names for a question
		// asking for a result; the paper's other passages still may.
		if results && surveyOnly(c, body) {
			chunkIx[i] = newEvidenceIndex()
		} else {
			chunkIx[i] = newEvidenceIndex(body, strings.Join(c.Section, " "))
		}
		all.add(body)
		all.add(c.Title)
		all.add(strings.Join(c.Section, " "))
	}

	var hard []keyItem
	total, covered := 0.0, 0.0
	type soft struct {
		it      keyItem
		covered bool
		rare    bool
	}
	var softs []soft
	for _, it := range items {
		if it.hard {
			hard = append(hard, it)
			continue
		}
		w := 0.0
		for _, t := range words(it.text) {
			w += idf(t)
		}
		it.weight = w
		c := all.covers(it)
		softs = append(softs, soft{it, c, rarity(it.text) >= unseenIDF})
		total += w
		if c {
			covered += w
		}
	}

	var owners []string
	if len(hard) > 0 {
		owners = p.owners(ctx, hard, enc)
		missing, apart, holders := p.hardCoverage(ctx, hard, owners, kept, chunkIx, enc)
		res.holders = holders
		switch {
		case len(missing) > 0:
			res.missing = itemTexts(missing)
			res.explain = explainMissing(missing, candidates)
			if results {
				res.explain, res.surveyed = explainSurveyed(missing, kept, res.explain)
			}
			return res
		case len(apart) > 0:
			res.missing = itemTexts(apart)
			res.explain = explainApart(hard, apart)
			return res
		}
		// Names found count toward the coverage of the question's weight.
		total += float64(len(hard))
		covered += float64(len(hard))
	}
	if total > 0 {
		res.coverage = covered / total
	}
	named := slices.ContainsFunc(res.holders, func(h int) bool { return h > 0 })
	subject := withAuthorPapers(subjectPapers(kept, res.holders), kept, authors, named)
	if miss, why := p.unstatedAttributes(ctx, question, subject, qualifiers(hard, owners, subject), enc); len(miss) > 0 {
		res.missing = itemTexts(miss)
		res.explain = cmp.Or(why, explainMissing(miss, nil))
		return res
	}
	if res.coverage >= gateCoverage {
		return res
	}
	sort.SliceStable(softs, func(i, j int) bool { return softs[i].it.weight > softs[j].it.weight })
	var miss []keyItem
	rareMissing := false
	for _, s := range softs {
		if !s.covered {
			rareMissing = rareMissing || s.rare
			if len(miss) < gateMaxMissing {
				miss = append(miss, s.it)
			}
		}
	}
	// A question naming what the papers hold ("Does DrQA lean on the links between
	// Wikipedia pages?") is on them: a word they never use is the asker's ("lean", "dig
	// up"), not a subject they lack. So is one naming the authors of a kept paper ("What
	// do Vaswani et al. point to that makes parsing awkward?"). Off-topic questions name
	// nothing the papers hold.
	byAuthors := slices.ContainsFunc(kept, func(c Chunk) bool { return slices.Contains(authors, c.DocID) })
	if !rareMissing || inThread || byAuthors || slices.ContainsFunc(hard, func(it keyItem) bool { return !isNumber(it.text) }) {
		return res
	}
	for _, it := range miss {
		res.missing = append(res.missing, it.text)
	}
	res.explain = explainMissing(miss, nil)
	return res
}

// explainSurveyed says which missing names the kept papers name only in their related
// work: saying they do not mention them would be untrue.
func explainSurveyed(missing []keyItem, kept []Chunk, explain string) (string, bool) {
	var surveyed []string
	for _, it := range missing {
		for _, c := range kept {
			if body := withoutReferences(c.Text); surveyOnly(c, body) && newEvidenceIndex(body).covers(it) {
				surveyed = append(surveyed, it.text)
				break
			}
		}
	}
	if len(surveyed) == 0 {
		return explain, false
	}
	if len(surveyed) == len(missing) {
		return "The papers name " + joinAnd(surveyed) + " only in their related work, with no result.", true
	}
	return explain + " They name " + joinAnd(surveyed) + " only in their related work, with no result.", true
}

// asksResult is a question asking for a result: a score, an accuracy, an error rate.
var asksResult = regexp.MustCompile(`(?i)\b(?:accuracy|accurate|scores?|scored|f1|exact[- ]match|em|bleu|rouge(?:-\w+)?|perplexity|error rate|hits@\d+|recall@\d+|mrr|ndcg(?:@\d+)?|top-\d+)\b`)

// surveyOnly reports a passage of a paper's survey of other work that gives no result of
// its own: a table floated into the related-work pages (QLoRA's CrowS scores) does.
func surveyOnly(c Chunk, body string) bool {
	return surveySection(c.Section) && !resultFigure.MatchString(body)
}

// resultFigure is a figure as results are given: "65.3", "82%".
var resultFigure = regexp.MustCompile(`\b\d+\.\d+\b|\d%`)

// surveySection reports whether a passage is in a paper's survey of other work.
func surveySection(section []string) bool {
	for _, s := range section {
		if surveyHeading.MatchString(s) {
			return true
		}
	}
	return false
}

var surveyHeading = regexp.MustCompile(`(?i)^[\s\d.]*(?:related work|background|prior work|previous work|literature review)`)

// hardCoverage checks the hard items against the kept passages. missing are those neither
// a kept passage nor the rest of a kept document contains; apart are those no passage
// names within coWindow words of the others (a bare number, or the one item of four or
// more the best passage lacks, excepted). An item in a passage's title, owned by its
// paper (owners, per item) or found elsewhere in its document is taken to be everywhere in
// the passage.
func (p *Pipeline) hardCoverage(ctx context.Context, hard []keyItem, owners []string, kept []Chunk, chunkIx []*evidenceIndex, enc SparseEncoder) (missing, apart []keyItem, holders []int) {
	// named[i][j]: passage i's paper names item j in its title or owns it.
	named := make([][]bool, len(kept))
	// lent[i][j]: passage i's paper names item j in its title or uses it throughout.
	lent := make([][]bool, len(kept))
	// everywhere[i][j]: passage i holds item j through its paper's name or its document.
	everywhere := make([][]bool, len(kept))
	for i, c := range kept {
		named[i] = make([]bool, len(hard))
		lent[i] = make([]bool, len(hard))
		everywhere[i] = make([]bool, len(hard))
		tix := newEvidenceIndex(c.Title)
		for j, it := range hard {
			lent[i][j] = tix.covers(it) || titleNames(c.Title, it)
			named[i][j] = lent[i][j] || (owners[j] != "" && c.DocID == owners[j])
			everywhere[i][j] = named[i][j]
		}
	}
	for j, it := range hard {
		found := false
		for i := range kept {
			found = found || everywhere[i][j] || chunkIx[i].covers(it)
		}
		if found {
			continue
		}
		docs := p.docsUsing(ctx, it, kept, enc)
		for i, c := range kept {
			if docs[c.DocID] {
				everywhere[i][j], lent[i][j] = true, true
				found = true
			}
		}
		if !found {
			missing = append(missing, it)
		}
	}
	if len(missing) > 0 {
		return missing, nil, nil
	}
	// The best passage holds the most items together; one holding all settles it.
	holders = make([]int, len(kept))
	bestN, best, bestAt := -1, []bool(nil), 0
	for i := range kept {
		together := windowCover(hard, chunkIx[i], everywhere[i])
		n := 0
		for _, ok := range together {
			if ok {
				n++
			}
		}
		holders[i] = n
		for j := range hard {
			if named[i][j] {
				holders[i]++
				break
			}
		}
		if n > bestN {
			bestN, best, bestAt = n, together, i
		}
	}
	// The more a question names, the less likely one passage spells it all within a
	// window: one holding all but one of four or more, the last found in the kept papers,
	// is on the question.
	if len(hard) >= looseItems && bestN >= len(hard)-1 {
		return nil, nil, holders
	}
	// A table sets its row names, column heads and figures further apart than a sentence
	// does ("LTR & No NSP … 77.8" under "SQuAD (F1)"), so a question on one quotes a
	// passage holding only some of its items within a window. When the best passage holds
	// two or more of three or more items together and its own paper uses each of the
	// others, the paper is on the question; a near miss names something its paper lacks.
	if len(hard) >= tableItems && bestN >= 2 && p.docUsesAll(ctx, kept[bestAt], hard, best, enc) {
		return nil, nil, holders
	}
	// A two-name question on a results table ("What BLEU does GNMT+RL get?") names a
	// column and a row: the table gives "BLEU" in its header and the row's figures beside
	// "GNMT + RL [38] 24.6 39.92", further apart than the window. A passage holding both,
	// one as a row of a table the other heads, is on the question.
	if len(hard) == 2 && bestN < 2 {
		for i, c := range kept {
			if !chunkIx[i].covers(hard[0]) || !chunkIx[i].covers(hard[1]) {
				continue
			}
			ws, _ := segWords(withoutReferences(c.Text))
			if tableRow(ws, chunkIx[i], hard[0], hard[1]) || tableRow(ws, chunkIx[i], hard[1], hard[0]) {
				return nil, nil, holders
			}
		}
	}
	// The best passage's paper is named by an item of the question: the question may
	// compare it with the papers owning the others.
	comparing := false
	for j := range hard {
		comparing = comparing || (best[j] && named[bestAt][j])
	}
	// When the question names the best passage's paper and another, a passage of the
	// other holding the item answers for it: "… and what SST-2 accuracy does DeBERTa XXL
	// get with LoRA?" is answered by LoRA's passage on DeBERTa XXL beside InstructGPT's
	// table. A paper the question does not name does not: another paper's BoolQ does not
	// answer for InstructGPT's, nor T5's CNN/Daily Mail scores for LoRA's.
	namesPaper := func(i int) int {
		for k, it := range hard {
			if named[i][k] && !isNumber(it.text) && !sizeCount.MatchString(it.text) {
				return k
			}
		}
		return -1
	}
	ownPassage := func(i, j int) bool {
		if kept[i].DocID == kept[bestAt].DocID || !chunkIx[i].covers(hard[j]) || namesPaper(bestAt) < 0 {
			return false
		}
		k := namesPaper(i)
		return k >= 0 && k != j
	}
	if bestN < len(hard) {
		for j, it := range hard {
			if best[j] {
				continue
			}
			// A bare number is the question's premise ("in its top 5", "all 16
			// languages") more often than what it hinges on: found, it need not be near.
			if isNumber(it.text) {
				continue
			}
			// Another kept paper whose title names it, or whose document uses it, answers
			// for it: a question comparing two papers is answered from both. A paper owning
			// it answers for it when the question compares papers, or when its passage
			// holds another of the question's items: "InstructGPT on GSM8K" is not
			// answered by an InstructGPT passage without GSM8K beside another paper's
			// GSM8K passage.
			titled := false
			for i := range kept {
				titled = titled || lent[i][j] || (named[i][j] && (comparing || holdsOther(hard, j, chunkIx[i]))) || ownPassage(i, j)
			}
			if !titled {
				apart = append(apart, it)
			}
		}
	}
	return nil, apart, holders
}

// tableRow reports whether the text holds row as a row of a table whose header or
// caption names col: two figures follow the row's name within rowSpan words ("ConvS2S [9]
// 25.16 40.46"), and the words between it and col are a table's, at least tableShare of
// them figures, within tableSpan words. QLoRA names MMLU in prose and GPT-4 in a table
// of Elo ratings, which is no table of GPT-4's MMLU.
//
// ws are the words of the passage without its references, and ix its evidence index,
// whose first len(ws) places are those words (the section heading follows them).
func tableRow(ws []string, ix *evidenceIndex, row, col keyItem) bool {
	figures := make([]int, len(ws)+1) // figures[i]: figures among ws[:i]
	for i := range ws {
		figures[i+1] = figures[i]
		if isFigure(ws, i) {
			figures[i+1]++
		}
	}
	for _, p := range ix.at(row) {
		if p >= len(ws) || figures[min(p+1+rowSpan, len(ws))]-figures[p+1] < 2 {
			continue
		}
		for _, q := range ix.at(col) {
			if q >= len(ws) {
				continue
			}
			lo, hi := min(p, q), max(p, q)
			if hi-lo <= tableSpan && float64(figures[hi+1]-figures[lo]) >= tableShare*float64(hi-lo+1) {
				return true
			}
		}
	}
	return false
}

const (
	// rowSpan is how far after a row's name its figures are looked for: the name may run
	// to several words and a citation ("GNMT + RL [38] 24.6 39.92").
	rowSpan = 6
	// tableSpan and tableShare bound a table between its header and a row: in the
	// Transformer's Table 2 a fifth of the words between "BLEU" and "GNMT + RL" are
	// figures, in prose hardly any.
	tableSpan  = 150
	tableShare = 0.2
)

// docUsesAll reports whether the document of the passage c contains every hard item
// that held is false for, bare numbers aside, found by a BM25 search within it. Without
// BM25 it cannot tell and reports false.
func (p *Pipeline) docUsesAll(ctx context.Context, c Chunk, hard []keyItem, held []bool, enc SparseEncoder) bool {
	for j, it := range hard {
		if held[j] || isNumber(it.text) {
			continue
		}
		covers := func(text string) bool { return newEvidenceIndex(withoutReferences(text)).covers(it) }
		if p.docPassages(ctx, it.searchText(), rescueHits, covers, []Chunk{c}, enc)[c.DocID] == 0 {
			return false
		}
	}
	return true
}

// holdsOther reports whether the passage contains a hard item other than the j-th.
func holdsOther(hard []keyItem, j int, ix *evidenceIndex) bool {
	for k, it := range hard {
		if k != j && ix.covers(it) {
			return true
		}
	}
	return false
}

// windowCover finds where in the passage the most hard items occur within coWindow words
// of one another, and reports which items that is. Items the passage holds everywhere
// need no place.
func windowCover(hard []keyItem, ix *evidenceIndex, everywhere []bool) []bool {
	together := make([]bool, len(hard))
	copy(together, everywhere)
	var anchors []int
	for j, it := range hard {
		if !everywhere[j] {
			anchors = append(anchors, ix.at(it)...)
		}
	}
	bestN := -1
	for _, a := range anchors {
		cur := make([]bool, len(hard))
		n := 0
		for j, it := range hard {
			cur[j] = everywhere[j] || ix.near(it, a, a, coWindow)
			if cur[j] {
				n++
			}
		}
		if n > bestN {
			bestN, together = n, cur
		}
	}
	return together
}

func itemTexts(items []keyItem) []string {
	var out []string
	for _, it := range items[:min(len(items), gateMaxMissing)] {
		out = append(out, it.text)
	}
	return out
}

// docsUsing returns the kept documents whose other passages contain the item, found by a
// BM25 search for it within those documents. Without BM25 it finds none.
func (p *Pipeline) docsUsing(ctx context.Context, it keyItem, kept []Chunk, enc SparseEncoder) map[string]bool {
	out := map[string]bool{}
	covers := func(text string) bool { return newEvidenceIndex(text).covers(it) }
	for id, k := range p.docPassages(ctx, it.searchText(), rescueHits, covers, kept, enc) {
		// A passing mention (BERT's introduction names ImageNet once) is not the paper
		// being about it.
		if k >= rescueMentions {
			out[id] = true
		}
	}
	return out
}

// docPassages counts, per kept document, the passages among the best limit that a
// BM25 search for query finds within the kept documents and that match. It is nil when
// there is nothing to search with or the search fails: the caller cannot tell absence
// from failure then, and must not refuse on it.
func (p *Pipeline) docPassages(ctx context.Context, query string, limit int, match func(text string) bool, kept []Chunk, enc SparseEncoder) map[string]int {
	var ids []string
	seen := map[string]bool{}
	for _, c := range kept {
		if c.DocID != "" && !seen[c.DocID] {
			seen[c.DocID] = true
			ids = append(ids, c.DocID)
		}
	}
	hits, ok := p.searchDocs(ctx, enc, query, limit, ids)
	if !ok {
		return nil
	}
	n := map[string]int{}
	for _, h := range hits {
		if seen[h.Chunk.DocID] && match(h.Chunk.Text) {
			n[h.Chunk.DocID]++
		}
	}
	return n
}

// searchDocs is a BM25 search for query within the documents ids, deeper than
// retrieval's candidates; ok is false when it could not look (no encoder, a query with no
// indexed term, no documents, or the search failed).
func (p *Pipeline) searchDocs(ctx context.Context, enc SparseEncoder, query string, limit int, ids []string) (hits []Hit, ok bool) {
	if enc == nil || len(ids) == 0 {
		return nil, false
	}
	v := enc.EncodeQuery(query)
	if len(v.Indices) == 0 {
		return nil, false
	}
	hits, err := p.cfg.Searcher.Search(ctx, SearchRequest{Sparse: &v, Limit: limit, Filter: Filter{DocIDs: ids}})
	if err != nil {
		p.log.Warn("search the kept documents", "err", err)
		return nil, false
	}
	return hits, true
}

// explainApart says which names the passages hold only separately.
func explainApart(hard, apart []keyItem) string {
	isApart := map[string]bool{}
	for _, it := range apart {
		isApart[it.key] = true
	}
	var with, without []string
	for _, it := range hard {
		if isApart[it.key] {
			without = append(without, it.text)
		} else {
			with = append(with, it.text)
		}
	}
	if len(with) == 0 {
		return "The papers do not mention " + joinAnd(without) + " together."
	}
	return "The passages that mention " + joinAnd(with) + " do not mention " + joinOr(without) + "."
}

func joinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// explainMissing says what the evidence lacks: "The papers mention GPT-3, but not GPT-4."
// for a name with a variant in the candidates, else "The papers do not mention X or Y."
func explainMissing(missing []keyItem, candidates []Chunk) string {
	var parts []string
	var plain []string
	used := map[string]bool{}
	// A variant that is itself missing ("beta2" beside "beta1") is not one the papers
	// mention in the kept evidence: naming it would say both that they do and do not.
	for _, it := range missing {
		used[squeeze(it.text)] = true
	}
	for _, it := range missing[:min(len(missing), gateMaxMissing)] {
		if v := variantOf(it, candidates); v != "" && !used[squeeze(v)] {
			used[squeeze(v)] = true
			parts = append(parts, "The papers mention "+v+", but not "+it.text+".")
			continue
		}
		plain = append(plain, it.text)
	}
	if len(plain) > 0 {
		parts = append(parts, "The papers do not mention "+joinOr(plain)+".")
	}
	return strings.Join(parts, " ")
}

func joinOr(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// variantOf finds, in the candidates' text, the most frequent name sharing the missing
// name's stem — its first run of letters — but not the name itself: "GPT-3" for "GPT-4",
// "Sentence-BERT" for "Sentence-T5", "LLaMA" for "LLaMA 2". A variant of the same shape
// (stem and a number) wins over the bare stem, and the bare stem over other forms.
func variantOf(it keyItem, candidates []Chunk) string {
	base := strings.ToLower(leadingLetters(it.text))
	if len(base) < 2 || base == it.key {
		return ""
	}
	rest := it.key[len(base):]
	shapeNum := rest != "" && isNumber(rest)
	// A version follows the name with a hyphen or a number: "GPT-4", "RoBERTa-XL",
	// "LLaMA 2", "DEEP1B"; a second word does not ("MS MARCO").
	after := strings.TrimSpace(it.text[len(leadingLetters(it.text)):])
	versioned := rest != "" && after != "" && (after[0] == '-' || unicode.IsDigit(rune(after[0])))
	count := map[string]int{}
	surface := map[string]string{}
	for _, c := range candidates {
		for _, w := range nameTokens(c.Title + " " + c.Text) {
			k := squeeze(w)
			if k == it.key || !strings.HasPrefix(k, base) {
				continue
			}
			tail := k[len(base):]
			if tail != "" && !strings.ContainsAny(w, "-–0123456789") {
				continue // "Sentences" is not a variant of "Sentence-T5"
			}
			if tail == "" && (!innerCapital(w) || !versioned) {
				// Nor is a capitalised "Sentence"; "LLaMA" and "GPT" are names, but only
				// versions of "LLaMA 2" and "GPT-4": "MS" is not one of "MS MARCO".
				continue
			}
			if _, ok := surface[k]; !ok {
				surface[k] = w
			}
			count[k]++
		}
	}
	best, bestRank, bestN := "", -1, 0
	for k, n := range count {
		tail := k[len(base):]
		rank := 0
		switch {
		case shapeNum && tail != "" && isNumber(tail):
			rank = 2
		case tail == "":
			rank = 1
		}
		if rank > bestRank || (rank == bestRank && (n > bestN || (n == bestN && k < best))) {
			best, bestRank, bestN = k, rank, n
		}
	}
	if best == "" {
		return ""
	}
	return surface[best]
}

func leadingLetters(s string) string {
	for i, r := range s {
		if !unicode.IsLetter(r) {
			return s[:i]
		}
	}
	return s
}

// nameTokens are the words of a text that look like names: hyphenated, with digits or
// with a capital.
// A name followed by a bare number is also given whole ("WMT 2014"), as the question's
// "WMT 2016" is one item.
func nameTokens(text string) []string {
	var ws []string
	for _, f := range strings.Fields(text) {
		w := strings.Trim(f, trimToken+"-–")
		for _, suf := range []string{"'s", "’s"} {
			w = strings.TrimSuffix(w, suf)
		}
		ws = append(ws, w)
	}
	var out []string
	for i, w := range ws {
		if w == "" {
			continue
		}
		r, _ := utf8.DecodeRuneInString(w)
		if unicode.IsUpper(r) || strings.ContainsAny(w, "0123456789") {
			out = append(out, w)
			if i+1 < len(ws) && unicode.IsUpper(r) && isNumber(ws[i+1]) {
				out = append(out, w+" "+ws[i+1])
			}
		}
	}
	return out
}

// numberWords are the numbers papers spell out.
var numberWords = map[string]string{
	"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
	"eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20",
	"hundred": "100", "thousand": "1000",
}

// withoutReferences drops the reference-list entries of a passage: a name in a cited
// title ("Claude E Shannon. 1948. A mathematical theory …") is not the passage
// discussing it. Entries are paragraphs; sentences would cut them into fragments.
func withoutReferences(text string) string {
	var out []string
	for _, para := range strings.Split(normalizeText(text), "\n\n") {
		if !isReference(para) {
			out = append(out, para)
		}
	}
	return strings.Join(out, "\n\n")
}

// arxivCitation is how a reference entry cites arXiv: "arXiv preprint", "arXiv:1705.02798",
// "arxiv.org/abs/…", "ArXiv, abs/1907.11692", "arXiv e-prints".
var arxivCitation = regexp.MustCompile(`(?i)arxiv(?:\s+preprint|\s*:\s*\d|\.org|,?\s*abs/|\s+e-prints)`)

// citationStyle is an entry in author-year style: "Claude E Shannon. 1948. A …".
var citationStyle = regexp.MustCompile(`^[\p{Lu}][^.]{1,120}\.\s(19|20)\d\d[a-z]?\.\s`)

// isReference reports a bibliography entry: a year with a venue, an author list, a URL.
// Each kind of venue word counts once: a body paragraph with two links (a paper's
// appendix on its code and demo) is not a reference list.
func isReference(s string) bool {
	kinds := map[string]bool{}
	for _, m := range bibliographic.FindAllString(s, -1) {
		kinds[strings.ToLower(m)] = true
	}
	// arXiv is also a source of data: LLaMA's "We process arXiv Latex files … Following
	// Lewkowycz et al. (2022)" is body text, and read as a reference its "LaTeX" was
	// missing from the papers. An entry cites it as a preprint or by its number.
	if kinds["arxiv"] && !arxivCitation.MatchString(s) {
		delete(kinds, "arxiv")
	}
	signals := min(len(kinds), 3)
	if yearPattern.MatchString(s) {
		signals++
	}
	if initialsName.MatchString(s) || refListStart.MatchString(s) || citationStyle.MatchString(s) {
		signals++
	}
	return signals >= 2
}
