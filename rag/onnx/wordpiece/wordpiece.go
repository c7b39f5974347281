// Package wordpiece is a BERT WordPiece tokenizer that reads a Hugging Face tokenizer.json
// and reproduces the tokenizers library's ids for BERT-family models (BertNormalizer,
// BertPreTokenizer, WordPiece, [CLS]/[SEP] template).
//
// It replaces github.com/sugarme/tokenizer, which reads "strip_accents": null as false
// without an NFD step (accented words become [UNK]), truncates sentence pairs wrongly and
// calls log.Fatal on some truncations; it is also ~20x slower. This package is pure Go, so
// the chunker can count tokens without cgo or the ONNX Runtime library.
package wordpiece

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer is safe for concurrent use.
type Tokenizer struct {
	vocab     map[string]int32
	unk       int32
	cls, sep  int32
	pad       int32
	prefix    string // "##"
	maxChars  int    // longer words become [UNK]
	clean     bool
	chinese   bool
	strip     bool
	lowercase bool
	special   []special // added special tokens matched verbatim in the raw text
}

type special struct {
	content string
	id      int32
}

type tokenizerJSON struct {
	AddedTokens []struct {
		ID         int32  `json:"id"`
		Content    string `json:"content"`
		Special    bool   `json:"special"`
		Normalized bool   `json:"normalized"`
	} `json:"added_tokens"`
	Normalizer *struct {
		Type               string `json:"type"`
		CleanText          bool   `json:"clean_text"`
		HandleChineseChars bool   `json:"handle_chinese_chars"`
		StripAccents       *bool  `json:"strip_accents"`
		Lowercase          bool   `json:"lowercase"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type                    string           `json:"type"`
		UnkToken                string           `json:"unk_token"`
		ContinuingSubwordPrefix string           `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
		Vocab                   map[string]int32 `json:"vocab"`
	} `json:"model"`
}

// Load reads a tokenizer.json. Only BERT WordPiece tokenizers are accepted.
func Load(path string) (*Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads the contents of a tokenizer.json.
func Parse(b []byte) (*Tokenizer, error) {
	var j tokenizerJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("tokenizer json: %w", err)
	}
	if j.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("tokenizer model %q is not WordPiece", j.Model.Type)
	}
	if j.Normalizer == nil || j.Normalizer.Type != "BertNormalizer" {
		return nil, errors.New("tokenizer normalizer is not BertNormalizer")
	}
	if j.PreTokenizer == nil || j.PreTokenizer.Type != "BertPreTokenizer" {
		return nil, errors.New("tokenizer pre-tokenizer is not BertPreTokenizer")
	}
	t := &Tokenizer{
		vocab:     j.Model.Vocab,
		prefix:    j.Model.ContinuingSubwordPrefix,
		maxChars:  j.Model.MaxInputCharsPerWord,
		clean:     j.Normalizer.CleanText,
		chinese:   j.Normalizer.HandleChineseChars,
		lowercase: j.Normalizer.Lowercase,
	}
	// tokenizers: strip_accents None follows lowercase (BertNormalizer::normalize).
	t.strip = t.lowercase
	if j.Normalizer.StripAccents != nil {
		t.strip = *j.Normalizer.StripAccents
	}
	if t.maxChars == 0 {
		t.maxChars = 100
	}
	var ok bool
	for _, c := range []struct {
		tok string
		id  *int32
	}{{j.Model.UnkToken, &t.unk}, {"[CLS]", &t.cls}, {"[SEP]", &t.sep}, {"[PAD]", &t.pad}} {
		if *c.id, ok = t.vocab[c.tok]; !ok {
			return nil, fmt.Errorf("vocabulary has no %q", c.tok)
		}
	}
	for _, a := range j.AddedTokens {
		if a.Special && !a.Normalized && a.Content != "" {
			t.special = append(t.special, special{a.Content, a.ID})
		}
	}
	return t, nil
}

// CLS, SEP and Pad are the ids of the special tokens.
func (t *Tokenizer) CLS() int32 { return t.cls }
func (t *Tokenizer) SEP() int32 { return t.sep }
func (t *Tokenizer) Pad() int32 { return t.pad }

// VocabSize is the number of entries in the vocabulary.
func (t *Tokenizer) VocabSize() int { return len(t.vocab) }

// Tokenize returns the WordPiece ids of text without special tokens or truncation.
func (t *Tokenizer) Tokenize(text string) []int32 {
	return t.appendIDs(nil, text)
}

// Count returns the number of tokens of text without special tokens.
func (t *Tokenizer) Count(text string) int {
	return len(t.appendIDs(nil, text))
}

// Encode returns [CLS] text [SEP], with text truncated so the whole fits maxLen (when > 2).
func (t *Tokenizer) Encode(text string, maxLen int) []int32 {
	ids := t.appendIDs(make([]int32, 1, 64), text)
	ids[0] = t.cls
	if maxLen > 2 && len(ids) > maxLen-1 {
		ids = ids[:maxLen-1]
	}
	return append(ids, t.sep)
}

