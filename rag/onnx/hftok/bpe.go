package hftok

import (
	"fmt"
	"strings"

	"github.com/sugarme/tokenizer"
)

// mergeOrder is fix 8: sugarme's BPE breaks ties between equal-rank merges by an unset
// timestamp instead of by position, so a run such as "xxxxxx" merged in the wrong places.
// It keeps sugarme's model for the vocabulary and applies the merges the way tokenizers'
// Word::merge_all does: always the lowest rank, leftmost first.
type mergeOrder struct {
	tokenizer.Model
	vocab  map[string]int
	ranks  map[[2]string]int
	ignore bool // ignore_merges: a word in the vocabulary is taken whole
	unk    string
}

func newMergeOrder(m tokenizer.Model, model map[string]any) (*mergeOrder, error) {
	if p, _ := model["continuing_subword_prefix"].(string); p != "" {
		return nil, fmt.Errorf("BPE with continuing_subword_prefix %q is not supported", p)
	}
	if s, _ := model["end_of_word_suffix"].(string); s != "" {
		return nil, fmt.Errorf("BPE with end_of_word_suffix %q is not supported", s)
	}
	if bf, _ := model["byte_fallback"].(bool); bf {
		return nil, fmt.Errorf("BPE with byte_fallback is not supported")
	}
	list, _ := model["merges"].([]any)
	mo := &mergeOrder{Model: m, vocab: m.GetVocab(), ranks: make(map[[2]string]int, len(list))}
	mo.ignore, _ = model["ignore_merges"].(bool)
	mo.unk, _ = model["unk_token"].(string)
	for rank, e := range list {
		var pair [2]string
		switch v := e.(type) {
		case string:
			a, b, ok := strings.Cut(v, " ")
			if !ok {
				return nil, fmt.Errorf("BPE merge %q is not \"a b\"", v)
			}
			pair = [2]string{a, b}
		case []any:
			if len(v) != 2 {
				return nil, fmt.Errorf("BPE merge %v is not a pair", v)
			}
			a, _ := v[0].(string)
			b, _ := v[1].(string)
			pair = [2]string{a, b}
		default:
			return nil, fmt.Errorf("BPE merge %v is not a pair", e)
		}
		if _, dup := mo.ranks[pair]; !dup {
			mo.ranks[pair] = rank
		}
	}
	return mo, nil
}

func (m *mergeOrder) Tokenize(word string) ([]tokenizer.Token, error) {
	if word == "" {
		return nil, nil
	}
	if id, ok := m.vocab[word]; ok && m.ignore {
		return []tokenizer.Token{{Id: id, Value: word, Offsets: []int{0, len(word)}}}, nil
	}
	type sym struct {
		s          string
		start, end int
	}
	syms := make([]sym, 0, len(word))
	for i, r := range word {
		syms = append(syms, sym{string(r), i, i + len(string(r))})
	}
	for len(syms) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := m.ranks[[2]string{syms[i].s, syms[i+1].s}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms[at] = sym{syms[at].s + syms[at+1].s, syms[at].start, syms[at+1].end}
		syms = append(syms[:at+1], syms[at+2:]...)
	}
	out := make([]tokenizer.Token, 0, len(syms))
	for _, s := range syms {
		id, ok := m.vocab[s.s]
		if !ok {
			if m.unk == "" {
				continue // tokenizers drops symbols it cannot map when there is no unk token
			}
			if id, ok = m.vocab[m.unk]; !ok {
				return nil, fmt.Errorf("BPE unk token %q is not in the vocabulary", m.unk)
			}
		}
		out = append(out, tokenizer.Token{Id: id, Value: s.s, Offsets: []int{s.start, s.end}})
	}
	return out, nil
}
