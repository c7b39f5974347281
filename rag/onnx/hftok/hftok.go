// Package hftok reads any Hugging Face tokenizer.json — WordPiece (BERT, bge), Unigram
// (XLM-RoBERTa, multilingual-e5, bge-reranker) and byte-level BPE (RoBERTa, GPT-2) — through
// github.com/sugarme/tokenizer, and returns the ids the `tokenizers` library would.
//
// It is the one place that knows sugarme's defects; each fix below is pinned by a test:
//
//  1. BertNormalizer with "strip_accents": null is read as false, and sugarme strips accents
//     without decomposing first, so "café" became [UNK]. The BertNormalizer is footnote's
//     own (bert.go): null follows "lowercase" (as in `tokenizers`), stripping runs after NFD.
//  2. LongestFirst truncation of pairs is wrong (it can skip truncation) and
//  3. OnlyFirst/OnlySecond truncation calls log.Fatal, which would kill the server. sugarme
//     is therefore never asked to truncate, pad or post-process: segments are encoded
//     without special tokens and truncated here with tokenizers' LongestFirst arithmetic.
//  4. Special tokens are omitted unless asked, and its processors disagree with
//     `tokenizers` on type ids; the post_processor (Bert, Roberta or Template) is applied here.
//  5. A Replace normalizer with a regex pattern (XLM-R's " {2,}" → " ") is read as an empty
//     string pattern; it is rebuilt as a regex.
//  6. BertNormalizer's clean_text maps only ASCII whitespace to a space, so "a\u00a0b" or an
//     em space became [UNK]; bert.go maps all Unicode whitespace, as `tokenizers` does.
//  7. The Precompiled (SentencePiece charsmap) normalizer of XLM-R panics on some texts
//     (an index error in its offset bookkeeping); it is reimplemented here on sugarme's
//     charsmap trie, following tokenizers' precompiled.rs. Offsets are not kept: footnote
//     needs ids only.
//  8. Its BPE model breaks ties between equal merges wrongly (see bpe.go).
//  9. Its Metaspace pre-tokenizer is very slow (see Parse).
//
// sugarme panics on some configurations it does not implement (e.g. the Nmt normalizer);
// Load turns that into an error naming the file.
package hftok

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/rivo/uniseg"
	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/normalizer"
	"github.com/sugarme/tokenizer/pretrained"
	"github.com/sugarme/tokenizer/spm"
)

// Tokenizer is safe for concurrent use.
type Tokenizer struct {
	tk    *tokenizer.Tokenizer
	mu    sync.Mutex // sugarme's encoder is not documented as concurrency-safe
	tmpl  template
	pad   int32
	model string // "WordPiece", "Unigram" or "BPE"
}

// item is one element of a post-processing template: a special token, or sequence A/B.
type item struct {
	special bool
	id      int32
	seq     byte // 'A' or 'B' when !special
	typeID  int32
}

type template struct {
	single, pair []item
}

func (t template) added(pair bool) int {
	items := t.single
	if pair {
		items = t.pair
	}
	n := 0
	for _, it := range items {
		if it.special {
			n++
		}
	}
	return n
}

// Load reads a tokenizer.json.
func Load(path string) (*Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return t, nil
}