// EncodePair returns [CLS] a [SEP] b [SEP] and the token type ids (0 for the first segment
// with its [CLS] and [SEP], 1 for the second), truncated to maxLen (when > 3) by removing
// tokens from the end of the longer segment, one at a time, as tokenizers' LongestFirst
// strategy does.
func (t *Tokenizer) EncodePair(a, b string, maxLen int) (ids, types []int32) {
	return t.PairIDs(t.Tokenize(a), t.Tokenize(b), maxLen)
}

// PairIDs is EncodePair for already tokenized segments (so a query can be tokenized once
// for many passages).
func (t *Tokenizer) PairIDs(a, b []int32, maxLen int) (ids, types []int32) {
	na, nb := len(a), len(b)
	if maxLen > 3 {
		for na+nb > maxLen-3 {
			if na > nb {
				na--
			} else {
				nb--
			}
		}
	}
	ids = make([]int32, 0, na+nb+3)
	types = make([]int32, 0, na+nb+3)
	ids = append(ids, t.cls)
	ids = append(ids, a[:na]...)
	ids = append(ids, t.sep)
	for range na + 2 {
		types = append(types, 0)
	}
	ids = append(ids, b[:nb]...)
	ids = append(ids, t.sep)
	for range nb + 1 {
		types = append(types, 1)
	}
	return ids, types
}

func (t *Tokenizer) appendIDs(ids []int32, text string) []int32 {
	for text != "" {
		// Special tokens in the raw text keep their ids, as in tokenizers' AddedVocabulary.
		at, sp := -1, special{}
		for _, s := range t.special {
			if i := strings.Index(text, s.content); i >= 0 && (at < 0 || i < at) {
				at, sp = i, s
			}
		}
		if at < 0 {
			return t.appendPlain(ids, text)
		}
		ids = t.appendPlain(ids, text[:at])
		ids = append(ids, sp.id)
		text = text[at+len(sp.content):]
	}
	return ids
}

func (t *Tokenizer) appendPlain(ids []int32, text string) []int32 {
	if text == "" {
		return ids
	}
	s := t.normalize(text)
	start := -1
	flush := func(end int) {
		if start >= 0 {
			ids = t.wordPiece(ids, s[start:end])
			start = -1
		}
	}
	for i, r := range s {
		switch {
		case unicode.IsSpace(r):
			flush(i)
		case isPunct(r):
			flush(i)
			ids = t.wordPiece(ids, s[i:i+utf8.RuneLen(r)])
		default:
			if start < 0 {
				start = i
			}
		}
	}
	flush(len(s))
	return ids
}

// normalize applies BertNormalizer: clean text, pad CJK ideographs, strip accents (NFD
// and drop nonspacing marks), lowercase — in that order.
func (t *Tokenizer) normalize(text string) string {
	var b strings.Builder
	b.Grow(len(text) + 8)
	for _, r := range text {
		if t.clean {
			if r == 0 || r == utf8.RuneError || isControl(r) {
				continue
			}
			if unicode.IsSpace(r) {
				r = ' '
			}
		}
		if t.chinese && isCJK(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	s := b.String()
	if t.strip {
		s = stripAccents(s)
	}
	if t.lowercase {
		s = strings.ToLower(s)
	}
	return s
}

func stripAccents(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// wordPiece splits one pre-token greedily, longest match first.
func (t *Tokenizer) wordPiece(ids []int32, word string) []int32 {
	if utf8.RuneCountInString(word) > t.maxChars {
		return append(ids, t.unk)
	}
	n := len(ids)
	var buf []byte
	for start := 0; start < len(word); {
		end := len(word)
		found := false
		for end > start {
			var id int32
			var ok bool
			if start > 0 {
				buf = append(append(buf[:0], t.prefix...), word[start:end]...)
				id, ok = t.vocab[string(buf)]
			} else {
				id, ok = t.vocab[word[start:end]]
			}
			if ok {
				ids = append(ids, id)
				found = true
				break
			}
			// Step back one rune.
			_, size := utf8.DecodeLastRuneInString(word[start:end])
			end -= size
		}
		if !found {
			return append(ids[:n], t.unk)
		}
		start = end
	}
	return ids
}

// isControl matches tokenizers' is_control: the Unicode "Other" categories except tab and
// newlines (which count as whitespace).
func isControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	// Unassigned code points (Cn) are "Other" too.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// isPunct matches tokenizers' is_bert_punc: ASCII punctuation (which includes symbols such
// as $ + < = > ^ ` | ~) or any Unicode punctuation.
func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}

// isCJK matches the CJK Unified Ideograph blocks BERT pads with spaces.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