// Parse reads tokenizer.json content.
func Parse(b []byte) (t *Tokenizer, err error) {
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	model, _ := cfg["model"].(map[string]any)
	if model == nil {
		return nil, errors.New("no model")
	}
	typ, _ := model["type"].(string)
	switch typ {
	case "WordPiece", "Unigram", "BPE":
	default:
		return nil, fmt.Errorf("model type %q is not WordPiece, Unigram or BPE", typ)
	}
	tmpl, err := parseTemplate(cfg["post_processor"])
	if err != nil {
		return nil, err
	}
	// Fixes 2–4: sugarme gets no processor, truncation or padding to apply.
	normCfg, _ := cfg["normalizer"].(map[string]any)
	padCfg, _ := cfg["padding"].(map[string]any)
	cfg["normalizer"] = nil
	cfg["post_processor"] = nil
	cfg["truncation"] = nil
	cfg["padding"] = nil
	clean, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("unsupported tokenizer.json: %v", r)
		}
	}()
	tk, err := pretrained.FromReader(bytes.NewReader(clean))
	if err != nil {
		return nil, err
	}
	n, err := buildNormalizer(normCfg)
	if err != nil {
		return nil, err
	}
	if pre, _ := cfg["pre_tokenizer"].(map[string]any); pre != nil && pre["type"] == "Metaspace" {
		// Fix 9: sugarme's Metaspace replaces each space through an alignment rewrite that
		// made a 230-token text take 24 ms; replacing them first leaves it nothing to do.
		// The result is the same because Metaspace's first step is exactly this replace.
		if rep, _ := pre["replacement"].(string); rep != "" {
			spaces := stringNormalizer(func(s string) string { return strings.ReplaceAll(s, " ", rep) })
			if n == nil {
				n = spaces
			} else {
				n = normalizer.NewSequence([]normalizer.Normalizer{n, spaces})
			}
		}
	}
	tk.WithNormalizer(n)
	if typ == "BPE" {
		mo, err := newMergeOrder(tk.GetModel(), model)
		if err != nil {
			return nil, err
		}
		tk.WithModel(mo)
	}
	t = &Tokenizer{tk: tk, tmpl: tmpl, model: typ}
	t.pad = t.padID(padCfg)
	return t, nil
}

// buildNormalizer is pretrained.CreateNormalizer with fixes 1 and 5. A nil config is no
// normalizer.
func buildNormalizer(cfg map[string]any) (normalizer.Normalizer, error) {
	if cfg == nil {
		return nil, nil
	}
	switch cfg["type"] {
	case "BertNormalizer":
		lower, _ := cfg["lowercase"].(bool)
		strip := lower // "strip_accents": null follows lowercase, as in tokenizers
		if s, ok := cfg["strip_accents"].(bool); ok {
			strip = s
		}
		bn := bertNormalizer{strip: strip, lower: lower}
		bn.clean, _ = cfg["clean_text"].(bool)
		bn.chinese, _ = cfg["handle_chinese_chars"].(bool)
		return stringNormalizer(bn.normalize), nil
	case "Precompiled":
		data, _ := cfg["precompiled_charsmap"].(string)
		raw, err := spm.FromBase64(data)
		if err != nil {
			return nil, fmt.Errorf("Precompiled normalizer: %w", err)
		}
		pc, err := spm.NewPrecompiledFrom(raw)
		if err != nil {
			return nil, fmt.Errorf("Precompiled normalizer: %w", err)
		}
		return stringNormalizer(func(s string) string { return precompiled(pc, s) }), nil
	case "Replace":
		pat, _ := cfg["pattern"].(map[string]any)
		content, _ := cfg["content"].(string)
		if re, ok := pat["Regex"].(string); ok {
			return normalizer.NewReplace(normalizer.Regex, re, content), nil
		}
		if s, ok := pat["String"].(string); ok {
			return normalizer.NewReplace(normalizer.String, s, content), nil
		}
		return nil, fmt.Errorf("Replace normalizer without a pattern: %v", cfg)
	case "Sequence":
		list, _ := cfg["normalizers"].([]any)
		var out []normalizer.Normalizer
		for _, c := range list {
			m, _ := c.(map[string]any)
			n, err := buildNormalizer(m)
			if err != nil {
				return nil, err
			}
			if n != nil {
				out = append(out, n)
			}
		}
		return normalizer.NewSequence(out), nil
	case "Nmt":
		return nil, errors.New("the Nmt normalizer is not supported (sugarme/tokenizer does not implement it)")
	}
	return pretrained.CreateNormalizer(cfg)
}

// stringNormalizer rewrites the whole normalized text (alignments are dropped).
type stringNormalizer func(string) string

func (f stringNormalizer) Normalize(n *normalizer.NormalizedString) (*normalizer.NormalizedString, error) {
	return normalizer.NewNormalizedFrom(f(n.GetNormalized())), nil
}

// precompiled is tokenizers' Precompiled::normalize: each grapheme shorter than 6 bytes is
// looked up whole; otherwise (or when absent) each of its characters is.
func precompiled(pc *spm.Precompiled, s string) string {
	var b strings.Builder
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		gr := g.Str()
		if len(gr) < 6 {
			if norm := pc.Transform(gr); norm != "" {
				b.WriteString(norm)
				continue
			}
		}
		for _, r := range gr {
			part := string(r)
			if norm := pc.Transform(part); norm != "" {
				b.WriteString(norm)
			} else {
				b.WriteString(part)
			}
		}
	}
	return b.String()
}

// parseTemplate reads the post_processor: BertProcessing, RobertaProcessing or
// TemplateProcessing (possibly inside a Sequence, beside a ByteLevel offsets fixer). None
// means no special tokens.
func parseTemplate(v any) (template, error) {
	cfg, _ := v.(map[string]any)
	if cfg == nil {
		return template{single: []item{{seq: 'A'}}, pair: []item{{seq: 'A'}, {seq: 'B', typeID: 1}}}, nil
	}
	tokenOf := func(key string) (item, error) {
		p, _ := cfg[key].([]any)
		if len(p) != 2 {
			return item{}, fmt.Errorf("%s: bad %q", cfg["type"], key)
		}
		id, ok := p[1].(float64)
		if !ok {
			return item{}, fmt.Errorf("%s: bad %q id", cfg["type"], key)
		}
		return item{special: true, id: int32(id)}, nil
	}
	switch cfg["type"] {
	case "BertProcessing", "RobertaProcessing":
		cls, err := tokenOf("cls")
		if err != nil {
			return template{}, err
		}
		sep, err := tokenOf("sep")
		if err != nil {
			return template{}, err
		}
		if cfg["type"] == "BertProcessing" {
			sep1 := sep
			sep1.typeID = 1
			return template{
				single: []item{cls, {seq: 'A'}, sep},
				pair:   []item{cls, {seq: 'A'}, sep, {seq: 'B', typeID: 1}, sep1},
			}, nil
		}
		// RoBERTa has a single token type: everything is 0.
		return template{
			single: []item{cls, {seq: 'A'}, sep},
			pair:   []item{cls, {seq: 'A'}, sep, sep, {seq: 'B'}, sep},
		}, nil
	case "TemplateProcessing":
		specials := map[string]int32{}
		st, _ := cfg["special_tokens"].(map[string]any)
		for name, s := range st {
			m, _ := s.(map[string]any)
			ids, _ := m["ids"].([]any)
			if len(ids) != 1 {
				return template{}, fmt.Errorf("TemplateProcessing: special token %q must have one id", name)
			}
			id, _ := ids[0].(float64)
			specials[name] = int32(id)
		}
		conv := func(key string) ([]item, error) {
			list, _ := cfg[key].([]any)
			var out []item
			for _, e := range list {
				m, _ := e.(map[string]any)
				if s, ok := m["SpecialToken"].(map[string]any); ok {
					name, _ := s["id"].(string)
					id, ok := specials[name]
					if !ok {
						return nil, fmt.Errorf("TemplateProcessing: unknown special token %q", name)
					}
					tid, _ := s["type_id"].(float64)
					out = append(out, item{special: true, id: id, typeID: int32(tid)})
				} else if s, ok := m["Sequence"].(map[string]any); ok {
					name, _ := s["id"].(string)
					tid, _ := s["type_id"].(float64)
					if name != "A" && name != "B" {
						return nil, fmt.Errorf("TemplateProcessing: sequence %q", name)
					}
					out = append(out, item{seq: name[0], typeID: int32(tid)})
				} else {
					return nil, fmt.Errorf("TemplateProcessing: bad %s item %v", key, e)
				}
			}
			return out, nil
		}
		single, err := conv("single")
		if err != nil {
			return template{}, err
		}
		pair, err := conv("pair")
		if err != nil {
			return template{}, err
		}
		return template{single: single, pair: pair}, nil
	case "Sequence":
		list, _ := cfg["processors"].([]any)
		var found *template
		for _, p := range list {
			m, _ := p.(map[string]any)
			if m["type"] == "ByteLevel" {
				continue // offsets only; ids are unaffected
			}
			t, err := parseTemplate(m)
			if err != nil {
				return template{}, err
			}
			if found != nil {
				return template{}, errors.New("post_processor Sequence with two templates")
			}
			found = &t
		}
		if found == nil {
			return parseTemplate(nil)
		}
		return *found, nil
	case "ByteLevel":
		return parseTemplate(nil)
	}
	return template{}, fmt.Errorf("post_processor %v is not supported", cfg["type"])
}

// padID finds the padding token: the padding section's id, else [PAD]/<pad>, else 0.
func (t *Tokenizer) padID(padding map[string]any) int32 {
	if id, ok := padding["pad_id"].(float64); ok {
		return int32(id)
	}
	for _, name := range []string{"[PAD]", "<pad>"} {
		if id, ok := t.tk.TokenToId(name); ok {
			return int32(id)
		}
	}
	return 0
}

// Model is the tokenizer.json model type: "WordPiece", "Unigram" or "BPE".
func (t *Tokenizer) Model() string { return t.model }

// ID returns the id of a vocabulary entry or added token.
func (t *Tokenizer) ID(token string) (int32, bool) {
	id, ok := t.tk.TokenToId(token)
	return int32(id), ok
}

// Pad is the padding token's id.
func (t *Tokenizer) Pad() int32 { return t.pad }

// Tokenize returns text's ids without special tokens. sugarme fails (or panics) only on
// internal inconsistencies; the text is then logged as unreadable and treated as empty, so
// one odd passage cannot take a server down.
func (t *Tokenizer) Tokenize(text string) (ids []int32) {
	if text == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			slog.Warn("hftok: tokenizer failed; text treated as empty", "model", t.model, "bytes", len(text), "panic", fmt.Sprint(r))
			ids = nil
		}
	}()
	enc, err := t.tk.EncodeSingle(text, false)
	if err != nil {
		slog.Warn("hftok: tokenizer failed; text treated as empty", "model", t.model, "bytes", len(text), "err", err)
		return nil
	}
	raw := enc.GetIds()
	ids = make([]int32, len(raw))
	for i, id := range raw {
		ids[i] = int32(id)
	}
	return ids
}

// Count is the number of tokens of text without special tokens.
func (t *Tokenizer) Count(text string) int { return len(t.Tokenize(text)) }

// Encode returns text with the model's special tokens, truncated (from the end) so that
// the whole fits maxLen when maxLen is positive.
func (t *Tokenizer) Encode(text string, maxLen int) []int32 {
	ids := t.Tokenize(text)
	if maxLen > 0 {
		if keep := max(0, maxLen-t.tmpl.added(false)); len(ids) > keep {
			ids = ids[:keep]
		}
	}
	out, _ := t.apply(t.tmpl.single, ids, nil)
	return out
}

// EncodePair returns the pair with special tokens and token type ids, truncated to maxLen
// (when positive) with tokenizers' LongestFirst strategy.
func (t *Tokenizer) EncodePair(a, b string, maxLen int) (ids, types []int32) {
	return t.PairIDs(t.Tokenize(a), t.Tokenize(b), maxLen)
}

// PairIDs is EncodePair for segments already tokenized by Tokenize (so that a query is
// tokenized once for many passages).
func (t *Tokenizer) PairIDs(a, b []int32, maxLen int) (ids, types []int32) {
	if maxLen > 0 {
		na, nb := longestFirst(len(a), len(b), maxLen-t.tmpl.added(true))
		a, b = a[:na], b[:nb]
	}
	return t.apply(t.tmpl.pair, a, b)
}

// longestFirst is tokenizers' LongestFirst pair truncation (tokenizer/utils/truncation.rs):
// the shorter segment is kept whole when the longer can absorb the cut, else both get
// half the budget, the odd token going to the longer one.
func longestFirst(n1, n2, target int) (int, int) {
	target = max(target, 0)
	if n1+n2 <= target {
		return n1, n2
	}
	swap := n1 > n2
	if swap {
		n1, n2 = n2, n1
	}
	if n1 > target {
		n2 = n1
	} else {
		n2 = max(n1, target-n1)
	}
	if n1+n2 > target {
		n1 = target / 2
		n2 = n1 + target%2
	}
	if swap {
		n1, n2 = n2, n1
	}
	return n1, n2
}

func (t *Tokenizer) apply(tmpl []item, a, b []int32) (ids, types []int32) {
	n := len(a) + len(b) + len(tmpl)
	ids = make([]int32, 0, n)
	types = make([]int32, 0, n)
	for _, it := range tmpl {
		switch {
		case it.special:
			ids = append(ids, it.id)
			types = append(types, it.typeID)
		case it.seq == 'A':
			ids = append(ids, a...)
			for range a {
				types = append(types, it.typeID)
			}
		case it.seq == 'B':
			ids = append(ids, b...)
			for range b {
				types = append(types, it.typeID)
			}
		}
	}
	return ids, types
}
